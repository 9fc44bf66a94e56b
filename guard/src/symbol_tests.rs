//! Symbol-aware messages and the `semantic` level, on real repositories
//! with linked worktrees (one per agent), in each language with a grammar.

use std::path::Path;

use owt_protocol::guard::{GuardPair, Level};

use super::tests::{write, Fixture};

/// Two agents `a` and `b` from a repository holding `files`, each editing
/// its worktree; the pair as the engine (symbols on) reports it.
fn pair_of(
    files: &[(&str, &str)],
    edit_a: impl FnOnce(&Path),
    edit_b: impl FnOnce(&Path),
) -> Option<GuardPair> {
    let fx = Fixture::new(files);
    let a = fx.worktree("a");
    let b = fx.worktree("b");
    edit_a(&a);
    edit_b(&b);
    let engine = fx.engine(&["a", "b"], &[]);
    engine.pair("a", "b").cloned()
}

/// The notes as `changer symbol (path lines) before -> after; user used_in
/// used_at in used_inside`.
fn notes(pair: &GuardPair) -> Vec<String> {
    pair.semantic
        .iter()
        .map(|n| {
            let at: Vec<String> = n
                .used_at
                .iter()
                .map(|r| format!("{}+{}", r.start, r.lines))
                .collect();
            format!(
                "{} {} ({} {}+{}) `{}` -> `{}`; {} {} {} in {}",
                n.changed_by,
                n.symbol,
                n.path,
                n.lines.start,
                n.lines.lines,
                n.before,
                n.after,
                n.used_by,
                n.used_in,
                at.join(","),
                n.used_inside.as_deref().unwrap_or("-")
            )
        })
        .collect()
}

const CONFIG_RS: &str = "pub struct Config;\n\npub fn parse_config(path: &str) -> Config {\n    let _ = path;\n    Config\n}\n";
const MAIN_RS: &str = "use config::parse_config;\n\nfn load() {\n    let _c = parse_config(\"a.toml\");\n}\n\nfn other() {}\n";

#[test]
fn a_changed_signature_used_by_the_other_side_in_another_file_is_semantic() {
    let pair = pair_of(
        &[("src/config.rs", CONFIG_RS), ("src/main.rs", MAIN_RS)],
        |a| {
            write(
                a,
                "src/config.rs",
                &CONFIG_RS.replace("(path: &str)", "(path: &str, strict: bool)"),
            )
        },
        |b| {
            write(
                b,
                "src/main.rs",
                &MAIN_RS.replace(
                    "fn other() {}",
                    "fn other() {\n    let _d = parse_config(\"b.toml\");\n}",
                ),
            )
        },
    )
    .expect("the pair is reported although no path is shared");
    assert_eq!(pair.level, Level::Semantic);
    assert!(pair.paths.is_empty(), "{:?}", pair.paths);
    assert!(pair.conflicting_paths.is_empty());
    assert_eq!(
        notes(&pair),
        vec![
            "a fn parse_config (src/config.rs 3+4) `pub fn parse_config(path: &str) -> Config` -> \
             `pub fn parse_config(path: &str, strict: bool) -> Config`; b src/main.rs 8+1 in fn other"
        ]
    );
}

#[test]
fn a_body_only_change_or_an_unused_signature_is_not_semantic() {
    // The body changed, not the signature: b's call still builds.
    let pair = pair_of(
        &[("src/config.rs", CONFIG_RS), ("src/main.rs", MAIN_RS)],
        |a| {
            write(
                a,
                "src/config.rs",
                &CONFIG_RS.replace("let _ = path;", "let _ = path.len();"),
            )
        },
        |b| {
            write(
                b,
                "src/main.rs",
                &MAIN_RS.replace("fn other() {}", "fn other() {\n    parse_config(\"b\");\n}"),
            )
        },
    );
    assert_eq!(pair, None);
    // The signature changed, but b's changes do not name it (its file
    // does, on lines b did not write).
    let pair = pair_of(
        &[("src/config.rs", CONFIG_RS), ("src/main.rs", MAIN_RS)],
        |a| {
            write(
                a,
                "src/config.rs",
                &CONFIG_RS.replace("-> Config", "-> Option<Config>"),
            )
        },
        |b| {
            write(
                b,
                "src/main.rs",
                &MAIN_RS.replace("fn other() {}", "fn other() {\n    println!(\"hi\");\n}"),
            )
        },
    );
    assert_eq!(pair, None);
}

#[test]
fn a_function_moved_to_another_file_with_its_signature_is_no_change() {
    let pair = pair_of(
        &[
            ("src/config.rs", CONFIG_RS),
            ("src/main.rs", MAIN_RS),
            ("src/util.rs", "pub fn unrelated() {}\n"),
        ],
        |a| {
            write(a, "src/config.rs", "pub struct Config;\n");
            write(
                a,
                "src/util.rs",
                "pub fn unrelated() {}\n\npub fn parse_config(path: &str) -> Config {\n    let _ = path;\n    Config\n}\n",
            );
        },
        |b| {
            write(
                b,
                "src/main.rs",
                &MAIN_RS.replace("fn other() {}", "fn other() {\n    parse_config(\"b\");\n}"),
            )
        },
    );
    assert_eq!(pair, None);
}

#[test]
fn a_rename_in_one_file_with_a_new_call_next_to_it_names_both_symbols() {
    let base = "def fetch(url):\n    return url\n\n\ndef helper():\n    return 1\n\n\ndef main():\n    helper()\n    return 0\n";
    let pair = pair_of(
        &[("app.py", base)],
        |a| {
            write(
                a,
                "app.py",
                &base.replace("def fetch(url):", "def fetch_url(url, timeout=5):"),
            )
        },
        |b| {
            write(
                b,
                "app.py",
                &base.replace("    helper()\n", "    helper()\n    fetch(\"x\")\n"),
            )
        },
    )
    .expect("a pair");
    assert_eq!(pair.level, Level::Semantic);
    let path = &pair.paths[0];
    assert_eq!(path.level, Level::Overlap, "far apart lines");
    assert_eq!(path.a_symbols, vec!["def fetch"]);
    assert_eq!(path.b_symbols, vec!["def main"]);
    assert_eq!(
        notes(&pair),
        vec!["a def fetch_url (app.py 1+2) `def fetch(url)` -> `def fetch_url(url, timeout=5)`; b app.py 11+1 in def main"]
    );
}

#[test]
fn the_same_signature_change_on_both_sides_is_not_semantic() {
    let pair = pair_of(
        &[("src/config.rs", CONFIG_RS), ("src/main.rs", MAIN_RS)],
        |a| {
            write(
                a,
                "src/config.rs",
                &CONFIG_RS.replace("(path: &str)", "(path: &Path)"),
            )
        },
        |b| {
            write(
                b,
                "src/config.rs",
                &CONFIG_RS.replace("(path: &str)", "(path: &Path)"),
            );
            write(
                b,
                "src/main.rs",
                &MAIN_RS.replace("fn other() {}", "fn other() {\n    parse_config(p);\n}"),
            );
        },
    )
    .expect("the same change is reported");
    assert_eq!(pair.level, Level::SameChange);
    assert!(pair.semantic.is_empty(), "{:?}", notes(&pair));
}

/// One case per language: the base files, a's signature change (old, new
/// text in `def_path`), b's new use in `use_path` (text appended to it).
struct Case {
    files: &'static [(&'static str, &'static str)],
    def_path: &'static str,
    old: &'static str,
    new: &'static str,
    use_path: &'static str,
    /// (old, new) in `use_path`: b's edit, which names the function.
    use_edit: (&'static str, &'static str),
    note: &'static str,
}

const CASES: &[Case] = &[
    Case {
        files: &[
            ("config.h", "#ifndef CONFIG_H\n#define CONFIG_H\nint parse_config(const char *path);\n#endif\n"),
            ("config.c", "#include \"config.h\"\n\nint parse_config(const char *path)\n{\n\treturn path != 0;\n}\n"),
            ("main.c", "#include \"config.h\"\n\nint main(void)\n{\n\treturn 0;\n}\n"),
        ],
        def_path: "config.c",
        old: "int parse_config(const char *path)\n{",
        new: "int parse_config(const char *path, unsigned flags)\n{",
        use_path: "main.c",
        use_edit: ("\treturn 0;", "\treturn parse_config(\"x\");"),
        note: "a function parse_config (config.c 3+4) `int parse_config(const char *path)` -> \
               `int parse_config(const char *path, unsigned flags)`; b main.c 5+1 in function main",
    },
    Case {
        files: &[
            ("lib.go", "package lib\n\nfunc Load(path string) error {\n\treturn nil\n}\n"),
            ("cmd.go", "package lib\n\nfunc Run() {\n}\n"),
        ],
        def_path: "lib.go",
        old: "func Load(path string) error {",
        new: "func Load(path string) (int, error) {",
        use_path: "cmd.go",
        use_edit: ("func Run() {\n", "func Run() {\n\t_ = Load(\"x\")\n"),
        note: "a func Load (lib.go 3+3) `func Load(path string) error` -> \
               `func Load(path string) (int, error)`; b cmd.go 4+1 in func Run",
    },
    Case {
        files: &[
            ("src/api.ts", "export function fetchUser(id: number): User {\n  return load(id);\n}\n"),
            ("src/view.tsx", "export function View() {\n  return null;\n}\n"),
        ],
        def_path: "src/api.ts",
        old: "fetchUser(id: number): User",
        new: "fetchUser(id: string): Promise<User>",
        use_path: "src/view.tsx",
        use_edit: ("  return null;", "  const u = fetchUser(1);\n  return null;"),
        note: "a function fetchUser (src/api.ts 1+3) `function fetchUser(id: number): User` -> \
               `function fetchUser(id: string): Promise<User>`; b src/view.tsx 2+1 in function View",
    },
    Case {
        files: &[
            ("src/util.js", "function slugify(text) {\n  return text.toLowerCase();\n}\nmodule.exports = { slugify };\n"),
            ("src/page.js", "const { slugify } = require('./util');\n\nfunction title(t) {\n  return t;\n}\n"),
        ],
        def_path: "src/util.js",
        old: "function slugify(text) {",
        new: "function slugify(text, separator) {",
        use_path: "src/page.js",
        use_edit: ("  return t;", "  return slugify(t);"),
        note: "a function slugify (src/util.js 1+3) `function slugify(text)` -> \
               `function slugify(text, separator)`; b src/page.js 4+1 in function title",
    },
    Case {
        files: &[
            ("src/Repo.java", "class Repo {\n  int count(String table) {\n    return 0;\n  }\n}\n"),
            ("src/Report.java", "class Report {\n  void print(Repo r) {\n  }\n}\n"),
        ],
        def_path: "src/Repo.java",
        old: "int count(String table) {",
        new: "long count(String table, boolean live) {",
        use_path: "src/Report.java",
        use_edit: ("  void print(Repo r) {\n", "  void print(Repo r) {\n    System.out.println(r.count(\"t\"));\n"),
        note: "a method count (src/Repo.java 2+3) `int count(String table)` -> \
               `long count(String table, boolean live)`; b src/Report.java 3+1 in method print",
    },
    Case {
        files: &[
            ("src/parser.hpp", "class Parser {\n public:\n  int parse(const char* s);\n};\n"),
            ("src/parser.cpp", "#include \"parser.hpp\"\nint Parser::parse(const char* s) {\n  return 0;\n}\n"),
            ("src/main.cpp", "#include \"parser.hpp\"\nint main() {\n  return 0;\n}\n"),
        ],
        def_path: "src/parser.hpp",
        old: "int parse(const char* s);",
        new: "int parse(std::string_view s);",
        use_path: "src/main.cpp",
        use_edit: ("  return 0;", "  Parser p;\n  return p.parse(\"x\");"),
        note: "a function parse (src/parser.hpp 3+1) `int parse(const char* s)` -> \
               `int parse(std::string_view s)`; b src/main.cpp 4+1 in function main",
    },
];

#[test]
fn every_language_with_a_grammar_reports_a_used_signature_change() {
    for case in CASES {
        let pair = pair_of(
            case.files,
            |a| {
                let text = std::fs::read_to_string(a.join(case.def_path)).unwrap();
                assert!(text.contains(case.old), "{}", case.def_path);
                write(a, case.def_path, &text.replacen(case.old, case.new, 1));
            },
            |b| {
                let text = std::fs::read_to_string(b.join(case.use_path)).unwrap();
                assert!(text.contains(case.use_edit.0), "{}", case.use_path);
                write(
                    b,
                    case.use_path,
                    &text.replacen(case.use_edit.0, case.use_edit.1, 1),
                );
            },
        )
        .unwrap_or_else(|| panic!("{}: no pair", case.def_path));
        assert_eq!(pair.level, Level::Semantic, "{}", case.def_path);
        assert_eq!(
            notes(&pair),
            vec![case.note.to_string()],
            "{}",
            case.def_path
        );
    }
}

#[test]
fn a_static_c_function_is_not_the_one_another_file_calls() {
    let pair = pair_of(
        &[
            (
                "a.c",
                "static int cmp(const void *a, const void *b)\n{\n\treturn 0;\n}\n",
            ),
            ("b.c", "int sort(void)\n{\n\treturn 0;\n}\n"),
        ],
        |a| {
            write(
                a,
                "a.c",
                "static int cmp(const void *a, const void *b, void *ctx)\n{\n\treturn 0;\n}\n",
            )
        },
        |b| write(b, "b.c", "int sort(void)\n{\n\treturn cmp(0, 0);\n}\n"),
    );
    assert_eq!(pair, None, "b's cmp is another file's");
}

#[test]
fn conflicting_lines_name_their_enclosing_functions() {
    let base = "fn first() {\n    one();\n    two();\n}\n\nfn second() {\n    three();\n}\n";
    let pair = pair_of(
        &[("src/lib.rs", base)],
        |a| write(a, "src/lib.rs", &base.replace("    two();", "    two(1);")),
        |b| write(b, "src/lib.rs", &base.replace("    two();", "    two(2);")),
    )
    .expect("a pair");
    assert_eq!(pair.level, Level::Conflict);
    assert_eq!(pair.paths[0].a_symbols, vec!["fn first"]);
    assert_eq!(pair.paths[0].b_symbols, vec!["fn first"]);
}

#[test]
fn an_update_parses_only_the_file_that_changed_and_symbols_can_be_off() {
    let fx = Fixture::new(&[("src/config.rs", CONFIG_RS), ("src/main.rs", MAIN_RS)]);
    let a = fx.worktree("a");
    let b = fx.worktree("b");
    write(
        &a,
        "src/config.rs",
        &CONFIG_RS.replace("(path: &str)", "(path: &str, strict: bool)"),
    );
    write(
        &b,
        "src/main.rs",
        &MAIN_RS.replace("fn other() {}", "fn other() {\n    parse_config(\"b\");\n}"),
    );
    let mut engine = fx.engine(&["a", "b"], &[]);
    let first = engine.symbol_parses();
    assert!(
        first >= 3,
        "config.rs before and after, main.rs after: {first}"
    );
    // b writes its file again: only that new version is parsed.
    write(
        &b,
        "src/main.rs",
        &MAIN_RS.replace("fn other() {}", "fn other() {\n    parse_config(\"c\");\n}"),
    );
    engine
        .on_paths_changed("b", &[b.join("src/main.rs")])
        .unwrap();
    assert_eq!(engine.symbol_parses(), first + 1);
    assert_eq!(engine.pair("a", "b").unwrap().level, Level::Semantic);
    // Off: the same pair has no notes (and no pair, sharing no path).
    engine.set_symbols(false);
    engine.recompute_pairs().unwrap();
    assert!(engine.pair("a", "b").is_none());
    assert_eq!(
        engine.symbol_parses(),
        first + 1,
        "nothing parsed while off"
    );
}

/// Three agents: a changes `parse_config`'s signature, b calls it (a
/// pair only a `semantic` note relates), c and b change the same line of
/// `load` (a conflict whose lines name their function).
pub(super) fn held_back_fixture() -> super::tests::Fixture {
    let fx = Fixture::new(&[("src/config.rs", CONFIG_RS), ("src/main.rs", MAIN_RS)]);
    let (a, b, c) = (fx.worktree("a"), fx.worktree("b"), fx.worktree("c"));
    write(
        &a,
        "src/config.rs",
        &CONFIG_RS.replace("(path: &str)", "(path: &str, strict: bool)"),
    );
    let with_call = MAIN_RS.replace("fn other() {}", "fn other() {\n    parse_config(\"b\");\n}");
    write(&b, "src/main.rs", &with_call.replace("a.toml", "b.toml"));
    write(&c, "src/main.rs", &MAIN_RS.replace("a.toml", "c.toml"));
    fx
}

#[test]
fn verdicts_first_then_the_symbols_make_what_a_full_recompute_makes() {
    let fx = held_back_fixture();
    let whole = fx.engine(&["a", "b", "c"], &[]);
    assert_eq!(whole.pair("a", "b").unwrap().level, Level::Semantic);
    let load = "fn load".to_string();
    assert!(whole.pair("b", "c").unwrap().paths[0]
        .a_symbols
        .contains(&load));
    assert!(!whole.symbols_owed());

    let mut engine = fx.uncomputed_engine(&["a", "b", "c"], &[]);
    engine.full_recompute_verdicts().unwrap();
    assert!(engine.symbols_owed());
    assert_eq!(engine.symbol_parses(), 0, "nothing parsed for the verdicts");
    assert!(
        engine.pair("a", "b").is_none(),
        "the semantic note is held back"
    );
    let bc = engine.pair("b", "c").unwrap();
    assert_eq!(bc.level, Level::Conflict, "the verdict is not");
    assert!(bc.paths[0].a_symbols.is_empty());

    let update = engine.complete_symbols().unwrap();
    assert!(!engine.symbols_owed());
    assert!(update.changed_pairs.contains(&("a".into(), "b".into())));
    assert!(update.changed_pairs.contains(&("b".into(), "c".into())));
    for (x, y) in [("a", "b"), ("a", "c"), ("b", "c")] {
        assert_eq!(engine.pair(x, y), whole.pair(x, y), "{x} × {y}");
    }
    assert_eq!(
        engine.complete_symbols().unwrap(),
        Default::default(),
        "nothing owed twice"
    );
    // With the index off nothing is owed.
    engine.set_symbols(false);
    engine.full_recompute_verdicts().unwrap();
    assert!(!engine.symbols_owed());
}

#[test]
fn a_watcher_adds_the_held_back_symbols_as_its_first_update() {
    use std::sync::{Arc, Mutex};
    use std::time::Duration;
    let fx = held_back_fixture();
    let mut engine = fx.uncomputed_engine(&["a", "b", "c"], &[]);
    engine.full_recompute_verdicts().unwrap();
    let watching = super::Watching::new(&engine).unwrap();
    let engine = Arc::new(Mutex::new(engine));
    let (tx, rx) = std::sync::mpsc::channel();
    let _watcher = watching
        .start(
            engine.clone(),
            Duration::from_millis(30),
            move |engine, update| {
                let level = engine.pair("a", "b").map(|p| p.level);
                let _ = tx.send((update.changed_pairs.clone(), level));
            },
        )
        .unwrap();
    let (changed, level) = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the watcher's first update within 10 s");
    assert!(changed.contains(&("a".into(), "b".into())), "{changed:?}");
    assert_eq!(level, Some(Level::Semantic));
}

const ONE_RS: &str = "pub fn alpha(n: u32) -> u32 {\n    let x = n;\n    x\n}\n";
const TWO_RS: &str = "pub fn beta() -> i64 {\n    let y = 2;\n    y\n}\n";

/// Files only one participant changed, whose words the other's written
/// lines do not share, are never parsed: no note could come of them, and
/// they are in no pair's message. The same engine still finds the note
/// once one side calls what the other changed.
#[test]
fn a_file_only_one_participant_touched_is_not_parsed() {
    let fx = Fixture::new(&[("src/one.rs", ONE_RS), ("src/two.rs", TWO_RS)]);
    let a = fx.worktree("a");
    let b = fx.worktree("b");
    write(
        &a,
        "src/one.rs",
        &ONE_RS.replace("let x = n;", "let x = n + 1;"),
    );
    write(
        &b,
        "src/two.rs",
        &TWO_RS.replace("let y = 2;", "let y = 3;"),
    );
    let mut engine = fx.engine(&["a", "b"], &[]);
    assert!(engine.pair("a", "b").is_none());
    assert_eq!(
        engine.symbol_parses(),
        0,
        "nothing can matter: nothing parsed"
    );
    // a changes alpha's signature; b's body now calls alpha.
    write(
        &a,
        "src/one.rs",
        &ONE_RS.replace("alpha(n: u32)", "alpha(n: u32, m: u32)"),
    );
    engine
        .on_paths_changed("a", &[a.join("src/one.rs")])
        .unwrap();
    assert_eq!(engine.symbol_parses(), 0, "b's lines name nothing of a's");
    write(
        &b,
        "src/two.rs",
        &TWO_RS.replace("let y = 2;", "let y = alpha(2);"),
    );
    engine
        .on_paths_changed("b", &[b.join("src/two.rs")])
        .unwrap();
    let pair = engine.pair("a", "b").expect("a semantic pair");
    assert_eq!(pair.level, Level::Semantic);
    assert_eq!(
        notes(pair),
        vec![
            "a fn alpha (src/one.rs 1+4) `pub fn alpha(n: u32) -> u32` -> \
             `pub fn alpha(n: u32, m: u32) -> u32`; b src/two.rs 2+1 in fn beta"
        ]
    );
    // one.rs before and after (a head was touched), two.rs after (its
    // written line names alpha); b's old files never mention alpha.
    assert_eq!(engine.symbol_parses(), 3);
}

/// A write inside a function body, with the file's heads untouched,
/// parses nothing new: its signatures are the base's.
#[test]
fn a_write_inside_a_body_parses_nothing() {
    let fx = Fixture::new(&[
        ("src/config.rs", CONFIG_RS),
        ("src/main.rs", MAIN_RS),
        ("src/util.rs", "pub fn helper() -> u32 {\n    1\n}\n"),
    ]);
    let a = fx.worktree("a");
    let b = fx.worktree("b");
    write(
        &a,
        "src/config.rs",
        &CONFIG_RS.replace("(path: &str)", "(path: &str, strict: bool)"),
    );
    write(
        &b,
        "src/main.rs",
        &MAIN_RS.replace("fn other() {}", "fn other() {\n    parse_config(\"b\");\n}"),
    );
    let mut engine = fx.engine(&["a", "b"], &[]);
    assert_eq!(engine.pair("a", "b").unwrap().level, Level::Semantic);
    let before = engine.symbol_parses();
    for n in 2..5 {
        write(
            &a,
            "src/util.rs",
            &format!("pub fn helper() -> u32 {{\n    {n} + parse_config_count()\n}}\n"),
        );
        engine
            .on_paths_changed("a", &[a.join("src/util.rs")])
            .unwrap();
        assert_eq!(engine.pair("a", "b").unwrap().level, Level::Semantic);
    }
    assert_eq!(
        engine.symbol_parses(),
        before + 1,
        "util.rs as it was in the base, once; none of its new versions"
    );
}

/// The LSP's view of a base-conflict follows the unsaved buffer of the
/// checkout it is open in: main moved under `a`'s line 5; `a`'s buffer
/// taking main's line clears it, and the update says so.
#[test]
fn a_base_conflict_clears_when_the_buffer_takes_the_bases_line() {
    let fx = Fixture::new(&[("f.txt", &super::tests::lines())]);
    let a = fx.worktree("a");
    write(&a, "f.txt", &super::tests::with_line(5, "agent 5"));
    let main_text = super::tests::with_line(5, "main 5");
    write(&fx.main, "f.txt", &main_text);
    super::tests::git(&fx.main, &["commit", "-q", "-am", "main moves"]);
    let mut engine = fx.engine(&["a"], &[]);
    let conflict = engine.base_conflict("a").expect("a base conflict");
    assert_eq!(conflict.paths[0].a_ranges[0].start, 5);
    let update = engine
        .set_overrides("a", [(a.join("f.txt"), main_text)].into_iter().collect())
        .unwrap();
    assert_eq!(engine.base_conflict("a"), None);
    assert!(
        update.changed_base_conflicts.contains(&"a".to_string()),
        "{update:?}"
    );
    assert!(update.participants.contains(&"a".to_string()), "{update:?}");
}
