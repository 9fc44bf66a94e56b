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
//! Invariants: pure over the object database (reads blobs, writes
//! nothing); a file in no known language, larger than [`MAX_BYTES`] or
//! binary has no symbols; nothing here decides a merge verdict.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use git2::{Oid, Repository};
use owt_protocol::guard::{LineRange, SemanticNote};
use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use tree_sitter::{Node, ParseOptions, Parser};

use super::changes::{Change, ChangeKind};

/// Files larger than this are not parsed (generated code, vendored
/// bundles): no symbols, no notes.
pub const MAX_BYTES: usize = 1 << 20;

/// The longest one file's parse may take (a file of [`MAX_BYTES`] of
/// ordinary code parses in a fraction of it).
const PARSE_BUDGET: Duration = Duration::from_millis(500);

/// Blobs kept before the cache starts over (a long `owt lsp` session sees
/// many versions of the same files).
const MAX_CACHED: usize = 8192;

/// Signatures are shown shortened to this many characters.
const SHOWN_CHARS: usize = 120;

/// The languages with a grammar.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Lang {
    Rust,
    Python,
    JavaScript,
    TypeScript,
    Tsx,
    Go,
    C,
    Cpp,
    Java,
}

impl Lang {
    /// The language of a path, by its extension (`.h` is C).
    pub fn of_path(path: &str) -> Option<Lang> {
        let name = path.rsplit('/').next().unwrap_or(path);
        let ext = name.rsplit_once('.')?.1.to_ascii_lowercase();
        Some(match ext.as_str() {
            "rs" => Lang::Rust,
            "py" | "pyi" => Lang::Python,
            "js" | "mjs" | "cjs" | "jsx" => Lang::JavaScript,
            "ts" | "mts" | "cts" => Lang::TypeScript,
            "tsx" => Lang::Tsx,
            "go" => Lang::Go,
            "c" | "h" => Lang::C,
            "cc" | "cpp" | "cxx" | "c++" | "hh" | "hpp" | "hxx" | "h++" | "ipp" => Lang::Cpp,
            "java" => Lang::Java,
            _ => return None,
        })
    }

    /// Languages whose code calls each other's functions by name (C and
    /// C++; JavaScript and TypeScript).
    pub fn family(self) -> u8 {
        match self {
            Lang::Rust => 0,
            Lang::Python => 1,
            Lang::JavaScript | Lang::TypeScript | Lang::Tsx => 2,
            Lang::Go => 3,
            Lang::C | Lang::Cpp => 4,
            Lang::Java => 5,
        }
    }

    fn grammar(self) -> tree_sitter::Language {
        match self {
            Lang::Rust => tree_sitter_rust::LANGUAGE.into(),
            Lang::Python => tree_sitter_python::LANGUAGE.into(),
            Lang::JavaScript => tree_sitter_javascript::LANGUAGE.into(),
            Lang::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
            Lang::Tsx => tree_sitter_typescript::LANGUAGE_TSX.into(),
            Lang::Go => tree_sitter_go::LANGUAGE.into(),
            Lang::C => tree_sitter_c::LANGUAGE.into(),
            Lang::Cpp => tree_sitter_cpp::LANGUAGE.into(),
            Lang::Java => tree_sitter_java::LANGUAGE.into(),
        }
    }

    /// The word a function of this language is named with (`fn`, `def`…).
    fn function_word(self) -> &'static str {
        match self {
            Lang::Rust => "fn",
            Lang::Python => "def",
            Lang::Go => "func",
            Lang::JavaScript | Lang::TypeScript | Lang::Tsx | Lang::C | Lang::Cpp => "function",
            Lang::Java => "method",
        }
    }
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

/// Parsed blobs, by `(blob, language)`, and each side's signature changes,
/// by `(merge-base tree, snapshot)`.
pub struct SymbolIndex {
    /// Off: no symbols, no `semantic` notes (nothing is parsed).
    pub enabled: bool,
    files: HashMap<(Oid, Lang), Option<Arc<FileSymbols>>>,
    pub signature_changes: HashMap<(Oid, Oid), Arc<Vec<SignatureChange>>>,
    /// Blobs parsed since this index was made (for tests and benchmarks).
    pub parsed: u64,
}

impl Default for SymbolIndex {
    fn default() -> Self {
        SymbolIndex {
            enabled: true,
            files: HashMap::new(),
            signature_changes: HashMap::new(),
            parsed: 0,
        }
    }
}

impl SymbolIndex {
    /// Keeps a side's signature changes (the cache starts over when full).
    pub fn remember_signature_changes(
        &mut self,
        key: (Oid, Oid),
        changes: Arc<Vec<SignatureChange>>,
    ) {
        if self.signature_changes.len() >= MAX_CACHED {
            self.signature_changes.clear();
        }
        self.signature_changes.insert(key, changes);
    }

    /// The symbols of blob `id` read as `lang`: `None` when it is missing,
    /// binary, larger than [`MAX_BYTES`] or cannot be parsed.
    pub fn symbols(&mut self, repo: &Repository, id: Oid, lang: Lang) -> Option<Arc<FileSymbols>> {
        if let Some(found) = self.files.get(&(id, lang)) {
            return found.clone();
        }
        if self.files.len() >= MAX_CACHED {
            self.files.clear();
        }
        let parsed = repo.find_blob(id).ok().and_then(|blob| {
            let content = blob.content();
            if blob.is_binary() || content.len() > MAX_BYTES {
                return None;
            }
            self.parsed += 1;
            parse(content, lang).map(Arc::new)
        });
        self.files.insert((id, lang), parsed.clone());
        parsed
    }

    /// The symbols of the file at `path` in blob `id` (language by path).
    pub fn of_path(
        &mut self,
        repo: &Repository,
        id: Option<Oid>,
        path: &str,
    ) -> Option<Arc<FileSymbols>> {
        let lang = Lang::of_path(path)?;
        self.symbols(repo, id?, lang)
    }

    pub fn len(&self) -> usize {
        self.files.len()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }
}

/// Parses `source` as `lang`.
pub fn parse(source: &[u8], lang: Lang) -> Option<FileSymbols> {
    let mut parser = Parser::new();
    parser.set_language(&lang.grammar()).ok()?;
    // Hostile input must not hold the guard: a parse over its budget gives
    // no symbols.
    let started = Instant::now();
    let mut within_budget = |_: &tree_sitter::ParseState| {
        if started.elapsed() > PARSE_BUDGET {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    };
    let options = ParseOptions::new().progress_callback(&mut within_budget);
    let mut read = |offset: usize, _: tree_sitter::Point| source.get(offset..).unwrap_or_default();
    let tree = parser.parse_with_options(&mut read, None, Some(options))?;
    let mut out = FileSymbols::default();
    let mut names: HashSet<usize> = HashSet::new();
    // Depth-first, preorder, without recursion (hostile input may nest
    // deeply).
    let mut stack = vec![tree.root_node()];
    while let Some(node) = stack.pop() {
        if node.is_named() {
            if let Some((symbol, name_node)) = definition(node, source, lang) {
                names.insert(name_node.id());
                out.symbols.push(symbol);
            }
            if node.child_count() == 0
                && node.kind().ends_with("identifier")
                && !names.contains(&node.id())
            {
                if let Ok(text) = node.utf8_text(source) {
                    out.uses
                        .entry(text.to_string())
                        .or_default()
                        .push(node.start_position().row as u32 + 1);
                }
            }
        }
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
        stack.extend(children.into_iter().rev());
    }
    for lines in out.uses.values_mut() {
        lines.sort_unstable();
        lines.dedup();
    }
    Some(out)
}

/// Whitespace collapsed to single spaces, trimmed.
fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A signature in a form where only meaningful differences remain: no
/// whitespace except between two word characters.
fn canonical(signature: &str) -> String {
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

/// The identifier a C/C++ declarator declares, and whether it declares a
/// function (a `function_declarator` on the way).
fn declarator_name(mut node: Node<'_>) -> Option<(Node<'_>, bool)> {
    let mut function = false;
    for _ in 0..32 {
        match node.kind() {
            "identifier" | "field_identifier" | "operator_name" | "destructor_name" => {
                return Some((node, function))
            }
            "qualified_identifier" => node = node.child_by_field_name("name")?,
            "function_declarator" => {
                function = true;
                node = node.child_by_field_name("declarator")?;
            }
            "pointer_declarator" | "reference_declarator" | "init_declarator" => {
                node = node.child_by_field_name("declarator").or_else(|| {
                    node.named_child(
                        u32::try_from(node.named_child_count())
                            .ok()?
                            .checked_sub(1)?,
                    )
                })?;
            }
            // A function pointer, an array…: not a function definition.
            _ => return None,
        }
    }
    None
}

/// The text of `node` from its first child that is not an annotation or
/// attribute up to the start of `body` (or its end), whitespace collapsed.
fn signature_text(node: Node<'_>, body: Option<Node<'_>>, source: &[u8]) -> Option<String> {
    let mut start = node.start_byte();
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        match child.kind() {
            "attribute_item" | "decorator" | "comment" | "line_comment" | "block_comment" => {
                start = child.end_byte()
            }
            // Java: `@Override public`: the modifiers stay, the
            // annotations go.
            "modifiers" => {
                let mut inner = child.walk();
                let first = child.children(&mut inner).find(|m| {
                    !matches!(
                        m.kind(),
                        "annotation" | "marker_annotation" | "line_comment" | "block_comment"
                    )
                });
                start = first.map_or(child.end_byte(), |m| m.start_byte());
                break;
            }
            _ => break,
        }
    }
    let end = body.map_or(node.end_byte(), |b| b.start_byte()).max(start);
    let text = std::str::from_utf8(source.get(start..end)?).ok()?;
    let text = collapse(text);
    let text = text.trim_end_matches([';', ':', '{', ' ']).trim_end();
    Some(text.to_string())
}

/// The definition `node` is, with the node of its name.
fn definition<'t>(node: Node<'t>, source: &[u8], lang: Lang) -> Option<(Symbol, Node<'t>)> {
    let kind = node.kind();
    let name_field = |n: Node<'t>| n.child_by_field_name("name");
    let (word, name, function, body): (&'static str, Node<'t>, bool, Option<Node<'t>>) =
        match (lang, kind) {
            (Lang::Rust, "function_item" | "function_signature_item") => (
                "fn",
                name_field(node)?,
                true,
                node.child_by_field_name("body"),
            ),
            (Lang::Rust, "struct_item") => ("struct", name_field(node)?, false, None),
            (Lang::Rust, "enum_item") => ("enum", name_field(node)?, false, None),
            (Lang::Rust, "trait_item") => ("trait", name_field(node)?, false, None),
            (Lang::Rust, "mod_item") => ("mod", name_field(node)?, false, None),
            (Lang::Rust, "impl_item") => {
                let ty = node.child_by_field_name("type")?;
                let name = if ty.kind() == "generic_type" {
                    ty.child_by_field_name("type")?
                } else {
                    ty
                };
                ("impl", name, false, None)
            }
            (Lang::Python, "function_definition") => (
                "def",
                name_field(node)?,
                true,
                node.child_by_field_name("body"),
            ),
            (Lang::Python, "class_definition") => ("class", name_field(node)?, false, None),
            (
                Lang::JavaScript | Lang::TypeScript | Lang::Tsx,
                "function_declaration" | "generator_function_declaration" | "function_signature",
            ) => (
                "function",
                name_field(node)?,
                true,
                node.child_by_field_name("body"),
            ),
            (
                Lang::JavaScript | Lang::TypeScript | Lang::Tsx,
                "method_definition" | "method_signature" | "abstract_method_signature",
            ) => (
                "method",
                name_field(node)?,
                true,
                node.child_by_field_name("body"),
            ),
            (Lang::JavaScript | Lang::TypeScript | Lang::Tsx, "variable_declarator") => {
                let value = node.child_by_field_name("value")?;
                if !matches!(
                    value.kind(),
                    "arrow_function" | "function_expression" | "function"
                ) {
                    return None;
                }
                let name = name_field(node)?;
                if name.kind() != "identifier" {
                    return None;
                }
                ("function", name, true, value.child_by_field_name("body"))
            }
            (
                Lang::JavaScript | Lang::TypeScript | Lang::Tsx,
                "class_declaration" | "abstract_class_declaration",
            ) => ("class", name_field(node)?, false, None),
            (Lang::TypeScript | Lang::Tsx, "interface_declaration") => {
                ("interface", name_field(node)?, false, None)
            }
            (Lang::TypeScript | Lang::Tsx, "type_alias_declaration") => {
                ("type", name_field(node)?, false, None)
            }
            (Lang::TypeScript | Lang::Tsx, "enum_declaration") => {
                ("enum", name_field(node)?, false, None)
            }
            (Lang::Go, "function_declaration" | "method_declaration") => (
                "func",
                name_field(node)?,
                true,
                node.child_by_field_name("body"),
            ),
            (Lang::Go, "type_spec") => ("type", name_field(node)?, false, None),
            (Lang::Java, "method_declaration" | "constructor_declaration") => (
                "method",
                name_field(node)?,
                true,
                node.child_by_field_name("body"),
            ),
            (Lang::Java, "class_declaration" | "record_declaration") => {
                ("class", name_field(node)?, false, None)
            }
            (Lang::Java, "interface_declaration") => ("interface", name_field(node)?, false, None),
            (Lang::Java, "enum_declaration") => ("enum", name_field(node)?, false, None),
            (Lang::C | Lang::Cpp, "function_definition") => {
                let (name, function) = declarator_name(node.child_by_field_name("declarator")?)?;
                if !function {
                    return None;
                }
                ("function", name, true, node.child_by_field_name("body"))
            }
            // A prototype (`int f(int);`) or, in a C++ class, a method's.
            (Lang::C | Lang::Cpp, "declaration" | "field_declaration") => {
                let (name, function) = declarator_name(node.child_by_field_name("declarator")?)?;
                if !function {
                    return None;
                }
                ("function", name, true, None)
            }
            (Lang::C | Lang::Cpp, "struct_specifier" | "union_specifier" | "enum_specifier") => {
                node.child_by_field_name("body")?;
                let word = match kind {
                    "struct_specifier" => "struct",
                    "union_specifier" => "union",
                    _ => "enum",
                };
                (word, name_field(node)?, false, None)
            }
            (Lang::Cpp, "class_specifier") => {
                node.child_by_field_name("body")?;
                ("class", name_field(node)?, false, None)
            }
            (Lang::Cpp, "namespace_definition") => ("namespace", name_field(node)?, false, None),
            _ => return None,
        };
    let name_text = name.utf8_text(source).ok()?.to_string();
    if name_text.is_empty() {
        return None;
    }
    let signature = if function {
        Some(signature_text(node, body, source)?)
    } else {
        None
    };
    let file_local = matches!(lang, Lang::C | Lang::Cpp)
        && signature
            .as_deref()
            .is_some_and(|s| s.split_whitespace().any(|w| w == "static"));
    let word = if function {
        lang_word(lang, word)
    } else {
        word
    };
    Some((
        Symbol {
            kind: word,
            name: name_text,
            first: node.start_position().row as u32 + 1,
            last: node.end_position().row as u32 + 1
                - u32::from(
                    node.end_position().column == 0
                        && node.end_position().row > node.start_position().row,
                ),
            signature,
            file_local,
        },
        name,
    ))
}

fn lang_word(lang: Lang, word: &'static str) -> &'static str {
    if word == "method" {
        word
    } else {
        lang.function_word()
    }
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

fn is_text_file(change: &Change) -> bool {
    let regular = |e: Option<super::tree::Entry>| e.is_none_or(|e| e.1 & 0o170000 == 0o100000);
    !change.binary && regular(change.old) && regular(change.new)
}

/// The functions whose signature `changes` altered or removed, compared
/// over all of them at once (a function moved between two changed files
/// with its signature is no change).
pub fn signature_changes(
    repo: &Repository,
    index: &mut SymbolIndex,
    changes: &[Change],
) -> Vec<SignatureChange> {
    let by_path: HashMap<&str, &Change> = changes.iter().map(|c| (c.path.as_str(), c)).collect();
    // (family, name) → [(canonical signature, path, symbol)].
    let mut old: Defs = BTreeMap::new();
    let mut new: Defs = BTreeMap::new();
    for change in changes.iter().filter(|c| is_text_file(c)) {
        if change.kind == ChangeKind::ModeChanged {
            continue;
        }
        let old_path = change.old_path.as_deref().unwrap_or(&change.path);
        for (defs, entry, path) in [
            (&mut old, change.old, old_path),
            (&mut new, change.new, change.path.as_str()),
        ] {
            let Some(lang) = Lang::of_path(path) else {
                continue;
            };
            let Some(symbols) = entry.and_then(|e| index.symbols(repo, e.0, lang)) else {
                continue;
            };
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
    }
    let mut out = Vec::new();
    for (key, before) in &old {
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
            renamed_to(&old, &new, &by_path, gone)
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

/// The lines of its own file a change wrote (all of a new file's).
fn written_lines(change: &Change) -> Vec<LineRange> {
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

/// Ranges of `lines` (ascending line numbers) merged into runs.
fn runs(lines: &[u32]) -> Vec<LineRange> {
    let mut out: Vec<LineRange> = Vec::new();
    for &line in lines {
        match out.last_mut() {
            Some(r) if r.start + r.lines == line => r.lines += 1,
            _ => out.push(LineRange {
                start: line,
                lines: 1,
            }),
        }
    }
    out
}

/// Signature changes `changer` made (`changed`) that `user`'s changed
/// lines use by name, in any of `user`'s changed files of the same
/// language family. `user_changed`: `user`'s own signature changes (a
/// change both made identically is not reported).
#[allow(clippy::too_many_arguments)]
pub fn semantic_notes(
    repo: &Repository,
    index: &mut SymbolIndex,
    changer: &str,
    changed: &[SignatureChange],
    user: &str,
    user_changes: &[Change],
    user_changed: &[SignatureChange],
) -> Vec<SemanticNote> {
    let mut notes = Vec::new();
    if changed.is_empty() {
        return notes;
    }
    for change in user_changes.iter().filter(|c| is_text_file(c)) {
        if change.kind == ChangeKind::Deleted {
            continue;
        }
        let Some(lang) = Lang::of_path(&change.path) else {
            continue;
        };
        let Some(symbols) = change.new.and_then(|e| index.symbols(repo, e.0, lang)) else {
            continue;
        };
        let written = written_lines(change);
        for sig in changed.iter().filter(|s| s.lang.family() == lang.family()) {
            if sig.file_local && sig.path != change.path {
                continue;
            }
            if user_changed.iter().any(|u| {
                u.name == sig.name && u.after == sig.after && u.lang.family() == sig.lang.family()
            }) {
                continue;
            }
            let Some(lines) = symbols.uses.get(&sig.name) else {
                continue;
            };
            let used: Vec<u32> = lines
                .iter()
                .copied()
                .filter(|l| {
                    written
                        .iter()
                        .any(|r| r.start <= *l && *l < r.start.saturating_add(r.lines))
                })
                .collect();
            let Some(&first) = used.first() else {
                continue;
            };
            notes.push(SemanticNote {
                changed_by: changer.to_string(),
                symbol: sig.symbol.clone(),
                path: sig.path.clone(),
                lines: sig.lines,
                before: sig.before.clone(),
                after: sig.after.clone(),
                used_by: user.to_string(),
                used_in: change.path.clone(),
                used_at: runs(&used),
                used_inside: symbols.around(first).map(Symbol::label),
            });
        }
    }
    notes
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
