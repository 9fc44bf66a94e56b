//! The commit message `owt ship` writes when it is given none: for a
//! session here (`merge`) and, on a remote's side, for its own session
//! (`remote`'s bridge, `owt __bridge commit`).
//!
//! A leaf of `ops`: it names no other `ops` module.

use crate::store::SessionRow;

/// The task's first line (at most 72 characters; the session's name when
/// the task has none), and which session and agent it came from.
pub(crate) fn default_message(row: &SessionRow) -> String {
    let first = row.task.lines().next().unwrap_or("").trim();
    let subject = if first.is_empty() {
        row.name.as_str()
    } else {
        first
    };
    let subject: String = subject.chars().take(72).collect();
    format!(
        "{subject}\n\nShipped by owt from session {} ({}).",
        row.name, row.provider
    )
}
