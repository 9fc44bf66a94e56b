//! `owt note "text"`.

use std::path::Path;
use std::process::ExitCode;

use crate::ops;

#[derive(Debug, clap::Args)]
#[command(after_help = "\
A note is shared context. A working agent gets it typed in now (it reads it with its next turn); \
an idle or waiting agent gets it with its next prompt (`owt send`), not as a turn of its own \
(--now: typed into those too, except one showing a dialog). Every agent started later gets all \
notes in its first prompt. `owt note` alone lists the notes.")]
pub struct Args {
    /// The note (omit to list the notes).
    pub text: Option<String>,
    /// Remove every note of this repository (before adding TEXT, if given).
    #[arg(long)]
    pub clear: bool,
    /// Type the note into idle and waiting agents now too (a turn of its
    /// own), not only into working ones.
    #[arg(long)]
    pub now: bool,
}

pub fn run(dir: Option<&Path>, out: &super::Out, args: Args) -> anyhow::Result<ExitCode> {
    let mut ctx = ops::Context::open(dir)?;
    let result = ops::notes::note(&mut ctx, args.text.as_deref(), args.clear, args.now)?;
    out.emit(&result, || {
        let mut lines = Vec::new();
        if args.clear {
            lines.push(format!("Cleared {} notes.", result.cleared));
        }
        if args.text.is_some() {
            lines.push(format!(
                "Noted. Delivered to {} running agent{}{}.",
                result.delivered_to.len(),
                if result.delivered_to.len() == 1 {
                    ""
                } else {
                    "s"
                },
                if result.delivered_to.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", result.delivered_to.join(", "))
                }
            ));
            if !result.at_next_turn.is_empty() {
                lines.push(format!(
                    "With their next prompt: {} (owt note --now types it in now).",
                    result.at_next_turn.join(", ")
                ));
            }
            for (name, why) in &result.not_delivered {
                lines.push(format!(
                    "Could not reach {name}: {}",
                    crate::printable::line(why)
                ));
            }
        } else if result.notes.is_empty() {
            lines.push("No notes. Add one with: owt note \"text\"".into());
        } else {
            lines.extend(
                result
                    .notes
                    .iter()
                    .map(|n| format!("- {}", crate::printable::text(n).replace('\n', "\n  "))),
            );
        }
        lines.join("\n")
    })?;
    Ok(ExitCode::SUCCESS)
}
