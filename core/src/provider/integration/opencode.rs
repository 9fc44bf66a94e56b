//! OpenCode: a status plugin, loaded for owt's sessions only.
//!
//! Checked with opencode 1.18.33 (`@opencode-ai/plugin` types and a run):
//! a plugin's `event` hook receives every bus event — `session.status`
//! (`busy`, `retry`, `idle`), `session.idle`, `permission.asked` (also
//! `permission.updated` in older versions) and `permission.replied`, and
//! `session.created` with a `parentID` for sub-agent sessions. owt's plugin
//! (`opencode-plugin.js`) turns them into `owt hook --event
//! working|waiting|blocked`; its `tool.execute.before` asks `owt hook
//! --pre-edit` before `write` and `edit` (their arguments put in Claude
//! Code's form), throws to refuse (the tool's error, which the model
//! reads), and its `tool.execute.after` appends a warning to the tool's
//! output (docs/guard.md, "Preventive guard"). It is written under
//! `$OWT_HOME/integrations/opencode/` and named in `OPENCODE_CONFIG_CONTENT`
//! (merged into any value the user gives that variable): OpenCode loads it
//! as a `file://` plugin, so nothing is written into the worktree (a plugin
//! in its `.opencode/` would make OpenCode install packages there) and the
//! user's `opencode.json` stays as it is.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::{write_if_changed, Integration, IntegrationError};

/// The variable OpenCode reads extra configuration (JSON) from.
pub const CONFIG_CONTENT: &str = "OPENCODE_CONFIG_CONTENT";

/// The plugin, with `__OWT__` standing for the owt binary (a JSON string).
const PLUGIN: &str = concat!(
    include_str!("opencode-plugin.js"),
    include_str!("guard-ask.js")
);

/// Where the plugin is written.
pub fn plugin_path(home: &Path) -> PathBuf {
    home.join("integrations")
        .join("opencode")
        .join("owt-status.js")
}

/// Writes the plugin (for the owt binary `owt`) and names it in
/// `OPENCODE_CONFIG_CONTENT`.
pub fn integration(
    owt: &Path,
    home: &Path,
    agent_env: &BTreeMap<String, String>,
) -> Result<Integration, IntegrationError> {
    let path = plugin_path(home);
    let owt_json = serde_json::to_string(&owt.to_string_lossy())
        .map_err(|e| IntegrationError::Invalid(e.to_string()))?;
    write_if_changed(&path, &PLUGIN.replace("__OWT__", &owt_json))?;
    let existing = agent_env
        .get(CONFIG_CONTENT)
        .cloned()
        .or_else(|| std::env::var(CONFIG_CONTENT).ok());
    let content = config_content(existing.as_deref(), &file_url(&path))?;
    Ok(Integration {
        args: Vec::new(),
        env: BTreeMap::from([(CONFIG_CONTENT.to_string(), content)]),
    })
}

/// `existing` (the user's `OPENCODE_CONFIG_CONTENT`, if any) with `plugin`
/// added to its `plugin` list.
pub fn config_content(existing: Option<&str>, plugin: &str) -> Result<String, IntegrationError> {
    let mut doc = match existing.map(str::trim).filter(|s| !s.is_empty()) {
        Some(text) => serde_json::from_str::<serde_json::Value>(text).map_err(|e| {
            IntegrationError::Invalid(format!(
                "{CONFIG_CONTENT} is not JSON ({e}); owt's status plugin was not added"
            ))
        })?,
        None => serde_json::json!({}),
    };
    let obj = doc.as_object_mut().ok_or_else(|| {
        IntegrationError::Invalid(format!(
            "{CONFIG_CONTENT} is not a JSON object; owt's status plugin was not added"
        ))
    })?;
    let plugins = obj.entry("plugin").or_insert_with(|| serde_json::json!([]));
    let list = plugins.as_array_mut().ok_or_else(|| {
        IntegrationError::Invalid(format!(
            "`plugin` in {CONFIG_CONTENT} is not a list; owt's status plugin was not added"
        ))
    })?;
    if !list.iter().any(|p| p.as_str() == Some(plugin)) {
        list.push(serde_json::json!(plugin));
    }
    Ok(doc.to_string())
}

/// A `file://` URL for an absolute path (bytes outside the unreserved set
/// percent-encoded).
fn file_url(path: &Path) -> String {
    let mut url = String::from("file://");
    for b in path.to_string_lossy().bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'/' | b'.' | b'_' | b'-' | b'~' => {
                url.push(b as char)
            }
            _ => url.push_str(&format!("%{b:02X}")),
        }
    }
    url
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds_the_plugin_to_the_users_config_content_once() {
        let url = "file:///h/owt-status.js";
        assert_eq!(
            config_content(None, url).unwrap(),
            r#"{"plugin":["file:///h/owt-status.js"]}"#
        );
        let user = r#"{"model":"x/y","plugin":["their-plugin"]}"#;
        let merged = config_content(Some(user), url).unwrap();
        let v: serde_json::Value = serde_json::from_str(&merged).unwrap();
        assert_eq!(v["model"], "x/y");
        assert_eq!(v["plugin"], serde_json::json!(["their-plugin", url]));
        assert_eq!(config_content(Some(&merged), url).unwrap(), merged);
        let err = config_content(Some("not json"), url)
            .unwrap_err()
            .to_string();
        assert!(err.contains("not JSON"), "{err}");
    }

    #[test]
    fn writes_the_plugin_for_this_owt_outside_the_worktree() {
        let home = tempfile::tempdir().unwrap();
        let i = integration(
            Path::new("/opt/owt \"x\"/owt"),
            home.path(),
            &BTreeMap::new(),
        )
        .unwrap();
        let path = plugin_path(home.path());
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.contains(r#"const OWT = "/opt/owt \"x\"/owt";"#),
            "{text}"
        );
        let content: serde_json::Value = serde_json::from_str(&i.env[CONFIG_CONTENT]).unwrap();
        let url = content["plugin"][0].as_str().unwrap();
        assert!(url.starts_with("file:///") && url.ends_with("/owt-status.js"));
        assert!(!url.contains(' '));
    }
}
