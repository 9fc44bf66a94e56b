//! `owt cleanup [--days N] [--force]`.

use std::path::Path;
use std::process::ExitCode;

use crate::ops;

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Without --force this only lists. With --force, stale sessions are deleted like `owt delete` \
(their unmerged commits kept under refs/owt/backup/NAME); a worktree with uncommitted work is \
always kept.")]
pub struct Args {
    /// Stale after this many days without activity (default: [worktree] auto_cleanup_days, 14).
    #[arg(long)]
    pub days: Option<u32>,
    /// Remove the stale sessions.
    #[arg(long)]
    pub force: bool,
}

pub fn run(dir: Option<&Path>, out: &super::Out, args: Args) -> anyhow::Result<ExitCode> {
    let mut ctx = ops::Context::open(dir)?;
    let result = ops::cleanup::cleanup(&mut ctx, args.days, args.force, &mut |l| out.progress(l))?;
    out.emit(&result, || {
        if result.stale.is_empty() {
            return format!(
                "No session has been idle or exited for {} days or more.",
                result.days
            );
        }
        let mut lines: Vec<String> = result
            .stale
            .iter()
            .map(|s| {
                format!(
                    "{}: {}, inactive for {:.1} days",
                    s.name,
                    crate::printable::line(&s.status_text),
                    s.idle_days
                )
            })
            .collect();
        if args.force {
            lines.push(format!(
                "Removed: {}",
                if result.removed.is_empty() {
                    "none".into()
                } else {
                    result.removed.join(", ")
                }
            ));
            for (name, why) in &result.kept {
                lines.push(format!("Kept {name}: {why}"));
            }
        } else {
            lines.push("Run with --force to remove them.".into());
        }
        lines.join("\n")
    })?;
    Ok(ExitCode::SUCCESS)
}
