//! The tree-sitter side of the symbol index: the languages with a grammar,
//! and one file parsed into its definitions and the identifiers it uses.
//!
//! Invariants: pure (bytes in, symbols out); a parse over
//! [`PARSE_BUDGET`] gives nothing; no recursion over the tree (hostile
//! input may nest deeply).

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use tree_sitter::{Node, ParseOptions, Parser, Tree};

use super::{FileSymbols, Symbol};

/// The longest one file's parse may take (a file of
/// [`super::MAX_BYTES`] of ordinary code parses in a fraction of it).
const PARSE_BUDGET: Duration = Duration::from_millis(500);

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

    pub(super) fn grammar(self) -> tree_sitter::Language {
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
    pub(super) fn function_word(self) -> &'static str {
        match self {
            Lang::Rust => "fn",
            Lang::Python => "def",
            Lang::Go => "func",
            Lang::JavaScript | Lang::TypeScript | Lang::Tsx | Lang::C | Lang::Cpp => "function",
            Lang::Java => "method",
        }
    }
}

/// Parses `source` as `lang`.
pub fn parse(source: &[u8], lang: Lang) -> Option<FileSymbols> {
    parse_from(source, lang, None).map(|(symbols, _, _)| symbols)
}

/// Parses `source` as `lang`, incrementally from `previous` (an earlier
/// version of the same file, as `lang`, and its tree) when given:
/// tree-sitter re-parses only what the edits between the two versions
/// can reach, and the tree it gives is the one a fresh parse gives. The
/// tree is returned to be the next version's `previous`, with whether it
/// came from the incremental parse (`false`: parsed from scratch).
pub fn parse_from(
    source: &[u8],
    lang: Lang,
    previous: Option<(&[u8], &Tree)>,
) -> Option<(FileSymbols, Tree, bool)> {
    let edits = previous.map(|(text, _)| super::edits::edits(text, source));
    let old = previous.zip(edits.as_ref()).map(|((_, tree), edits)| {
        let mut tree = tree.clone();
        for edit in edits {
            tree.edit(edit);
        }
        tree
    });
    let parse = |old: Option<&Tree>| with_parser(lang, |parser| parse_tree(parser, source, old));
    let mut tree = parse(old.as_ref())?;
    let mut incremental = old.is_some();
    // Error recovery is where an incremental parse can differ from a
    // fresh one (it recovers among reused neighbours): a tree with errors
    // other than the previous version's own, untouched and moved by the
    // edits, is parsed again from scratch.
    if let (Some((_, before)), Some(edits)) = (previous, &edits) {
        if tree.root_node().has_error() && !same_errors(before, &tree, edits) {
            tree = parse(None)?;
            incremental = false;
        }
    }
    Some((extract(&tree, source, lang), tree, incremental))
}

thread_local! {
    /// One parser per language and thread, reused.
    static PARSERS: RefCell<HashMap<Lang, Parser>> = RefCell::new(HashMap::new());
}

/// Runs `f` with this thread's parser for `lang`.
pub(super) fn with_parser<T>(lang: Lang, f: impl FnOnce(&mut Parser) -> Option<T>) -> Option<T> {
    PARSERS.with(|parsers| {
        let mut parsers = parsers.borrow_mut();
        let parser = match parsers.entry(lang) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                let mut parser = Parser::new();
                parser.set_language(&lang.grammar()).ok()?;
                e.insert(parser)
            }
        };
        f(parser)
    })
}

/// The byte ranges of a tree's syntax errors (`ERROR` and missing nodes),
/// in order.
fn errors(tree: &Tree) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut cursor = tree.walk();
    'walk: loop {
        let node = cursor.node();
        let descend = if node.is_error() || node.is_missing() {
            out.push((node.start_byte(), node.end_byte()));
            false
        } else {
            node.has_error()
        };
        if descend && cursor.goto_first_child() {
            continue;
        }
        while !cursor.goto_next_sibling() {
            if !cursor.goto_parent() {
                break 'walk;
            }
        }
    }
    out
}

/// Whether `new`'s errors are exactly `old`'s, none touched by `edits`
/// (given last in the file first, in `old`'s bytes), each moved by the
/// edits before it.
fn same_errors(old: &Tree, new: &Tree, edits: &[tree_sitter::InputEdit]) -> bool {
    let mut moved = Vec::new();
    for (start, end) in errors(old) {
        let mut shift: isize = 0;
        for e in edits {
            // Touching (or adjacent to) an edit: the recovery may change.
            if e.start_byte <= end && start <= e.old_end_byte {
                return false;
            }
            if e.old_end_byte <= start {
                shift += e.new_end_byte as isize - e.old_end_byte as isize;
            }
        }
        moved.push((
            (start as isize + shift) as usize,
            (end as isize + shift) as usize,
        ));
    }
    moved == errors(new)
}

pub(super) fn parse_tree(parser: &mut Parser, source: &[u8], old: Option<&Tree>) -> Option<Tree> {
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
    let tree = parser.parse_with_options(&mut read, old, Some(options));
    // A parse stopped by its budget leaves the parser mid-way.
    parser.reset();
    tree
}

/// The definitions and uses in `tree` (a parse of `source`).
pub(super) fn extract(tree: &Tree, source: &[u8], lang: Lang) -> FileSymbols {
    let mut out = FileSymbols::default();
    let mut names: HashSet<usize> = HashSet::new();
    // Depth-first, preorder, with a cursor (no recursion: hostile input
    // may nest deeply).
    let mut cursor = tree.walk();
    'walk: loop {
        let node = cursor.node();
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
                    let row = node.start_position().row as u32 + 1;
                    match out.uses.get_mut(text) {
                        Some(lines) => lines.push(row),
                        None => {
                            out.uses.insert(text.to_string(), vec![row]);
                        }
                    }
                }
            }
        }
        if cursor.goto_first_child() {
            continue;
        }
        while !cursor.goto_next_sibling() {
            if !cursor.goto_parent() {
                break 'walk;
            }
        }
    }
    for lines in out.uses.values_mut() {
        lines.sort_unstable();
        lines.dedup();
    }
    out
}

/// Whitespace collapsed to single spaces, trimmed.
pub(super) fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
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

/// What a definition node is: its word (`fn`, `struct`…), the node of its
/// name, whether it is a function, and its body.
type Shape<'t> = (&'static str, Node<'t>, bool, Option<Node<'t>>);

fn name_of(node: Node<'_>) -> Option<Node<'_>> {
    node.child_by_field_name("name")
}

/// A function shape: `word`, its `name` field, its `body` field.
fn function<'t>(word: &'static str, node: Node<'t>) -> Option<Shape<'t>> {
    Some((word, name_of(node)?, true, node.child_by_field_name("body")))
}

/// A type shape: `word` and its `name` field.
fn named<'t>(word: &'static str, node: Node<'t>) -> Option<Shape<'t>> {
    Some((word, name_of(node)?, false, None))
}

fn rust_shape(node: Node<'_>) -> Option<Shape<'_>> {
    match node.kind() {
        "function_item" | "function_signature_item" => function("fn", node),
        "struct_item" => named("struct", node),
        "enum_item" => named("enum", node),
        "trait_item" => named("trait", node),
        "mod_item" => named("mod", node),
        "impl_item" => {
            let ty = node.child_by_field_name("type")?;
            let name = if ty.kind() == "generic_type" {
                ty.child_by_field_name("type")?
            } else {
                ty
            };
            Some(("impl", name, false, None))
        }
        _ => None,
    }
}

fn python_shape(node: Node<'_>) -> Option<Shape<'_>> {
    match node.kind() {
        "function_definition" => function("def", node),
        "class_definition" => named("class", node),
        _ => None,
    }
}

/// JavaScript, TypeScript and TSX (the TypeScript-only kinds never occur
/// in JavaScript's trees).
fn script_shape(node: Node<'_>) -> Option<Shape<'_>> {
    match node.kind() {
        "function_declaration" | "generator_function_declaration" | "function_signature" => {
            function("function", node)
        }
        "method_definition" | "method_signature" | "abstract_method_signature" => {
            function("method", node)
        }
        "variable_declarator" => {
            let value = node.child_by_field_name("value")?;
            if !matches!(
                value.kind(),
                "arrow_function" | "function_expression" | "function"
            ) {
                return None;
            }
            let name = name_of(node)?;
            if name.kind() != "identifier" {
                return None;
            }
            Some(("function", name, true, value.child_by_field_name("body")))
        }
        "class_declaration" | "abstract_class_declaration" => named("class", node),
        "interface_declaration" => named("interface", node),
        "type_alias_declaration" => named("type", node),
        "enum_declaration" => named("enum", node),
        _ => None,
    }
}

fn go_shape(node: Node<'_>) -> Option<Shape<'_>> {
    match node.kind() {
        "function_declaration" | "method_declaration" => function("func", node),
        "type_spec" => named("type", node),
        _ => None,
    }
}

fn java_shape(node: Node<'_>) -> Option<Shape<'_>> {
    match node.kind() {
        "method_declaration" | "constructor_declaration" => function("method", node),
        "class_declaration" | "record_declaration" => named("class", node),
        "interface_declaration" => named("interface", node),
        "enum_declaration" => named("enum", node),
        _ => None,
    }
}

/// C and C++ (`cpp`: the C++-only kinds).
fn c_shape(node: Node<'_>, cpp: bool) -> Option<Shape<'_>> {
    let kind = node.kind();
    match kind {
        "function_definition" => {
            let (name, function) = declarator_name(node.child_by_field_name("declarator")?)?;
            function.then_some(("function", name, true, node.child_by_field_name("body")))
        }
        // A prototype (`int f(int);`) or, in a C++ class, a method's.
        "declaration" | "field_declaration" => {
            let (name, function) = declarator_name(node.child_by_field_name("declarator")?)?;
            function.then_some(("function", name, true, None))
        }
        "struct_specifier" | "union_specifier" | "enum_specifier" => {
            node.child_by_field_name("body")?;
            let word = match kind {
                "struct_specifier" => "struct",
                "union_specifier" => "union",
                _ => "enum",
            };
            named(word, node)
        }
        "class_specifier" if cpp => {
            node.child_by_field_name("body")?;
            named("class", node)
        }
        "namespace_definition" if cpp => named("namespace", node),
        _ => None,
    }
}

/// The definition `node` is, with the node of its name.
fn definition<'t>(node: Node<'t>, source: &[u8], lang: Lang) -> Option<(Symbol, Node<'t>)> {
    let (word, name, function, body) = match lang {
        Lang::Rust => rust_shape(node),
        Lang::Python => python_shape(node),
        Lang::JavaScript | Lang::TypeScript | Lang::Tsx => script_shape(node),
        Lang::Go => go_shape(node),
        Lang::Java => java_shape(node),
        Lang::C => c_shape(node, false),
        Lang::Cpp => c_shape(node, true),
    }?;
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
    let (start, end) = (node.start_position(), node.end_position());
    let last = end.row as u32 + 1 - u32::from(end.column == 0 && end.row > start.row);
    Some((
        Symbol {
            kind: word,
            name: name_text,
            first: start.row as u32 + 1,
            last,
            head_last: body.map_or(last, |b| b.start_position().row as u32 + 1),
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
