//! Limits as a status: the `limit` fact a session's host records when its
//! agent's screen shows a usage or rate limit as its latest word (and
//! again, inactive, once it no longer does), and what it makes of the
//! status (pure, like the rest of [`super`]).
//!
//! Rule: an active limit newer than the last input reaching the agent is
//! `limited` (lane NEEDS YOU; IN FLIGHT when its host waits it out), with
//! the reset time when known; it ranks
//! below an exit, a lost host, a queue, an unreachable machine and a
//! conflict, above everything the agent's screen or hooks say.

use serde::{Deserialize, Serialize};

use super::SessionFacts;

/// Fact kind of [`LimitFact`].
pub const LIMIT: &str = "limit";

/// The agent shows a usage or rate limit (`active`), or no longer does.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct LimitFact {
    pub active: bool,
    /// The screen's line that says so.
    #[serde(default)]
    pub line: String,
    /// When it resets as the agent says it ("3pm"), if it does.
    #[serde(default)]
    pub resets: Option<String>,
    /// When it resets (Unix ms), when the agent said it relatively.
    #[serde(default)]
    pub resets_at: Option<i64>,
    /// The host types "continue" at `resets_at` (`[agent] on_limit =
    /// "wait"`): the session is IN FLIGHT, not NEEDS YOU.
    #[serde(default)]
    pub waiting: bool,
}

/// Whether the limit the session shows is waited out by its host.
pub fn waited_out(facts: &SessionFacts) -> bool {
    facts
        .limit
        .as_ref()
        .is_some_and(|(f, _)| f.active && f.waiting)
}

/// The status text of a session that is limited now, or `None`.
pub fn limited_text(facts: &SessionFacts) -> Option<String> {
    let (fact, at) = facts.limit.as_ref().filter(|(f, _)| f.active)?;
    if facts.last_input_at.is_some_and(|input| input > *at) {
        return None;
    }
    Some(match (&fact.resets_at, &fact.resets) {
        (Some(ms), _) => format!("limited (resets {})", super::utc_time_of_day(*ms)),
        (None, Some(resets)) => format!("limited (resets {resets})"),
        (None, None) => "limited".to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(limit: Option<(LimitFact, i64)>, input: Option<i64>) -> SessionFacts {
        SessionFacts {
            limit,
            last_input_at: input,
            ..SessionFacts::default()
        }
    }

    #[test]
    fn an_active_limit_is_limited_until_newer_input() {
        let active = LimitFact {
            active: true,
            line: "● API Error: Request rejected (429)".into(),
            ..LimitFact::default()
        };
        assert_eq!(
            limited_text(&facts(Some((active.clone(), 2_000)), Some(1_000))).as_deref(),
            Some("limited")
        );
        assert_eq!(
            limited_text(&facts(Some((active.clone(), 2_000)), Some(3_000))),
            None
        );
        let gone = LimitFact::default();
        assert_eq!(limited_text(&facts(Some((gone, 4_000)), None)), None);
        let timed = LimitFact {
            resets_at: Some(50_400_000),
            ..active.clone()
        };
        assert_eq!(
            limited_text(&facts(Some((timed, 2_000)), None)).as_deref(),
            Some("limited (resets 14:00:00 UTC)")
        );
        let said = LimitFact {
            resets: Some("3pm".into()),
            ..active
        };
        assert_eq!(
            limited_text(&facts(Some((said, 2_000)), None)).as_deref(),
            Some("limited (resets 3pm)")
        );
    }
}
