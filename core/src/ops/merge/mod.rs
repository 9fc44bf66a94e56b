//! `owt merge` and `owt ship`: the safe, boring, predictable part.
//!
//! Every step is recorded in the store (the session's `ship` journal fact)
//! before it runs, and every step is idempotent, so a crash or SIGKILL at
//! any point is completed by running the same command again (or rolled back
//! by `owt doctor --fix`). The agent keeps running until the merge has
//! succeeded; only then is the session deleted (unless `--keep`).
//!
//! Here the steps of a merge (`merge_row`: prediction, phase 1, phase 2,
//! cleanup); `refusals` (what stops a merge before it changes anything),
//! `recovery` (an interrupted merge rolled back or completed), `ship`
//! (commit, then merge; the queue shipped in order).

use anyhow::bail;
use owt_protocol::{ConflictFile, MergeOutput};

use super::Context;
use crate::ship::{self, Method, Phase1, Strategy};
use crate::status::{self, ConflictFact};
use crate::store::SessionRow;

mod recovery;
mod refusals;
mod remote;
mod shipping;

pub use recovery::repair_interrupted;
use recovery::{finish_if_merged, phase1_failed, recover, restore_worktree};
pub use refusals::{is_stale_lock, repo_dirs};
use refusals::{refuse_git_locks, refuse_unsafe_phase1};
pub use shipping::{queue_ship, ship_checked, ship_session};

pub use super::facts::{Journal, JOURNAL};

#[derive(Debug, Clone, Copy, Default)]
pub struct MergeOptions {
    pub rebase: bool,
    pub strategy: Option<Strategy>,
    pub leave_conflicts: bool,
    pub keep: bool,
    /// Do it even while the agent is at work (`--now`): see
    /// [`crate::ops::allowed`].
    pub now: bool,
}

fn journal(
    ctx: &Context,
    row: &SessionRow,
    op: &str,
    step: &str,
    base_before: &str,
    branch_before: &str,
) -> anyhow::Result<()> {
    ctx.store.record_fact(
        row.id,
        JOURNAL,
        &Journal {
            op: op.into(),
            step: step.into(),
            base_before: base_before.into(),
            branch_before: branch_before.into(),
        },
    )?;
    Ok(())
}

/// Merges the session's branch into its base (two phases), then deletes the
/// session unless `opts.keep`.
pub fn merge_session(
    ctx: &mut Context,
    name: &str,
    opts: MergeOptions,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<MergeOutput> {
    let row = ctx.session(name)?;
    super::allowed::check(ctx, &row, owt_protocol::SessionAction::Merge, opts.now)?;
    if row.remote().is_some() {
        return remote::merge(ctx, &row, "merge", opts, None, progress);
    }
    merge_row(ctx, &row, "merge", opts, progress)
}

/// Merges `row`'s branch into its base: the prediction, phase 1 (the base
/// brought into the branch in its worktree), phase 2 (the base advanced),
/// then the cleanup, each journalled before it runs.
pub(crate) fn merge_row(
    ctx: &mut Context,
    row: &SessionRow,
    op: &str,
    opts: MergeOptions,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<MergeOutput> {
    let _span = tracing::info_span!("session", session = %row.name).entered();
    tracing::info!(op, "merging into {}", row.base_branch);
    if let Some(done) = finish_if_merged(ctx, row, progress)? {
        return Ok(done);
    }
    ready_to_merge(ctx, row, progress)?;
    let run = Run {
        row,
        op,
        opts,
        base_before: ctx.repo.branch_tip(&row.base_branch)?,
        branch_before: ctx.repo.branch_tip(&row.branch)?,
    };
    let mut output = run.output();
    output.conflicts = predict(ctx, &run, progress)?;
    let Some(new_tip) = phase1(ctx, &run, &mut output, progress)? else {
        return Ok(output);
    };
    if let Err(e) = phase2(ctx, &run, new_tip, &mut output, progress) {
        return Err(phase2_failed(&run, e));
    }
    cleanup(ctx, &run, &mut output, progress)?;
    Ok(output)
}

/// One merge under way: the session, the operation (`merge` or `ship`),
/// its options and the tips it started from (what the journal records).
struct Run<'a> {
    row: &'a SessionRow,
    op: &'a str,
    opts: MergeOptions,
    base_before: git2::Oid,
    branch_before: git2::Oid,
}

impl Run<'_> {
    /// Records that the merge is at `step`, before the step runs.
    fn journal(&self, ctx: &Context, step: &str) -> anyhow::Result<()> {
        journal(
            ctx,
            self.row,
            self.op,
            step,
            &self.base_before.to_string(),
            &self.branch_before.to_string(),
        )
    }

    /// What is said of a merge that has not happened yet.
    fn output(&self) -> MergeOutput {
        MergeOutput {
            name: self.row.name.clone(),
            branch: self.row.branch.clone(),
            base: self.row.base_branch.clone(),
            merged: false,
            base_before: self.base_before.to_string(),
            base_after: self.base_before.to_string(),
            method: if self.opts.rebase { "rebase" } else { "merge" }.into(),
            strategy: self.opts.strategy.map(|s| s.as_str().to_string()),
            conflicts: Vec::new(),
            left_conflicts: false,
            checkout_updated: None,
            deleted: false,
            trash: None,
        }
    }
}

/// Refuses a merge that cannot start — its worktree gone, git's lock files
/// in the way, a merge or rebase in progress, uncommitted work — after
/// rolling back a phase 1 a crash interrupted.
fn ready_to_merge(
    ctx: &Context,
    row: &SessionRow,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<()> {
    let name = row.name.as_str();
    if !row.worktree_path.exists() {
        bail!(
            "the worktree of `{name}` ({}) is gone; run `owt doctor --fix`",
            row.worktree_path.display()
        );
    }
    refuse_git_locks(ctx, row)?;
    recover(ctx, row, progress)?;
    if ship::in_progress(&row.worktree_path).is_some() {
        let files = ship::conflicted_files(&row.worktree_path)?;
        bail!(
            "a merge or rebase is in progress in {} (conflicts in: {}); resolve it and commit, or run `git merge --abort` / `git rebase --abort` there",
            row.worktree_path.display(),
            if files.is_empty() { "none".into() } else { files.join(", ") }
        );
    }
    let dirt = crate::git::dirt(&row.worktree_path)?;
    if !dirt.is_clean() {
        bail!(
            "session `{name}` has uncommitted work ({}); commit it, or use `owt ship {name}`, which commits it first",
            dirt.summary()
        );
    }
    Ok(())
}

/// The prediction, before anything changes: the conflicts the merge would
/// have. Refused (the journal closed) when it would conflict and neither a
/// strategy nor `--leave-conflicts` says what to do, or when phase 1 could
/// not be undone exactly.
fn predict(
    ctx: &Context,
    run: &Run,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<Vec<ConflictFile>> {
    let (row, base) = (run.row, &run.row.base_branch);
    run.journal(ctx, "predict")?;
    progress(&format!(
        "Checking {} against {base} for conflicts",
        row.branch
    ));
    let predicted = ship::predict(ctx.repo.git2(), run.branch_before, run.base_before)?;
    if !predicted.is_empty() && run.opts.strategy.is_none() && !run.opts.leave_conflicts {
        ctx.store.clear_fact(row.id, JOURNAL)?;
        bail!(
            "merging `{}` into {base} would conflict in {}; nothing was changed. Resolve it in the worktree, or pass --strategy ours|theirs (ours = the agent's side wins) or --leave-conflicts",
            row.name,
            describe_conflicts(&predicted)
        );
    }
    if let Err(e) = refuse_unsafe_phase1(ctx, row, run.branch_before, run.base_before) {
        ctx.store.clear_fact(row.id, JOURNAL)?;
        return Err(e);
    }
    Ok(predicted)
}

/// Phase 1: brings the base into the branch, in the session's worktree.
/// Returns the branch's new tip; `None` when conflicts were left there for
/// the user (`--leave-conflicts`, said in `output`). Conflicts not left,
/// or a failure, restore the worktree exactly and fail.
fn phase1(
    ctx: &Context,
    run: &Run,
    output: &mut MergeOutput,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<Option<git2::Oid>> {
    let (row, op, opts, base) = (run.row, run.op, run.opts, &run.row.base_branch);
    run.journal(ctx, "phase1")?;
    ship::failpoint(&format!("{op}-phase1"));
    progress(&format!(
        "{} {base} into {}",
        if opts.rebase {
            "Rebasing onto"
        } else {
            "Merging"
        },
        row.branch
    ));
    let method = if opts.rebase {
        Method::Rebase
    } else {
        Method::Merge
    };
    let phase1 = match ship::bring_base_in(
        &ctx.repo,
        &row.worktree_path,
        base,
        method,
        opts.strategy,
        opts.leave_conflicts,
    ) {
        Ok(phase1) => phase1,
        Err(e) => return Err(phase1_failed(ctx, row, op, base, e, progress)),
    };
    let Phase1::Conflicts { files, left } = phase1 else {
        return Ok(Some(ctx.repo.branch_tip(&row.branch)?));
    };
    if left {
        ctx.store.record_fact(
            row.id,
            status::kind::CONFLICT,
            &ConflictFact {
                files: files.clone(),
            },
        )?;
        ctx.store.clear_fact(row.id, JOURNAL)?;
        output.left_conflicts = true;
        output.conflicts = files
            .into_iter()
            .map(|path| ConflictFile {
                path,
                lines: Vec::new(),
            })
            .collect();
        progress(&format!(
            "Left the conflicts in {} for you to resolve",
            row.worktree_path.display()
        ));
        return Ok(None);
    }
    // `--abort` put back what git tracked; anything the merge wrote
    // beside that goes too (restore_worktree clears the journal).
    if let Some((journal, _)) = ctx.store.fact::<Journal>(row.id, JOURNAL)? {
        restore_worktree(ctx, row, &journal, progress)?;
    }
    ctx.store.clear_fact(row.id, JOURNAL)?;
    bail!(
        "merging {base} into `{}` stopped on conflicts in {}; the worktree was restored as it was",
        row.name,
        files.join(", ")
    );
}

/// Phase 2: advances the base branch to the branch's new tip (and a
/// checkout of it, as `git merge --ff-only` would).
fn phase2(
    ctx: &Context,
    run: &Run,
    new_tip: git2::Oid,
    output: &mut MergeOutput,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<()> {
    let (row, op, base) = (run.row, run.op, &run.row.base_branch);
    run.journal(ctx, "phase2")?;
    ship::failpoint(&format!("{op}-phase2"));
    let checkout = ship::advance_base(&ctx.repo, base, new_tip)?;
    progress(&format!(
        "Advanced {base} to {}",
        &new_tip.to_string()[..10]
    ));
    output.checkout_updated = checkout.map(|p| p.display().to_string());
    output.base_after = ctx.repo.branch_tip(base)?.to_string();
    output.merged = true;
    ctx.store.clear_fact(row.id, status::kind::CONFLICT)?;
    ctx.store
        .add_event(row.repo_id, &row.name, "merged", &row.provider)?;
    Ok(())
}

/// A phase 2 that failed: its cause, what state it left (the base brought
/// into the branch, the base not moved, the journal open: `owt doctor`'s
/// `interrupted-merge`), and the one next step.
fn phase2_failed(run: &Run, cause: anyhow::Error) -> anyhow::Error {
    let (row, op, base) = (run.row, run.op, &run.row.base_branch);
    anyhow::anyhow!(
        "{cause:#}\nthe {op} of `{name}` stopped before {base} moved: {base} was brought into {branch} in its worktree, and `owt doctor` lists it as an interrupted-merge; next: fix the cause above, then run `owt {op} {name}` again to complete it (`owt doctor --fix` closes it instead, leaving {branch} as it is)",
        name = row.name,
        branch = row.branch,
    )
}

/// The cleanup: deletes the session unless `--keep` (a failure to delete
/// is said, the merge stands); closes the journal.
fn cleanup(
    ctx: &mut Context,
    run: &Run,
    output: &mut MergeOutput,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<()> {
    let (row, op) = (run.row, run.op);
    if run.opts.keep {
        ctx.store.clear_fact(row.id, JOURNAL)?;
        return Ok(());
    }
    run.journal(ctx, "cleanup")?;
    ship::failpoint(&format!("{op}-cleanup"));
    match crate::ops::delete::delete_session(
        ctx,
        &row.name,
        false,
        if op == "ship" { "shipped" } else { "merged" },
        progress,
    ) {
        Ok(deleted) => {
            output.deleted = true;
            output.trash = deleted.trash;
        }
        Err(e) => progress(&format!("Merged, but the session was kept: {e:#}")),
    }
    Ok(())
}

fn describe_conflicts(conflicts: &[ConflictFile]) -> String {
    conflicts
        .iter()
        .map(|c| {
            if c.lines.is_empty() {
                c.path.clone()
            } else {
                let lines: Vec<String> = c.lines.iter().map(|(a, b)| format!("{a}–{b}")).collect();
                format!("{} (lines {})", c.path, lines.join(", "))
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}
