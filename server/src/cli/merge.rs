//! `owt merge NAME` (`m`).

use std::path::Path;
use std::process::ExitCode;

use owt_protocol::MergeOutput;

use crate::ops::{self, merge::MergeOptions};
use crate::ship::Strategy;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum StrategyArg {
    /// The agent's side wins conflicting hunks.
    Ours,
    /// The base branch's side wins conflicting hunks.
    Theirs,
}

impl From<StrategyArg> for Strategy {
    fn from(s: StrategyArg) -> Strategy {
        match s {
            StrategyArg::Ours => Strategy::Ours,
            StrategyArg::Theirs => Strategy::Theirs,
        }
    }
}

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Two phases: first the base branch is brought into the session's branch, in its worktree \
(merge, or rebase with --rebase); then the base branch is fast-forwarded to it. If the base \
branch is checked out in your checkout, that checkout is updated like `git merge --ff-only`: \
it is refused, changing nothing, when it would overwrite your uncommitted changes or a file \
git does not track there. When conflicts are predicted nothing changes unless you pass \
--strategy or --leave-conflicts. --strategy is from the agent's point of view: ours = the agent's side wins.")]
pub struct Args {
    /// The session to merge.
    pub name: String,
    /// Rebase the branch onto the base (linear history) instead of merging the base into it.
    #[arg(long)]
    pub rebase: bool,
    /// Resolve conflicting hunks automatically: ours = the agent's side, theirs = the base's side.
    #[arg(long, value_enum)]
    pub strategy: Option<StrategyArg>,
    /// On conflicts, leave them in the worktree for you to resolve (the session shows in NEEDS YOU).
    #[arg(long)]
    pub leave_conflicts: bool,
    /// Keep the session (worktree, branch, agent) after merging.
    #[arg(long)]
    pub keep: bool,
    /// Merge even while the agent is working or waits on a dialog (it is stopped unless --keep).
    #[arg(long, alias = "force")]
    pub now: bool,
}

impl Args {
    pub fn options(&self) -> MergeOptions {
        MergeOptions {
            rebase: self.rebase,
            strategy: self.strategy.map(Into::into),
            leave_conflicts: self.leave_conflicts,
            keep: self.keep,
            now: self.now,
        }
    }
}

pub fn run(dir: Option<&Path>, out: &super::Out, args: Args) -> anyhow::Result<ExitCode> {
    let mut ctx = ops::Context::open(dir)?;
    let result = ops::merge::merge_session(&mut ctx, &args.name, args.options(), &mut |l| {
        out.progress(l)
    })?;
    out.emit(&result, || describe(&result))?;
    Ok(if result.left_conflicts {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// The sentence that says what a merge did.
pub fn describe(m: &MergeOutput) -> String {
    if m.left_conflicts {
        let files: Vec<String> = m
            .conflicts
            .iter()
            .map(|c| crate::printable::name(&c.path).into_owned())
            .collect();
        return format!(
            "Merging {} into {} stopped on conflicts in {}; they are left in the worktree for you to resolve.",
            m.base,
            m.branch,
            files.join(", ")
        );
    }
    let mut text = format!(
        "Merged {} into {} ({} → {}).",
        m.branch,
        m.base,
        &m.base_before[..10.min(m.base_before.len())],
        &m.base_after[..10.min(m.base_after.len())]
    );
    if let Some(path) = &m.checkout_updated {
        let path = crate::printable::name(path);
        text.push_str(&format!(" Updated your checkout at {path}."));
    }
    if m.deleted {
        text.push_str(&format!(" Session {} is deleted.", m.name));
    }
    if let Some(trash) = &m.trash {
        let trash = crate::printable::name(trash);
        text.push_str(&format!(
            "\nIts files git does not keep (ignored files) were moved to the trash: {trash}"
        ));
    }
    text
}
