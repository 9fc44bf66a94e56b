//! `owt resume NAME`: restart a session whose agent is gone, in the same
//! worktree, continuing its conversation through the agent's own resume
//! (`ops::resume`).

use std::path::Path;
use std::process::ExitCode;

use crate::ops::{self, list, resume};

#[derive(Debug, clap::Args)]
#[command(
    after_help = "A session whose agent exited or whose host was lost (a reboot, an \
OOM kill, `kill -9`) shows `exited …, resumable` in `owt list`. `owt resume NAME` starts its \
agent again in the same worktree, continuing its conversation through the agent's own resume \
(the id read from the agent's records of that worktree, where `owt usage` reads them):\n  \
Claude Code  claude --resume ID\n  \
Codex        codex resume ID\n  \
OpenCode     opencode --session ID\n  \
Gemini CLI   gemini --resume ID\n  \
Aider        aider --restore-chat-history\n\
Another agent (or one with no conversation of the worktree in its records) starts afresh, \
told first what happened and where its work is.\n\n\
An agent that still runs, a queued session, a headless run and a session on another machine \
are refused (nothing changes). With `[agent] auto_resume = true` the sessions whose host died \
are resumed at the next owt command in the repository (and when `owt lsp` starts), within \
`[agent] max_running`.\n\n\
Examples:\n  \
owt list                # fix-login  exited (host lost), resumable\n  \
owt resume fix-login    # its agent continues where it was\n  \
owt attach fix-login"
)]
pub struct Args {
    /// The session whose agent is gone.
    pub name: String,
}

pub fn run(dir: Option<&Path>, out: &super::Out, args: Args) -> anyhow::Result<ExitCode> {
    let mut ctx = ops::Context::open(dir)?;
    let (session, how) = resume::resume(&mut ctx, &args.name)?;
    let view = list::session_view(&ctx, &session)?;
    out.emit(&view, || {
        format!(
            "Resumed session {} ({}): {how}.\nAttach with: owt attach {}",
            view.name, view.provider, view.name
        )
    })?;
    Ok(ExitCode::SUCCESS)
}
