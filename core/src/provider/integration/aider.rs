//! Aider: its notifications command.
//!
//! Checked with aider 0.86.2 (`aider/io.py`): with `--notifications`,
//! `--notifications-command CMD` runs CMD through a shell (synchronously)
//! the first time Aider waits for the human after a model request — at
//! its input prompt or at a question (`Create new file? (Y)es/(N)o`),
//! whichever comes first. owt's command records `waiting`; a question on
//! screen right after it reads as `blocked` (a newer dialog on screen wins,
//! `status::derive_status`). Nothing is written to the user's
//! `.aider.conf.yml`.

use std::path::Path;

use super::{hook_command, Integration, IntegrationError};
use crate::provider::LaunchMode;

/// The arguments for an Aider session in `mode` (the headless form answers
/// every question itself and exits: nothing to add).
pub fn integration(mode: LaunchMode, owt: &Path) -> Result<Integration, IntegrationError> {
    let args = match mode {
        LaunchMode::Headless => Vec::new(),
        LaunchMode::Interactive | LaunchMode::Plan => vec![
            "--notifications".to_string(),
            "--notifications-command".to_string(),
            hook_command(owt, "waiting")?,
        ],
    };
    Ok(Integration {
        args,
        ..Integration::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_is_quoted_for_the_shell_aider_runs_it_in() {
        let i = integration(LaunchMode::Interactive, Path::new("/opt/my tools/owt")).unwrap();
        assert_eq!(
            i.args,
            vec![
                "--notifications",
                "--notifications-command",
                "'/opt/my tools/owt' hook --event waiting"
            ]
        );
        assert!(integration(LaunchMode::Headless, Path::new("/owt"))
            .unwrap()
            .args
            .is_empty());
    }
}
