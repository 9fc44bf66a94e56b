//! `owt hook --event working|waiting|blocked|done` (hidden): called by an
//! agent's own hooks; records the signal for the session named by
//! `OWT_SESSION` in `OWT_HOME`. Never fails the agent: problems go to
//! stderr and the exit code stays 0.

use std::path::Path;
use std::process::ExitCode;

use crate::session::hooks;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// `working`, `waiting`, `blocked` or `done`.
    #[arg(long)]
    pub event: String,
}

pub fn run(_ctx_dir: Option<&Path>, _out: &super::Out, args: Args) -> anyhow::Result<ExitCode> {
    let Some(signal) = hooks::parse_event(&args.event) else {
        eprintln!(
            "owt hook: unknown event `{}` (working, waiting, blocked, done)",
            args.event
        );
        return Ok(ExitCode::SUCCESS);
    };
    let Some(short_id) = std::env::var("OWT_SESSION").ok().filter(|s| !s.is_empty()) else {
        // Not running under owt (the settings file outlived its session).
        return Ok(ExitCode::SUCCESS);
    };
    let home = match crate::ops::owt_home() {
        Ok(home) => home,
        Err(e) => {
            eprintln!("owt hook: {e:#}");
            return Ok(ExitCode::SUCCESS);
        }
    };
    if let Err(e) = hooks::record_hook(&home, &short_id, signal) {
        eprintln!("owt hook: {e:#}");
    }
    Ok(ExitCode::SUCCESS)
}
