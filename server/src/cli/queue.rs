//! `owt queue`: the sessions in READY TO SHIP, in the merge order with the
//! fewest conflicts.

use std::path::Path;
use std::process::ExitCode;

use owt_protocol::guard::QueueReport;

use crate::ops;

#[derive(Debug, clap::Args)]
#[command(after_help = "\
With --ship, the sessions are shipped in this order (dirty ones are committed first, as \
`owt ship` does); it stops at the first that does not ship and reports what shipped and \
what did not, leaving the rest untouched.")]
pub struct Args {
    /// Ship the queue in order; stop at the first conflict.
    #[arg(long)]
    pub ship: bool,
}

pub fn run(dir: Option<&Path>, out: &super::Out, args: Args) -> anyhow::Result<ExitCode> {
    let mut ctx = ops::Context::open(dir)?;
    if args.ship {
        let result = ops::merge::queue_ship(&mut ctx, &mut |l| out.progress(l))?;
        out.emit(&result, || {
            let mut lines: Vec<String> = result
                .shipped
                .iter()
                .map(|s| format!("Shipped {} into {}.", s.merge.name, s.merge.base))
                .collect();
            if lines.is_empty() && result.stopped_at.is_none() {
                lines.push("No session is ready to ship.".into());
            }
            if let (Some(name), Some(reason)) = (&result.stopped_at, &result.reason) {
                lines.push(format!("Stopped at {name}: {reason}"));
                if !result.remaining.is_empty() {
                    lines.push(format!("Not attempted: {}", result.remaining.join(", ")));
                }
            }
            lines.join("\n")
        })?;
        return Ok(if result.stopped_at.is_some() {
            ExitCode::FAILURE
        } else {
            ExitCode::SUCCESS
        });
    }
    let report = ops::guard::queue_report(&ctx)?;
    out.emit(&report, || render(&report))?;
    Ok(ExitCode::SUCCESS)
}

fn plural(n: u32, word: &str) -> String {
    format!("{n} {word}{}", if n == 1 { "" } else { "s" })
}

/// The text report.
pub fn render(report: &QueueReport) -> String {
    if report.steps.is_empty() {
        return "No session is ready to ship (none is in READY TO SHIP).".into();
    }
    report
        .steps
        .iter()
        .map(|s| {
            let outcome = if s.ahead == 0 {
                "is not committed yet (ship commits it first), then merges".to_string()
            } else if s.predicted_conflicts.is_empty() {
                "merges cleanly".to_string()
            } else {
                format!("would conflict in {}", s.predicted_conflicts.join(", "))
            };
            format!(
                "{}. {} ({}, {}) {} into {}; overlaps {}.",
                s.position,
                s.session,
                plural(s.ahead, "commit"),
                plural(s.changed_files, "file"),
                outcome,
                s.base,
                plural(s.overlaps, "other session"),
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}
