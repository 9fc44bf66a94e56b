//! `owt attach NAME`: this terminal, raw, attached to the agent; detach
//! with the prefix (`Ctrl-\` by default, `[attach] detach_key`) then `d`.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context as _;

use crate::ops::Context;
use crate::session::{self, attach::AttachEnd};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session.
    pub name: String,
}

pub fn run(ctx_dir: Option<&Path>, _json: bool, args: Args) -> anyhow::Result<ExitCode> {
    let ctx = Context::open(ctx_dir)?;
    let row = ctx.session(&args.name)?;
    let prefix = ctx
        .config
        .config
        .detach_byte()
        .map_err(anyhow::Error::msg)
        .context("reading [attach] detach_key")?;
    session::reconcile(&ctx.store, &ctx.home, &row)?;
    let socket = session::socket_path(&ctx.home, &row.short_id);
    let end = session::attach::attach(&socket, prefix)
        .with_context(|| format!("attaching to {}", row.name))?;
    match end {
        AttachEnd::Detached => {
            println!(
                "Detached from {}; the agent keeps running. Re-attach with `owt attach {}`.",
                row.name, row.name
            );
            Ok(ExitCode::SUCCESS)
        }
        AttachEnd::Exited(exit) => {
            match (exit.code, exit.signal) {
                (Some(code), _) => println!("{} exited with code {code}.", row.name),
                (None, Some(signal)) => println!("{} exited ({signal}).", row.name),
                _ => println!("{} exited.", row.name),
            }
            Ok(ExitCode::SUCCESS)
        }
        AttachEnd::HostGone => {
            println!("The session host of {} went away.", row.name);
            Ok(ExitCode::FAILURE)
        }
    }
}
