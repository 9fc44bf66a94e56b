//! The one read-modify-write of an agent's JSON settings file in a
//! worktree (Claude Code's and Droid's hooks, Claude Code's MCP
//! registration).
//!
//! Invariants: the file is read and written beneath the worktree without
//! following a link ([`crate::safe_fs`]): a link anywhere on its path is
//! refused and nothing is written; a missing or blank file is `{}`; a file
//! that is not JSON, or
//! whose shape the edit refuses, is left as it is with
//! [`IntegrationError::Settings`]; other keys are kept (the edit touches
//! only owt's entries); a file whose content would not change is not
//! rewritten.

use std::path::Path;

use serde_json::{Map, Value};

use super::IntegrationError;
use crate::safe_fs;

/// The largest settings file owt edits.
const LIMIT: u64 = safe_fs::CONFIG_LIMIT;

/// Reads `rel` beneath `root`, applies `edit`, and writes the result back
/// (pretty, with a final newline) when it differs. Returns whether the
/// file was written.
pub fn edit(
    root: &Path,
    rel: &str,
    edit: impl FnOnce(&mut Value) -> Result<(), String>,
) -> Result<bool, IntegrationError> {
    let file = root.join(rel);
    let settings = |problem: String| IntegrationError::Settings {
        path: file.clone(),
        problem,
    };
    let old = safe_fs::read_beneath(root, Path::new(rel), LIMIT)?
        .map(|bytes| String::from_utf8(bytes).map_err(|_| settings("it is not UTF-8 text".into())))
        .transpose()?;
    let mut doc = match old.as_deref().map(str::trim) {
        None | Some("") => Value::Object(Map::new()),
        Some(text) => serde_json::from_str(text)
            .map_err(|e| settings(format!("it is not valid JSON ({e})")))?,
    };
    edit(&mut doc).map_err(settings)?;
    let mut text = serde_json::to_string_pretty(&doc).unwrap_or_default();
    text.push('\n');
    if old.as_deref() == Some(text.as_str()) {
        return Ok(false);
    }
    safe_fs::write_beneath(root, Path::new(rel), text.as_bytes(), None)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_blank_and_unchanged_files() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a/b.json");
        let edit = |set| edit(dir.path(), "a/b.json", set);
        let set = |v: &mut Value| {
            v.as_object_mut()
                .ok_or("not an object")?
                .insert("k".into(), 1.into());
            Ok(())
        };
        assert!(edit(set).unwrap(), "a missing file is written");
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            "{\n  \"k\": 1\n}\n"
        );
        assert!(!edit(set).unwrap(), "an unchanged file is not rewritten");
        std::fs::write(&file, "  \n").unwrap();
        assert!(edit(set).unwrap(), "a blank file is {{}}");
    }

    #[test]
    fn a_file_that_is_not_json_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("s.json");
        std::fs::write(&file, "{oops").unwrap();
        let err = edit(dir.path(), "s.json", |_| Ok(())).unwrap_err();
        assert!(matches!(err, IntegrationError::Settings { .. }), "{err}");
        assert!(err.to_string().contains("it is not valid JSON"), "{err}");
        assert!(err.to_string().ends_with("; not touching it"), "{err}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "{oops");
    }
}
