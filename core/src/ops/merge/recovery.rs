//! A merge or ship a crash interrupted: phase 1 rolled back (the worktree
//! restored exactly), or, once the base took the work, the cleanup
//! completed; also what `owt doctor --fix` runs.

use owt_protocol::MergeOutput;

use super::{Journal, JOURNAL};
use crate::ops::Context;
use crate::ship;
use crate::store::SessionRow;

/// Rolls back an interrupted phase 1 — a merge or rebase left in progress
/// by a crash (never one left on purpose with `--leave-conflicts`), or
/// files a failed one wrote (a full disk) — so the worktree is exactly as
/// it was before; fails, changing nothing more, when that cannot be done
/// yet: nothing may go on from a half-restored worktree.
pub(super) fn recover(
    ctx: &Context,
    row: &SessionRow,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<()> {
    let Some((journal, _)) = ctx.store.fact::<Journal>(row.id, JOURNAL)? else {
        return Ok(());
    };
    if journal.step != "phase1" || !row.worktree_path.exists() {
        return Ok(());
    }
    if ship::in_progress(&row.worktree_path).is_some() {
        progress(&format!(
            "Rolling back the interrupted {} in {}",
            journal.op, row.name
        ));
        ship::abort(&row.worktree_path)?;
    }
    restore_worktree(ctx, row, &journal, progress)
}

/// Puts back the files a failed phase 1 wrote in the session's worktree,
/// when its HEAD is still the one the journal recorded.
pub(super) fn restore_worktree(
    ctx: &Context,
    row: &SessionRow,
    journal: &Journal,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<()> {
    let (Ok(head), Ok(base)) = (
        git2::Oid::from_str(&journal.branch_before),
        git2::Oid::from_str(&journal.base_before),
    ) else {
        return Ok(());
    };
    let worktree_head = git2::Repository::open(&row.worktree_path)
        .and_then(|r| r.head()?.peel_to_commit().map(|c| c.id()))
        .ok();
    if worktree_head != Some(head) || ship::in_progress(&row.worktree_path).is_some() {
        return Ok(());
    }
    let restored = ship::restore_phase1(&row.worktree_path, head, base).map_err(|e| {
        let diagnosis = crate::store::storage_diagnosis(&row.worktree_path)
            .map(|d| format!(" ({d})"))
            .unwrap_or_default();
        anyhow::anyhow!(
            "the worktree of `{}` still holds files of a {} that failed, and putting it back failed: {e}{diagnosis}; owt will not commit or merge anything there until it is restored: free what is needed and run `owt {} {}` again, or `owt doctor --fix`",
            row.name,
            journal.op,
            journal.op,
            row.name
        )
    })?;
    if !restored.removed.is_empty() || !restored.restored.is_empty() {
        progress(&format!(
            "Restored the worktree of {} as it was before the failed {}: removed {}, put back {}",
            row.name,
            journal.op,
            list_or_none(&restored.removed),
            list_or_none(&restored.restored)
        ));
    }
    if !restored.left.is_empty() {
        progress(&format!(
            "Left as they are (changed since the failed {}): {}",
            journal.op,
            restored.left.join(", ")
        ));
    }
    ctx.store.clear_fact(row.id, JOURNAL)?;
    Ok(())
}

fn list_or_none(paths: &[String]) -> String {
    if paths.is_empty() {
        "nothing".into()
    } else {
        paths.join(", ")
    }
}

/// A phase 1 that failed without leaving a merge or rebase in progress:
/// restores the worktree exactly and says why it failed (a full disk
/// plainly). The journal stays open while the restore could not be done.
pub(super) fn phase1_failed(
    ctx: &Context,
    row: &SessionRow,
    op: &str,
    base: &str,
    error: ship::ShipError,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Error {
    let message = error.to_string();
    let cause = if ship::is_disk_full(&message) {
        let diagnosis = crate::store::storage_diagnosis(&row.worktree_path)
            .unwrap_or_else(|| format!("the disk holding {} is full", row.worktree_path.display()));
        format!("{diagnosis}: {message}")
    } else {
        message
    };
    let restored = match ctx.store.fact::<Journal>(row.id, JOURNAL) {
        Ok(Some((journal, _))) => {
            if ship::in_progress(&row.worktree_path).is_some() {
                if let Err(e) = ship::abort(&row.worktree_path) {
                    return anyhow::anyhow!(
                        "the {op} of `{}` failed bringing {base} in ({cause}), and aborting it failed too: {e}; run `owt doctor --fix` once the cause is fixed",
                        row.name
                    );
                }
            }
            restore_worktree(ctx, row, &journal, progress)
        }
        Ok(None) => Ok(()),
        Err(e) => Err(e.into()),
    };
    match restored {
        Ok(()) => anyhow::anyhow!(
            "the {op} of `{}` failed bringing {base} in: {cause}; the worktree was restored exactly as it was and {base} did not move",
            row.name
        ),
        Err(e) => anyhow::anyhow!(
            "the {op} of `{}` failed bringing {base} in: {cause}; {e:#}",
            row.name
        ),
    }
}

/// Completes a merge or ship that was interrupted after the base branch
/// already took the work (phase 2 or cleanup): only the cleanup is left.
pub(super) fn finish_if_merged(
    ctx: &mut Context,
    row: &SessionRow,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<Option<MergeOutput>> {
    let Some((journal, _)) = ctx.store.fact::<Journal>(row.id, JOURNAL)? else {
        return Ok(None);
    };
    if journal.step != "phase2" && journal.step != "cleanup" {
        return Ok(None);
    }
    let base_tip = ctx.repo.branch_tip(&row.base_branch)?;
    let merged = match ctx.repo.branch_tip(&row.branch) {
        Ok(tip) => tip == base_tip || ctx.repo.git2().graph_descendant_of(base_tip, tip)?,
        // The branch is gone: cleanup had deleted it already.
        Err(_) => journal.step == "cleanup",
    };
    if !merged {
        return Ok(None);
    }
    progress(&format!(
        "Completing the interrupted {} of {}",
        journal.op, row.name
    ));
    let how = if journal.op == "ship" {
        "shipped"
    } else {
        "merged"
    };
    let (deleted, trash) =
        match crate::ops::delete::delete_session(ctx, &row.name, false, how, progress) {
            Ok(deleted) => (true, deleted.trash),
            Err(e) => {
                progress(&format!("Merged, but the session was kept: {e:#}"));
                ctx.store.clear_fact(row.id, JOURNAL)?;
                (false, None)
            }
        };
    Ok(Some(MergeOutput {
        name: row.name.clone(),
        branch: row.branch.clone(),
        base: row.base_branch.clone(),
        merged: true,
        base_before: journal.base_before,
        base_after: base_tip.to_string(),
        method: "merge".into(),
        strategy: None,
        conflicts: Vec::new(),
        left_conflicts: false,
        checkout_updated: None,
        deleted,
        trash,
    }))
}

/// For `owt doctor --fix`: completes or rolls back an interrupted merge or
/// ship. Returns a description of what it did.
pub fn repair_interrupted(ctx: &mut Context, row: &SessionRow) -> anyhow::Result<Option<String>> {
    let Some((journal, _)) = ctx.store.fact::<Journal>(row.id, JOURNAL)? else {
        return Ok(None);
    };
    let mut sink = |_: &str| {};
    if let Some(done) = finish_if_merged(ctx, row, &mut sink)? {
        return Ok(Some(if done.deleted {
            format!("completed the interrupted {} of `{}`", journal.op, row.name)
        } else {
            format!(
                "the {} of `{}` had merged; the session was kept",
                journal.op, row.name
            )
        }));
    }
    recover(ctx, row, &mut sink)?;
    ctx.store.clear_fact(row.id, JOURNAL)?;
    Ok(Some(format!(
        "rolled back the interrupted {} of `{}` (step {})",
        journal.op, row.name, journal.step
    )))
}
