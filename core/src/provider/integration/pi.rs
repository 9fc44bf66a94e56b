//! Pi: a status extension, loaded for owt's sessions only.
//!
//! Checked with pi 0.73.1 (its `docs/extensions.md` and a run): `pi -e
//! FILE` loads an extension for this run only; an extension's
//! `pi.on("agent_start")` / `pi.on("agent_end")` fire when Pi starts and
//! finishes working on a prompt. owt's extension (`pi-extension.js`) turns
//! them into `owt hook --event working|waiting`; its `tool_call` handler
//! asks `owt hook --pre-edit` before `write` and `edit` (blocking with the
//! reason on `block`), its `tool_result` handler adds a warning to the
//! tool's result (docs/guard.md, "Preventive guard"). It is written under
//! `$OWT_HOME/integrations/pi/`; the user's `~/.pi` is not touched. Pi asks
//! no permissions (it has no approval dialog), so it is never `blocked`.

use std::path::{Path, PathBuf};

use super::{write_if_changed, Integration, IntegrationError};
use crate::provider::LaunchMode;

/// The extension, with `__OWT__` standing for the owt binary (a JSON string).
const EXTENSION: &str = concat!(
    include_str!("pi-extension.js"),
    include_str!("guard-ask.js")
);

/// Where the extension is written.
pub fn extension_path(home: &Path) -> PathBuf {
    home.join("integrations").join("pi").join("owt-status.js")
}

/// Writes the extension (for the owt binary `owt`) and loads it with `-e`
/// (the non-interactive form, `pi -p`, waits for nobody: nothing to add).
pub fn integration(
    mode: LaunchMode,
    owt: &Path,
    home: &Path,
) -> Result<Integration, IntegrationError> {
    if mode == LaunchMode::Headless {
        return Ok(Integration::default());
    }
    let path = extension_path(home);
    let owt_json = serde_json::to_string(&owt.to_string_lossy())
        .map_err(|e| IntegrationError::Invalid(e.to_string()))?;
    write_if_changed(&path, &EXTENSION.replace("__OWT__", &owt_json))?;
    Ok(Integration {
        args: vec!["-e".to_string(), path.to_string_lossy().into_owned()],
        ..Integration::default()
    })
}
