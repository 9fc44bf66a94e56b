//! `owt __bridge` (hidden): the two ends of a bridge to a remote, and the
//! remote's half of `owt remote check` and `owt ship REMOTE:name`.

use std::path::Path;
use std::process::ExitCode;

use crate::ops::{self, Context};

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub command: BridgeCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum BridgeCommand {
    /// The remote end: speaks the bridge protocol on stdin/stdout (run by
    /// the local keeper over ssh).
    Serve,
    /// The local end: keeps the bridge to REMOTE up (started detached by owt).
    Keep {
        #[arg(long)]
        remote: String,
    },
    /// This owt and the clone (for `owt remote check`).
    Info {
        /// A branch whose tip to report.
        #[arg(long)]
        base: Option<String>,
    },
    /// Commit a session's work (for `owt ship REMOTE:name`).
    Commit {
        name: String,
        #[arg(short, long)]
        message: Option<String>,
        /// Only say what is uncommitted.
        #[arg(long)]
        dry_run: bool,
    },
}

pub fn run(dir: Option<&Path>, out: &super::Out, args: Args) -> anyhow::Result<ExitCode> {
    match args.command {
        BridgeCommand::Serve => {
            crate::ops::remote::serve(dir)?;
            Ok(ExitCode::SUCCESS)
        }
        BridgeCommand::Keep { remote } => {
            crate::remote::keeper::keep(dir, &remote)?;
            Ok(ExitCode::SUCCESS)
        }
        BridgeCommand::Info { base } => {
            let info = ops::remote::info(dir, base.as_deref());
            out.emit(&info, || {
                format!(
                    "owt {} (bridge protocol {}); {}",
                    info.version,
                    info.bridge_protocol,
                    info.repository
                        .clone()
                        .or(info.error.clone())
                        .unwrap_or_default()
                )
            })?;
            Ok(ExitCode::SUCCESS)
        }
        BridgeCommand::Commit {
            name,
            message,
            dry_run,
        } => {
            let ctx = Context::open(dir)?;
            let commit = ops::remote::commit(&ctx, &name, message.as_deref(), dry_run)?;
            out.emit(&commit, || {
                format!(
                    "{}: {} at {}",
                    commit.session,
                    commit.branch,
                    &commit.tip[..10.min(commit.tip.len())]
                )
            })?;
            Ok(ExitCode::SUCCESS)
        }
    }
}
