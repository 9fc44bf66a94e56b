//! `owt new`: branch + worktree + setup + session record + agent.
//!
//! The phases of [`new_session`], one part each: `validate` (the request,
//! nothing created), `place` (the name reserved, the worktree placed),
//! `ops::launch::host_spec` (the agent's launch, built once and checked
//! against exec's limits), `start` (setup and integrations installed, the
//! session host started or queued).

mod interrupt;
mod place;
mod start;
mod validate;

use super::launch::host_spec;
pub use super::launch::{ForkFrom, ForkStart, LaunchOptions, NewRequest, SUMMARY_FACT};
use super::Context;
use crate::provider;
use crate::store::SessionRow;
use place::{place_worktree, reserve};
use start::{install_integrations, launch};
use validate::validate;
pub(crate) use validate::worktrees_folder;

pub use super::facts::{BranchFact, StarterFact, BRANCH_FACT, STARTER_FACT};
pub use super::interrupt::{catch_interrupts, interrupted};

/// A created session and what went wrong without stopping it.
#[derive(Debug, Clone)]
pub struct NewResult {
    pub session: SessionRow,
    pub warnings: Vec<String>,
    /// Whether the session host started the agent (the CLI exits non-zero
    /// when it did not, unless the session was queued).
    pub agent_started: bool,
    /// The session waits for room on the machine (`[agent] max_running`,
    /// `min_free_memory`): its agent starts when a running one ends or
    /// frees memory. Why, for people.
    pub queued: Option<String>,
    /// Which protocol the first prompt carries, for people (`None`:
    /// `--raw`, or no prompt).
    pub template_note: Option<String>,
}

/// Creates a session. Nothing is left behind when it fails before the
/// worktree exists; a failing setup script is a warning.
///
/// The phases, in order: [`validate`](validate::validate) the request (nothing is created),
/// [`reserve`](place::reserve) the name in the store and the session's ports,
/// [`host_spec`] (the agent's launch, built once and checked against
/// exec's limits), [`place_worktree`](place::place_worktree), [`install_integrations`](start::install_integrations) (setup,
/// hooks, MCP, owt's own files), then [`launch`](start::launch) the session host, now or
/// through the queue.
pub fn new_session(
    ctx: &mut Context,
    req: &NewRequest,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<NewResult> {
    let mut warnings: Vec<String> = super::trust::notice(ctx).into_iter().collect();
    let plan = validate(ctx, req)?;
    let session = reserve(ctx, req, &plan)?;
    let _span = tracing::info_span!("session", session = %session.name).entered();
    tracing::info!(branch = %session.branch, provider = %plan.resolved.provider.name, "creating the session");
    let made = make_session(ctx, req, &plan, &session, &mut warnings, progress);
    // Made (or kept after a failure): nobody is making it any more. A
    // session an interrupt could not remove keeps its starter, for doctor.
    let kept = || {
        ctx.store
            .session_by_id(session.id)
            .is_ok_and(|s| s.is_some())
    };
    if made.is_ok() || (!interrupted() && kept()) {
        ctx.store.clear_fact(session.id, STARTER_FACT)?;
    }
    let (agent_started, queued) = made?;
    Ok(NewResult {
        session,
        warnings,
        agent_started,
        queued,
        template_note: template_note(req),
    })
}

/// The phases of [`new_session`] after the name is reserved, under a
/// [`STARTER_FACT`] naming this process; an interrupt between them removes
/// what was made.
fn make_session(
    ctx: &mut Context,
    req: &NewRequest,
    plan: &Plan,
    session: &SessionRow,
    warnings: &mut Vec<String>,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<(bool, Option<String>)> {
    let starter = StarterFact {
        pid: std::process::id(),
    };
    ctx.store.record_fact(session.id, STARTER_FACT, &starter)?;
    crate::ops::facts::record_lineage(ctx, session, req.parent.as_ref(), req.conductor)?;
    // Its ports first: the setup script and the agent are told them.
    let ports = ctx.config.config.worktree.ports;
    if let Err(e) = super::ports::allocate(&mut ctx.store, session, ports) {
        ctx.store.remove_session(session, "failed")?;
        return Err(e);
    }
    // The agent's argv, checked before anything is created on disk: exec
    // would refuse it later with a cryptic failure in the host. (A queued
    // session's is built again when it starts.)
    let options = req.launch_options();
    let spec = match host_spec(ctx, session, &plan.resolved, &options) {
        Ok((spec, notes)) => {
            warnings.extend(notes);
            spec
        }
        Err(e) => {
            ctx.store.remove_session(session, "failed")?;
            return Err(e);
        }
    };
    if interrupted() {
        ctx.store.remove_session(session, "interrupted")?;
        anyhow::bail!("interrupted: session `{}` was not created", session.name);
    }
    let start = req
        .fork
        .as_ref()
        .map_or(plan.base.as_str(), |f| f.start_point.as_str());
    let placed = place_worktree(ctx, session, plan, start, req.in_place, progress, warnings);
    let created_branch = match placed {
        Ok(created) => created,
        Err(e) => {
            ctx.store.remove_session(session, "failed")?;
            return Err(e);
        }
    };
    // From here on the worktree exists: a failure keeps the session.
    ctx.store.record_fact(
        session.id,
        BRANCH_FACT,
        &BranchFact {
            created: created_branch,
        },
    )?;
    // A branch session works in the human's own checkout: owt writes no
    // files there (no hooks, no MCP registration; status comes from the
    // screen). An ACP session's status comes from the protocol, and owt's
    // MCP server is passed in `session/new`: nothing is written for them.
    let write_integrations = !(req.in_place || req.acp);
    if interrupted() {
        return Err(interrupt::abandon(ctx, session, progress));
    }
    install_integrations(ctx, session, plan, write_integrations, progress, warnings);
    if interrupted() {
        return Err(interrupt::abandon(ctx, session, progress));
    }
    let launched = launch(ctx, session, req, &options, spec, progress, warnings);
    if launched.is_ok() {
        // The agent is on its way; the guard's history, in the background.
        let commits: Vec<git2::Oid> = [session.branch.as_str(), plan.base.as_str()]
            .into_iter()
            .filter_map(|branch| ctx.repo.branch_tip(branch).ok())
            .collect();
        super::guard::prepare_history(ctx, &commits);
    }
    launched
}

/// Which protocol the first prompt carries and how to choose another.
fn template_note(req: &NewRequest) -> Option<String> {
    if req.raw || req.no_prompt {
        return None;
    }
    Some(
        match super::prompt::chosen_template(&req.task, req.template.as_deref()) {
            (Some(name), false) => format!("Template: {name} (--template)."),
            (Some(name), true) => format!(
                "Template: {name}, guessed from the task (pick another with --template NAME; --raw sends the task alone)."
            ),
            (None, _) => "Template: none guessed; the general protocol (pick one with --template NAME; --raw sends the task alone).".to_string(),
        },
    )
}

/// What [`validate`](validate::validate) found: the request checked against the repository,
/// the configuration and the agent, before anything is created.
struct Plan<'r> {
    task: &'r str,
    wanted_name: &'r str,
    resolved: provider::Resolved,
    base: String,
    explicit_branch: Option<String>,
    base_dir: std::path::PathBuf,
}
