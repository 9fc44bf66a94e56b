//! `owt send NAME "text"` / `--all` / `--working`: type text (then Enter)
//! into agents' terminals.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context as _;

use crate::ops::agent::{self, SendTo};
use crate::ops::Context;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session (omit with --all / --working).
    #[arg(required_unless_present_any = ["all", "working"])]
    pub name: Option<String>,
    /// The text; `-` reads it from standard input.
    #[arg(last = false)]
    pub text: Option<String>,
    /// Every running session of this repository.
    #[arg(long, conflicts_with = "working")]
    pub all: bool,
    /// Every session that is working now.
    #[arg(long)]
    pub working: bool,
    /// Type the text without pressing Enter.
    #[arg(long)]
    pub no_enter: bool,
}

pub fn run(ctx_dir: Option<&Path>, out: &super::Out, args: Args) -> anyhow::Result<ExitCode> {
    let ctx = Context::open(ctx_dir)?;
    // With --all/--working the one positional is the text.
    let (to, text) = if args.all || args.working {
        let to = if args.working {
            SendTo::Working
        } else {
            SendTo::All
        };
        (to, args.text.or(args.name))
    } else {
        let name = args.name.unwrap_or_default();
        (SendTo::Session(name), args.text)
    };
    let mut text =
        text.context("nothing to send: give the text as an argument (or `-` for standard input)")?;
    if text == "-" {
        text = std::io::read_to_string(std::io::stdin())
            .context("reading the text from standard input")?;
    }
    let result = agent::send(&ctx, &to, &text, !args.no_enter)?;
    for (name, e) in &result.failed {
        // A refusal names the session and what was not done already.
        if e.downcast_ref::<crate::ops::allowed::Refused>().is_some() {
            out.error(&format!("{e:#}"));
        } else {
            out.error(&format!("sending to {name}: {e:#}"));
        }
        if let Some(hint) = super::hint_for(e) {
            out.hint(&hint);
        }
    }
    out.emit(&serde_json::json!({ "sent": result.sent }), || {
        if result.sent.is_empty() && result.failed.is_empty() {
            "No session to send to.".to_string()
        } else {
            result
                .sent
                .iter()
                .map(|name| format!("Sent to {name}."))
                .collect::<Vec<_>>()
                .join("\n")
        }
    })?;
    Ok(if result.failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
