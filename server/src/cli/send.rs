//! `owt send NAME "text"` / `--all` / `--working`: type text (then Enter)
//! into agents' terminals.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context as _;
use owt_protocol::Status;

use crate::ops::Context;
use crate::session;

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

pub fn run(ctx_dir: Option<&Path>, json: bool, args: Args) -> anyhow::Result<ExitCode> {
    let ctx = Context::open(ctx_dir)?;
    // With --all/--working the one positional is the text.
    let (name, text) = if args.all || args.working {
        (None, args.text.or(args.name))
    } else {
        (args.name, args.text)
    };
    let mut text =
        text.context("nothing to send: give the text as an argument (or `-` for standard input)")?;
    if text == "-" {
        text = std::io::read_to_string(std::io::stdin())
            .context("reading the text from standard input")?;
    }
    let targets = match name {
        Some(name) => vec![ctx.session(&name)?],
        None => {
            let mut out = Vec::new();
            for row in ctx.store.sessions(ctx.repo_row.id)? {
                let derived = session::derived_status(&ctx.store, &ctx.home, &row)?;
                let wanted = if args.working {
                    derived.status == Status::Working
                } else {
                    derived.status != Status::Exited && derived.exit_code.is_none()
                };
                if wanted {
                    out.push(row);
                }
            }
            out
        }
    };
    let mut sent = Vec::new();
    let mut failed = 0;
    for row in &targets {
        match session::send(&ctx.home, row, &text, !args.no_enter) {
            Ok(()) => sent.push(row.name.clone()),
            Err(e) => {
                eprintln!("Error: sending to {}: {e}", row.name);
                failed += 1;
            }
        }
    }
    if json {
        println!("{}", serde_json::json!({ "sent": sent }));
    } else if sent.is_empty() && failed == 0 {
        println!("No session to send to.");
    } else {
        for name in &sent {
            println!("Sent to {name}.");
        }
    }
    Ok(if failed > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
