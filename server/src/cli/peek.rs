//! `owt peek NAME [--scrollback]`: the agent's screen as text (`--json`:
//! `owt_protocol::host::PeekView`).

use std::path::Path;
use std::process::ExitCode;

use crate::ops::Context;
use crate::session;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session.
    pub name: String,
    /// Include the lines scrolled off the top of the screen.
    #[arg(long)]
    pub scrollback: bool,
}

pub fn run(ctx_dir: Option<&Path>, json: bool, args: Args) -> anyhow::Result<ExitCode> {
    let ctx = Context::open(ctx_dir)?;
    let row = ctx.session(&args.name)?;
    let view = session::peek(&ctx.home, &row, args.scrollback)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&view)?);
    } else {
        print!("{}", view.screen.text());
    }
    Ok(ExitCode::SUCCESS)
}
