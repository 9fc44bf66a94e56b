//! `owt peek NAME [--scrollback]`: the agent's screen as text (`--json`:
//! `owt_protocol::host::PeekView`).

use std::path::Path;
use std::process::ExitCode;

use crate::ops::{agent, Context};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session.
    pub name: String,
    /// Include the lines scrolled off the top of the screen (read from the host a page at a time).
    #[arg(long)]
    pub scrollback: bool,
}

pub fn run(ctx_dir: Option<&Path>, out: &super::Out, args: Args) -> anyhow::Result<ExitCode> {
    let ctx = Context::open(ctx_dir)?;
    let view = agent::peek(&ctx, &args.name, args.scrollback)?;
    out.emit(&view, || view.screen.text())?;
    Ok(ExitCode::SUCCESS)
}
