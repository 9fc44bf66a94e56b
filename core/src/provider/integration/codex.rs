//! Codex: its own desktop notifications, and no shared background server.
//!
//! Checked with codex 0.171.0 (and its source, `codex-rs/tui`):
//! - `tui.notifications = true` makes the TUI notify on "approval
//!   requested" and "agent turn complete"; `tui.notification_method =
//!   "osc9"` writes them to the terminal as `ESC ] 9 ; <message> BEL`
//!   (e.g. `Approval requested: printf 'hi\n' > hello.txt`), and
//!   `tui.notification_condition = "always"` sends them even while the
//!   terminal has focus (a person attached). The session host reads them
//!   from the output (`session::rules::notification_signal`): the agent's
//!   own word that it is blocked, or that its turn is over.
//! - The legacy `notify = [...]` program is not used: it also runs when
//!   Codex's side threads finish (the title it generates for a new task
//!   reports `agent-turn-complete` seconds before the real turn ends).
//! - Since 0.157 an interactive Codex starts its turns in a shared
//!   background server (`codex app-server --managed-daemon`, detached, one
//!   per `CODEX_HOME`) that outlives the TUI and keeps the environment of
//!   whichever session started it. `--no-daemon` runs the session in the
//!   TUI's own process instead, so stopping the session stops everything
//!   it started.
//!
//! All of it is `-c` overrides on the command line: the user's
//! `config.toml` is not touched.

use super::Integration;
use crate::provider::LaunchMode;

/// The arguments for a Codex session in `mode` (`codex exec` has no TUI and
/// no background server: nothing to add).
pub fn integration(mode: LaunchMode) -> Integration {
    let args = match mode {
        LaunchMode::Headless => Vec::new(),
        LaunchMode::Interactive | LaunchMode::Plan => [
            "--no-daemon",
            "-c",
            "tui.notifications=true",
            "-c",
            "tui.notification_method=\"osc9\"",
            "-c",
            "tui.notification_condition=\"always\"",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
    };
    Integration {
        args,
        ..Integration::default()
    }
}
