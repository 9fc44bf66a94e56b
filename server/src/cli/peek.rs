//! `owt peek NAME [--scrollback]`: the agent's screen as text, under a
//! header saying what a permission dialog on it asks (`--json`:
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
    // A dialog on screen: what it asks, and how to answer, first.
    out.emit(&view, || match &view.dialog {
        Some(question) => format!(
            "{} is blocked: {}\nAnswer with: owt approve {} (or owt deny {})\n\n{}",
            view.session,
            crate::printable::line(question),
            view.session,
            view.session,
            view.screen.text()
        ),
        None => view.screen.text(),
    })?;
    Ok(ExitCode::SUCCESS)
}
