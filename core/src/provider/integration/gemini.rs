//! Gemini CLI: Conflict Guard's pre-edit hook, in the worktree's
//! `.gemini/settings.json`.
//!
//! Checked with gemini 0.61.0 (its bundled `docs/hooks/reference.md`, its
//! `hookRunner` and `evaluateBeforeToolHook`, and a run): a `BeforeTool`
//! command hook gets the tool call on stdin (`tool_name`, `tool_input`,
//! `cwd`, `hook_event_name`), with the agent's environment (unless you
//! turn on its `security.environmentVariableRedaction`), and may answer
//! `{"decision": "deny", "reason": …}`, which the model gets as the tool's
//! error; it cannot tell the model anything while letting the call
//! through (its `systemMessage` is for the person). An `AfterTool` hook
//! can: `hookSpecificOutput.additionalContext` is appended to the tool's
//! result. So `owt hook --pre-edit` answers both (docs/guard.md,
//! "Preventive guard"), for `write_file` and `replace`.
//!
//! Where: Gemini adds up the hooks of every settings layer (`mergeStrategy:
//! concat`). Not the system layers (`GEMINI_CLI_SYSTEM_DEFAULTS_PATH` would
//! move one, but Gemini skips a system file unless root owns it and every
//! folder above it), nor your `~/.gemini/settings.json`: the worktree's
//! `.gemini/settings.json`, merged like Claude Code's settings (your own
//! keys and hooks kept, only owt's entries replaced; `ops::owned` keeps it
//! out of commits). Gemini runs a project's hooks only in a folder you
//! trust, and says once per worktree that it found them.

use serde_json::{json, Value};

/// The settings file (relative to the worktree) owt's hooks go in.
pub const SETTINGS: &str = ".gemini/settings.json";
/// Gemini's edit tools the hook sees (a regular expression).
pub const EDIT_TOOLS: &str = "^(write_file|replace)$";
/// The hooks' name (Gemini shows it in `/hooks panel`).
const HOOK_NAME: &str = "owt-conflict-guard";

/// Adds owt's `BeforeTool` and `AfterTool` hooks (running `command`) to a
/// Gemini settings document, keeping every other hook.
pub fn add_hooks(doc: &mut Value, command: &str) -> Result<(), String> {
    let hooks = doc
        .as_object_mut()
        .ok_or("the settings are not a JSON object")?
        .entry("hooks")
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .ok_or("`hooks` is not a JSON object")?;
    for event in ["BeforeTool", "AfterTool"] {
        let list = hooks
            .entry(event)
            .or_insert_with(|| json!([]))
            .as_array_mut()
            .ok_or_else(|| format!("`hooks.{event}` is not a list"))?;
        list.retain(|group| {
            !group["hooks"]
                .as_array()
                .is_some_and(|h| h.iter().any(|h| h["name"] == HOOK_NAME))
        });
        list.push(json!({
            "matcher": EDIT_TOOLS,
            "hooks": [{"name": HOOK_NAME, "type": "command", "command": command, "timeout": 10000}],
        }));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds_both_hooks_once_keeping_the_users() {
        let mut doc = json!({"general": {"vimMode": true},
            "hooks": {"BeforeTool": [{"matcher": "run_shell_command", "hooks": [{"type": "command", "command": "audit"}]}]}});
        add_hooks(&mut doc, "/opt/owt hook --pre-edit").unwrap();
        let once = doc.clone();
        add_hooks(&mut doc, "/opt/owt hook --pre-edit").unwrap();
        assert_eq!(doc, once, "adding twice changes nothing");
        assert_eq!(doc["general"]["vimMode"], true);
        let before = doc["hooks"]["BeforeTool"].as_array().unwrap();
        assert_eq!(before.len(), 2, "{doc}");
        assert_eq!(before[0]["hooks"][0]["command"], "audit");
        assert_eq!(before[1]["matcher"], EDIT_TOOLS);
        assert_eq!(before[1]["hooks"][0]["command"], "/opt/owt hook --pre-edit");
        assert_eq!(doc["hooks"]["AfterTool"][0]["matcher"], EDIT_TOOLS);
        let mut bad = json!({"hooks": []});
        assert!(add_hooks(&mut bad, "x").unwrap_err().contains("`hooks`"));
    }

    #[test]
    fn installs_into_the_worktrees_gemini_settings_keeping_the_users_keys() {
        use crate::provider::integration::claude::install_hooks;
        use crate::provider::Hooks;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(SETTINGS);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, r#"{"model": {"name": "gemini-2.5-pro"}}"#).unwrap();
        let written = install_hooks(Hooks::Gemini, dir.path()).unwrap();
        assert_eq!(written, Some(file.clone()));
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        assert_eq!(doc["model"]["name"], "gemini-2.5-pro");
        for event in ["BeforeTool", "AfterTool"] {
            let command = doc["hooks"][event][0]["hooks"][0]["command"]
                .as_str()
                .unwrap();
            assert!(command.ends_with(" hook --pre-edit"), "{event}: {command}");
        }
        assert!(
            doc["hooks"].get("PreToolUse").is_none(),
            "no Claude Code hooks: {doc}"
        );
    }
}
