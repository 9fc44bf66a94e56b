//! Registering `owt mcp` with an agent, in the form that agent reads, when
//! `owt new` prepares its worktree.
//!
//! - **Claude Code** reads project MCP servers from `.mcp.json` at the
//!   project root, but connects to one only once it is approved (otherwise
//!   `claude mcp list` shows it "⏸ Pending approval" and the agent would stop
//!   at a dialog). Approving is what Claude Code itself writes when a person
//!   answers "yes": the server's name in `enabledMcpjsonServers` of
//!   `.claude/settings.local.json` — the file owt's hooks already live in.
//! - Other agents: nothing is written (see `docs/mcp.md` for how to add it
//!   by hand; Codex's `mcp_servers` table is user-global, not per worktree).
//!
//! Invariants: files are merged, never clobbered — other servers and other
//! settings are kept, a file that is not a JSON object is left alone with an
//! error; only owt's own entry is replaced; registering twice changes
//! nothing (a file whose content would not change is not rewritten). The
//! registered command carries no session argument: the session host puts
//! `OWT_SESSION` and `OWT_HOME` in the agent's environment, which the agent
//! passes on to the servers it starts.

use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

/// The server's name in agents' MCP configurations.
pub const SERVER_NAME: &str = "owt";

#[derive(Debug, thiserror::Error)]
pub enum RegisterError {
    #[error("finding the owt binary: {0}")]
    CurrentExe(std::io::Error),
    #[error("reading {path}: {error}")]
    Read {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("writing {path}: {error}")]
    Write {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{path}: {message}; not touching it")]
    Shape { path: PathBuf, message: String },
}

/// Registers `owt mcp` for `provider_name`'s agent in `worktree`; returns
/// the files written (none for an agent owt cannot register with).
pub fn register_mcp(provider_name: &str, worktree: &Path) -> Result<Vec<PathBuf>, RegisterError> {
    let exe = match std::env::var_os("OWT_BIN").filter(|v| !v.is_empty()) {
        Some(bin) => PathBuf::from(bin),
        None => std::env::current_exe().map_err(RegisterError::CurrentExe)?,
    };
    register_mcp_with(provider_name, worktree, &exe)
}

/// [`register_mcp`] with the owt binary `owt_exe`.
pub fn register_mcp_with(
    provider_name: &str,
    worktree: &Path,
    owt_exe: &Path,
) -> Result<Vec<PathBuf>, RegisterError> {
    match provider_name {
        "claude" => {
            let mcp_json = worktree.join(".mcp.json");
            let exe = owt_exe.to_string_lossy();
            update_json_file(&mcp_json, |root| merge_mcp_json(root, &exe))?;
            let settings = worktree.join(".claude/settings.local.json");
            update_json_file(&settings, approve_mcp_json_server)?;
            Ok(vec![mcp_json, settings])
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

/// Reads `file` (missing or blank: `{}`), applies `edit`, and writes it back
/// when the content changed.
fn update_json_file(
    file: &Path,
    edit: impl FnOnce(&mut Value) -> Result<(), String>,
) -> Result<(), RegisterError> {
    let shape = |message: String| RegisterError::Shape {
        path: file.to_path_buf(),
        message,
    };
    let old = match std::fs::read_to_string(file) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(source) => {
            return Err(RegisterError::Read {
                path: file.to_path_buf(),
                error: source,
            })
        }
    };
    let mut root = match old.as_deref().map(str::trim) {
        None | Some("") => Value::Object(Map::new()),
        Some(text) => {
            serde_json::from_str(text).map_err(|e| shape(format!("it is not valid JSON ({e})")))?
        }
    };
    edit(&mut root).map_err(shape)?;
    let mut text = serde_json::to_string_pretty(&root).unwrap_or_default();
    text.push('\n');
    if old.as_deref() == Some(text.as_str()) {
        return Ok(());
    }
    let write_err = |source| RegisterError::Write {
        path: file.to_path_buf(),
        error: source,
    };
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir).map_err(write_err)?;
    }
    std::fs::write(file, text).map_err(write_err)
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
}
