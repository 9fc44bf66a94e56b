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
    if session::transport(&ctx.store, &row)? == owt_protocol::host::Transport::Acp {
        return attach_acp(&socket, &row.name);
    }
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

/// An ACP session: its transcript and a line editor for prompts.
fn attach_acp(socket: &Path, name: &str) -> anyhow::Result<ExitCode> {
    use session::acp_attach::{self, AcpAttachEnd};
    let end = acp_attach::attach(
        socket,
        name,
        std::io::BufReader::new(std::io::stdin()),
        std::io::stdout(),
    )
    .with_context(|| format!("attaching to {name}"))?;
    match end {
        AcpAttachEnd::Detached => {
            println!("Detached from {name}; the agent keeps running. Re-attach with `owt attach {name}`.");
            Ok(ExitCode::SUCCESS)
        }
        AcpAttachEnd::Exited(exit) => {
            match (exit.code, exit.signal) {
                (Some(code), _) => println!("{name} exited with code {code}."),
                (None, Some(signal)) => println!("{name} exited ({signal})."),
                _ => println!("{name} exited."),
            }
            Ok(ExitCode::SUCCESS)
        }
        AcpAttachEnd::HostGone => {
            println!("The session host of {name} went away.");
            Ok(ExitCode::FAILURE)
        }
    }
}
