//! `owt ship NAME`.

use std::path::Path;
use std::process::ExitCode;

use crate::ops;

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Commits everything in the worktree (running your commit hooks; a rejecting hook stops the ship \
and changes nothing), merges it as `owt merge` does, then stops the agent and removes the \
worktree and branch. The agent keeps running until the merge has succeeded. If owt is \
interrupted, run the same command again to complete it (or `owt doctor --fix` to roll back).

While the agent is working or waits on a dialog, ship refuses and changes nothing (the board's \
actions say the same); --now stops it and ships what its worktree holds at that moment. A \
session with no commits and no changed files has nothing to ship: an error.

With [checks] configured, the checks run first on the work as it is (unless a passing run of \
exactly this work is on record; with `when = \"manual\"` only a failed run on record counts); \
when they fail nothing is shipped, and the error shows the end of their output and the log. \
--no-checks ships anyway, and says so.")]
pub struct Args {
    /// The session to ship.
    pub name: String,
    /// Commit message (default: the task's first line).
    #[arg(short, long)]
    pub message: Option<String>,
    /// Rebase onto the base instead of merging it in.
    #[arg(long)]
    pub rebase: bool,
    /// Resolve conflicting hunks automatically (ours = the agent's side wins).
    #[arg(long, value_enum)]
    pub strategy: Option<super::merge::StrategyArg>,
    /// Ship even if the [checks] fail (they are not run).
    #[arg(long)]
    pub no_checks: bool,
    /// Ship even while the agent is working or waits on a dialog: it is stopped, and what its worktree holds now is committed.
    #[arg(long, alias = "force")]
    pub now: bool,
}

pub fn run(dir: Option<&Path>, out: &super::Out, args: Args) -> anyhow::Result<ExitCode> {
    let mut ctx = ops::Context::open(dir)?;
    let opts = ops::merge::MergeOptions {
        rebase: args.rebase,
        strategy: args.strategy.map(Into::into),
        leave_conflicts: false,
        keep: false,
        now: args.now,
    };
    let result = ops::checks::ship_checked(
        &mut ctx,
        &args.name,
        args.message.as_deref(),
        opts,
        args.no_checks,
        &mut |l| out.progress(l),
    )?;
    out.emit(&result, || {
        let mut text = String::new();
        match result.checks.as_deref() {
            Some("passed") => text.push_str("The checks passed. "),
            Some("skipped") => text.push_str("The checks were skipped (--no-checks). "),
            Some("not-run") => {
                text.push_str("The checks were not run ([checks] when = \"manual\"). ")
            }
            _ => {}
        }
        if let Some(commit) = &result.committed {
            text.push_str(&format!("Committed the work as {}. ", &commit[..10]));
        }
        text.push_str(&super::merge::describe(&result.merge));
        text
    })?;
    Ok(ExitCode::SUCCESS)
}
