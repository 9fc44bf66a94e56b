//! `owt approve NAME [OPTION]`: answer an ACP session's permission request
//! (`--json`: `owt_protocol::host::PermissionAnswered`).

use std::path::Path;
use std::process::ExitCode;

use owt_protocol::host::{PermissionAnswer, PermissionAnswered};

use crate::ops::Context;
use crate::session;

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Only for sessions started with `owt new --acp` (their agent asks through the
Agent Client Protocol). `owt list` shows the question and its options; so
does `owt attach NAME`. In an editor, `owt lsp` asks you when the session
blocks and offers the same answers as code actions and in the boards
(commands `owt.approve` / `owt.deny`).

Examples:
  owt approve fix-login            the first \"allow once\" option
  owt approve fix-login 2          the second option as listed
  owt approve fix-login allow_always
  owt deny fix-login")]
pub struct Args {
    /// The session.
    pub name: String,
    /// Which option: its number as listed (1, 2, …), its id, or its name.
    /// Default: the first "allow once" option (else the first "allow").
    pub option: Option<String>,
}

pub fn run(ctx_dir: Option<&Path>, out: &super::Out, args: Args) -> anyhow::Result<ExitCode> {
    answer(
        ctx_dir,
        out,
        &args.name,
        PermissionAnswer {
            option: args.option,
            deny: false,
            id: None,
        },
    )
}

/// Sends `answer` to `name`'s host and prints what was picked.
pub(super) fn answer(
    ctx_dir: Option<&Path>,
    out: &super::Out,
    name: &str,
    answer: PermissionAnswer,
) -> anyhow::Result<ExitCode> {
    let ctx = Context::open(ctx_dir)?;
    let row = ctx.session(name)?;
    let done: PermissionAnswered =
        session::answer_permission(&ctx.store, &ctx.home, &row, &answer)?;
    out.emit(&done, || {
        format!(
            "{}: {} → {}",
            row.name,
            crate::printable::line(&done.question),
            crate::printable::line(&done.name)
        )
    })?;
    Ok(ExitCode::SUCCESS)
}
