//! `owt attach NAME`: this terminal, raw, attached to the agent; detach
//! with the prefix (`Ctrl-\` by default, `[attach] detach_key`) then `d`.

use std::path::Path;
use std::process::ExitCode;

use crate::ops::{agent, Context};
use crate::session::attach::AttachEnd;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session.
    pub name: String,
}

pub fn run(ctx_dir: Option<&Path>, out: &super::Out, args: Args) -> anyhow::Result<ExitCode> {
    let ctx = Context::open(ctx_dir)?;
    let (name, end) = agent::attach(&ctx, &args.name)?;
    let (line, code) = match end {
        AttachEnd::Detached => (
            format!("Detached from {name}; the agent keeps running. Re-attach with `owt attach {name}`."),
            ExitCode::SUCCESS,
        ),
        AttachEnd::Exited(exit) => (
            match (exit.code, exit.signal) {
                (Some(code), _) => format!("{name} exited with code {code}."),
                (None, Some(signal)) => format!("{name} exited ({signal})."),
                _ => format!("{name} exited."),
            },
            ExitCode::SUCCESS,
        ),
        AttachEnd::HostGone => (
            format!("The session host of {name} went away."),
            ExitCode::FAILURE,
        ),
    };
    // The terminal was the agent's until now: a sentence, in both modes.
    out.say(&line)?;
    Ok(code)
}
