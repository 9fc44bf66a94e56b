//! The one read-modify-write of an agent's JSON settings file in a
//! worktree (Claude Code's and Droid's hooks, Claude Code's MCP
//! registration).
//!
//! Invariants: a missing or blank file is `{}`; a file that is not JSON, or
//! whose shape the edit refuses, is left as it is with
//! [`IntegrationError::Settings`]; other keys are kept (the edit touches
//! only owt's entries); a file whose content would not change is not
//! rewritten.

use std::path::Path;

use serde_json::{Map, Value};

use super::IntegrationError;

/// Reads `file`, applies `edit`, and writes the result back (pretty, with
/// a final newline) when it differs. Returns whether the file was written.
pub fn edit(
    file: &Path,
    edit: impl FnOnce(&mut Value) -> Result<(), String>,
) -> Result<bool, IntegrationError> {
    let settings = |problem: String| IntegrationError::Settings {
        path: file.to_path_buf(),
        problem,
    };
    let io = |context: String| move |error| IntegrationError::Io { context, error };
    let old = match std::fs::read_to_string(file) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(io(format!("reading {}", file.display()))(e)),
    };
    let mut root = match old.as_deref().map(str::trim) {
        None | Some("") => Value::Object(Map::new()),
        Some(text) => serde_json::from_str(text)
            .map_err(|e| settings(format!("it is not valid JSON ({e})")))?,
    };
    edit(&mut root).map_err(settings)?;
    let mut text = serde_json::to_string_pretty(&root).unwrap_or_default();
    text.push('\n');
    if old.as_deref() == Some(text.as_str()) {
        return Ok(false);
    }
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir).map_err(io(format!("creating {}", dir.display())))?;
    }
    std::fs::write(file, text).map_err(io(format!("writing {}", file.display())))?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_blank_and_unchanged_files() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a/b.json");
        let set = |v: &mut Value| {
            v.as_object_mut()
                .ok_or("not an object")?
                .insert("k".into(), 1.into());
            Ok(())
        };
        assert!(edit(&file, set).unwrap(), "a missing file is written");
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            "{\n  \"k\": 1\n}\n"
        );
        assert!(
            !edit(&file, set).unwrap(),
            "an unchanged file is not rewritten"
        );
        std::fs::write(&file, "  \n").unwrap();
        assert!(edit(&file, set).unwrap(), "a blank file is {{}}");
    }

    #[test]
    fn a_file_that_is_not_json_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("s.json");
        std::fs::write(&file, "{oops").unwrap();
        let err = edit(&file, |_| Ok(())).unwrap_err();
        assert!(matches!(err, IntegrationError::Settings { .. }), "{err}");
        assert!(err.to_string().contains("it is not valid JSON"), "{err}");
        assert!(err.to_string().ends_with("; not touching it"), "{err}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "{oops");
    }
}
