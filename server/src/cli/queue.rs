//! `owt queue`: the sessions ready to ship, in the merge order with the
//! fewest conflicts.

use std::path::Path;
use std::process::ExitCode;

use owt_protocol::guard::QueueReport;

use crate::guard;
use crate::ops;

#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(dir: Option<&Path>, out: &super::Out, _args: Args) -> anyhow::Result<ExitCode> {
    let ctx = ops::Context::open(dir)?;
    let report = guard::ops::queue_report(&ctx)?;
    out.emit(&report, || render(&report))?;
    Ok(ExitCode::SUCCESS)
}

fn plural(n: u32, word: &str) -> String {
    format!("{n} {word}{}", if n == 1 { "" } else { "s" })
}

/// The text report.
pub fn render(report: &QueueReport) -> String {
    if report.steps.is_empty() {
        return "No session is ready to ship (ready: commits ahead of its base).".into();
    }
    report
        .steps
        .iter()
        .map(|s| {
            let outcome = if s.predicted_conflicts.is_empty() {
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
