//! End-to-end tests of `owt editor helix`: the real binary merging owt into
//! fixture Helix `languages.toml` files under the test's own `HOME` and
//! `XDG_CONFIG_HOME`.

use std::path::{Path, PathBuf};

use owt_e2e::{owt_bin, TestEnv};
use toml::{Table, Value};

/// A user's languages.toml with comments, their own servers, overrides with
/// and without `language-servers`, inline-table entries and a custom
/// language.
const USER_FIXTURE: &str = r#"# My Helix languages — hand written, keep these comments.
use-grammars = { only = ["rust", "python"] }

# Rust: keep my formatting settings.
[[language]]
name = "rust"
auto-format = false # I format by hand
indent = { tab-width = 4, unit = "    " }

# Python: pyright instead of Helix's list.
[[language]]
name = "python"
language-servers = [
  "pyright", # types
  "ruff",
]
formatter = { command = "black", args = ["-", "--quiet"] }

[[language]]
name = "erlang"
language-servers = [{ name = "elp", except-features = ["format"] }]

# A language Helix does not know.
[[language]]
name = "mylang"
scope = "source.mylang"
file-types = ["myl"]
roots = []

[language-server.pyright]
command = "pyright-langserver"
args = ["--stdio"]
config = { python.analysis.typeCheckingMode = "strict" } # strict!

[language-server.rust-analyzer.config]
checkOnSave = { command = "clippy" }
"#;

/// The test env with `XDG_CONFIG_HOME` in its temp folder, and `PATH` with
/// an `owt` on it (so the generated server is plain `owt`).
fn helix_env() -> (TestEnv, PathBuf) {
    let mut env = TestEnv::new();
    let xdg = env.path().join("xdg");
    let bin = env.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(owt_bin(), bin.join("owt")).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    env.extra_env
        .push(("XDG_CONFIG_HOME".into(), xdg.display().to_string()));
    env.extra_env.push(("PATH".into(), path));
    let languages = xdg.join("helix/languages.toml");
    (env, languages)
}

fn write_user_file(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn parse(text: &str) -> Table {
    toml::from_str(text).unwrap_or_else(|e| panic!("not TOML: {e}\n{text}"))
}

fn languages(doc: &Table) -> Vec<&Table> {
    doc["language"]
        .as_array()
        .expect("[[language]]")
        .iter()
        .map(|v| v.as_table().expect("a [[language]] table"))
        .collect()
}

/// The `language-servers` of the one entry named `name` that has them.
fn servers_of(doc: &Table, name: &str) -> Vec<Value> {
    let lists: Vec<_> = languages(doc)
        .into_iter()
        .filter(|l| l["name"].as_str() == Some(name))
        .filter_map(|l| l.get("language-servers"))
        .collect();
    assert_eq!(lists.len(), 1, "{name} has one list: {lists:?}");
    lists[0].as_array().unwrap().clone()
}

fn strings(values: &[&str]) -> Vec<Value> {
    values
        .iter()
        .map(|s| Value::String(s.to_string()))
        .collect()
}

fn backups(folder: &Path) -> Vec<PathBuf> {
    let mut found: Vec<_> = std::fs::read_dir(folder)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().contains(".owt-backup-"))
        .collect();
    found.sort();
    found
}

/// Every language of the document lists owt, last.
fn assert_owt_last_everywhere(doc: &Table) {
    for language in languages(doc) {
        let name = language["name"].as_str().unwrap();
        let Some(list) = language.get("language-servers") else {
            continue;
        };
        let list = list.as_array().unwrap();
        assert_eq!(
            list.last().and_then(Value::as_str),
            Some("owt"),
            "{name}: {list:?}"
        );
        let n_owt = list.iter().filter(|s| s.as_str() == Some("owt")).count();
        assert_eq!(n_owt, 1, "{name} lists owt once: {list:?}");
    }
}

#[test]
fn write_into_an_empty_config_adds_owt_to_every_helix_language() {
    let (env, path) = helix_env();
    let stdout = env.owt_ok(env.path(), ["editor", "helix", "--write"]);
    assert!(stdout.contains("Added owt to 342 languages"), "{stdout}");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.starts_with("# owt"),
        "header comment first:\n{}",
        &text[..200]
    );
    assert!(text.contains("Helix 25.07.1 (commit 079a789e)"));
    let doc = parse(&text);
    assert_eq!(
        doc["language-server"]["owt"]["command"].as_str(),
        Some("owt")
    );
    assert_eq!(
        doc["language-server"]["owt"]["args"],
        Value::Array(strings(&["lsp"]))
    );
    assert_eq!(languages(&doc).len(), 342);
    assert_owt_last_everywhere(&doc);
    assert_eq!(servers_of(&doc, "rust"), strings(&["rust-analyzer", "owt"]));
    assert_eq!(
        servers_of(&doc, "markdown"),
        strings(&["marksman", "markdown-oxide", "rumdl", "owt"])
    );
    // A language with no default server.
    assert_eq!(servers_of(&doc, "json5"), strings(&["owt"]));
    // Inline-table entries are kept as they are.
    let erlang = servers_of(&doc, "erlang");
    assert_eq!(erlang.len(), 3);
    assert_eq!(erlang[0]["name"].as_str(), Some("erlang-ls"));
    assert_eq!(
        erlang[0]["except-features"],
        Value::Array(strings(&["document-symbols", "workspace-symbols"]))
    );
    assert!(
        backups(path.parent().unwrap()).is_empty(),
        "no backup of a file that did not exist"
    );
}

#[test]
fn write_keeps_the_users_servers_settings_and_comments_and_a_backup() {
    let (env, path) = helix_env();
    write_user_file(&path, USER_FIXTURE);
    let stdout = env.owt_ok(env.path(), ["editor", "helix", "--write"]);

    let folder = path.parent().unwrap();
    let made = backups(folder);
    assert_eq!(made.len(), 1, "one backup: {made:?}");
    assert_eq!(std::fs::read_to_string(&made[0]).unwrap(), USER_FIXTURE);
    assert!(
        stdout.contains(&made[0].display().to_string()),
        "says where the backup is: {stdout}"
    );

    let after_text = std::fs::read_to_string(&path).unwrap();
    for comment in USER_FIXTURE
        .lines()
        .filter_map(|line| line.find('#').map(|i| &line[i..]))
    {
        assert!(
            after_text.contains(comment),
            "comment {comment:?} kept:\n{after_text}"
        );
    }
    let before = parse(USER_FIXTURE);
    let after = parse(&after_text);
    assert_owt_last_everywhere(&after);

    // Every Helix language and the user's own one gained owt.
    assert_eq!(languages(&after).len(), 342 + 1);
    for language in languages(&after) {
        assert!(
            language.contains_key("language-servers"),
            "{language:?} has a list"
        );
    }
    // The user's lists, not Helix's defaults; Helix's defaults where the
    // user set none.
    assert_eq!(
        servers_of(&after, "python"),
        strings(&["pyright", "ruff", "owt"])
    );
    assert_eq!(
        servers_of(&after, "rust"),
        strings(&["rust-analyzer", "owt"])
    );
    let erlang = servers_of(&after, "erlang");
    assert_eq!(erlang.len(), 2);
    assert_eq!(erlang[0]["name"].as_str(), Some("elp"));
    assert_eq!(
        erlang[0]["except-features"],
        Value::Array(strings(&["format"]))
    );
    assert_eq!(servers_of(&after, "mylang"), strings(&["owt"]));

    // Unrelated settings survive in meaning: every top-level key but
    // `language`, every server but owt, and every key of the user's entries.
    for (key, value) in &before {
        if key == "language" || key == "language-server" {
            continue;
        }
        assert_eq!(after.get(key), Some(value), "{key}");
    }
    let mut servers_after = after["language-server"].as_table().unwrap().clone();
    assert!(servers_after.remove("owt").is_some());
    assert_eq!(
        Some(&Value::Table(servers_after)),
        before.get("language-server")
    );
    let entries_after = languages(&after);
    for (i, entry) in languages(&before).into_iter().enumerate() {
        let mut entry_after = entries_after[i].clone();
        let mut entry_before = entry.clone();
        entry_after.remove("language-servers");
        entry_before.remove("language-servers");
        assert_eq!(entry_after, entry_before, "entry {i} kept its settings");
    }

    // Twice: nothing changes, no new backup.
    let stdout = env.owt_ok(env.path(), ["editor", "helix", "--write"]);
    assert!(stdout.contains("nothing changed"), "{stdout}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), after_text);
    assert_eq!(backups(folder), made);
    // Printing shows the same file.
    assert_eq!(env.owt_ok(env.path(), ["editor", "helix"]), after_text);
}

#[test]
fn print_mode_writes_nothing() {
    let (env, path) = helix_env();
    let out = env.owt(env.path(), ["editor", "helix"]);
    assert!(out.status.success());
    let printed = String::from_utf8(out.stdout).unwrap();
    assert_owt_last_everywhere(&parse(&printed));
    assert!(String::from_utf8_lossy(&out.stderr).contains("does not exist yet"));
    assert!(!path.exists());
    assert!(!path.parent().unwrap().exists());
}

#[test]
fn home_config_is_used_without_xdg_config_home() {
    let env = TestEnv::new();
    env.owt_ok(env.path(), ["editor", "helix", "--write"]);
    let path = env.home.join(".config/helix/languages.toml");
    let doc = parse(&std::fs::read_to_string(path).unwrap());
    assert_owt_last_everywhere(&doc);
}

#[test]
fn owt_not_on_path_is_started_by_its_absolute_path() {
    let mut env = TestEnv::new();
    // Issue 33, item 14: from scratch, so an installed owt is not on it.
    env.extra_env
        .push(("PATH".into(), owt_e2e::path_without_owt()));
    let out = env.owt(env.path(), ["editor", "helix"]);
    assert!(out.status.success());
    let doc = parse(&String::from_utf8(out.stdout).unwrap());
    let command = doc["language-server"]["owt"]["command"].as_str().unwrap();
    assert_eq!(
        Path::new(command),
        owt_bin().canonicalize().unwrap(),
        "absolute path of this owt"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("owt is not on PATH"));
}

#[test]
fn project_writes_the_repositorys_helix_folder() {
    let (env, user_path) = helix_env();
    let user_text = "[[language]]\nname = \"python\"\nlanguage-servers = [\"pyright\"]\n";
    write_user_file(&user_path, user_text);
    let repo = env.repo("app");
    let sub = repo.join("src");
    std::fs::create_dir_all(&sub).unwrap();
    let stdout = env.owt_ok(&sub, ["editor", "helix", "--project", "--write"]);
    let project_file = repo.join(".helix/languages.toml");
    assert!(stdout.contains(".helix/languages.toml"), "{stdout}");
    let project = parse(&std::fs::read_to_string(&project_file).unwrap());
    assert_owt_last_everywhere(&project);
    assert_eq!(languages(&project).len(), 342);
    // Helix reads the repository's file after the user's: the user's own
    // list is what the project's entry must carry, not Helix's default.
    assert_eq!(servers_of(&project, "python"), strings(&["pyright", "owt"]));
    assert_eq!(
        servers_of(&project, "rust"),
        strings(&["rust-analyzer", "owt"])
    );
    assert_eq!(
        std::fs::read_to_string(&user_path).unwrap(),
        user_text,
        "the user's file is not touched"
    );

    // -C works too, and the second run changes nothing.
    let stdout = env.owt_ok(
        env.path(),
        [
            "-C",
            repo.to_str().unwrap(),
            "editor",
            "helix",
            "--project",
            "--write",
        ],
    );
    assert!(stdout.contains("nothing changed"), "{stdout}");
}

#[test]
fn languages_file_supplies_a_newer_helix_table() {
    let (env, path) = helix_env();
    write_user_file(
        &path,
        "[[language]]\nname = \"python\"\nlanguage-servers = [\"pyright\"]\n",
    );
    let table = env.path().join("helix-26.01-languages.toml");
    std::fs::write(
        &table,
        r#"use-grammars = { except = ["wren"] }

[language-server]
ra-next = { command = "rust-analyzer-next" }

[[language]]
name = "rust"
scope = "source.rust"
language-servers = ["ra-next"]

[[language]]
name = "newlang"
scope = "source.newlang"

[[grammar]]
name = "rust"
source = { git = "https://example.com/tree-sitter-rust", rev = "0" }
"#,
    )
    .unwrap();
    env.owt_ok(
        env.path(),
        [
            "editor",
            "helix",
            "--write",
            "--languages",
            table.to_str().unwrap(),
        ],
    );
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(&table.display().to_string()), "{text}");
    let doc = parse(&text);
    let names: Vec<_> = languages(&doc)
        .iter()
        .map(|l| l["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["python", "rust", "newlang"]);
    assert_eq!(servers_of(&doc, "rust"), strings(&["ra-next", "owt"]));
    assert_eq!(servers_of(&doc, "newlang"), strings(&["owt"]));
    assert_eq!(servers_of(&doc, "python"), strings(&["pyright", "owt"]));
}

#[test]
fn malformed_user_file_is_named_with_its_line_and_left_untouched() {
    let (env, path) = helix_env();
    let broken =
        "[[language]]\nname = \"rust\"\nlanguage-servers = [\"rust-analyzer\" \"x\"]\nauto-format = true\n";
    write_user_file(&path, broken);
    let stderr = env.owt_err(env.path(), ["editor", "helix", "--write"]);
    assert!(
        stderr.contains(&format!("{}: line 3", path.display())),
        "names file and line: {stderr}"
    );
    assert!(stderr.contains("left unchanged"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), broken);
    assert!(backups(path.parent().unwrap()).is_empty());
}

#[test]
fn malformed_languages_table_is_named_with_its_line() {
    let (env, path) = helix_env();
    let table = env.path().join("table.toml");
    std::fs::write(&table, "[[language]]\nname = rust\n").unwrap();
    let stderr = env.owt_err(
        env.path(),
        [
            "editor",
            "helix",
            "--write",
            "--languages",
            table.to_str().unwrap(),
        ],
    );
    assert!(
        stderr.contains(&format!("{}: line 2", table.display())),
        "{stderr}"
    );
    assert!(!path.exists());
}

#[test]
fn a_symlinked_languages_toml_stays_a_symlink() {
    let (env, path) = helix_env();
    let dotfiles = env.path().join("dotfiles/languages.toml");
    write_user_file(&dotfiles, USER_FIXTURE);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(&dotfiles, &path).unwrap();
    env.owt_ok(env.path(), ["editor", "helix", "--write"]);
    assert!(path.symlink_metadata().unwrap().file_type().is_symlink());
    assert_owt_last_everywhere(&parse(&std::fs::read_to_string(&dotfiles).unwrap()));
}

#[test]
fn json_output_describes_the_write() {
    let (env, path) = helix_env();
    write_user_file(&path, USER_FIXTURE);
    let doc: serde_json::Value = env.owt_json(env.path(), ["editor", "helix", "--write"]);
    assert_eq!(doc["written"], true);
    assert_eq!(doc["changed"], true);
    assert_eq!(doc["path"], path.display().to_string());
    assert!(doc["backup"].as_str().unwrap().contains(".owt-backup-"));
    assert_eq!(
        doc["report"]["appended"],
        serde_json::json!(["python", "erlang"])
    );
    assert_eq!(doc["languages_from"], "Helix 25.07.1 (commit 079a789e)");
    let again: serde_json::Value = env.owt_json(env.path(), ["editor", "helix", "--write"]);
    assert_eq!(again["written"], false);
    assert_eq!(again["changed"], false);
}
