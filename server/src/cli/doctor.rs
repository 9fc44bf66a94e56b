//! `owt doctor [--fix]`.

use std::path::Path;
use std::process::ExitCode;

use crate::ops;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Repair what can be repaired safely (never deletes uncommitted work).
    #[arg(long)]
    pub fix: bool,
}

pub fn run(dir: Option<&Path>, out: &super::Out, args: Args) -> anyhow::Result<ExitCode> {
    let mut ctx = ops::Context::open(dir)?;
    let report = ops::doctor::doctor(&mut ctx, args.fix)?;
    out.emit(&report, || {
        if report.findings.is_empty() {
            return "No problems found.".into();
        }
        let mut lines = Vec::new();
        for f in &report.findings {
            let state = if f.fixed {
                " (fixed)".to_string()
            } else if let Some(why) = &f.skipped_reason {
                format!(" (left alone: {why})")
            } else {
                String::new()
            };
            lines.push(format!("{}: {}{state}", f.kind, f.detail));
        }
        if !args.fix && report.findings.iter().any(|f| !f.fixed) {
            lines.push("Run `owt doctor --fix` to repair these.".into());
        }
        lines.join("\n")
    })?;
    Ok(ExitCode::SUCCESS)
}
