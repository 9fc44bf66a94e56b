//! `owt approve NAME [OPTION]`: answer an ACP session's permission request,
//! or the permission dialog on a terminal agent's screen with that agent's
//! own key (`--json`: `owt_protocol::host::PermissionAnswered`).

use std::path::Path;
use std::process::ExitCode;

use owt_protocol::host::{PermissionAnswer, PermissionAnswered};

use crate::ops::Context;
use crate::session;

#[derive(Debug, clap::Args)]
#[command(after_help = "\
A session started with `owt new --acp` asks through the Agent Client
Protocol: `owt list` shows the question and its options; so does `owt attach
NAME`. In an editor, `owt lsp` asks you when the session blocks and offers
the same answers as code actions and in the boards (commands `owt.approve` /
`owt.deny`).
A terminal agent (Claude Code, Codex, OpenCode, Gemini, Aider) asks in a
dialog on its screen (`owt list` and `owt peek` show what it asks): approve
types its key for \"allow once\" (Claude Code 1, Codex y, OpenCode and Gemini
Enter, Aider y), deny its key for \"no\"; with no dialog on screen nothing is
typed and the command fails. OPTION is for ACP sessions only.

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
    // The board's check first; then the host looks at the request or the
    // dialog on screen itself.
    crate::ops::allowed::check_answer(&ctx, &row, answer.deny)?;
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
