//! `owt deny NAME`: refuse an ACP session's permission request (its
//! "reject once" option; without one, the request is cancelled), or the
//! permission dialog on a terminal agent's screen (its key for "no").

use std::path::Path;
use std::process::ExitCode;

use owt_protocol::host::PermissionAnswer;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session.
    pub name: String,
}

pub fn run(ctx_dir: Option<&Path>, out: &super::Out, args: Args) -> anyhow::Result<ExitCode> {
    super::approve::answer(
        ctx_dir,
        out,
        &args.name,
        PermissionAnswer {
            option: None,
            deny: true,
            id: None,
        },
    )
}
