//! `owt fork NAME --name NEW [TASK]`: a new session from another's
//! working state, its conversation forked where the agent can
//! (`ops::fork`).

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context as _;

use crate::ops::{self, fork::ForkRequest, list};

#[derive(Debug, clap::Args)]
#[command(after_help = "\
NEW's branch and worktree start from NAME's current working state: its commits, and its \
uncommitted and untracked files (not its ignored files) as one commit on top. NAME is not \
touched: its index, worktree and branch stay exactly as they were. Claude Code forks NAME's \
conversation (`claude --resume ID --fork-session`): NEW's agent remembers everything NAME's \
did, and NAME's goes on separately. Another agent starts afresh with a first prompt that says \
what NAME was doing and what it changed.

Examples:
  owt fork add-auth --name add-auth-jwt \"Try JWT instead of sessions\"
                                     two approaches from the same point
  owt fork fix-login --name fix-login-b    carry on NAME's task in a second worktree
  owt fork spike --name spike-codex --ai-tool codex
                                     the same work, another agent (told NAME's task and diff)")]
pub struct Args {
    /// The session to fork (it is not changed).
    pub name: String,
    /// The new session's name (it must not be taken).
    #[arg(long = "name", value_name = "NEW", id = "new_name")]
    pub new_name: String,
    /// What the new session's agent should do next (default: NAME's task).
    pub task: Option<String>,
    /// Agent to run (default: NAME's).
    #[arg(long, value_name = "TOOL")]
    pub ai_tool: Option<String>,
    /// Start the agent now, even beyond [agent] max_running or min_free_memory.
    #[arg(long)]
    pub now: bool,
}

pub fn run(dir: Option<&Path>, out: &super::Out, args: Args) -> anyhow::Result<ExitCode> {
    let mut ctx = ops::Context::open(dir)?;
    let req = ForkRequest {
        name: args.name,
        new_name: args.new_name,
        task: args.task,
        ai_tool: args.ai_tool,
        size: super::new::terminal_size(),
        now: args.now,
    };
    ops::new::catch_interrupts().context("catching Ctrl-C")?;
    let result = ops::fork::fork(&mut ctx, &req, &mut |line| out.progress(line))?;
    for warning in &result.warnings {
        out.warn(warning);
    }
    let view = list::session_view(&ctx, &result.session)?;
    let doc = owt_protocol::NewOutput {
        session: view.clone(),
        warnings: result.warnings.clone(),
    };
    let what = if let Some(why) = &result.queued {
        format!("Queued fork {} of {}: {why}.", view.name, req.name)
    } else if result.agent_started {
        format!(
            "Forked {} into session {} ({}) on branch {} in {}.\nAttach with: owt attach {}",
            req.name, view.name, view.provider, view.branch, view.worktree, view.name
        )
    } else {
        format!(
            "Forked {} into session {} on branch {} in {}, but its agent did not start (see the warning above).",
            req.name, view.name, view.branch, view.worktree
        )
    };
    out.emit(&doc, || what.clone())?;
    Ok(if result.agent_started || result.queued.is_some() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
