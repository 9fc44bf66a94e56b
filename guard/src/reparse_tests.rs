//! The symbol index's incremental re-parse (a kept tree of another
//! version of the same path, edited and parsed again) gives what a fresh
//! parse gives: random edits in six languages, several versions of one
//! path written in turn (sessions writing the same file); and an engine
//! over real worktrees whose agent writes a file again and again.

use git2::Repository;

use super::symbols::{parse, Lang, SymbolIndex};
use super::tests::{write, Fixture, Rng};

const C: &str = "#include <stdio.h>\n\nstatic int parse_config(const char *path,\n\t\t\tint flags)\n{\n\tint a = 0;\n\treturn a + flags;\n}\n\nint load(void)\n{\n\treturn parse_config(\"x\", 0);\n}\n\nstruct s { int x; };\n";
const PY: &str = "class Store:\n    def load(self, path):\n        data = read(path)\n        if data:\n            return data\n        return None\n\n    def save(self, data):\n        write(data)\n        return True\n\ndef main():\n    Store().load('a')\n";
const RUST: &str = "pub struct Config {\n    a: u32,\n}\n\nimpl Config {\n    pub fn load(path: &str) -> Config {\n        let a = path.len() as u32;\n        Config { a }\n    }\n\n    fn other(&self) -> u32 {\n        self.a\n    }\n}\n\nfn main() {\n    Config::load(\"x\");\n}\n";
const TS: &str = "export function load(path: string): Config {\n  const m = parse(path);\n  return m;\n}\n\nconst save = (c: Config) => {\n  write(c);\n};\n\nclass Store {\n  get(key: string): number {\n    return 1;\n  }\n}\n";
const GO: &str = "package p\n\ntype Config struct {\n\tA int\n}\n\nfunc (c *Config) Load(path string) (int, error) {\n\tn := len(path)\n\treturn n, nil\n}\n\nfunc main() {\n\tc := &Config{}\n\tc.Load(\"x\")\n}\n";
const JAVA: &str = "class A {\n  @Override\n  public int load(String path) throws IOException {\n    int n = path.length();\n    return n;\n  }\n\n  void save(int n) {\n    write(n);\n  }\n}\n";

/// Lines random edits insert or put in place of another: statements,
/// comments, and lines that break the syntax on the way (open braces,
/// comments and strings, new definitions, half a parameter list).
const POOL: &[&str] = &[
    "\tint b = 1;",
    "        x = f(a, b)",
    "    let b = a + 1;",
    "  const m = n + 1;",
    "",
    "\t/* open",
    "   close */",
    "  // }",
    "        # comment",
    "\tfoo(a,",
    "\t    b);",
    "\tif (a) {",
    "\t}",
    "}",
    "{",
    "static int added(void)",
    "def added(self, x):",
    "    fn added(&self) -> u32 { 1 }",
    "function added(x: number) {}",
    "func Added(n int) int {",
    "  public void added() {}",
    "#if 0",
    "#endif",
    "\tchar *s = \"}\";",
    "  s = '{'",
    "class B:",
    "        \"\"\"doc",
    "struct t { int y; };",
    "type T struct {",
    "  x = ;",
];

/// One random edit of `text`: lines inserted, removed or replaced, or a
/// few bytes anywhere (inside a word, a string, a line's indentation).
fn mutate(rng: &mut Rng, text: &str) -> String {
    let mut lines: Vec<String> = text.split('\n').map(str::to_string).collect();
    let at = rng.below(lines.len() + 1);
    match rng.below(5) {
        0 | 1 => {
            for _ in 0..1 + rng.below(2) {
                let line = POOL[rng.below(POOL.len())];
                lines.insert(at.min(lines.len()), line.to_string());
            }
        }
        2 if lines.len() > 4 => {
            let n = 1 + rng.below(2);
            let at = at.min(lines.len() - n);
            lines.drain(at..at + n);
        }
        3 if !lines.is_empty() => {
            let at = at.min(lines.len() - 1);
            lines[at] = POOL[rng.below(POOL.len())].to_string();
        }
        _ => {
            // Bytes: an ASCII character in or out (the texts are ASCII).
            let mut bytes = lines.join("\n").into_bytes();
            let at = rng.below(bytes.len() + 1);
            if rng.below(2) == 0 || at == bytes.len() {
                let chars = b"a_(){};,\n\" */x1";
                let c = chars[rng.below(chars.len())];
                bytes.insert(at, c);
            } else {
                bytes.remove(at);
            }
            return String::from_utf8(bytes).expect("ASCII");
        }
    }
    lines.join("\n")
}

/// `steps` random edits of three versions of one path (three sessions
/// writing the same file, each its own version), each new version asked
/// of one index in turn: its symbols (definitions and uses) equal a
/// fresh parse's. Returns how many were re-parsed from a kept tree.
fn random_versions(lang: Lang, path: &str, start: &str, seed: u64, steps: usize) -> u64 {
    let dir = tempfile::tempdir().unwrap();
    let repo = Repository::init(dir.path()).unwrap();
    let mut index = SymbolIndex::default();
    let mut rng = Rng(seed);
    let mut versions = vec![start.to_string(); 3];
    let mut log: Vec<String> = Vec::new();
    for step in 0..steps {
        let who = rng.below(versions.len());
        // Now and then a version starts over (an agent's reset).
        versions[who] = if rng.below(40) == 0 {
            start.to_string()
        } else {
            mutate(&mut rng, &versions[who])
        };
        let text = &versions[who];
        log.push(format!("{step}: version {who}"));
        let blob = repo.blob(text.as_bytes()).unwrap();
        let fresh = parse(text.as_bytes(), lang).expect("a fresh parse");
        let got = index
            .symbols(&repo, path, blob, lang)
            .expect("the index parses it");
        assert_eq!(
            *got,
            fresh,
            "{path}, seed {seed}, step {step}: the symbols differ from a fresh parse of\n{text}\nafter {}",
            log.join(", ")
        );
    }
    index.reparsed
}

#[test]
fn random_edits_reparse_to_what_a_fresh_parse_gives() {
    let seeds: u64 = std::env::var("OWT_TEST_REPARSE_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2);
    let steps = 150;
    for seed in 1..=seeds {
        for (lang, path, start) in [
            (Lang::C, "src/a.c", C),
            (Lang::Python, "a.py", PY),
            (Lang::Rust, "src/a.rs", RUST),
            (Lang::TypeScript, "src/a.ts", TS),
            (Lang::Go, "a.go", GO),
            (Lang::Java, "A.java", JAVA),
        ] {
            let reparsed = random_versions(lang, path, start, seed, steps);
            eprintln!("{path}, seed {seed}: {reparsed} of {steps} re-parsed");
            assert!(
                reparsed as usize >= steps / 20,
                "{path}, seed {seed}: only {reparsed} of {steps} versions re-parsed from a kept tree"
            );
        }
    }
}

/// Versions of another path never seed a parse, and the kept trees stay
/// within their bound however many files are parsed.
#[test]
fn kept_trees_are_by_path_and_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let repo = Repository::init(dir.path()).unwrap();
    let mut index = SymbolIndex::default();
    for i in 0..40 {
        let text = format!("{RUST}\nfn f{i}() {{}}\n");
        let blob = repo.blob(text.as_bytes()).unwrap();
        index
            .symbols(&repo, &format!("src/m{i}.rs"), blob, Lang::Rust)
            .unwrap();
    }
    assert_eq!(index.parsed, 40);
    assert_eq!(
        index.reparsed, 0,
        "each path parsed once: nothing to re-parse from"
    );
    let (trees, bytes) = index.kept();
    assert!((1..=16).contains(&trees), "{trees} trees kept");
    assert!(bytes <= 16 << 20, "{bytes} bytes kept");
    // The newest path's next version is re-parsed from its tree.
    let text = format!("{RUST}\nfn f39() {{ let x = 1; }}\n");
    let blob = repo.blob(text.as_bytes()).unwrap();
    let got = index
        .symbols(&repo, "src/m39.rs", blob, Lang::Rust)
        .unwrap();
    assert_eq!(index.reparsed, 1);
    assert_eq!(*got, parse(text.as_bytes(), Lang::Rust).unwrap());
    // An idle index lets its trees go: every one was used within the
    // last minute (nothing goes), none within no time at all (all go).
    assert!(!index.drop_idle_trees(std::time::Duration::from_secs(60)));
    assert_eq!(index.kept().0, trees);
    assert!(index.drop_idle_trees(std::time::Duration::ZERO));
    assert_eq!(index.kept(), (0, 0));
    // The next version then parses fresh, and right.
    let text = format!("{RUST}\nfn f39() {{ let y = 2; }}\n");
    let blob = repo.blob(text.as_bytes()).unwrap();
    let got = index
        .symbols(&repo, "src/m39.rs", blob, Lang::Rust)
        .unwrap();
    assert_eq!(index.reparsed, 1, "no tree left to re-parse from");
    assert_eq!(*got, parse(text.as_bytes(), Lang::Rust).unwrap());
}

const CONFIG_C: &str = "#include \"config.h\"\n\nint parse_config(const char *path, int flags)\n{\n\tint n = 0;\n\tn += flags;\n\treturn n;\n}\n\nstatic void helper(void)\n{\n}\n";
const MAIN_C: &str = "#include \"config.h\"\n\nint load(void)\n{\n\treturn 0;\n}\n";

/// An agent that changed a signature writes its file again and again (in
/// a body, a new function, the signature back and forth): each write is
/// re-parsed from the previous version's tree, and the engine's pair
/// equals the one a fresh engine over the same worktrees computes.
#[test]
fn an_agent_writing_a_file_again_reparses_it_and_the_pair_equals_a_fresh_engine() {
    let fx = Fixture::new(&[("src/config.c", CONFIG_C), ("src/main.c", MAIN_C)]);
    let a = fx.worktree("a");
    let b = fx.worktree("b");
    let changed = CONFIG_C.replace("int flags)", "long flags, int strict)");
    write(&a, "src/config.c", &changed);
    write(
        &b,
        "src/main.c",
        &MAIN_C.replace("return 0;", "return parse_config(\"b\", 1);"),
    );
    let mut engine = fx.engine(&["a", "b"], &[]);
    let steps = [
        changed.replace("\tn += flags;", "\tn += flags;\n\tn *= 2; /* doubled */"),
        changed.replace("\treturn n;", "\tif (strict)\n\t\tn = -n;\n\treturn n;"),
        format!("{changed}\nint added(int x)\n{{\n\treturn x;\n}}\n"),
        CONFIG_C.replace("int flags)", "int flags2)"),
        changed.replace("static void helper(void)", "static void helper(int x)"),
    ];
    for (i, text) in steps.iter().enumerate() {
        write(&a, "src/config.c", text);
        let (parsed, reparsed) = (engine.symbol_parses(), engine.symbol_reparses());
        engine
            .on_paths_changed("a", &[a.join("src/config.c")])
            .unwrap();
        assert_eq!(
            (
                engine.symbol_parses() - parsed,
                engine.symbol_reparses() - reparsed
            ),
            (1, 1),
            "write {i}: (parses, of them re-parses from a kept tree)"
        );
        let fresh = fx.engine(&["a", "b"], &[]);
        assert_eq!(
            engine.pair("a", "b"),
            fresh.pair("a", "b"),
            "write {i}: the pair differs from a fresh engine's"
        );
    }
    // The last write keeps parse_config's changed signature, which b uses.
    assert!(!engine.pair("a", "b").unwrap().semantic.is_empty());
}
