//! What owt writes into a new worktree for Claude Code (and Droid, which
//! reads the same hook format; and Gemini CLI's pre-edit hook, in its own
//! format, [`super::gemini`]): the hooks that call `owt hook`, and Claude
//! Code's registration of `owt mcp`. Every file is edited through
//! [`super::json_file::edit`].
//!
//! - **Hooks** (`UserPromptSubmit` → working, `Stop` → waiting,
//!   `Notification` on a permission prompt → blocked) in
//!   `.claude/settings.local.json` (Claude Code) or `.factory/settings.json`
//!   (Droid).
//! - **MCP**: Claude Code reads project MCP servers from `.mcp.json` at the
//!   project root, but connects to one only once it is approved (otherwise
//!   `claude mcp list` shows it "⏸ Pending approval" and the agent would stop
//!   at a dialog). Approving is what Claude Code itself writes when a person
//!   answers "yes": the server's name in `enabledMcpjsonServers` of
//!   `.claude/settings.local.json`. Other agents: nothing is written (see
//!   `docs/mcp.md` for how to add it by hand; Codex's `mcp_servers` table is
//!   user-global, not per worktree).
//!
//! Invariants: files are merged, never clobbered — other servers, hooks and
//! settings are kept, a file that is not a JSON object is left alone with an
//! error; only owt's own entries are replaced; installing twice changes
//! nothing. The registered MCP command carries no session argument: the
//! session host puts `OWT_SESSION` and `OWT_HOME` in the agent's
//! environment, which the agent passes on to the servers it starts.

use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use super::{json_file, IntegrationError};
use crate::provider::Hooks;

/// The server's name in agents' MCP configurations.
pub const SERVER_NAME: &str = "owt";

/// Claude Code's per-worktree settings (hooks and the MCP approval).
pub const CLAUDE_SETTINGS: &str = ".claude/settings.local.json";
/// Droid's per-worktree settings (hooks).
pub const DROID_SETTINGS: &str = ".factory/settings.json";
/// Claude Code's project MCP servers.
pub const MCP_JSON: &str = ".mcp.json";

/// The settings file (relative to the worktree) the hooks of `hooks` go in.
pub fn hooks_file(hooks: Hooks) -> Option<&'static str> {
    match hooks {
        Hooks::None => None,
        Hooks::Claude => Some(CLAUDE_SETTINGS),
        Hooks::Droid => Some(DROID_SETTINGS),
        Hooks::Gemini => Some(super::gemini::SETTINGS),
    }
}

/// Marks owt's entries in a settings file.
const MARKER: &str = " hook --event ";
/// Marks owt's pre-edit entry.
const PRE_EDIT_MARKER: &str = " hook --pre-edit";
/// The tools whose calls the pre-edit hook sees (Claude Code's matcher).
const PRE_EDIT_TOOLS: &str = "Edit|Write|MultiEdit|NotebookEdit";

/// Writes owt's hooks into the agent settings of `worktree`; returns the
/// file (none for an agent without hooks).
pub fn install_hooks(hooks: Hooks, worktree: &Path) -> Result<Option<PathBuf>, IntegrationError> {
    let Some(file) = hooks_file(hooks) else {
        return Ok(None);
    };
    let exe = crate::platform::exe::owt().map_err(|error| IntegrationError::Io {
        context: "finding the owt binary".into(),
        error,
    })?;
    let exe = exe.to_string_lossy();
    let quoted = shlex::try_quote(&exe)
        .map_err(|e| IntegrationError::Invalid(format!("quoting {exe}: {e}")))?;
    if hooks == Hooks::Gemini {
        let command = format!("{quoted}{PRE_EDIT_MARKER}");
        json_file::edit(worktree, file, |root| {
            super::gemini::add_hooks(root, &command)
        })?;
        return Ok(Some(worktree.join(file)));
    }
    install_hooks_file(worktree, file, &quoted)?;
    Ok(Some(worktree.join(file)))
}

/// [`install_hooks`] for one settings file (`rel` beneath `worktree`) and a
/// (shell-quoted) owt command.
pub fn install_hooks_file(worktree: &Path, rel: &str, owt: &str) -> Result<(), IntegrationError> {
    json_file::edit(worktree, rel, |root| merge_hooks(root, owt)).map(drop)
}

/// Merges owt's hook entries into a settings document.
pub fn merge_hooks(root: &mut Value, owt: &str) -> Result<(), String> {
    let obj = root
        .as_object_mut()
        .ok_or("the settings are not a JSON object")?;
    let hooks = obj
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()));
    let hooks = hooks
        .as_object_mut()
        .ok_or("`hooks` is not a JSON object")?;
    let ours = [
        ("UserPromptSubmit", None, format!("{owt}{MARKER}working")),
        ("Stop", None, format!("{owt}{MARKER}waiting")),
        (
            "Notification",
            Some("permission_prompt"),
            format!("{owt}{MARKER}blocked"),
        ),
        // Conflict Guard before each edit ([guard] pre_edit decides).
        (
            "PreToolUse",
            Some(PRE_EDIT_TOOLS),
            format!("{owt}{PRE_EDIT_MARKER}"),
        ),
    ];
    for (event, matcher, command) in ours {
        let list = hooks
            .entry(event)
            .or_insert_with(|| Value::Array(Vec::new()));
        let list = list
            .as_array_mut()
            .ok_or_else(|| format!("`hooks.{event}` is not a list"))?;
        // Drop owt's previous entries (from this or another owt binary).
        for group in list.iter_mut() {
            if let Some(inner) = group.get_mut("hooks").and_then(Value::as_array_mut) {
                inner.retain(|h| {
                    !h.get("command")
                        .and_then(Value::as_str)
                        .is_some_and(|c| c.contains(MARKER) || c.ends_with(PRE_EDIT_MARKER))
                });
            }
        }
        list.retain(|group| {
            group
                .get("hooks")
                .and_then(Value::as_array)
                .is_none_or(|h| !h.is_empty())
        });
        let mut group = Map::new();
        if let Some(m) = matcher {
            group.insert("matcher".into(), json!(m));
        }
        group.insert(
            "hooks".into(),
            json!([{ "type": "command", "command": command, "timeout": 10 }]),
        );
        list.push(Value::Object(group));
    }
    Ok(())
}

/// Registers `owt mcp` for `provider_name`'s agent in `worktree`; returns
/// the files written (none for an agent owt cannot register with).
pub fn register_mcp(
    provider_name: &str,
    worktree: &Path,
) -> Result<Vec<PathBuf>, IntegrationError> {
    let exe = crate::platform::exe::owt_to_run().map_err(|error| IntegrationError::Io {
        context: "finding the owt binary".into(),
        error,
    })?;
    register_mcp_with(provider_name, worktree, &exe)
}

/// [`register_mcp`] with the owt binary `owt_exe`.
pub fn register_mcp_with(
    provider_name: &str,
    worktree: &Path,
    owt_exe: &Path,
) -> Result<Vec<PathBuf>, IntegrationError> {
    match provider_name {
        "claude" => {
            let exe = owt_exe.to_string_lossy();
            json_file::edit(worktree, MCP_JSON, |root| merge_mcp_json(root, &exe))?;
            json_file::edit(worktree, CLAUDE_SETTINGS, approve_mcp_json_server)?;
            Ok(vec![
                worktree.join(MCP_JSON),
                worktree.join(CLAUDE_SETTINGS),
            ])
        }
        _ => Ok(Vec::new()),
    }
}

/// Adds (or replaces) `mcpServers.owt` in a `.mcp.json` document.
pub fn merge_mcp_json(root: &mut Value, owt_exe: &str) -> Result<(), String> {
    let obj = root.as_object_mut().ok_or("it is not a JSON object")?;
    let servers = obj
        .entry("mcpServers")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or("`mcpServers` is not a JSON object")?;
    servers.insert(
        SERVER_NAME.to_string(),
        json!({ "type": "stdio", "command": owt_exe, "args": ["mcp"] }),
    );
    Ok(())
}

/// Adds `owt` to `enabledMcpjsonServers` (and removes it from
/// `disabledMcpjsonServers`) in Claude Code settings.
pub fn approve_mcp_json_server(root: &mut Value) -> Result<(), String> {
    let obj = root.as_object_mut().ok_or("it is not a JSON object")?;
    let enabled = obj
        .entry("enabledMcpjsonServers")
        .or_insert_with(|| Value::Array(Vec::new()))
        .as_array_mut()
        .ok_or("`enabledMcpjsonServers` is not a list")?;
    if !enabled.iter().any(|v| v == SERVER_NAME) {
        enabled.push(json!(SERVER_NAME));
    }
    if let Some(disabled) = obj
        .get_mut("disabledMcpjsonServers")
        .and_then(Value::as_array_mut)
    {
        disabled.retain(|v| v != SERVER_NAME);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(path: &Path) -> Value {
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    #[test]
    fn writes_mcp_json_and_approval_for_claude() {
        let dir = tempfile::tempdir().unwrap();
        let files = register_mcp_with("claude", dir.path(), Path::new("/opt/owt")).unwrap();
        assert_eq!(
            files,
            [
                dir.path().join(".mcp.json"),
                dir.path().join(".claude/settings.local.json")
            ]
        );
        expect_test::expect![[r#"
            {
              "mcpServers": {
                "owt": {
                  "args": [
                    "mcp"
                  ],
                  "command": "/opt/owt",
                  "type": "stdio"
                }
              }
            }
        "#]]
        .assert_eq(&std::fs::read_to_string(&files[0]).unwrap());
        assert_eq!(read(&files[1])["enabledMcpjsonServers"], json!(["owt"]));
    }

    #[test]
    fn keeps_other_servers_and_settings_and_is_idempotent() {
        let dir = tempfile::tempdir().unwrap();
        let mcp_json = dir.path().join(".mcp.json");
        std::fs::write(
            &mcp_json,
            r#"{"mcpServers": {"github": {"command": "gh-mcp", "args": ["--stdio"], "env": {"X": "1"}},
                              "owt": {"command": "/old/owt", "args": ["mcp"]}},
                "someOtherKey": [1, 2]}"#,
        )
        .unwrap();
        let settings = dir.path().join(".claude/settings.local.json");
        std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
        std::fs::write(
            &settings,
            r#"{"permissions": {"allow": ["Bash(ls)"]}, "enabledMcpjsonServers": ["github"],
                "disabledMcpjsonServers": ["owt", "evil"]}"#,
        )
        .unwrap();

        register_mcp_with("claude", dir.path(), Path::new("/new/owt")).unwrap();
        let once = (
            std::fs::read_to_string(&mcp_json).unwrap(),
            std::fs::read_to_string(&settings).unwrap(),
        );
        let mtime = std::fs::metadata(&mcp_json).unwrap().modified().unwrap();
        register_mcp_with("claude", dir.path(), Path::new("/new/owt")).unwrap();
        let twice = (
            std::fs::read_to_string(&mcp_json).unwrap(),
            std::fs::read_to_string(&settings).unwrap(),
        );
        assert_eq!(once, twice, "registering twice changes nothing");
        assert_eq!(
            std::fs::metadata(&mcp_json).unwrap().modified().unwrap(),
            mtime,
            "an unchanged file is not rewritten"
        );

        let m = read(&mcp_json);
        assert_eq!(
            m["mcpServers"]["github"],
            json!({"command": "gh-mcp", "args": ["--stdio"], "env": {"X": "1"}})
        );
        assert_eq!(m["mcpServers"]["owt"]["command"], "/new/owt");
        assert_eq!(m["someOtherKey"], json!([1, 2]));
        let s = read(&settings);
        assert_eq!(s["permissions"]["allow"], json!(["Bash(ls)"]));
        assert_eq!(s["enabledMcpjsonServers"], json!(["github", "owt"]));
        assert_eq!(s["disabledMcpjsonServers"], json!(["evil"]));
    }

    #[test]
    fn leaves_a_file_that_is_not_an_object_alone() {
        let dir = tempfile::tempdir().unwrap();
        let mcp_json = dir.path().join(".mcp.json");
        std::fs::write(&mcp_json, "[1]").unwrap();
        let err = register_mcp_with("claude", dir.path(), Path::new("/opt/owt"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("not a JSON object; not touching it"), "{err}");
        assert_eq!(std::fs::read_to_string(&mcp_json).unwrap(), "[1]");
        std::fs::write(&mcp_json, r#"{"mcpServers": []}"#).unwrap();
        let err = register_mcp_with("claude", dir.path(), Path::new("/opt/owt"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("`mcpServers` is not a JSON object"), "{err}");
    }

    #[test]
    fn other_agents_get_nothing_written() {
        let dir = tempfile::tempdir().unwrap();
        for provider in ["codex", "opencode", "aider", "gemini", "fake"] {
            let files = register_mcp_with(provider, dir.path(), Path::new("/opt/owt")).unwrap();
            assert!(files.is_empty(), "{provider}");
        }
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn merges_without_clobbering_and_is_idempotent() {
        let dir = tempfile::tempdir().unwrap();
        const REL: &str = ".claude/settings.local.json";
        let file = dir.path().join(REL);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(
            &file,
            r#"{"permissions": {"allow": ["Bash(ls)"]},
                "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}],
                          "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "x"}]}]}}"#,
        )
        .unwrap();
        install_hooks_file(dir.path(), REL, "/opt/owt").unwrap();
        let once = std::fs::read_to_string(&file).unwrap();
        install_hooks_file(dir.path(), REL, "/opt/owt").unwrap();
        let twice = std::fs::read_to_string(&file).unwrap();
        assert_eq!(once, twice, "installing twice changes nothing");
        let v: Value = serde_json::from_str(&twice).unwrap();
        assert_eq!(v["permissions"]["allow"][0], "Bash(ls)");
        assert_eq!(v["hooks"]["PreToolUse"][0]["matcher"], "Bash");
        let stop = v["hooks"]["Stop"].as_array().unwrap();
        assert_eq!(stop.len(), 2);
        assert_eq!(stop[0]["hooks"][0]["command"], "say done");
        assert_eq!(
            stop[1]["hooks"][0]["command"],
            "/opt/owt hook --event waiting"
        );
        assert_eq!(
            v["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"],
            "/opt/owt hook --event working"
        );
        assert_eq!(
            v["hooks"]["Notification"][0]["matcher"],
            "permission_prompt"
        );
        assert_eq!(
            v["hooks"]["Notification"][0]["hooks"][0]["command"],
            "/opt/owt hook --event blocked"
        );
        let pre = v["hooks"]["PreToolUse"].as_array().unwrap();
        assert_eq!(pre.len(), 2, "the user's Bash hook kept, owt's added once");
        assert_eq!(pre[1]["matcher"], "Edit|Write|MultiEdit|NotebookEdit");
        assert_eq!(pre[1]["hooks"][0]["command"], "/opt/owt hook --pre-edit");
    }

    #[test]
    fn a_moved_binary_replaces_the_old_entries() {
        let dir = tempfile::tempdir().unwrap();
        const REL: &str = "settings.json";
        let file = dir.path().join(REL);
        install_hooks_file(dir.path(), REL, "/old/owt").unwrap();
        install_hooks_file(dir.path(), REL, "/new/owt").unwrap();
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(!text.contains("/old/owt"), "{text}");
        assert_eq!(text.matches("/new/owt").count(), 4);
    }

    #[test]
    fn refuses_settings_that_are_not_an_object() {
        let dir = tempfile::tempdir().unwrap();
        const REL: &str = "settings.json";
        let file = dir.path().join(REL);
        std::fs::write(&file, "[1, 2]").unwrap();
        let err = install_hooks_file(dir.path(), REL, "owt")
            .unwrap_err()
            .to_string();
        assert!(
            err.ends_with("the settings are not a JSON object; not touching it"),
            "{err}"
        );
        assert!(matches!(
            install_hooks_file(dir.path(), REL, "owt"),
            Err(IntegrationError::Settings { .. })
        ));
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "[1, 2]");
    }
}
