//! `owt sync [NAME…|--all]`.

use std::path::Path;
use std::process::ExitCode;

use crate::ops;

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Fast-forwards the base branch from its upstream when it has one (never over your uncommitted \
changes), then merges it into each session's branch in its worktree. A session with uncommitted \
work is skipped; on conflicts its worktree is restored exactly, unless --leave-conflicts.")]
pub struct Args {
    /// Sessions to sync (default with --all: every session).
    pub names: Vec<String>,
    /// Sync every session of the repository.
    #[arg(long, conflicts_with = "names")]
    pub all: bool,
    /// Leave conflicts in the worktree for you to resolve instead of restoring it.
    #[arg(long)]
    pub leave_conflicts: bool,
}

pub fn run(dir: Option<&Path>, out: &super::Out, args: Args) -> anyhow::Result<ExitCode> {
    if args.names.is_empty() && !args.all {
        anyhow::bail!("name the sessions to sync, or pass --all");
    }
    let mut ctx = ops::Context::open(dir)?;
    let result = ops::sync::sync(&mut ctx, &args.names, args.leave_conflicts, &mut |l| {
        out.progress(l)
    })?;
    out.emit(&result, || {
        if result.sessions.is_empty() {
            return "No sessions to sync.".into();
        }
        result
            .sessions
            .iter()
            .map(|s| {
                let mut line = format!("{}: {}", s.name, s.outcome);
                if !s.conflicts.is_empty() {
                    line.push_str(&format!(" in {}", s.conflicts.join(", ")));
                }
                if let Some(detail) = &s.detail {
                    line.push_str(&format!(" ({detail})"));
                }
                line
            })
            .collect::<Vec<_>>()
            .join("\n")
    })?;
    let conflicts = result.sessions.iter().any(|s| s.outcome == "conflicts");
    Ok(if conflicts {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
