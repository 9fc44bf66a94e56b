//! The facts of a session that several use cases write and read: how its
//! branch came to be (`new` writes it, `delete` reads it), who is making
//! it (`new`, `doctor`), its parent conductor (`new`, `conduct`, `list`),
//! and the merge/ship journal (`merge`, `allowed`, `doctor`).
//!
//! A leaf of `ops`: it names no other `ops` module, so that the use cases
//! meeting on a fact need not name each other.

use serde::{Deserialize, Serialize};

use super::Context;
use crate::store::SessionRow;

/// Fact: how the session's branch came to be (so delete only deletes
/// branches owt created).
pub const BRANCH_FACT: &str = "branch";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BranchFact {
    pub created: bool,
}

/// Fact: the process making the session (`owt new`), until its agent is
/// started or queued.
pub const STARTER_FACT: &str = crate::status::kind::STARTER;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StarterFact {
    pub pid: u32,
}

/// Fact kind: the conductor that spawned this session ([`ParentFact`]).
pub const PARENT_FACT: &str = "parent";
/// Fact kind: `owt new --conductor` ([`ConductorFact`]).
pub const CONDUCTOR_FACT: &str = "conductor";

/// Who spawned a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParentFact {
    pub parent_id: i64,
    /// The parent's name when the child was spawned.
    pub parent: String,
}

/// The session was started as a conductor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConductorFact {
    pub conductor: bool,
}

/// Records a new session's parent and whether it conducts (before its
/// agent starts, so its MCP server knows from its first call).
pub(crate) fn record_lineage(
    ctx: &Context,
    session: &SessionRow,
    parent: Option<&ParentFact>,
    conductor: bool,
) -> anyhow::Result<()> {
    if let Some(parent) = parent {
        ctx.store.record_fact(session.id, PARENT_FACT, parent)?;
    }
    if conductor {
        let fact = ConductorFact { conductor: true };
        ctx.store.record_fact(session.id, CONDUCTOR_FACT, &fact)?;
    }
    Ok(())
}

/// Fact kind of the merge/ship journal.
pub const JOURNAL: &str = "ship";

/// The journal: which operation, at which step, and the tips it started from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Journal {
    /// `merge` or `ship`.
    pub op: String,
    /// `commit`, `predict`, `phase1`, `phase2`, `cleanup`.
    pub step: String,
    pub base_before: String,
    pub branch_before: String,
}
