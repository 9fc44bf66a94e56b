//! `owt attach [NAME]`: this terminal, raw, attached to the agent (handed to
//! the session host, or relayed through this process); detach with the
//! prefix (`Ctrl-\` by default, `[attach] detach_key`) then `d`.
//! An ACP session: its transcript, and a line editor for the next prompt.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context as _;

use crate::ops::{agent, Context};
use crate::session::attach::AttachEnd;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session (a unique prefix will do). Without it: the repository's
    /// one session (with several, they are listed and nothing is attached).
    pub name: Option<String>,
    /// Copy keys and output through this process instead of handing the
    /// terminal to the session host (slower; for debugging). Relayed anyway
    /// when stdin and stdout are not one terminal, or the host cannot take
    /// it (an older owt, a remote session).
    #[arg(long)]
    pub relay: bool,
}

pub fn run(ctx_dir: Option<&Path>, out: &super::Out, args: Args) -> anyhow::Result<ExitCode> {
    let ctx = Context::open(ctx_dir)?;
    let wanted = match args.name {
        Some(name) => name,
        None => agent::only_session(&ctx)?,
    };
    if let Some((name, socket)) = agent::acp_socket(&ctx, &wanted)? {
        return attach_acp(&socket, &name, out);
    }
    let (name, end) = agent::attach(&ctx, &wanted, !args.relay)?;
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

/// An ACP session: its transcript and a line editor for prompts.
fn attach_acp(socket: &Path, name: &str, out: &super::Out) -> anyhow::Result<ExitCode> {
    use crate::session::acp_attach::{self, AcpAttachEnd};
    let end = acp_attach::attach(
        socket,
        name,
        std::io::BufReader::new(std::io::stdin()),
        std::io::stdout(),
    )
    .with_context(|| format!("attaching to {name}"))?;
    let (line, code) = match end {
        AcpAttachEnd::Detached => (
            format!("Detached from {name}; the agent keeps running. Re-attach with `owt attach {name}`."),
            ExitCode::SUCCESS,
        ),
        AcpAttachEnd::Exited(exit) => (
            match (exit.code, exit.signal) {
                (Some(code), _) => format!("{name} exited with code {code}."),
                (None, Some(signal)) => format!("{name} exited ({signal})."),
                _ => format!("{name} exited."),
            },
            ExitCode::SUCCESS,
        ),
        AcpAttachEnd::HostGone => (
            format!("The session host of {name} went away."),
            ExitCode::FAILURE,
        ),
    };
    out.say(&line)?;
    Ok(code)
}
