//! What a repository's configuration may set before the user trusts it:
//! the gated keys, the ones never allowed, and what was withheld.

use std::path::{Path, PathBuf};

use super::{normalize, resolve_base_directory};

/// Keys of the repository's configuration file that owt did not apply.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Withheld {
    pub file: PathBuf,
    /// Keys that need trust, ignored because the user has not trusted this
    /// file's current content (`owt trust`).
    pub untrusted: Vec<String>,
    /// Keys a repository may never set, trusted or not: `[tools.NAME]`
    /// tables that would redefine a built-in agent.
    pub refused: Vec<String>,
}

/// Whether the user trusts a repository file with exactly these bytes.
pub trait Trust {
    fn trusts(&self, path: &Path, bytes: &[u8]) -> bool;
}

impl<F: Fn(&Path, &[u8]) -> bool> Trust for F {
    fn trusts(&self, path: &Path, bytes: &[u8]) -> bool {
        self(path, bytes)
    }
}

/// Trusts nothing: a repository's gated keys are ignored.
pub struct TrustNothing;

impl Trust for TrustNothing {
    fn trusts(&self, _: &Path, _: &[u8]) -> bool {
        false
    }
}

/// The keys of a repository's configuration table that need trust, and
/// the ones a repository may never set.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Gated {
    /// Paths of keys (`["tools", "x"]`, `["agent", "env", "NODE_OPTIONS"]`).
    pub need_trust: Vec<Vec<String>>,
    pub refused: Vec<Vec<String>>,
}

/// `["tools", "x"]` → `tools.x` (keys that are not bare words quoted).
pub fn dotted(path: &[String]) -> String {
    path.iter()
        .map(|k| {
            if !k.is_empty()
                && k.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            {
                k.clone()
            } else {
                format!("{k:?}")
            }
        })
        .collect::<Vec<_>>()
        .join(".")
}

/// The names of the agents owt knows, in auto-detection order (the
/// provider table's rows; its tests check the two agree): a repository may
/// not redefine them.
pub const BUILTIN_TOOLS: &[&str] = &[
    "claude",
    "codex",
    "opencode",
    "pi",
    "droid",
    "aider",
    "gemini",
    "cursor-agent",
    "amp",
    "goose",
];

/// Which keys of a repository's (translated) configuration table run
/// programs, set an agent's environment, or choose where owt writes
/// outside the repository's parent folder, lift the machine's limits on
/// running agents, cost resources or delete files: `[tools.*]`,
/// `agent.default_tool`, `agent.max_running`, `agent.min_free_memory`,
/// `agent.scrollback`, `agent.auto_resume = true`, `agent.env.*`,
/// `environment.auto_install_deps = true`, `worktree.disposable`, and a `worktree.base_directory` that is
/// not a plain (non-hidden) folder beside the repository at `repo_root`
/// (a folder that exists must be no checkout, nor a link).
/// `[tools.NAME]` of a built-in agent is refused outright. `[remotes.*]`
/// needs trust too: it makes owt run `ssh` and a program on another machine.
pub fn gated_keys(table: &toml::Table, repo_root: &Path) -> Gated {
    let mut gated = Gated::default();
    let key = |parts: &[&str]| parts.iter().map(|p| p.to_string()).collect::<Vec<_>>();
    if let Some(toml::Value::Table(remotes)) = table.get("remotes") {
        for name in remotes.keys() {
            gated.need_trust.push(key(&["remotes", name]));
        }
    }
    if let Some(toml::Value::Table(tools)) = table.get("tools") {
        for name in tools.keys() {
            let path = key(&["tools", name]);
            if BUILTIN_TOOLS.contains(&name.as_str()) {
                gated.refused.push(path);
            } else {
                gated.need_trust.push(path);
            }
        }
    }
    if let Some(toml::Value::Table(agent)) = table.get("agent") {
        if agent.contains_key("default_tool") {
            gated.need_trust.push(key(&["agent", "default_tool"]));
        }
        // What keeps the machine from running out of memory is the
        // user's: a cloned repository may not lift it, nor make each
        // session host keep more scrollback.
        for limit in ["max_running", "min_free_memory", "scrollback"] {
            if agent.contains_key(limit) {
                gated.need_trust.push(key(&["agent", limit]));
            }
        }
        // Starts agents without being asked.
        if agent.get("auto_resume") == Some(&toml::Value::Boolean(true)) {
            gated.need_trust.push(key(&["agent", "auto_resume"]));
        }
        if let Some(toml::Value::Table(env)) = agent.get("env") {
            for name in env.keys() {
                gated.need_trust.push(key(&["agent", "env", name]));
            }
        }
    }
    if let Some(toml::Value::Table(worktree)) = table.get("worktree") {
        if let Some(toml::Value::String(dir)) = worktree.get("base_directory") {
            if !plain_sibling(dir, repo_root) {
                gated.need_trust.push(key(&["worktree", "base_directory"]));
            }
        }
        // Globs of ignored files `owt delete` removes without a trash copy.
        if worktree.contains_key("disposable") {
            gated.need_trust.push(key(&["worktree", "disposable"]));
        }
    }
    if let Some(toml::Value::Table(environment)) = table.get("environment") {
        if environment.get("auto_install_deps") == Some(&toml::Value::Boolean(true)) {
            gated
                .need_trust
                .push(key(&["environment", "auto_install_deps"]));
        }
    }
    gate_feedback_keys(table, &mut gated);
    gated
}

/// Whether `dir` (a `base_directory`) is a plain (non-hidden) folder
/// beside the repository at `repo_root` that is not a checkout of its own
/// (holds no `.git`): the only one a repository may choose without trust.
fn plain_sibling(dir: &str, repo_root: &Path) -> bool {
    let parent = normalize(repo_root.parent().unwrap_or(repo_root));
    let resolved = normalize(&resolve_base_directory(dir, repo_root));
    let beside = resolved.parent() == Some(parent.as_path())
        && resolved
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| !n.starts_with('.'));
    let checkout_or_link = match std::fs::symlink_metadata(&resolved) {
        Ok(meta) => {
            meta.file_type().is_symlink()
                || std::fs::symlink_metadata(resolved.join(".git")).is_ok()
        }
        Err(_) => false,
    };
    beside && !checkout_or_link
}

/// `checks.command`, `pr.cli` and `notify.command` run programs; `[mcp]`
/// lets an agent start agents (and ship); `pr.auto
/// = true` pushes to a remote unasked; `feedback.comment_authors` other than
/// `"collaborators"` lets people outside the repository type into agents.
fn gate_feedback_keys(table: &toml::Table, gated: &mut Gated) {
    let key = |parts: &[&str]| parts.iter().map(|p| p.to_string()).collect::<Vec<_>>();
    if let Some(toml::Value::Table(feedback)) = table.get("feedback") {
        let widens = match feedback.get("comment_authors") {
            None => false,
            Some(toml::Value::String(one)) => one != "collaborators",
            Some(toml::Value::Array(list)) => {
                list.iter().any(|v| v.as_str() != Some("collaborators"))
            }
            Some(_) => true,
        };
        if widens {
            gated.need_trust.push(key(&["feedback", "comment_authors"]));
        }
    }
    if let Some(toml::Value::Table(checks)) = table.get("checks") {
        if checks.contains_key("command") {
            gated.need_trust.push(key(&["checks", "command"]));
        }
    }
    if let Some(toml::Value::Table(pr)) = table.get("pr") {
        if pr.contains_key("cli") {
            gated.need_trust.push(key(&["pr", "cli"]));
        }
        if pr.get("auto") == Some(&toml::Value::Boolean(true)) {
            gated.need_trust.push(key(&["pr", "auto"]));
        }
    }
    if let Some(toml::Value::Table(notify)) = table.get("notify") {
        if notify.contains_key("command") {
            gated.need_trust.push(key(&["notify", "command"]));
        }
    }
    // A conductor starts agents, and may merge their work.
    if let Some(toml::Value::Table(mcp)) = table.get("mcp") {
        for name in ["conductor", "conductor_can_ship", "max_children"] {
            if mcp.contains_key(name) {
                gated.need_trust.push(key(&["mcp", name]));
            }
        }
    }
}

/// The value at `path` in `table`, if any.
pub fn value_at<'t>(table: &'t toml::Table, path: &[String]) -> Option<&'t toml::Value> {
    let (last, parents) = path.split_last()?;
    let mut current = table;
    for part in parents {
        current = current.get(part)?.as_table()?;
    }
    current.get(last)
}

/// Removes the value at `path` from `table` (and tables it leaves empty).
pub(super) fn remove_at(table: &mut toml::Table, path: &[String]) {
    let Some((first, rest)) = path.split_first() else {
        return;
    };
    if rest.is_empty() {
        table.remove(first);
        return;
    }
    if let Some(toml::Value::Table(inner)) = table.get_mut(first) {
        remove_at(inner, rest);
        if inner.is_empty() {
            table.remove(first);
        }
    }
}
