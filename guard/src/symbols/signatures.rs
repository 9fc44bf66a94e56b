//! Signature changes: the functions whose signature one side's changes
//! altered or removed, over all of its changed files at once.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use git2::Repository;
use owt_protocol::guard::LineRange;

use super::super::changes::{Change, ChangeKind, Hunk};
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
type OldFile<'c> = (&'c Change, &'c str, Option<(Lang, Arc<FileSymbols>)>, bool);

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
/// (all of them): `(old path, old blob, language)`.
pub(super) fn old_versions(changes: &[Change]) -> Vec<(&str, git2::Oid, Lang)> {
    changes
        .iter()
        .filter(|c| is_text_file(c) && c.kind != ChangeKind::ModeChanged)
        .filter_map(|c| {
            let path = c.old_path.as_deref().unwrap_or(&c.path);
            Some((path, c.old?.0, Lang::of_path(path)?))
        })
        .collect()
}

/// The functions whose signature `changes` altered or removed, compared
/// over all of them at once (a function moved between two changed files
/// with its signature is no change).
///
/// Parses lazily: every changed file's old version (a base blob, shared by
/// every participant and update), but a new version only where a hunk
/// touched a function's head (or the file was deleted or renamed), or
/// where the written lines name such a function (moved or renamed there).
/// A file whose heads are untouched keeps its functions' signatures.
pub fn signature_changes(
    repo: &Repository,
    index: &mut SymbolIndex,
    changes: &[Change],
) -> Vec<SignatureChange> {
    let by_path: HashMap<&str, &Change> = changes.iter().map(|c| (c.path.as_str(), c)).collect();
    // Every old version below is parsed: all at once, on the cores.
    index.prefetch(repo, &old_versions(changes));
    // Each file's old functions, and whether a hunk touched one's head.
    let mut files: Vec<OldFile<'_>> = Vec::new();
    let mut gone: BTreeMap<u8, HashSet<String>> = BTreeMap::new();
    for change in changes.iter().filter(|c| is_text_file(c)) {
        if change.kind == ChangeKind::ModeChanged {
            continue;
        }
        let old_path = change.old_path.as_deref().unwrap_or(&change.path);
        let old = Lang::of_path(old_path).and_then(|lang| {
            let symbols = index.symbols(repo, old_path, change.old?.0, lang)?;
            Some((lang, symbols))
        });
        let whole = change.new.is_none()
            || change.kind == ChangeKind::Renamed
            || Lang::of_path(&change.path) != old.as_ref().map(|(l, _)| *l);
        let mut touched = false;
        if let Some((lang, symbols)) = &old {
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
    let (mut old, mut new): (Defs, Defs) = (BTreeMap::new(), BTreeMap::new());
    for (change, old_path, old_symbols, touched) in &files {
        if let Some((lang, symbols)) = old_symbols {
            add_defs(&mut old, symbols, old_path, *lang);
        }
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
            let parsed = new_lang.zip(change.new).and_then(|(lang, entry)| {
                Some((lang, index.symbols(repo, &change.path, entry.0, lang)?))
            });
            if let Some((lang, symbols)) = parsed {
                add_defs(&mut new, &symbols, &change.path, lang);
            }
        } else if let Some((lang, symbols)) = old_symbols {
            // Heads untouched: the same signatures.
            add_defs(&mut new, symbols, &change.path, *lang);
        }
    }
    compare(&old, &new, &by_path)
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

/// The signature changes between two sides' definitions.
fn compare(old: &Defs, new: &Defs, by_path: &HashMap<&str, &Change>) -> Vec<SignatureChange> {
    let mut out = Vec::new();
    for (key, before) in old {
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
