//! How long a session has been in its status: the `status-since` fact,
//! the status last taken as the session's and since when (Unix ms).
//!
//! Writers (through `feedback::notify::record_since`): the session's
//! host, which derives the status every tick while its agent runs and
//! records a status once it held for
//! [`crate::feedback::notify::STEADY`] (with the moment it first showed);
//! and every view of the session (`owt list`, the board, the control
//! plane), which records a status it derives that differs from the stored
//! one (a check or pull request turning, after the host is gone). Both
//! write only on a change.
//!
//! Invariant: [`since_of`] (pure) gives a time only for the status the
//! fact names; a view whose status differs shows none until it is
//! recorded.

use owt_protocol::Status;
use serde::{Deserialize, Serialize};

use super::SessionFacts;

/// Fact kind of [`StatusSince`].
pub const STATUS_SINCE: &str = "status-since";

/// The status last taken as the session's, and since when.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusSince {
    pub status: Status,
    /// Unix time in milliseconds.
    pub since: i64,
}

/// Since when the session has been `status`, as `facts` say (`None`: the
/// stored status is another one, or none was recorded yet).
pub fn since_of(facts: &SessionFacts, status: Status) -> Option<i64> {
    facts
        .status_since
        .filter(|s| s.status == status)
        .map(|s| s.since)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_time_only_for_the_status_the_fact_names() {
        let mut facts = SessionFacts::default();
        assert_eq!(since_of(&facts, Status::Working), None);
        facts.status_since = Some(StatusSince {
            status: Status::NeedsInput,
            since: 1_000,
        });
        assert_eq!(since_of(&facts, Status::NeedsInput), Some(1_000));
        assert_eq!(since_of(&facts, Status::Working), None);
    }
}
