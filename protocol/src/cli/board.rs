//! The board: lanes in priority order and the status line's counts.

use serde::{Deserialize, Serialize};

use super::{Lane, SessionView};

/// `owt --json` (the board).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Board {
    pub repository: String,
    /// Non-empty lanes only, in priority order.
    pub lanes: Vec<BoardLane>,
    /// Every lane in priority order, empty ones too, with its title and
    /// count (for a board that always shows each section).
    #[serde(default)]
    pub all_lanes: Vec<LaneCount>,
    /// What a status line shows.
    #[serde(default)]
    pub counts: BoardCounts,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct BoardLane {
    pub lane: Lane,
    /// `NEEDS YOU`, as the CLI board prints it.
    pub title: String,
    /// How many sessions are in it.
    #[serde(default)]
    pub count: u32,
    pub sessions: Vec<SessionView>,
}

/// A lane's title and how many sessions are in it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct LaneCount {
    pub lane: Lane,
    pub title: String,
    pub count: u32,
}

/// Sessions counted for a status line: each session is in exactly one of
/// `working`, `needs_you`, `ready`, `idle` and `queued`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct BoardCounts {
    pub total: u32,
    /// In flight, with the agent starting or busy.
    pub working: u32,
    /// In the NEEDS YOU lane.
    pub needs_you: u32,
    /// In the READY TO SHIP lane.
    pub ready: u32,
    /// Everything else (idle, done, exited outside the lanes above).
    pub idle: u32,
    /// In the READY TO CLEAN lane (a merged pull request).
    #[serde(default)]
    pub to_clean: u32,
    /// In flight, waiting for room on the machine (`queued`).
    #[serde(default)]
    pub queued: u32,
    /// The non-zero counts in words, e.g. `3 working · 1 needs you`
    /// (empty when there is no session).
    pub summary: String,
}
