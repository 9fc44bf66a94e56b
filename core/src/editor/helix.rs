//! Helix: adding `owt` to every language of a `languages.toml`.
//!
//! Helix has no global language server: a server runs for a language only if
//! that language's `language-servers` lists it (Helix issue #12721), and a
//! user's `[[language]]` entry that sets `language-servers` *replaces* the
//! default list. So adding owt means giving every language a list that is its
//! current one — the user's own override if there is one, else Helix's
//! default from [`builtin_table`] — with `owt` appended last (so the
//! language's own server keeps formatting and completion).
//!
//! Invariants:
//! - [`merge_languages_toml`] is pure (text in, text out) and
//!   format-preserving: it only appends to the user's document (`toml_edit`),
//!   so comments, key order and every other setting survive as written;
//! - it is idempotent: a document that already lists owt everywhere comes
//!   back byte-for-byte and the report says nothing changed;
//! - entries of `language-servers` are kept as they are (strings or inline
//!   tables such as `{ name = "x", except-features = [...] }`).

use std::collections::{HashMap, HashSet};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use serde::Serialize;
use toml_edit::{Array, ArrayOfTables, DocumentMut, InlineTable, Item, Table, TableLike, Value};

/// The Helix release the embedded language table comes from.
pub const HELIX_VERSION: &str = "25.07.1";
/// The Helix commit the embedded language table comes from.
pub const HELIX_COMMIT: &str = "079a789e";
/// The name of owt's entry under `[language-server]`.
pub const SERVER_NAME: &str = "owt";

/// Every language of Helix 25.07.1 with its default `language-servers`, in
/// the shape of Helix's own `languages.toml` (see the file's header).
const BUILTIN_TABLE: &str = include_str!("../../data/helix-languages.toml");

#[derive(Debug, thiserror::Error)]
pub enum HelixError {
    #[error("{}: line {line}, column {column}: {message}", path.display())]
    Syntax {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{}: {message}", path.display())]
    Shape { path: PathBuf, message: String },
}

/// The languages Helix knows and their default servers.
#[derive(Debug, Clone)]
pub struct LanguageTable {
    /// Where the table came from, for the generated comment:
    /// `Helix 25.07.1 (commit 079a789e)` or the file it was read from.
    pub origin: String,
    pub languages: Vec<DefaultLanguage>,
}

/// One language and its default `language-servers` (empty when Helix starts
/// no server for it).
#[derive(Debug, Clone)]
pub struct DefaultLanguage {
    pub name: String,
    pub servers: Vec<Value>,
}

/// How Helix starts owt: `[language-server.owt]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerCommand {
    pub command: String,
    pub args: Vec<String>,
}

impl ServerCommand {
    /// `owt lsp`, with `command` the program to run (`owt`, or an absolute
    /// path when `owt` is not on `PATH`).
    pub fn lsp(command: impl Into<String>) -> ServerCommand {
        ServerCommand {
            command: command.into(),
            args: vec!["lsp".into()],
        }
    }
}

/// What [`merge_languages_toml`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct MergeReport {
    /// `[language-server.owt]` was added; false when the document already
    /// defined it (the user's definition is kept as it is).
    pub server_added: bool,
    /// Languages whose own `language-servers` list (the user's override)
    /// gained `owt`.
    pub appended: Vec<String>,
    /// Languages given a list: Helix's default servers, then `owt`.
    pub listed: Vec<String>,
    /// Languages that already listed `owt`.
    pub already: Vec<String>,
}

impl MergeReport {
    pub fn changed(&self) -> bool {
        self.server_added || !self.appended.is_empty() || !self.listed.is_empty()
    }
}

/// A merged document and what changed.
#[derive(Debug, Clone)]
pub struct Merged {
    pub text: String,
    pub report: MergeReport,
}

/// The language table embedded in owt (Helix [`HELIX_VERSION`]).
pub fn builtin_table() -> Result<LanguageTable, HelixError> {
    parse_table(
        BUILTIN_TABLE,
        Path::new("<owt's embedded Helix language table>"),
        format!("Helix {HELIX_VERSION} (commit {HELIX_COMMIT})"),
    )
}

/// Reads a language table from the text of a Helix `languages.toml` (Helix's
/// full file or owt's reduced one): each `[[language]]`'s `name` and
/// `language-servers`.
pub fn parse_table(text: &str, path: &Path, origin: String) -> Result<LanguageTable, HelixError> {
    let doc = parse_document(text, path)?;
    let mut languages = Vec::new();
    let mut seen = HashSet::new();
    if let Some(item) = doc.get("language") {
        for entry in language_entries(item, path)? {
            let Some(name) = entry.get("name").and_then(Item::as_str) else {
                continue;
            };
            if !seen.insert(name.to_string()) {
                continue;
            }
            let servers = match entry.get("language-servers") {
                None => Vec::new(),
                Some(servers) => servers_array(servers, name, path)?
                    .iter()
                    .map(normalized)
                    .collect(),
            };
            languages.push(DefaultLanguage {
                name: name.to_string(),
                servers,
            });
        }
    }
    if languages.is_empty() {
        return Err(HelixError::Shape {
            path: path.to_path_buf(),
            message: "no [[language]] entries with a name: not a Helix language table".into(),
        });
    }
    Ok(LanguageTable {
        origin: origin.to_string(),
        languages,
    })
}

/// `table` as Helix sees it after reading the user's own `languages.toml`
/// (`user_text`): a language the user lists servers for has those servers,
/// and a language the user defines is added. This is what a repository's
/// `.helix/languages.toml` builds on, since Helix reads it after the user's.
pub fn with_user_lists(
    mut table: LanguageTable,
    user_text: &str,
    user_path: &Path,
) -> Result<LanguageTable, HelixError> {
    let doc = parse_document(user_text, user_path)?;
    let Some(item) = doc.get("language") else {
        return Ok(table);
    };
    for entry in language_entries(item, user_path)? {
        let Some(name) = entry.get("name").and_then(Item::as_str) else {
            continue;
        };
        let servers = match entry.get("language-servers") {
            Some(servers) => Some(
                servers_array(servers, name, user_path)?
                    .iter()
                    .map(normalized)
                    .collect::<Vec<_>>(),
            ),
            None => None,
        };
        match table.languages.iter_mut().find(|l| l.name == name) {
            Some(language) => {
                if let Some(servers) = servers {
                    language.servers = servers;
                }
            }
            None => table.languages.push(DefaultLanguage {
                name: name.to_string(),
                servers: servers.unwrap_or_default(),
            }),
        }
    }
    table.origin = format!("{} and {}", table.origin, user_path.display());
    Ok(table)
}

/// The user's Helix `languages.toml`: `$XDG_CONFIG_HOME/helix/languages.toml`,
/// else `$HOME/.config/helix/languages.toml` (what Helix reads on Linux and
/// macOS). Empty variables count as unset.
pub fn user_languages_path(
    xdg_config_home: Option<&OsStr>,
    home: Option<&OsStr>,
) -> Option<PathBuf> {
    if let Some(xdg) = xdg_config_home.filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(xdg).join("helix/languages.toml"));
    }
    home.filter(|v| !v.is_empty())
        .map(|home| PathBuf::from(home).join(".config/helix/languages.toml"))
}

/// A repository's own Helix `languages.toml` (Helix reads it when started in
/// the repository, after the user's).
pub fn project_languages_path(repo_root: &Path) -> PathBuf {
    repo_root.join(".helix/languages.toml")
}

/// Adds owt to `user_text` (a `languages.toml`, empty when the user has
/// none; `user_path` names it in errors): defines `[language-server.owt]`
/// unless it is defined, and makes every language of `table` and of the
/// document list `owt` last, keeping the servers it has now.
pub fn merge_languages_toml(
    user_text: &str,
    user_path: &Path,
    table: &LanguageTable,
    server: &ServerCommand,
) -> Result<Merged, HelixError> {
    let mut doc = parse_document(user_text, user_path)?;
    // The server first, so a new file opens with the header comment.
    let mut report = MergeReport {
        server_added: add_server(&mut doc, user_path, table, server)?,
        ..MergeReport::default()
    };
    let user_has_list = user_languages(&doc, user_path)?;
    edit_user_entries(&mut doc, user_path, table, &user_has_list, &mut report)?;
    add_missing_languages(&mut doc, user_path, table, &user_has_list, &mut report)?;
    let text = if report.changed() {
        doc.to_string()
    } else {
        user_text.to_string()
    };
    Ok(Merged { text, report })
}

/// The user's own entries: which names they have, and which of them set
/// `language-servers` (those lists replace Helix's defaults).
fn user_languages(
    doc: &DocumentMut,
    user_path: &Path,
) -> Result<HashMap<String, bool>, HelixError> {
    let mut user_has_list: HashMap<String, bool> = HashMap::new();
    if let Some(item) = doc.get("language") {
        for entry in language_entries(item, user_path)? {
            if let Some(name) = entry.get("name").and_then(Item::as_str) {
                let has_list = entry.contains_key("language-servers");
                *user_has_list.entry(name.to_string()).or_default() |= has_list;
            }
        }
    }
    Ok(user_has_list)
}

/// Edits the user's entries in place: owt appended to each list that
/// lacks it; the first entry of a language without any list gets Helix's
/// default servers, then owt.
fn edit_user_entries(
    doc: &mut DocumentMut,
    user_path: &Path,
    table: &LanguageTable,
    user_has_list: &HashMap<String, bool>,
    report: &mut MergeReport,
) -> Result<(), HelixError> {
    let defaults: HashMap<&str, &[Value]> = table
        .languages
        .iter()
        .map(|l| (l.name.as_str(), l.servers.as_slice()))
        .collect();
    let mut given_list = HashSet::new();
    let Some(item) = doc.get_mut("language") else {
        return Ok(());
    };
    let inline = item.is_value();
    for entry in language_entries_mut(item, user_path)? {
        let Some(name) = entry.get("name").and_then(Item::as_str).map(str::to_string) else {
            continue;
        };
        match entry.get_mut("language-servers") {
            Some(servers) => {
                let list = servers_array_mut(servers, &name, user_path)?;
                if lists_owt(list) {
                    push_once(&mut report.already, &name);
                } else {
                    push_value(list, Value::from(SERVER_NAME));
                    push_once(&mut report.appended, &name);
                }
            }
            None if !user_has_list[&name] && given_list.insert(name.clone()) => {
                let servers = defaults.get(name.as_str()).copied().unwrap_or_default();
                let mut servers = servers_with_owt(servers);
                if inline {
                    move_closing_space(entry, &mut servers);
                }
                entry.insert("language-servers", Item::Value(servers));
                push_once(&mut report.listed, &name);
            }
            None => {}
        }
    }
    Ok(())
}

/// `{ name = "x" }`: the space before `}` follows the last value; it moves
/// behind `servers`, added after it.
fn move_closing_space(entry: &mut dyn TableLike, servers: &mut Value) {
    if let Some(last) = entry.iter_mut().last().and_then(|(_, v)| v.as_value_mut()) {
        let suffix = last
            .decor()
            .suffix()
            .and_then(|s| s.as_str())
            .unwrap_or("")
            .to_string();
        last.decor_mut().set_suffix("");
        servers.decor_mut().set_suffix(suffix);
    }
}

/// Languages the user has no entry for: an entry each with Helix's
/// default servers, then owt (in the form the user's `language` has).
fn add_missing_languages(
    doc: &mut DocumentMut,
    user_path: &Path,
    table: &LanguageTable,
    user_has_list: &HashMap<String, bool>,
    report: &mut MergeReport,
) -> Result<(), HelixError> {
    let missing: Vec<&DefaultLanguage> = table
        .languages
        .iter()
        .filter(|l| !user_has_list.contains_key(&l.name))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let comment = format!(
        "\n# Added by `owt editor helix`: each language's default servers in {}, then owt.\n",
        table.origin
    );
    let language = doc
        .entry("language")
        .or_insert_with(|| Item::ArrayOfTables(ArrayOfTables::new()));
    for (i, default) in missing.iter().enumerate() {
        let servers = servers_with_owt(&default.servers);
        match language {
            Item::ArrayOfTables(entries) => {
                let mut entry = Table::new();
                entry.insert("name", toml_edit::value(default.name.as_str()));
                entry.insert("language-servers", Item::Value(servers));
                if i == 0 {
                    entry.decor_mut().set_prefix(comment.as_str());
                }
                entries.push(entry);
            }
            Item::Value(Value::Array(entries)) => {
                let mut entry = InlineTable::new();
                entry.insert("name", Value::from(default.name.as_str()));
                entry.insert("language-servers", servers);
                push_value(entries, Value::InlineTable(entry));
            }
            _ => not_language_tables(user_path)?,
        }
        report.listed.push(default.name.clone());
    }
    Ok(())
}

/// The comment above `[language-server.owt]` when owt adds it.
fn header(table: &LanguageTable) -> String {
    format!(
        "# owt (the AI coding agent supervisor) for every language, by `owt editor helix`.\n\
         # Helix has no global language server, and a language's `language-servers`\n\
         # here replaces Helix's default list, so each language lists its servers\n\
         # (your own, else the defaults of {}) and then owt.\n\
         # After upgrading Helix, run `owt editor helix --write --languages FILE` with the\n\
         # new Helix's languages.toml to add the languages it brings.\n",
        table.origin
    )
}

fn add_server(
    doc: &mut DocumentMut,
    path: &Path,
    table: &LanguageTable,
    server: &ServerCommand,
) -> Result<bool, HelixError> {
    let fresh = doc.as_table().is_empty();
    let parent = doc.entry("language-server").or_insert_with(|| {
        let mut parent = Table::new();
        parent.set_implicit(true);
        Item::Table(parent)
    });
    let args = Array::from_iter(server.args.iter().map(String::as_str));
    match parent {
        Item::Table(parent) => {
            if parent.contains_key(SERVER_NAME) {
                return Ok(false);
            }
            let mut owt = Table::new();
            owt.insert("command", toml_edit::value(server.command.as_str()));
            owt.insert("args", toml_edit::value(args));
            let prefix = if fresh { String::new() } else { "\n".into() };
            owt.decor_mut()
                .set_prefix(format!("{prefix}{}", header(table)));
            parent.insert(SERVER_NAME, Item::Table(owt));
        }
        Item::Value(Value::InlineTable(parent)) => {
            if parent.contains_key(SERVER_NAME) {
                return Ok(false);
            }
            let mut owt = InlineTable::new();
            owt.insert("command", Value::from(server.command.as_str()));
            owt.insert("args", Value::Array(args));
            parent.insert(SERVER_NAME, Value::InlineTable(owt));
        }
        _ => {
            return Err(HelixError::Shape {
                path: path.to_path_buf(),
                message: "`language-server` is not a table".into(),
            })
        }
    }
    Ok(true)
}

fn parse_document(text: &str, path: &Path) -> Result<DocumentMut, HelixError> {
    text.parse::<DocumentMut>().map_err(|err| {
        let offset = err.span().map(|s| s.start).unwrap_or(0).min(text.len());
        let before = text.get(..offset).unwrap_or("");
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
        HelixError::Syntax {
            path: path.to_path_buf(),
            line,
            column,
            message: err.message().trim_end().to_string(),
        }
    })
}

fn not_language_tables<T>(path: &Path) -> Result<T, HelixError> {
    Err(HelixError::Shape {
        path: path.to_path_buf(),
        message: "`language` is not a list of tables ([[language]])".into(),
    })
}

/// The `[[language]]` entries of a document (array of tables, or an inline
/// array of inline tables).
fn language_entries<'a>(item: &'a Item, path: &Path) -> Result<Vec<&'a dyn TableLike>, HelixError> {
    match item {
        Item::ArrayOfTables(entries) => Ok(entries.iter().map(|t| t as &dyn TableLike).collect()),
        Item::Value(Value::Array(entries)) => entries
            .iter()
            .map(|v| match v.as_inline_table() {
                Some(t) => Ok(t as &dyn TableLike),
                None => not_language_tables(path),
            })
            .collect(),
        _ => not_language_tables(path),
    }
}

fn language_entries_mut<'a>(
    item: &'a mut Item,
    path: &Path,
) -> Result<Vec<&'a mut dyn TableLike>, HelixError> {
    match item {
        Item::ArrayOfTables(entries) => Ok(entries
            .iter_mut()
            .map(|t| t as &mut dyn TableLike)
            .collect()),
        Item::Value(Value::Array(entries)) => entries
            .iter_mut()
            .map(|v| match v.as_inline_table_mut() {
                Some(t) => Ok(t as &mut dyn TableLike),
                None => not_language_tables(path),
            })
            .collect(),
        _ => not_language_tables(path),
    }
}

fn not_a_list(name: &str, path: &Path) -> HelixError {
    HelixError::Shape {
        path: path.to_path_buf(),
        message: format!("`language-servers` of language {name:?} is not a list"),
    }
}

fn servers_array<'a>(item: &'a Item, name: &str, path: &Path) -> Result<&'a Array, HelixError> {
    item.as_array().ok_or_else(|| not_a_list(name, path))
}

fn servers_array_mut<'a>(
    item: &'a mut Item,
    name: &str,
    path: &Path,
) -> Result<&'a mut Array, HelixError> {
    item.as_array_mut().ok_or_else(|| not_a_list(name, path))
}

/// Whether a `language-servers` list names owt (`"owt"` or `{ name = "owt", … }`).
fn lists_owt(list: &Array) -> bool {
    list.iter().any(|server| match server {
        Value::String(name) => name.value() == SERVER_NAME,
        Value::InlineTable(t) => t.get("name").and_then(Value::as_str) == Some(SERVER_NAME),
        _ => false,
    })
}

/// `servers` (formatted plainly) followed by `"owt"`, unless they list owt
/// already.
fn servers_with_owt(servers: &[Value]) -> Value {
    let mut list = Array::from_iter(servers.iter().cloned());
    if !lists_owt(&list) {
        list.push(SERVER_NAME);
    }
    list.fmt();
    Value::Array(list)
}

/// A value with its surrounding whitespace and comments removed.
fn normalized(value: &Value) -> Value {
    let mut value = value.clone();
    value.decor_mut().clear();
    if let Value::InlineTable(t) = &mut value {
        t.fmt();
    }
    if let Value::Array(a) = &mut value {
        a.fmt();
    }
    value
}

/// Appends `value` to `list` in the list's own layout: on a new line with the
/// same indentation when the list is one entry per line, else after a space.
fn push_value(list: &mut Array, mut value: Value) {
    let Some(last_index) = list.len().checked_sub(1) else {
        list.push_formatted(value);
        return;
    };
    let trailing_comma = list.trailing_comma();
    let Some(last) = list.get_mut(last_index) else {
        return;
    };
    let last_prefix = last
        .decor()
        .prefix()
        .and_then(|p| p.as_str())
        .unwrap_or(" ")
        .to_string();
    let prefix = match last_prefix.rfind('\n') {
        Some(newline) => format!("\n{}", &last_prefix[newline + 1..]),
        None => " ".to_string(),
    };
    // Without a trailing comma, what follows the last value (e.g. the space
    // before `]`) moves behind the new one.
    if !trailing_comma {
        let suffix = last
            .decor()
            .suffix()
            .and_then(|s| s.as_str())
            .unwrap_or("")
            .to_string();
        last.decor_mut().set_suffix("");
        value.decor_mut().set_suffix(suffix);
    } else {
        value.decor_mut().set_suffix("");
    }
    value.decor_mut().set_prefix(prefix);
    list.push_formatted(value);
}

fn push_once(names: &mut Vec<String>, name: &str) {
    if !names.iter().any(|n| n == name) {
        names.push(name.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use expect_test::{expect, Expect};

    const SMALL_TABLE: &str = r#"
[[language]]
name = "rust"
language-servers = [ "rust-analyzer" ]

[[language]]
name = "erlang"
language-servers = [
  { name = "erlang-ls", except-features = ["document-symbols"] },
  { name = "elp", except-features = ["document-symbols"] }
]

[[language]]
name = "markdown"

[[language]]
name = "python"
language-servers = ["ty", "ruff", "pylsp"]
"#;

    fn small_table() -> LanguageTable {
        parse_table(SMALL_TABLE, Path::new("small.toml"), "small table".into()).unwrap()
    }

    fn merge(user: &str) -> Merged {
        merge_languages_toml(
            user,
            Path::new("languages.toml"),
            &small_table(),
            &ServerCommand::lsp("owt"),
        )
        .unwrap()
    }

    /// Merges `user` with the small table, checks that merging the result
    /// again changes nothing, and compares the result with `expected`.
    fn check(user: &str, expected: Expect) {
        let merged = merge(user);
        let again = merge(&merged.text);
        assert!(
            !again.report.changed(),
            "second merge changed: {:?}",
            again.report
        );
        assert_eq!(
            again.text, merged.text,
            "second merge is not byte-identical"
        );
        expected.assert_eq(&merged.text);
    }

    /// The `language-servers` of every language in `text`, as TOML snippets.
    fn server_lists(text: &str) -> Vec<(String, String)> {
        let doc: DocumentMut = text.parse().unwrap();
        language_entries(doc.get("language").unwrap(), Path::new("x"))
            .unwrap()
            .into_iter()
            .map(|entry| {
                let name = entry
                    .get("name")
                    .and_then(Item::as_str)
                    .unwrap()
                    .to_string();
                let mut servers = normalized(
                    entry
                        .get("language-servers")
                        .and_then(Item::as_value)
                        .unwrap(),
                );
                if let Value::Array(a) = &mut servers {
                    a.iter_mut().for_each(|v| *v = normalized(v));
                    a.fmt();
                }
                (name, servers.to_string())
            })
            .collect()
    }

    #[test]
    fn empty_file_gets_the_server_and_every_language_with_its_defaults() {
        check(
            "",
            expect![[r##"
                # owt (the AI coding agent supervisor) for every language, by `owt editor helix`.
                # Helix has no global language server, and a language's `language-servers`
                # here replaces Helix's default list, so each language lists its servers
                # (your own, else the defaults of small table) and then owt.
                # After upgrading Helix, run `owt editor helix --write --languages FILE` with the
                # new Helix's languages.toml to add the languages it brings.
                [language-server.owt]
                command = "owt"
                args = ["lsp"]

                # Added by `owt editor helix`: each language's default servers in small table, then owt.
                [[language]]
                name = "rust"
                language-servers = ["rust-analyzer", "owt"]

                [[language]]
                name = "erlang"
                language-servers = [{ name = "erlang-ls", except-features = ["document-symbols"] }, { name = "elp", except-features = ["document-symbols"] }, "owt"]

                [[language]]
                name = "markdown"
                language-servers = ["owt"]

                [[language]]
                name = "python"
                language-servers = ["ty", "ruff", "pylsp", "owt"]
            "##]],
        );
    }

    #[test]
    fn user_override_is_carried_not_the_default() {
        let merged = merge(
            "[[language]]\nname = \"python\"\nlanguage-servers = [\"pyright\"]\nauto-format = true\n",
        );
        let lists = server_lists(&merged.text);
        assert!(lists.contains(&("python".into(), r#"["pyright", "owt"]"#.into())));
        assert_eq!(merged.report.appended, ["python"]);
        assert_eq!(merged.report.listed, ["rust", "erlang", "markdown"]);
    }

    #[test]
    fn user_entry_without_servers_gets_the_defaults_and_keeps_its_keys() {
        check(
            "# my rust\n[[language]]\nname = \"rust\"\nauto-format = false # keep\n",
            expect![[r##"
                # my rust
                [[language]]
                name = "rust"
                auto-format = false # keep
                language-servers = ["rust-analyzer", "owt"]

                # Added by `owt editor helix`: each language's default servers in small table, then owt.
                [[language]]
                name = "erlang"
                language-servers = [{ name = "erlang-ls", except-features = ["document-symbols"] }, { name = "elp", except-features = ["document-symbols"] }, "owt"]

                [[language]]
                name = "markdown"
                language-servers = ["owt"]

                [[language]]
                name = "python"
                language-servers = ["ty", "ruff", "pylsp", "owt"]

                # owt (the AI coding agent supervisor) for every language, by `owt editor helix`.
                # Helix has no global language server, and a language's `language-servers`
                # here replaces Helix's default list, so each language lists its servers
                # (your own, else the defaults of small table) and then owt.
                # After upgrading Helix, run `owt editor helix --write --languages FILE` with the
                # new Helix's languages.toml to add the languages it brings.
                [language-server.owt]
                command = "owt"
                args = ["lsp"]
            "##]],
        );
    }

    #[test]
    fn multi_line_and_inline_table_lists_keep_their_layout() {
        let user = r#"[[language]]
name = "erlang"
language-servers = [
  { name = "elp", except-features = ["format"] }, # elp only
  "erlang-ls",
]

[[language]]
name = "rust"
language-servers = [ "rust-analyzer" ]
"#;
        let merged = merge(user);
        let expected_start = r#"[[language]]
name = "erlang"
language-servers = [
  { name = "elp", except-features = ["format"] }, # elp only
  "erlang-ls",
  "owt",
]

[[language]]
name = "rust"
language-servers = [ "rust-analyzer", "owt" ]
"#;
        assert!(
            merged.text.starts_with(expected_start),
            "got:\n{}",
            merged.text
        );
    }

    #[test]
    fn already_merged_document_comes_back_unchanged() {
        let once = merge("[language-server.rust-analyzer]\nconfig = { checkOnSave = false }\n");
        let twice = merge(&once.text);
        assert_eq!(twice.text, once.text);
        assert_eq!(twice.report.already.len(), 4);
        assert!(!twice.report.changed());
    }

    #[test]
    fn owt_listed_as_an_inline_table_counts() {
        let merged = merge(
            "[[language]]\nname = \"rust\"\nlanguage-servers = [\"rust-analyzer\", { name = \"owt\", only-features = [\"diagnostics\"] }]\n",
        );
        assert_eq!(merged.report.already, ["rust"]);
        assert!(merged.report.appended.is_empty());
    }

    #[test]
    fn user_server_definition_is_kept() {
        let user =
            "[language-server.owt]\ncommand = \"/opt/owt/bin/owt\"\nargs = [\"lsp\", \"-v\"]\n";
        let merged = merge(user);
        assert!(!merged.report.server_added);
        assert!(merged.text.starts_with(user));
    }

    #[test]
    fn custom_language_without_servers_gets_owt_only() {
        let merged = merge(
            "[[language]]\nname = \"mylang\"\nscope = \"source.my\"\nfile-types = [\"my\"]\n",
        );
        assert!(server_lists(&merged.text).contains(&("mylang".into(), r#"["owt"]"#.into())));
    }

    #[test]
    fn duplicate_user_entries_get_one_list() {
        // Helix merges entries of one name in order; only the first gets a
        // list, so a later one cannot override an earlier user list.
        let merged = merge(
            "[[language]]\nname = \"rust\"\nindent = { tab-width = 4, unit = \"    \" }\n\n[[language]]\nname = \"rust\"\nauto-format = true\n",
        );
        let rust: Vec<_> = server_lists_lenient(&merged.text, "rust");
        assert_eq!(
            rust,
            [Some(r#"["rust-analyzer", "owt"]"#.to_string()), None]
        );
    }

    fn server_lists_lenient(text: &str, name: &str) -> Vec<Option<String>> {
        let doc: DocumentMut = text.parse().unwrap();
        language_entries(doc.get("language").unwrap(), Path::new("x"))
            .unwrap()
            .into_iter()
            .filter(|e| e.get("name").and_then(Item::as_str) == Some(name))
            .map(|e| {
                e.get("language-servers")
                    .and_then(Item::as_value)
                    .map(|v| normalized(v).to_string())
            })
            .collect()
    }

    #[test]
    fn inline_array_of_languages_is_edited_in_place() {
        let merged = merge("language = [\n  { name = \"rust\", auto-format = true },\n]\n");
        assert!(
            merged.text.starts_with(
                "language = [\n  { name = \"rust\", auto-format = true, language-servers = [\"rust-analyzer\", \"owt\"] },\n  { name = \"erlang\""
            ),
            "{}",
            merged.text
        );
        let doc: DocumentMut = merged.text.parse().unwrap();
        assert!(doc["language"].is_array(), "{}", merged.text);
        let lists = server_lists(&merged.text);
        assert_eq!(lists.len(), 4, "{}", merged.text);
        assert_eq!(
            lists[0],
            ("rust".into(), r#"["rust-analyzer", "owt"]"#.into())
        );
    }

    #[test]
    fn inline_language_server_table_gets_owt_inline() {
        let merged = merge("language-server = { taplo = { command = \"taplo\" } }\n");
        let doc: DocumentMut = merged.text.parse().unwrap();
        assert_eq!(
            doc["language-server"]["owt"]["command"].as_str(),
            Some("owt")
        );
        assert_eq!(
            doc["language-server"]["taplo"]["command"].as_str(),
            Some("taplo")
        );
    }

    #[test]
    fn syntax_error_names_file_line_and_column() {
        let err = merge_languages_toml(
            "[[language]]\nname = \"rust\"\nlanguage-servers = [\"a\"\n",
            Path::new("/home/me/.config/helix/languages.toml"),
            &small_table(),
            &ServerCommand::lsp("owt"),
        )
        .unwrap_err();
        let message = err.to_string();
        assert!(
            message.starts_with("/home/me/.config/helix/languages.toml: line 3, column"),
            "{message}"
        );
    }

    #[test]
    fn servers_that_are_not_a_list_are_refused() {
        let err = merge_languages_toml(
            "[[language]]\nname = \"rust\"\nlanguage-servers = \"rust-analyzer\"\n",
            Path::new("languages.toml"),
            &small_table(),
            &ServerCommand::lsp("owt"),
        )
        .unwrap_err();
        expect![[r#"languages.toml: `language-servers` of language "rust" is not a list"#]]
            .assert_eq(&err.to_string());
    }

    #[test]
    fn builtin_table_is_helix_25_07_1() {
        let table = builtin_table().unwrap();
        assert!(BUILTIN_TABLE.contains(&format!("Helix {HELIX_VERSION} (commit {HELIX_COMMIT})")));
        assert_eq!(table.origin, "Helix 25.07.1 (commit 079a789e)");
        assert_eq!(table.languages.len(), 342);
        let servers = |name: &str| {
            let language = table.languages.iter().find(|l| l.name == name).unwrap();
            Value::Array(Array::from_iter(language.servers.iter().cloned())).to_string()
        };
        assert_eq!(servers("rust"), r#"["rust-analyzer"]"#);
        assert_eq!(
            servers("markdown"),
            r#"["marksman", "markdown-oxide", "rumdl"]"#
        );
        assert_eq!(servers("json5"), "[]");
        assert_eq!(
            servers("hare"),
            r#"[{ except-features = ["code-action", "completion", "format", "inlay-hints", "rename-symbol", "workspace-symbols"], name = "hare-lsp" }]"#
        );
        let without: Vec<_> = table
            .languages
            .iter()
            .filter(|l| l.servers.is_empty())
            .collect();
        assert_eq!(without.len(), 342 - 186);
    }

    #[test]
    fn whole_builtin_table_merges_into_an_empty_file() {
        let table = builtin_table().unwrap();
        let merged = merge_languages_toml(
            "",
            Path::new("languages.toml"),
            &table,
            &ServerCommand::lsp("owt"),
        )
        .unwrap();
        assert_eq!(merged.report.listed.len(), 342);
        let doc: DocumentMut = merged.text.parse().unwrap();
        let entries = doc["language"].as_array_of_tables().unwrap();
        assert_eq!(entries.len(), 342);
        for entry in entries {
            let list = entry["language-servers"].as_array().unwrap();
            assert_eq!(list.iter().last().and_then(Value::as_str), Some("owt"));
        }
        assert!(merged.text.contains("Helix 25.07.1 (commit 079a789e)"));
    }

    #[test]
    fn project_builds_on_the_users_own_lists() {
        let user = "[[language]]\nname = \"python\"\nlanguage-servers = [\"pyright\", \"owt\"]\n\n\
                    [[language]]\nname = \"rust\"\nauto-format = false\n\n\
                    [[language]]\nname = \"mylang\"\nscope = \"source.my\"\n";
        let table = with_user_lists(small_table(), user, Path::new("user.toml")).unwrap();
        assert_eq!(table.origin, "small table and user.toml");
        let merged = merge_languages_toml(
            "",
            Path::new(".helix/languages.toml"),
            &table,
            &ServerCommand::lsp("owt"),
        )
        .unwrap();
        let lists = server_lists(&merged.text);
        assert_eq!(
            lists,
            [
                ("rust".to_string(), r#"["rust-analyzer", "owt"]"#.to_string()),
                (
                    "erlang".into(),
                    r#"[{ name = "erlang-ls", except-features = ["document-symbols"] }, { name = "elp", except-features = ["document-symbols"] }, "owt"]"#.into()
                ),
                ("markdown".into(), r#"["owt"]"#.into()),
                ("python".into(), r#"["pyright", "owt"]"#.into()),
                ("mylang".into(), r#"["owt"]"#.into()),
            ]
        );
    }

    #[test]
    fn user_languages_path_prefers_xdg() {
        let path = |xdg: Option<&str>, home: Option<&str>| {
            user_languages_path(xdg.map(OsStr::new), home.map(OsStr::new))
        };
        assert_eq!(
            path(Some("/x"), Some("/h")),
            Some(PathBuf::from("/x/helix/languages.toml"))
        );
        assert_eq!(
            path(Some(""), Some("/h")),
            Some(PathBuf::from("/h/.config/helix/languages.toml"))
        );
        assert_eq!(path(None, None), None);
    }
}
