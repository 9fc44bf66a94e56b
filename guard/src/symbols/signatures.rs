//! Signature changes: the functions whose signature one side's changes
//! altered or removed, over all of its changed files at once.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use git2::Repository;
use owt_protocol::guard::LineRange;

use super::super::changes::{Change, ChangeKind, Hunk};
use super::regions::Wanted;
use super::{FileSymbols, Lang, Symbol, SymbolIndex};

/// Signatures are shown shortened to this many characters.
const SHOWN_CHARS: usize = 120;

/// A signature in a form where only meaningful differences remain: no
/// whitespace except between two word characters.
pub(super) fn canonical(signature: &str) -> String {
    let mut out = String::with_capacity(signature.len());
    let mut pending_space = false;
    for c in signature.chars() {
        if c.is_whitespace() {
            pending_space = true;
            continue;
        }
        let word = |c: char| c.is_alphanumeric() || c == '_';
        if pending_space && out.chars().last().is_some_and(word) && word(c) {
            out.push(' ');
        }
        pending_space = false;
        out.push(c);
    }
    out
}

fn shorten(text: &str) -> String {
    if text.chars().count() <= SHOWN_CHARS {
        return text.to_string();
    }
    let cut: String = text.chars().take(SHOWN_CHARS - 1).collect();
    format!("{cut}…")
}

/// A function definition, as signature changes compare them.
struct Def {
    /// [`canonical`] signature.
    canon: String,
    path: String,
    symbol: Symbol,
    lang: Lang,
}

/// Definitions by (language family, name).
type Defs = BTreeMap<(u8, String), Vec<Def>>;

/// A function one side's changes altered (signature) or removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignatureChange {
    pub lang: Lang,
    /// `fn parse_config`.
    pub symbol: String,
    pub name: String,
    /// Where the definition now is (or was, when removed).
    pub path: String,
    pub lines: LineRange,
    pub before: String,
    /// `(removed)` when no definition of that name is left.
    pub after: String,
    /// C/C++ `static`: only uses in `path` count.
    pub file_local: bool,
}

pub(super) fn is_text_file(change: &Change) -> bool {
    let regular =
        |e: Option<super::super::tree::Entry>| e.is_none_or(|e| e.1 & 0o170000 == 0o100000);
    !change.binary && regular(change.old) && regular(change.new)
}

/// A changed file, its old path, its old symbols and whether a hunk
/// touched a function's head there.
type OldFile<'c> = (&'c Change, &'c str, Parsed, bool);

/// A version's symbols and language (`None`: not parsed, or unparsable).
type Parsed = Option<(Lang, Arc<FileSymbols>)>;

/// Whether a hunk (base lines) writes on or just before `s`'s head, where
/// a change can alter its signature.
fn touches_head(h: &Hunk, s: &Symbol) -> bool {
    let (first, last) = (s.first.saturating_sub(1), s.head_last);
    if h.old_lines == 0 {
        // Inserted after line `old_start`.
        first <= h.old_start && h.old_start < last.max(first + 1)
    } else {
        h.old_start <= last && first < h.old_start + h.old_lines
    }
}

/// The old versions of `changes`' files that [`signature_changes`] parses
/// (all of them, first around their hunks): `(old path, old blob,
/// language, lines)`.
pub(super) fn old_versions(changes: &[Change]) -> Vec<Wanted<'_>> {
    changes
        .iter()
        .filter(|c| is_text_file(c) && c.kind != ChangeKind::ModeChanged)
        .filter_map(|c| {
            let path = c.old_path.as_deref().unwrap_or(&c.path);
            let lang = Lang::of_path(path)?;
            Some((path, c.old?.0, lang, hunk_lines(c, lang)))
        })
        .collect()
}

/// Whether a change's old functions are all compared (a deleted or
/// renamed file, or one whose language changed), not only those around
/// its hunks.
fn whole(change: &Change, old_lang: Lang) -> bool {
    change.new.is_none()
        || change.kind == ChangeKind::Renamed
        || Lang::of_path(&change.path) != Some(old_lang)
}

/// The old lines a change's hunks replace (a pure insertion: the line it
/// follows), where its old version's functions are looked at; `None`:
/// the whole file ([`whole`], or no hunks).
fn hunk_lines(change: &Change, old_lang: Lang) -> Option<Vec<LineRange>> {
    if whole(change, old_lang) || change.hunks.is_empty() {
        return None;
    }
    Some(
        change
            .hunks
            .iter()
            .map(|h| LineRange {
                start: h.old_start.max(1),
                lines: h.old_lines,
            })
            .collect(),
    )
}

/// The functions whose signature `changes` altered or removed, compared
/// over all of them at once (a function moved between two changed files
/// with its signature is no change).
///
/// Parses lazily: every changed file's old version (a base blob, shared by
/// every participant and update) around its hunks first (`regions`: the
/// segments that hold them), then around the lines that name a function
/// whose head a hunk touched, or a function a hunk wrote (a rename's
/// other half), so that every definition of those names is compared; a
/// new version only where a hunk touched a function's head (or the file
/// was deleted or renamed), or where the written lines name such a
/// function (moved or renamed there), and then only around its written
/// lines and the lines naming those functions. A file whose heads are untouched
/// keeps its functions' signatures; a name no hunk touched a head of
/// keeps its signatures (its heads are the same text).
pub fn signature_changes(
    repo: &Repository,
    index: &mut SymbolIndex,
    changes: &[Change],
) -> Vec<SignatureChange> {
    let by_path: HashMap<&str, &Change> = changes.iter().map(|c| (c.path.as_str(), c)).collect();
    // Every old version below is parsed (around its hunks): all at once,
    // on the cores.
    index.prefetch(repo, &old_versions(changes));
    // Each file's old functions, and whether a hunk touched one's head.
    let mut files: Vec<OldFile<'_>> = Vec::new();
    let mut gone: BTreeMap<u8, HashSet<String>> = BTreeMap::new();
    for change in changes.iter().filter(|c| is_text_file(c)) {
        if change.kind == ChangeKind::ModeChanged {
            continue;
        }
        let old_path = change.old_path.as_deref().unwrap_or(&change.path);
        let old = old_symbols(repo, index, change, old_path, &[]);
        let mut touched = false;
        if let Some((lang, symbols)) = &old {
            let whole = whole(change, *lang);
            for s in symbols.symbols.iter().filter(|s| s.is_function()) {
                if whole || change.hunks.iter().any(|h| touches_head(h, s)) {
                    touched = true;
                    gone.entry(lang.family())
                        .or_default()
                        .insert(s.name.clone());
                }
            }
        }
        files.push((change, old_path, old, touched));
    }
    if gone.is_empty() {
        // Every head as it was: no signature changed.
        return Vec::new();
    }
    let new_files = new_symbols(repo, index, &files, &gone);
    // Every old definition of a name compared (or a rename's candidate).
    let mut names = gone.clone();
    for (i, (lang, symbols)) in new_files.iter().filter_map(|(i, p)| Some((i, p.as_ref()?))) {
        let change = files[*i].0;
        for s in symbols.symbols.iter().filter(|s| s.is_function()) {
            let written = change
                .hunks
                .iter()
                .any(|h| h.new_start <= s.first && s.first < h.new_start + h.new_lines.max(1));
            if written && gone.contains_key(&lang.family()) {
                names
                    .entry(lang.family())
                    .or_default()
                    .insert(s.name.clone());
            }
        }
    }
    widen(repo, index, &mut files, &names);
    let (mut old, mut new): (Defs, Defs) = (BTreeMap::new(), BTreeMap::new());
    for (i, (change, old_path, old_symbols, _)) in files.iter().enumerate() {
        if let Some((lang, symbols)) = old_symbols {
            add_defs(&mut old, symbols, old_path, *lang);
        }
        match new_files.iter().find(|(j, _)| *j == i) {
            Some((_, Some((lang, symbols)))) => add_defs(&mut new, symbols, &change.path, *lang),
            // A new version that cannot be parsed defines nothing.
            Some((_, None)) => {}
            // Heads untouched: the same signatures.
            None => {
                if let Some((lang, symbols)) = old_symbols {
                    add_defs(&mut new, symbols, &change.path, *lang);
                }
            }
        }
    }
    compare(&old, &new, &by_path, &gone)
}

/// The symbols of a change's old version (at `old_path`): around its
/// hunks and the lines `more`, or the whole file's ([`whole`]).
fn old_symbols(
    repo: &Repository,
    index: &mut SymbolIndex,
    change: &Change,
    old_path: &str,
    more: &[LineRange],
) -> Parsed {
    let lang = Lang::of_path(old_path)?;
    let id = change.old?.0;
    let symbols = match hunk_lines(change, lang) {
        Some(mut lines) => {
            lines.extend_from_slice(more);
            index.symbols_near(repo, old_path, id, lang, &lines)?
        }
        None => index.symbols(repo, old_path, id, lang)?,
    };
    Some((lang, symbols))
}

/// The new versions parsed, around their written lines and the lines
/// naming a function `gone` names (whole where the old one is): of the
/// files where a hunk touched a head, and of those whose written lines
/// name such a function (moved or renamed there); by index in `files`
/// (`None`: it could not be parsed).
fn new_symbols(
    repo: &Repository,
    index: &mut SymbolIndex,
    files: &[OldFile<'_>],
    gone: &BTreeMap<u8, HashSet<String>>,
) -> Vec<(usize, Parsed)> {
    let mut out = Vec::new();
    for (i, (change, _, old, touched)) in files.iter().enumerate() {
        let new_lang = Lang::of_path(&change.path);
        // A function moved or renamed here is named in the written lines.
        let named_here = !touched
            && new_lang.is_some_and(|lang| {
                gone.get(&lang.family()).is_some_and(|names| {
                    index
                        .written_words(repo, change)
                        .is_some_and(|words| names.iter().any(|n| words.contains(n)))
                })
            });
        if *touched || named_here {
            let old_lang = old.as_ref().map(|(lang, _)| *lang);
            let parsed = new_lang.zip(change.new).and_then(|(lang, entry)| {
                let near = old_lang.is_some_and(|l| !whole(change, l) && !change.hunks.is_empty());
                let symbols = if near {
                    // Around the written lines and those naming a name
                    // that can have changed: every definition compared.
                    let mut lines: Vec<LineRange> = change
                        .hunks
                        .iter()
                        .map(|h| LineRange {
                            start: h.new_start.max(1),
                            lines: h.new_lines,
                        })
                        .collect();
                    if let Some(names) = gone.get(&lang.family()) {
                        let naming =
                            super::text_of(repo, entry.0, |t| super::text::lines_naming(t, names));
                        lines.extend(naming.unwrap_or_default());
                    }
                    index.symbols_near(repo, &change.path, entry.0, lang, &lines)?
                } else {
                    index.symbols(repo, &change.path, entry.0, lang)?
                };
                Some((lang, symbols))
            });
            out.push((i, parsed));
        }
    }
    out
}

/// Grows each partial old version of `files` around the lines that name
/// one of `names` (of its family), so that every definition of them is
/// known.
fn widen(
    repo: &Repository,
    index: &mut SymbolIndex,
    files: &mut [OldFile<'_>],
    names: &BTreeMap<u8, HashSet<String>>,
) {
    for (change, old_path, old, _) in files.iter_mut() {
        let Some((lang, symbols)) = old.as_ref() else {
            continue;
        };
        let (Some(wanted), Some(id)) = (names.get(&lang.family()), change.old) else {
            continue;
        };
        if symbols.covered.is_none() {
            continue;
        }
        let lines = super::text_of(repo, id.0, |t| super::text::lines_naming(t, wanted))
            .unwrap_or_default();
        if !symbols.covers(&lines) {
            *old = old_symbols(repo, index, change, old_path, &lines);
        }
    }
}

/// Adds the functions of `symbols` (at `path`) to `defs`.
fn add_defs(defs: &mut Defs, symbols: &FileSymbols, path: &str, lang: Lang) {
    for symbol in symbols.symbols.iter().filter(|s| s.is_function()) {
        let canon = canonical(symbol.signature.as_deref().unwrap_or_default());
        defs.entry((lang.family(), symbol.name.clone()))
            .or_default()
            .push(Def {
                canon,
                path: path.to_string(),
                symbol: symbol.clone(),
                lang,
            });
    }
}

/// The signature changes between two sides' definitions, of the names
/// `gone` holds (a hunk touched one of their heads: no other name's
/// signatures can differ, and the old definitions of others may be known
/// only in part).
fn compare(
    old: &Defs,
    new: &Defs,
    by_path: &HashMap<&str, &Change>,
    gone: &BTreeMap<u8, HashSet<String>>,
) -> Vec<SignatureChange> {
    let mut out = Vec::new();
    for (key, before) in old {
        if !gone.get(&key.0).is_some_and(|g| g.contains(&key.1)) {
            continue;
        }
        let after = new.get(key).map(Vec::as_slice).unwrap_or_default();
        let sigs =
            |defs: &[Def]| -> BTreeSet<String> { defs.iter().map(|d| d.canon.clone()).collect() };
        let (was, now) = (sigs(before), sigs(after));
        if was == now {
            continue;
        }
        let Some(gone) = before.iter().find(|d| !now.contains(&d.canon)) else {
            // Only an overload added: every old call still resolves.
            continue;
        };
        let came = after.iter().find(|d| !was.contains(&d.canon)).or_else(|| {
            if !after.is_empty() {
                return None;
            }
            // Renamed: a function of a new name written where it was.
            renamed_to(old, new, by_path, gone)
        });
        let shown = came.unwrap_or(gone);
        out.push(SignatureChange {
            lang: shown.lang,
            symbol: shown.symbol.label(),
            name: key.1.clone(),
            path: shown.path.clone(),
            lines: shown.symbol.lines(),
            before: shorten(gone.symbol.signature.as_deref().unwrap_or_default()),
            after: came.map_or_else(
                || "(removed)".to_string(),
                |d| shorten(d.symbol.signature.as_deref().unwrap_or_default()),
            ),
            file_local: gone.symbol.file_local,
        });
    }
    out
}

/// The definition a removed one (`gone`) was renamed to: a function of a
/// name the side did not have before, in the same file, starting in the
/// lines of the hunk that replaced `gone`'s first line.
fn renamed_to<'d>(
    old: &Defs,
    new: &'d Defs,
    by_path: &HashMap<&str, &Change>,
    gone: &Def,
) -> Option<&'d Def> {
    let change = by_path
        .values()
        .find(|c| c.old_path.as_deref().unwrap_or(&c.path) == gone.path)?;
    let line = gone.symbol.first;
    let hunk = change.hunks.iter().find(|h| {
        let (start, end) = (h.old_start, h.old_start + h.old_lines);
        start <= line && line < end.max(start + 1)
    })?;
    let (start, end) = (hunk.new_start, hunk.new_start + hunk.new_lines);
    new.iter()
        .filter(|(key, _)| !old.contains_key(*key) && key.0 == gone.lang.family())
        .flat_map(|(_, defs)| defs)
        .find(|d| d.path == change.path && start <= d.symbol.first && d.symbol.first < end)
}
