//! `owt doctor [--fix]`.

use std::path::Path;
use std::process::ExitCode;

use crate::ops;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Repair what can be repaired safely: remove stale git locks, roll back interrupted merges,
    /// re-adopt sessions the store lost, remove orphaned worktrees nothing needs, empty old trash.
    /// Never deletes uncommitted work, ignored files that are not disposable, or a live worktree.
    #[arg(long)]
    pub fix: bool,
}

pub fn run(dir: Option<&Path>, out: &super::Out, args: Args) -> anyhow::Result<ExitCode> {
    let mut ctx = ops::Context::open(dir)?;
    let report = ops::doctor::doctor(&mut ctx, args.fix)?;
    out.emit(&report, || {
        let mut lines = Vec::new();
        if report.findings.is_empty() {
            lines.push("No problems found.".to_string());
        }
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
        if !args.fix && report.findings.iter().any(|f| !f.fixed && f.skipped_reason.is_none()) {
            lines.push("Run `owt doctor --fix` to repair these.".into());
        }
        if !report.trash.is_empty() {
            let now = crate::store::now_ms();
            lines.push(format!(
                "Trash ({} entr{}; `owt db purge --days N` empties entries older than N days, `owt doctor --fix` those older than {} days):",
                report.trash.len(),
                if report.trash.len() == 1 { "y" } else { "ies" },
                ops::doctor::TRASH_DAYS
            ));
            for entry in &report.trash {
                lines.push(format!(
                    "  {} · {} · {} ago · {} file{}{}",
                    entry.path,
                    ops::trash::human_bytes(entry.bytes),
                    super::age(entry.created_at, now),
                    entry.files.len(),
                    if entry.files.len() == 1 { "" } else { "s" },
                    entry
                        .session
                        .as_deref()
                        .map(|s| format!(" from session {}", crate::printable::line(s)))
                        .unwrap_or_default()
                ));
            }
        }
        lines.join("\n")
    })?;
    Ok(ExitCode::SUCCESS)
}
