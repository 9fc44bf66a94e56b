//! Gemini CLI: Conflict Guard's pre-edit hook, for owt's sessions only.
//!
//! Checked with gemini 0.61.0 (its bundled `docs/hooks/reference.md` and
//! `hookRunner`/`coreToolHookTriggers` in its bundle, and a run): a
//! `BeforeTool` command hook gets the tool call on stdin (`tool_name`,
//! `tool_input`, `cwd`, `hook_event_name`) and may answer `{"decision":
//! "deny", "reason": …}`, which the model gets as the tool's error; it has
//! no way to tell the model anything while letting the call through (its
//! `systemMessage` is for the person). An `AfterTool` hook can:
//! `hookSpecificOutput.additionalContext` is appended to the tool's
//! result. So `owt hook --pre-edit` answers both (docs/guard.md, "Pre-edit
//! hooks"): `BeforeTool` for `write_file` and `replace`, and `AfterTool`
//! to hand a `warn` to the model.
//!
//! Where: Gemini merges hooks from every settings layer (`mergeStrategy:
//! concat`), the lowest being the system defaults file, which
//! `GEMINI_CLI_SYSTEM_DEFAULTS_PATH` moves. owt writes its own copy under
//! `$OWT_HOME/integrations/gemini/` — the user's system defaults (if any)
//! with owt's hooks added — and points that variable at it. Nothing is
//! written into the worktree: hooks in a project's `.gemini/settings.json`
//! would be "project hooks", which Gemini warns about, and the file may be
//! tracked. The user's own settings and hooks stay in force.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::{write_if_changed, Integration, IntegrationError};

/// The variable Gemini reads its system defaults file's path from.
pub const SYSTEM_DEFAULTS: &str = "GEMINI_CLI_SYSTEM_DEFAULTS_PATH";
/// Gemini's own default for it (Linux), when the variable is not set.
const SYSTEM_DEFAULTS_FILE: &str = "/etc/gemini-cli/system-defaults.json";
/// Gemini's edit tools the hook sees (a regular expression).
pub const EDIT_TOOLS: &str = "^(write_file|replace)$";
/// The hooks' name (Gemini shows it in `/hooks panel`).
const HOOK_NAME: &str = "owt-conflict-guard";

/// Where owt's copy of the system defaults is written.
pub fn defaults_path(home: &Path) -> PathBuf {
    home.join("integrations")
        .join("gemini")
        .join("system-defaults.json")
}

/// Writes the system defaults with owt's hooks (for the owt binary `owt`)
/// and points Gemini at them.
pub fn integration(
    owt: &Path,
    home: &Path,
    agent_env: &BTreeMap<String, String>,
) -> Result<Integration, IntegrationError> {
    let users = agent_env
        .get(SYSTEM_DEFAULTS)
        .cloned()
        .or_else(|| std::env::var(SYSTEM_DEFAULTS).ok())
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| SYSTEM_DEFAULTS_FILE.to_string());
    let path = defaults_path(home);
    let mut doc = if Path::new(&users) == path {
        json!({})
    } else {
        match std::fs::read_to_string(&users) {
            Ok(text) => serde_json::from_str::<Value>(&text).map_err(|e| {
                IntegrationError::Invalid(format!(
                    "{users} is not JSON ({e}); owt's Gemini hooks were not added"
                ))
            })?,
            Err(_) => json!({}),
        }
    };
    let owt = owt.to_string_lossy();
    let quoted = shlex::try_quote(&owt)
        .map_err(|e| IntegrationError::Invalid(format!("quoting {owt}: {e}")))?;
    add_hooks(&mut doc, &format!("{quoted} hook --pre-edit"))
        .map_err(|e| IntegrationError::Invalid(format!("{users}: {e}")))?;
    let text = serde_json::to_string_pretty(&doc)
        .map_err(|e| IntegrationError::Invalid(e.to_string()))?;
    write_if_changed(&path, &text)?;
    Ok(Integration {
        args: Vec::new(),
        env: BTreeMap::from([(
            SYSTEM_DEFAULTS.to_string(),
            path.to_string_lossy().into_owned(),
        )]),
    })
}

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
        assert_eq!(
            before[1]["hooks"][0]["command"],
            "/opt/owt hook --pre-edit"
        );
        assert_eq!(doc["hooks"]["AfterTool"][0]["matcher"], EDIT_TOOLS);
        let mut bad = json!({"hooks": []});
        assert!(add_hooks(&mut bad, "x").unwrap_err().contains("`hooks`"));
    }

    #[test]
    fn writes_the_defaults_outside_the_worktree_and_points_gemini_at_them() {
        let home = tempfile::tempdir().unwrap();
        let users = home.path().join("users-defaults.json");
        std::fs::write(&users, r#"{"ui": {"theme": "Dracula"}}"#).unwrap();
        let env = BTreeMap::from([(
            SYSTEM_DEFAULTS.to_string(),
            users.to_string_lossy().into_owned(),
        )]);
        let i = integration(Path::new("/opt/my owt/owt"), home.path(), &env).unwrap();
        let path = defaults_path(home.path());
        assert_eq!(i.env[SYSTEM_DEFAULTS], path.to_string_lossy());
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(doc["ui"]["theme"], "Dracula", "the user's defaults kept");
        assert_eq!(
            doc["hooks"]["BeforeTool"][0]["hooks"][0]["command"],
            "'/opt/my owt/owt' hook --pre-edit"
        );
        std::fs::write(&users, "not json").unwrap();
        let err = integration(Path::new("/opt/owt"), home.path(), &env)
            .unwrap_err()
            .to_string();
        assert!(err.contains("is not JSON"), "{err}");
    }
}
