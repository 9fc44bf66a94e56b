//! Conductor sessions: an agent that starts and supervises others through
//! owt's MCP server (`spawn_session`, `list_sessions`, `wait_session`,
//! `session_diff`, `send_to_session`, `ship_session`).
//!
//! Invariants: a child is marked with its parent by a fact
//! ([`PARENT_FACT`]) recorded before its agent starts; a conductor has at
//! most `[mcp] max_children` children at once and acts only on its own;
//! a child never conducts (depth 1); a conductor ships only when
//! `[mcp] conductor_can_ship = true` (otherwise a human ships through
//! NEEDS YOU).

pub use super::facts::{ConductorFact, ParentFact, CONDUCTOR_FACT, PARENT_FACT};
use super::new::{new_session, NewRequest, NewResult};
use super::Context;
use crate::store::SessionRow;
use anyhow::bail;

/// What a conductor asks for in `spawn_session`.
#[derive(Debug, Clone, Default)]
pub struct SpawnRequest {
    pub task: String,
    pub agent: Option<String>,
    pub base: Option<String>,
    pub name: Option<String>,
}

/// The conductor that spawned `session_id`, if one did.
pub fn parent_of(ctx: &Context, session_id: i64) -> Option<ParentFact> {
    ctx.store
        .fact::<ParentFact>(session_id, PARENT_FACT)
        .ok()
        .flatten()
        .map(|(fact, _)| fact)
}

/// Whether `session` may conduct: not a child, and started with
/// `--conductor` or under `[mcp] conductor = true`; why not otherwise.
pub fn may_conduct(ctx: &Context, session: &SessionRow) -> Result<(), String> {
    if let Some(parent) = parent_of(ctx, session.id) {
        return Err(format!(
            "`{}` was spawned by `{}`: a child cannot conduct (owt allows one level of conductors)",
            session.name, parent.parent
        ));
    }
    let started_as = ctx
        .store
        .fact::<ConductorFact>(session.id, CONDUCTOR_FACT)
        .ok()
        .flatten()
        .is_some_and(|(fact, _)| fact.conductor);
    if started_as || ctx.config.config.mcp.conductor {
        return Ok(());
    }
    Err(format!(
        "`{}` is not a conductor: start it with `owt new --conductor`, or set [mcp] conductor = true",
        session.name
    ))
}

/// The sessions `conductor` spawned that still exist, oldest first.
pub fn children(ctx: &Context, conductor: &SessionRow) -> anyhow::Result<Vec<SessionRow>> {
    Ok(ctx
        .store
        .sessions(ctx.repo_row.id)?
        .into_iter()
        .filter(|s| parent_of(ctx, s.id).is_some_and(|p| p.parent_id == conductor.id))
        .collect())
}

/// Starts a child of `conductor`: refused when it may not conduct or has
/// `[mcp] max_children` children already (nothing is created then).
pub fn spawn(
    ctx: &mut Context,
    conductor: &SessionRow,
    req: &SpawnRequest,
) -> anyhow::Result<NewResult> {
    may_conduct(ctx, conductor).map_err(anyhow::Error::msg)?;
    let max = ctx.config.config.mcp.max_children;
    let n = children(ctx, conductor)?.len();
    if n >= max as usize {
        bail!(
            "`{}` already has {n} children ([mcp] max_children = {max}): ship or delete one before spawning another",
            conductor.name
        );
    }
    let new = NewRequest {
        task: req.task.clone(),
        name: req.name.clone(),
        base: req.base.clone(),
        ai_tool: req.agent.clone(),
        size: (40, 120),
        parent: Some(ParentFact {
            parent_id: conductor.id,
            parent: conductor.name.clone(),
        }),
        ..NewRequest::default()
    };
    new_session(ctx, &new, &mut |line| tracing::info!("{line}"))
}

/// The child `name` of `conductor`, or why a conductor may not act on it.
pub fn child(ctx: &Context, conductor: &SessionRow, name: &str) -> anyhow::Result<SessionRow> {
    may_conduct(ctx, conductor).map_err(anyhow::Error::msg)?;
    let row = ctx.session(name)?;
    if parent_of(ctx, row.id).is_none_or(|p| p.parent_id != conductor.id) {
        bail!(
            "`{}` is not a child of `{}`: a conductor acts only on the sessions it spawned (see list_sessions)",
            row.name,
            conductor.name
        );
    }
    Ok(row)
}

/// Ships the child `name` (behind its checks), when `[mcp]
/// conductor_can_ship` allows it.
pub fn ship_child(
    ctx: &mut Context,
    conductor: &SessionRow,
    name: &str,
) -> anyhow::Result<owt_protocol::ShipOutput> {
    let row = child(ctx, conductor, name)?;
    if !ctx.config.config.mcp.conductor_can_ship {
        bail!(
            "ship_session is off: a human ships `{}` from NEEDS YOU (`owt ship {}`); report it done and say so (set [mcp] conductor_can_ship = true to let conductors ship)",
            row.name,
            row.name
        );
    }
    super::merge::ship_checked(
        ctx,
        &row.name,
        None,
        super::merge::MergeOptions::default(),
        false,
        &mut |line| tracing::info!("{line}"),
    )
}
