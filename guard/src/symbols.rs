//! Symbols of changed files, for symbol-aware messages and the `semantic`
//! level: with tree-sitter grammars (Rust, Python, JavaScript, TypeScript /
//! TSX, Go, C, C++, Java), each blob a pair touches is parsed once into its
//! definitions (functions, methods, types: kind, name, lines, signature)
//! and the identifiers it uses, line by line.
//!
//! - [`SymbolIndex::symbols`]: a blob's [`FileSymbols`], cached by blob id
//!   (a blob is parsed once, however many pairs and updates look at it);
//! - [`FileSymbols::enclosing`]: the symbols enclosing some lines (`fn
//!   parse_config`), for `GuardPath::a_symbols` / `b_symbols`;
//! - [`signature_changes`]: the functions whose signature (name,
//!   parameters, return type) one side's changes altered or removed,
//!   compared over all of that side's changed files, so a function moved
//!   to another file with the same signature is no change;
//! - [`semantic_notes`]: such a change that the other side's changed lines
//!   use by name (a call, a reference), in any of its changed files of the
//!   same language family: git merges them, the result may not build.
//!
//! Cost: parses only what can matter. [`SymbolIndex::semantic`] first
//! compares words (`text`): a side's old files must share a word with the
//! other side's written lines, or nothing is parsed. Signature changes
//! parse a changed file's old version (a base blob: once for every
//! participant and update) around its hunks and the lines naming a
//! function that can have changed (`regions`: the segments between lines
//! holding only `}`), and its new version only where a hunk touched
//! a function's head, around its written lines ([`signature_changes`]); a
//! user's file is parsed only when its written lines name a changed
//! function, around them. Messages parse the
//! files two participants both changed, as they are in the pair's base,
//! around the pair's lines.
//! A new version of a path whose tree is kept (the latest
//! [`KEPT_TREES`] parses, within [`KEPT_BYTES`]) is re-parsed
//! incrementally from it ([`parse_from`]; a tree with new syntax errors
//! is parsed fresh).
//! A blob not in memory is looked up in the disk cache (`disk`: what
//! earlier runs parsed, under `$OWT_HOME`) before it is parsed, and what a
//! parse yields is written there.
//! Submodules: `grammar` (languages, the parse), `edits` (tree-sitter
//! edits between two versions), `signatures`, `notes` (the semantic
//! notes), `text`, `disk`, `regions` (a file's segments around some
//! lines), `parallel` (a side's old versions parsed at
//! once on the available cores; a full recompute's, in the background
//! while git compares the pairs).
//!
//! Invariants: reads blobs and writes nothing but its disk cache (when
//! given one); a file in no known language, larger than [`MAX_BYTES`] or
//! binary has no symbols; nothing here decides a merge verdict.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use git2::{Oid, Repository};
use owt_protocol::guard::{LineRange, SemanticNote};

use super::changes::{Change, ChangeKind};

mod disk;
mod edits;
mod grammar;
mod notes;
mod parallel;
mod regions;
#[cfg(test)]
pub(crate) use regions::each_segment;
#[cfg(test)]
pub(crate) use regions::reads_items_whole;
mod signatures;
mod text;

pub use disk::DiskCache;
pub use grammar::{parse, parse_from, Lang};
pub use notes::semantic_notes;
use regions::parsable_blob;
#[cfg(test)]
use signatures::canonical;
use signatures::is_text_file;
pub use signatures::{signature_changes, SignatureChange};

/// Files larger than this are not parsed (generated code, vendored
/// bundles): no symbols, no notes.
pub const MAX_BYTES: usize = 1 << 20;

/// Blobs kept before the cache starts over (a long `owt lsp` session sees
/// many versions of the same files).
const MAX_CACHED: usize = 8192;

/// Parse trees kept to re-parse the next version of their file
/// incrementally (most recently used first) ...
const KEPT_TREES: usize = 16;

/// ... while their estimated size stays under this many bytes.
const KEPT_BYTES: usize = 16 << 20;

/// A kept tree not used for this long is let go
/// ([`SymbolIndex::drop_idle_trees`]): the trees speed up an agent's run of
/// writes to one file; a server that sits idle gives their memory back.
pub const KEPT_IDLE: std::time::Duration = std::time::Duration::from_secs(20);

/// Estimated heap bytes of a tree per node (tree-sitter's subtrees:
/// measured 85–87 bytes of RSS per node on git's `builtin/log.c` and
/// `revision.c`, 1.9 and 3.0 MiB a tree).
const BYTES_PER_NODE: usize = 88;

/// Words by language family.
pub type Words = BTreeMap<u8, HashSet<String>>;

/// A side's key: `(merge-base tree, snapshot)`, the zero id for a side
/// with no merge base.
pub fn side_key(merge_base_tree: Option<Oid>, snapshot: Oid) -> (Oid, Oid) {
    (merge_base_tree.unwrap_or_else(Oid::zero), snapshot)
}

/// One side of a pair, as the `semantic` level reads it.
#[derive(Clone, Copy)]
pub struct SideRef<'a> {
    pub name: &'a str,
    /// [`side_key`]: what its changes are a function of.
    pub key: (Oid, Oid),
    pub changes: &'a [Change],
}

/// One definition in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Symbol {
    /// `fn`, `def`, `func`, `function`, `method`, `struct`, `class`…
    pub kind: &'static str,
    pub name: String,
    /// 1-based, inclusive.
    pub first: u32,
    pub last: u32,
    /// The last line of its head (signature): where its body starts, or
    /// `last` when it has none.
    pub head_last: u32,
    /// For functions and methods: the signature as written (whitespace
    /// collapsed), without the body.
    pub signature: Option<String>,
    /// A C/C++ `static` function: visible in its own file only.
    pub file_local: bool,
}

impl Symbol {
    /// `kind name`, as messages and the wire show it.
    pub fn label(&self) -> String {
        format!("{} {}", self.kind, self.name)
    }

    fn is_function(&self) -> bool {
        self.signature.is_some()
    }

    fn lines(&self) -> LineRange {
        LineRange {
            start: self.first,
            lines: self.last + 1 - self.first,
        }
    }
}

/// What a file defines and uses.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct FileSymbols {
    /// In source order (an enclosing definition before what it encloses).
    pub symbols: Vec<Symbol>,
    /// Identifiers used (not the names of definitions), by name: the
    /// 1-based lines they are on, ascending.
    pub uses: HashMap<String, Vec<u32>>,
    /// `None`: the whole file's. Else the lines (1-based, inclusive,
    /// ascending) of the segments parsed (`regions`): the symbols are
    /// complete there (and the uses), unknown elsewhere.
    pub covered: Option<Vec<(u32, u32)>>,
}

impl FileSymbols {
    /// The definitions around `range` (1-based lines; an empty range is the
    /// line it sits before): the innermost functions overlapping it, or
    /// else the innermost types; each once, in source order.
    pub fn enclosing(&self, range: LineRange) -> Vec<&Symbol> {
        let (first, last) = (range.start, range.start + range.lines.max(1) - 1);
        let overlapping: Vec<&Symbol> = self
            .symbols
            .iter()
            .filter(|s| s.first <= last && first <= s.last)
            .collect();
        let functions: Vec<&Symbol> = overlapping
            .iter()
            .copied()
            .filter(|s| s.is_function())
            .collect();
        let pool = if functions.is_empty() {
            overlapping
        } else {
            functions
        };
        // Innermost: drop a symbol that encloses another of the pool.
        pool.iter()
            .copied()
            .filter(|s| {
                !pool.iter().any(|t| {
                    !std::ptr::eq(*s, *t)
                        && s.first <= t.first
                        && t.last <= s.last
                        && (s.first, s.last) != (t.first, t.last)
                })
            })
            .collect()
    }

    /// The innermost function (or else type) around one line.
    fn around(&self, line: u32) -> Option<&Symbol> {
        self.enclosing(LineRange {
            start: line,
            lines: 1,
        })
        .into_iter()
        .next()
    }
}

/// Parsed blobs, by `(blob, language)`; each side's signature changes and
/// written words, by `(merge-base tree, snapshot)`; the words of blobs and
/// of the lines a change wrote. Content-addressed: never stale.
pub struct SymbolIndex {
    /// Off: no symbols, no `semantic` notes (nothing is parsed).
    pub enabled: bool,
    /// Off: old versions are parsed whole, never around some lines only
    /// (`regions`; on by default, off to compare the two).
    pub regions: bool,
    files: HashMap<(Oid, Lang), Option<Arc<FileSymbols>>>,
    signature_changes: HashMap<(Oid, Oid), Arc<Vec<SignatureChange>>>,
    /// Words of a whole blob, by `(blob, family)`.
    blob_words: HashMap<(Oid, u8), Arc<HashSet<String>>>,
    /// Words of the lines a change wrote, by `(old blob, new blob, family)`.
    written: HashMap<(Option<Oid>, Oid, u8), Arc<HashSet<String>>>,
    /// Words of the lines a side wrote, by family.
    side_words: HashMap<(Oid, Oid), Arc<Words>>,
    /// Words of a side's old files, by family.
    old_words: HashMap<(Oid, Oid), Arc<Words>>,
    /// The latest parse trees, to parse the next version of their path
    /// incrementally.
    kept: Vec<Kept>,
    /// Blobs' symbols kept across runs (`$OWT_HOME`'s; none in tests).
    pub disk: Option<DiskCache>,
    /// Parses started in the background, not yet taken in.
    pending: Option<parallel::Pending>,
    /// Blobs parsed since this index was made (for tests and benchmarks).
    pub parsed: u64,
    /// Of those, parsed incrementally from a kept tree (not counting a
    /// try whose errors sent it back to a fresh parse).
    pub reparsed: u64,
}

/// A parse tree kept with its source, by path.
struct Kept {
    path: String,
    lang: Lang,
    source: Arc<[u8]>,
    tree: tree_sitter::Tree,
    /// Estimated bytes held: the source and the tree's nodes.
    cost: usize,
    /// When it was kept or last re-parsed from.
    used: std::time::Instant,
}

impl Default for SymbolIndex {
    fn default() -> Self {
        SymbolIndex {
            enabled: true,
            regions: true,
            files: HashMap::new(),
            signature_changes: HashMap::new(),
            blob_words: HashMap::new(),
            written: HashMap::new(),
            side_words: HashMap::new(),
            old_words: HashMap::new(),
            kept: Vec::new(),
            disk: None,
            pending: None,
            parsed: 0,
            reparsed: 0,
        }
    }
}

/// Inserts into a cache that starts over when full.
fn remember<K: std::hash::Hash + Eq, V: Clone>(map: &mut HashMap<K, V>, key: K, value: V) -> V {
    if map.len() >= MAX_CACHED {
        map.clear();
    }
    map.insert(key, value.clone());
    value
}

/// A blob's text, when it is one the index reads (not binary, not larger
/// than [`MAX_BYTES`]).
fn text_of<T>(repo: &Repository, id: Oid, read: impl FnOnce(&[u8]) -> T) -> Option<T> {
    let blob = super::big::small_blob(repo, id)?;
    let content = blob.content();
    (!blob.is_binary() && content.len() <= MAX_BYTES).then(|| read(content))
}

impl SymbolIndex {
    /// The `semantic` notes of a pair: signature changes of each side that
    /// the other side's changed lines use (none when the index is off).
    pub fn semantic(
        &mut self,
        repo: &Repository,
        a: &SideRef<'_>,
        b: &SideRef<'_>,
    ) -> Vec<SemanticNote> {
        if !self.enabled {
            return Vec::new();
        }
        let mut notes = self.one_way(repo, a, b);
        notes.extend(self.one_way(repo, b, a));
        notes
    }

    /// The notes of `changer`'s signature changes that `user` uses. Parses
    /// nothing unless `changer`'s old files share a word with `user`'s
    /// written lines (a used name must be both).
    fn one_way(
        &mut self,
        repo: &Repository,
        changer: &SideRef<'_>,
        user: &SideRef<'_>,
    ) -> Vec<SemanticNote> {
        let used = self.side_words(repo, user);
        if !self.old_files_mention(repo, changer, &used) {
            return Vec::new();
        }
        let changed: Vec<SignatureChange> = self
            .signature_changes_of(repo, changer)
            .iter()
            .filter(|s| {
                used.get(&s.lang.family())
                    .is_some_and(|w| w.contains(&s.name))
            })
            .cloned()
            .collect();
        if changed.is_empty() {
            return Vec::new();
        }
        // The user's own changes of those names (the same change on both
        // sides is no note).
        let mut names = Words::new();
        for s in &changed {
            names
                .entry(s.lang.family())
                .or_default()
                .insert(s.name.clone());
        }
        let user_changed = if self.old_files_mention(repo, user, &names) {
            self.signature_changes_of(repo, user)
        } else {
            Arc::default()
        };
        semantic_notes(
            repo,
            self,
            changer.name,
            &changed,
            user.name,
            user.changes,
            &user_changed,
        )
    }

    /// A side's signature changes, cached by its key.
    fn signature_changes_of(
        &mut self,
        repo: &Repository,
        side: &SideRef<'_>,
    ) -> Arc<Vec<SignatureChange>> {
        if let Some(found) = self.signature_changes.get(&side.key) {
            return found.clone();
        }
        let found = Arc::new(signature_changes(repo, self, side.changes));
        remember(&mut self.signature_changes, side.key, found)
    }

    /// The words of the lines a side wrote, by family.
    fn side_words(&mut self, repo: &Repository, side: &SideRef<'_>) -> Arc<Words> {
        if let Some(found) = self.side_words.get(&side.key) {
            return found.clone();
        }
        let mut out = Words::new();
        for change in side.changes {
            let Some(lang) = Lang::of_path(&change.path) else {
                continue;
            };
            if let Some(words) = self.written_words(repo, change) {
                out.entry(lang.family())
                    .or_default()
                    .extend(words.iter().cloned());
            }
        }
        remember(&mut self.side_words, side.key, Arc::new(out))
    }

    /// The words of the lines `change` wrote (none for a deleted, binary or
    /// unknown-language file).
    fn written_words(
        &mut self,
        repo: &Repository,
        change: &Change,
    ) -> Option<Arc<HashSet<String>>> {
        if !is_text_file(change) || change.kind == ChangeKind::Deleted {
            return None;
        }
        let family = Lang::of_path(&change.path)?.family();
        let new = change.new?.0;
        let key = (change.old.map(|e| e.0), new, family);
        if let Some(found) = self.written.get(&key) {
            return Some(found.clone());
        }
        let lines = written_lines(change);
        let words = text_of(repo, new, |t| text::words_of_lines(t, &lines, family))?;
        Some(remember(&mut self.written, key, Arc::new(words)))
    }

    /// Whether an old file of `side`'s changes (the definitions its
    /// signature changes come from) contains a word of `words` of its
    /// language family: whether the union of those files' words (per
    /// family, cached by the side's key) meets `words`.
    fn old_files_mention(&mut self, repo: &Repository, side: &SideRef<'_>, words: &Words) -> bool {
        let have = self.old_words(repo, side);
        words.iter().any(|(family, wanted)| {
            have.get(family).is_some_and(|have| {
                let (small, large) = if wanted.len() <= have.len() {
                    (wanted, have)
                } else {
                    (have, wanted)
                };
                small.iter().any(|w| large.contains(w))
            })
        })
    }

    /// The words of a side's old files (each text file it changed, as it
    /// was in the merge base), by family.
    fn old_words(&mut self, repo: &Repository, side: &SideRef<'_>) -> Arc<Words> {
        if let Some(found) = self.old_words.get(&side.key) {
            return found.clone();
        }
        let mut out = Words::new();
        for change in side.changes.iter().filter(|c| is_text_file(c)) {
            let path = change.old_path.as_deref().unwrap_or(&change.path);
            let (Some(lang), Some(old)) = (Lang::of_path(path), change.old) else {
                continue;
            };
            let key = (old.0, lang.family());
            let words = match self.blob_words.get(&key) {
                Some(found) => found.clone(),
                None => {
                    let mut set = HashSet::new();
                    text_of(repo, old.0, |t| text::add_words(t, lang.family(), &mut set));
                    remember(&mut self.blob_words, key, Arc::new(set))
                }
            };
            out.entry(lang.family())
                .or_default()
                .extend(words.iter().cloned());
        }
        remember(&mut self.old_words, side.key, Arc::new(out))
    }

    /// The symbols of blob `id`, the whole file at `path`, read as `lang`:
    /// `None` when it is missing, binary, larger than [`MAX_BYTES`] or
    /// cannot be parsed. Parsed incrementally from the kept tree of another version
    /// of `path` when there is one ([`parse_from`]: the same symbols as a
    /// fresh parse), and its tree kept for the next version.
    pub fn symbols(
        &mut self,
        repo: &Repository,
        path: &str,
        id: Oid,
        lang: Lang,
    ) -> Option<Arc<FileSymbols>> {
        self.settle();
        // A partial entry (`regions`) is no answer here: parsed whole.
        let whole = |f: &Option<Arc<FileSymbols>>| f.as_ref().is_none_or(|f| f.covered.is_none());
        if let Some(found) = self.files.get(&(id, lang)).filter(|f| whole(f)) {
            return found.clone();
        }
        if self.files.len() >= MAX_CACHED {
            self.files.clear();
        }
        let on_disk = self.disk.as_mut().and_then(|d| d.get(id, lang));
        if let Some(found) = on_disk.map(|f| Some(Arc::new(f))).filter(whole) {
            self.files.insert((id, lang), found.clone());
            return found;
        }
        let parsed = parsable_blob(repo, id).and_then(|blob| {
            let content = blob.content();
            self.parsed += 1;
            let previous = self.nearest_kept(path, lang, content);
            let (symbols, tree, incremental) = {
                let previous = previous.as_ref().map(|k| (&*k.source, &k.tree));
                parse_from(content, lang, previous)?
            };
            self.reparsed += u64::from(incremental);
            Some(self.keep_parse(path, id, lang, content, symbols, Some(tree)))
        });
        self.files.insert((id, lang), parsed.clone());
        parsed
    }

    /// The kept version of `path` (as `lang`) nearest to `text`: the one
    /// whose differences with it span the fewest bytes.
    fn nearest_kept(&mut self, path: &str, lang: Lang, text: &[u8]) -> Option<KeptRef> {
        let nearest = self
            .kept
            .iter_mut()
            .filter(|k| k.path == path && k.lang == lang)
            .min_by_key(|k| edits::differing_bytes(&k.source, text))?;
        nearest.used = std::time::Instant::now();
        Some(KeptRef {
            source: nearest.source.clone(),
            tree: nearest.tree.clone(),
        })
    }

    /// Lets go of the kept trees not used for `idle`; whether any went.
    pub fn drop_idle_trees(&mut self, idle: std::time::Duration) -> bool {
        let before = self.kept.len();
        self.kept.retain(|k| k.used.elapsed() < idle);
        self.kept.len() < before
    }

    /// Keeps a tree, first; the least recently kept go past
    /// [`KEPT_TREES`] or [`KEPT_BYTES`].
    fn keep(&mut self, kept: Kept) {
        self.kept.insert(0, kept);
        let mut total = 0;
        let mut n = 0;
        for k in &self.kept {
            if n == KEPT_TREES || (n > 0 && total + k.cost > KEPT_BYTES) {
                break;
            }
            total += k.cost;
            n += 1;
        }
        self.kept.truncate(n);
    }

    /// Trees kept and their estimated bytes (for tests and benchmarks).
    pub fn kept(&self) -> (usize, usize) {
        (self.kept.len(), self.kept.iter().map(|k| k.cost).sum())
    }

    /// The symbols of the file at `path` in blob `id` (language by path).
    pub fn of_path(
        &mut self,
        repo: &Repository,
        id: Option<Oid>,
        path: &str,
    ) -> Option<Arc<FileSymbols>> {
        let lang = Lang::of_path(path)?;
        self.symbols(repo, path, id?, lang)
    }

    pub fn len(&self) -> usize {
        self.files.len()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }
}

/// A kept version's source and tree (a cheap copy of both).
struct KeptRef {
    source: Arc<[u8]>,
    tree: tree_sitter::Tree,
}

/// The lines of its own file a change wrote (all of a new file's).
pub(super) fn written_lines(change: &Change) -> Vec<LineRange> {
    if change.kind == ChangeKind::Added && change.hunks.is_empty() {
        return vec![LineRange {
            start: 1,
            lines: u32::MAX / 2,
        }];
    }
    change
        .hunks
        .iter()
        .filter(|h| h.new_lines > 0)
        .map(|h| LineRange {
            start: h.new_start,
            lines: h.new_lines,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(source: &str, lang: Lang) -> Vec<(String, u32, u32, Option<String>)> {
        parse(source.as_bytes(), lang)
            .expect("parses")
            .symbols
            .into_iter()
            .map(|s| (s.label(), s.first, s.last, s.signature))
            .collect()
    }

    #[test]
    fn each_language_yields_its_functions_with_signatures() {
        let rust = "pub struct Config {\n    a: u32,\n}\n\nimpl Config {\n    pub fn load(path: &Path) -> Result<Config> {\n        parse(path)\n    }\n}\n";
        assert_eq!(
            labels(rust, Lang::Rust),
            vec![
                ("struct Config".into(), 1, 3, None),
                ("impl Config".into(), 5, 9, None),
                (
                    "fn load".into(),
                    6,
                    8,
                    Some("pub fn load(path: &Path) -> Result<Config>".into())
                ),
            ]
        );
        let python = "class A:\n    @staticmethod\n    def load(path, *, strict=False) -> dict:\n        return parse(path)\n";
        assert_eq!(
            labels(python, Lang::Python),
            vec![
                ("class A".into(), 1, 4, None),
                (
                    "def load".into(),
                    3,
                    4,
                    Some("def load(path, *, strict=False) -> dict".into())
                ),
            ]
        );
        let c = "static int parse_config(const char *path,\n\t\t\tint flags)\n{\n\treturn 0;\n}\nint load(void);\nstruct s { int a; };\n";
        assert_eq!(
            labels(c, Lang::C),
            vec![
                (
                    "function parse_config".into(),
                    1,
                    5,
                    Some("static int parse_config(const char *path, int flags)".into())
                ),
                ("function load".into(), 6, 6, Some("int load(void)".into())),
                ("struct s".into(), 7, 7, None),
            ]
        );
        let go =
            "package p\n\nfunc (c *Config) Load(path string) (int, error) {\n\treturn 0, nil\n}\n";
        assert_eq!(
            labels(go, Lang::Go),
            vec![(
                "func Load".into(),
                3,
                5,
                Some("func (c *Config) Load(path string) (int, error)".into())
            )]
        );
        let ts = "export function load(path: string): Config {\n  return parse(path);\n}\nconst save = (c: Config) => {\n  write(c);\n};\nclass Store {\n  get(key: string): number { return 1; }\n}\n";
        assert_eq!(
            labels(ts, Lang::TypeScript),
            vec![
                (
                    "function load".into(),
                    1,
                    3,
                    Some("function load(path: string): Config".into())
                ),
                (
                    "function save".into(),
                    4,
                    6,
                    Some("save = (c: Config) =>".into())
                ),
                ("class Store".into(), 7, 9, None),
                (
                    "method get".into(),
                    8,
                    8,
                    Some("get(key: string): number".into())
                ),
            ]
        );
        let java = "class A {\n  @Override\n  public int load(String path) throws IOException {\n    return 0;\n  }\n}\n";
        assert_eq!(
            labels(java, Lang::Java),
            vec![
                ("class A".into(), 1, 6, None),
                (
                    "method load".into(),
                    2,
                    5,
                    Some("public int load(String path) throws IOException".into())
                ),
            ]
        );
        let cpp = "namespace n {\nint Parser::parse(const std::string& s) const {\n  return helper(s);\n}\n}\n";
        assert_eq!(
            labels(cpp, Lang::Cpp),
            vec![
                ("namespace n".into(), 1, 5, None),
                (
                    "function parse".into(),
                    2,
                    4,
                    Some("int Parser::parse(const std::string& s) const".into())
                ),
            ]
        );
    }

    #[test]
    fn uses_leave_out_the_names_being_defined() {
        let symbols = parse(
            b"fn load() {\n    parse(1);\n}\nfn parse(x: u32) {}\n",
            Lang::Rust,
        )
        .unwrap();
        assert_eq!(symbols.uses.get("parse"), Some(&vec![2]));
        assert_eq!(symbols.uses.get("load"), None);
    }

    #[test]
    fn enclosing_prefers_the_innermost_function() {
        let symbols = parse(
            b"impl A {\n    fn one() {\n        x();\n    }\n\n    fn two() {}\n}\n",
            Lang::Rust,
        )
        .unwrap();
        let names = |start, lines| -> Vec<String> {
            symbols
                .enclosing(LineRange { start, lines })
                .iter()
                .map(|s| s.label())
                .collect()
        };
        assert_eq!(names(3, 1), vec!["fn one"]);
        assert_eq!(names(3, 4), vec!["fn one", "fn two"]);
        assert_eq!(names(5, 1), vec!["impl A"], "between functions: the type");
        assert!(names(9, 1).is_empty());
    }

    #[test]
    fn canonical_signatures_ignore_layout_only() {
        assert_eq!(
            canonical("int f(int a,\n\t int b)"),
            canonical("int f(int a, int b)")
        );
        assert_ne!(canonical("int f(int a)"), canonical("int f(long a)"));
        assert_ne!(canonical("unsigned int f()"), canonical("unsignedint f()"));
    }

    #[test]
    fn unknown_languages_and_garbage_have_no_symbols_to_fear() {
        assert_eq!(Lang::of_path("README.md"), None);
        assert_eq!(Lang::of_path("src/a.H"), Some(Lang::C));
        assert_eq!(Lang::of_path("Makefile"), None);
        // Malformed input still parses (tree-sitter recovers), without a
        // panic.
        let symbols = parse(b"fn (((( {{{{ \xff\xfe", Lang::Rust).unwrap();
        assert!(symbols.symbols.iter().all(|s| !s.name.is_empty()));
    }
}
