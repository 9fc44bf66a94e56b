//! Agent hooks: `owt hook --event …` records what an agent says it is
//! doing, and [`install_hooks`] wires those calls into the agent's own
//! settings in a worktree (Claude Code, Droid).
//!
//! Invariant: installing merges into the existing settings file — other
//! keys and other hooks are kept, owt's own entries are replaced, so
//! installing twice changes nothing.

use std::path::Path;

use serde_json::{json, Map, Value};

use super::SessionError;
use crate::provider::Hooks;
use crate::status::{kind, AgentSignal};
use crate::store::Store;

/// The `--event` values of `owt hook`.
pub fn parse_event(event: &str) -> Option<AgentSignal> {
    match event {
        "working" => Some(AgentSignal::Working),
        "waiting" => Some(AgentSignal::Waiting),
        "blocked" => Some(AgentSignal::Blocked),
        "done" => Some(AgentSignal::Done),
        "idle" => Some(AgentSignal::Idle),
        _ => None,
    }
}

/// Records a hook signal for the session with short id `short_id`.
pub fn record_hook(home: &Path, short_id: &str, signal: AgentSignal) -> Result<(), SessionError> {
    let store = Store::open(home)?;
    let session =
        store
            .session_by_short_id(short_id)?
            .ok_or_else(|| SessionError::UnknownSession {
                short_id: short_id.to_string(),
                home: home.to_path_buf(),
            })?;
    store.record_fact(session.id, kind::HOOK, &signal)?;
    Ok(())
}

/// Marks owt's entries in a settings file.
const MARKER: &str = " hook --event ";
/// Marks owt's pre-edit entry.
const PRE_EDIT_MARKER: &str = " hook --pre-edit";
/// The tools whose calls the pre-edit hook sees (Claude Code's matcher).
const PRE_EDIT_TOOLS: &str = "Edit|Write|MultiEdit|NotebookEdit";

/// Writes owt's hooks into the agent settings of `worktree`.
pub fn install_hooks(provider_hooks: Hooks, worktree: &Path) -> Result<(), SessionError> {
    let file = match provider_hooks {
        Hooks::None => return Ok(()),
        Hooks::Claude => worktree.join(".claude/settings.local.json"),
        Hooks::Droid => worktree.join(".factory/settings.json"),
    };
    let exe = std::env::current_exe().map_err(|e| SessionError::io("finding the owt binary", e))?;
    let exe = exe.to_string_lossy();
    let quoted = shlex::try_quote(&exe)
        .map_err(|e| SessionError::io(format!("quoting {exe}"), std::io::Error::other(e)))?;
    install_hooks_file(&file, &quoted)
}

/// [`install_hooks`] for one settings file and a (shell-quoted) owt command.
pub fn install_hooks_file(file: &Path, owt: &str) -> Result<(), SessionError> {
    let settings = |problem: String| SessionError::Settings {
        path: file.to_path_buf(),
        problem,
    };
    let mut root = match std::fs::read_to_string(file) {
        Ok(text) if text.trim().is_empty() => Value::Object(Map::new()),
        Ok(text) => serde_json::from_str::<Value>(&text)
            .map_err(|e| settings(format!("it is not valid JSON ({e})")))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Value::Object(Map::new()),
        Err(e) => return Err(SessionError::io(format!("reading {}", file.display()), e)),
    };
    merge_hooks(&mut root, owt).map_err(settings)?;
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| SessionError::io(format!("creating {}", dir.display()), e))?;
    }
    let mut text = serde_json::to_string_pretty(&root).unwrap_or_default();
    text.push('\n');
    std::fs::write(file, text)
        .map_err(|e| SessionError::io(format!("writing {}", file.display()), e))
}

/// Merges owt's hook entries into a settings document.
fn merge_hooks(root: &mut Value, owt: &str) -> Result<(), String> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_without_clobbering_and_is_idempotent() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(".claude/settings.local.json");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(
            &file,
            r#"{"permissions": {"allow": ["Bash(ls)"]},
                "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}],
                          "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "x"}]}]}}"#,
        )
        .unwrap();
        install_hooks_file(&file, "/opt/owt").unwrap();
        let once = std::fs::read_to_string(&file).unwrap();
        install_hooks_file(&file, "/opt/owt").unwrap();
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
        let file = dir.path().join("settings.json");
        install_hooks_file(&file, "/old/owt").unwrap();
        install_hooks_file(&file, "/new/owt").unwrap();
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(!text.contains("/old/owt"), "{text}");
        assert_eq!(text.matches("/new/owt").count(), 4);
    }

    #[test]
    fn refuses_settings_that_are_not_an_object() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("settings.json");
        std::fs::write(&file, "[1, 2]").unwrap();
        let err = install_hooks_file(&file, "owt").unwrap_err().to_string();
        assert!(
            err.ends_with("the settings are not a JSON object; not touching it"),
            "{err}"
        );
        assert!(matches!(
            install_hooks_file(&file, "owt"),
            Err(SessionError::Settings { .. })
        ));
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "[1, 2]");
    }
}
