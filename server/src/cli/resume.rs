//! `owt resume NAME`: restart a session whose agent is gone, in the same
//! worktree, continuing its conversation where the agent can
//! (`ops::resume`).

use std::path::Path;
use std::process::ExitCode;

use crate::ops::{self, list, resume};

#[derive(Debug, clap::Args)]
#[command(
    after_help = "A session whose agent exited or whose host was lost (a reboot, an \
OOM kill) shows `exited` in `owt list`. `owt resume NAME` starts its agent again in the same \
worktree: Claude Code continues its conversation (`claude --resume ID`, the id read from its \
records); another agent starts afresh, told first what happened and where its work is.\n\n\
Example:\n  owt resume fix-login"
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
