//! `owt merge` and `owt ship`: the safe, boring, predictable part.
//!
//! Every step is recorded in the store (the session's `ship` journal fact)
//! before it runs, and every step is idempotent, so a crash or SIGKILL at
//! any point is completed by running the same command again (or rolled back
//! by `owt doctor --fix`). The agent keeps running until the merge has
//! succeeded; only then is the session deleted (unless `--keep`).

use anyhow::{bail, Context as _};
use owt_protocol::{ConflictFile, MergeOutput, ShipOutput};
use serde::{Deserialize, Serialize};

use super::Context;
use crate::ship::{self, Method, Phase1, Strategy};
use crate::status::{self, ConflictFact};
use crate::store::SessionRow;

/// Fact kind of the merge/ship journal.
pub const JOURNAL: &str = "ship";

/// The journal: which operation, at which step, and the tips it started from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Journal {
    /// `merge` or `ship`.
    pub op: String,
    /// `commit`, `predict`, `phase1`, `phase2`, `cleanup`.
    pub step: String,
    pub base_before: String,
    pub branch_before: String,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct MergeOptions {
    pub rebase: bool,
    pub strategy: Option<Strategy>,
    pub leave_conflicts: bool,
    pub keep: bool,
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

/// Rolls back an interrupted phase 1 — a merge or rebase left in progress
/// by a crash (never one left on purpose with `--leave-conflicts`), or
/// files a failed one wrote (a full disk) — so the worktree is exactly as
/// it was before; fails, changing nothing more, when that cannot be done
/// yet: nothing may go on from a half-restored worktree.
fn recover(ctx: &Context, row: &SessionRow, progress: &mut dyn FnMut(&str)) -> anyhow::Result<()> {
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
fn restore_worktree(
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

/// Refuses when one of git's lock files that a merge of `row` would need
/// exists: the repository's own (`HEAD.lock`, `index.lock`,
/// `packed-refs.lock`, …), the branch's and the base's ref locks, and
/// those of the session's worktree and of the base's checkout.
fn refuse_git_locks(ctx: &Context, row: &SessionRow) -> anyhow::Result<()> {
    let common = ctx.repo.common_dir().to_path_buf();
    let mut admins = Vec::new();
    admins.extend(ctx.repo.admin_dir_of(&row.worktree_path));
    if let Some(checkout) = ctx.repo.checked_out_at(&row.base_branch)? {
        admins.extend(ctx.repo.admin_dir_of(&checkout));
    }
    let refs = [
        common.join(format!("refs/heads/{}.lock", row.base_branch)),
        common.join(format!("refs/heads/{}.lock", row.branch)),
    ];
    let in_the_way: Vec<_> = ctx
        .repo
        .lock_files()
        .into_iter()
        .filter(|lock| {
            let parent = lock.path.parent();
            parent == Some(common.as_path())
                || refs.contains(&lock.path)
                || admins.iter().any(|a| parent == Some(a.as_path()))
        })
        .collect();
    if in_the_way.is_empty() {
        return Ok(());
    }
    let oldest_git = crate::procs::oldest_git_start_ms(&repo_dirs(ctx));
    let stale = in_the_way
        .iter()
        .all(|lock| is_stale_lock(lock, oldest_git));
    let paths: Vec<String> = in_the_way
        .iter()
        .map(|l| l.path.display().to_string())
        .collect();
    bail!(
        "git's lock file{} {} {} in the way, so nothing was changed: {}",
        if paths.len() == 1 { "" } else { "s" },
        paths.join(", "),
        if paths.len() == 1 { "is" } else { "are" },
        if stale {
            "no git process runs that could hold it (a git was killed and left it behind); remove it with `owt doctor --fix`, then run the command again"
        } else {
            "a git process may be using it right now; wait for it to finish and run the command again (if none is running, `owt doctor --fix` removes stale locks)"
        }
    )
}

/// The folders a git process of this repository works in: the common dir,
/// the main checkout and every linked worktree.
pub fn repo_dirs(ctx: &Context) -> Vec<std::path::PathBuf> {
    let mut dirs = vec![
        ctx.repo.common_dir().to_path_buf(),
        ctx.repo.main_root().to_path_buf(),
    ];
    if let Ok(worktrees) = ctx.repo.worktrees() {
        dirs.extend(
            worktrees
                .into_iter()
                .map(|wt| std::fs::canonicalize(&wt.path).unwrap_or(wt.path)),
        );
    }
    dirs
}

/// A lock is stale when it is older than every running git process of the
/// repository (or none runs): no live git can be holding it.
pub fn is_stale_lock(lock: &crate::git::LockFile, oldest_git_start_ms: Option<i64>) -> bool {
    match oldest_git_start_ms {
        None => true,
        Some(start) => lock.modified_ms < start,
    }
}

/// Refuses a phase 1 that could not be undone exactly: one that would write
/// over files git does not track in the worktree (git overwrites ignored
/// files silently), or that would bring along a file owt copied into the
/// worktree (a `.env`) which the branch committed.
fn refuse_unsafe_phase1(
    ctx: &Context,
    row: &SessionRow,
    branch_tip: git2::Oid,
    base_tip: git2::Oid,
) -> anyhow::Result<()> {
    let in_the_way =
        ship::untracked_in_the_way(ctx.repo.git2(), &row.worktree_path, branch_tip, base_tip)?;
    if !in_the_way.is_empty() {
        bail!(
            "merging {} into `{}` would write over files git does not track in its worktree: {}; nothing was changed. Move them away (or commit them) and run the merge again",
            row.base_branch,
            row.name,
            in_the_way.join(", ")
        );
    }
    let copied: Vec<String> = super::owned::owned(ctx, row)
        .into_iter()
        .filter(|f| f.origin == "copied")
        .map(|f| f.path)
        .collect();
    if copied.is_empty() {
        return Ok(());
    }
    let repo = ctx.repo.git2();
    let fork = repo.merge_base(branch_tip, base_tip).unwrap_or(base_tip);
    let fork_tree = repo.find_commit(fork)?.tree()?;
    let branch_tree = repo.find_commit(branch_tip)?.tree()?;
    let committed: Vec<String> = copied
        .into_iter()
        .filter(|path| {
            let p = std::path::Path::new(path);
            let before = fork_tree.get_path(p).ok().map(|e| e.id());
            let after = branch_tree.get_path(p).ok().map(|e| e.id());
            after.is_some() && after != before
        })
        .collect();
    if !committed.is_empty() {
        bail!(
            "the branch of `{}` commits {}, which owt copied into its worktree from your checkout (it may hold secrets); nothing was merged. Remove {} from the branch's history (e.g. `git rm --cached` and amend or rebase in {}) and run the merge again",
            row.name,
            committed.join(", "),
            if committed.len() == 1 { "it" } else { "them" },
            row.worktree_path.display()
        );
    }
    Ok(())
}

/// A phase 1 that failed without leaving a merge or rebase in progress:
/// restores the worktree exactly and says why it failed (a full disk
/// plainly). The journal stays open while the restore could not be done.
fn phase1_failed(
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

/// Merges the session's branch into its base (two phases), then deletes the
/// session unless `opts.keep`.
pub fn merge_session(
    ctx: &mut Context,
    name: &str,
    opts: MergeOptions,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<MergeOutput> {
    let row = ctx.session(name)?;
    if row.remote().is_some() {
        return super::remote::merge(ctx, &row, "merge", opts, None, progress);
    }
    merge_row(ctx, &row, "merge", opts, progress)
}

pub(crate) fn merge_row(
    ctx: &mut Context,
    row: &SessionRow,
    op: &str,
    opts: MergeOptions,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<MergeOutput> {
    let name = row.name.as_str();
    let _span = tracing::info_span!("session", session = %name).entered();
    tracing::info!(op, "merging into {}", row.base_branch);
    if let Some(done) = finish_if_merged(ctx, row, progress)? {
        return Ok(done);
    }
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
    let base = row.base_branch.clone();
    let base_before = ctx.repo.branch_tip(&base)?;
    let branch_before = ctx.repo.branch_tip(&row.branch)?;
    let method = if opts.rebase {
        Method::Rebase
    } else {
        Method::Merge
    };
    let mut output = MergeOutput {
        name: name.to_string(),
        branch: row.branch.clone(),
        base: base.clone(),
        merged: false,
        base_before: base_before.to_string(),
        base_after: base_before.to_string(),
        method: if opts.rebase { "rebase" } else { "merge" }.into(),
        strategy: opts.strategy.map(|s| s.as_str().to_string()),
        conflicts: Vec::new(),
        left_conflicts: false,
        checkout_updated: None,
        deleted: false,
        trash: None,
    };

    // Prediction, before anything changes.
    journal(
        ctx,
        row,
        op,
        "predict",
        &output.base_before,
        &branch_before.to_string(),
    )?;
    progress(&format!(
        "Checking {} against {base} for conflicts",
        row.branch
    ));
    let predicted = ship::predict(ctx.repo.git2(), branch_before, base_before)?;
    if !predicted.is_empty() && opts.strategy.is_none() && !opts.leave_conflicts {
        ctx.store.clear_fact(row.id, JOURNAL)?;
        bail!(
            "merging `{name}` into {base} would conflict in {}; nothing was changed. Resolve it in the worktree, or pass --strategy ours|theirs (ours = the agent's side wins) or --leave-conflicts",
            describe_conflicts(&predicted)
        );
    }
    output.conflicts = predicted;
    if let Err(e) = refuse_unsafe_phase1(ctx, row, branch_before, base_before) {
        ctx.store.clear_fact(row.id, JOURNAL)?;
        return Err(e);
    }

    // Phase 1: bring the base into the branch, in the session's worktree.
    journal(
        ctx,
        row,
        op,
        "phase1",
        &output.base_before,
        &branch_before.to_string(),
    )?;
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
    let phase1 = match ship::bring_base_in(
        &ctx.repo,
        &row.worktree_path,
        &base,
        method,
        opts.strategy,
        opts.leave_conflicts,
    ) {
        Ok(phase1) => phase1,
        Err(e) => return Err(phase1_failed(ctx, row, op, &base, e, progress)),
    };
    if let Phase1::Conflicts { files, left } = phase1 {
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
            return Ok(output);
        }
        // `--abort` put back what git tracked; anything the merge wrote
        // beside that goes too (restore_worktree clears the journal).
        if let Some((journal, _)) = ctx.store.fact::<Journal>(row.id, JOURNAL)? {
            restore_worktree(ctx, row, &journal, progress)?;
        }
        ctx.store.clear_fact(row.id, JOURNAL)?;
        bail!(
            "merging {base} into `{name}` stopped on conflicts in {}; the worktree was restored as it was",
            files.join(", ")
        );
    }
    let new_tip = ctx.repo.branch_tip(&row.branch)?;

    // Phase 2: advance the base branch.
    journal(
        ctx,
        row,
        op,
        "phase2",
        &output.base_before,
        &branch_before.to_string(),
    )?;
    ship::failpoint(&format!("{op}-phase2"));
    progress(&format!(
        "Advancing {base} to {}",
        &new_tip.to_string()[..10]
    ));
    let checkout = ship::advance_base(&ctx.repo, &base, new_tip)?;
    output.checkout_updated = checkout.map(|p| p.display().to_string());
    output.base_after = ctx.repo.branch_tip(&base)?.to_string();
    output.merged = true;
    ctx.store.clear_fact(row.id, status::kind::CONFLICT)?;
    ctx.store
        .add_event(row.repo_id, name, "merged", &row.provider)?;

    // Cleanup.
    if !opts.keep {
        journal(
            ctx,
            row,
            op,
            "cleanup",
            &output.base_before,
            &branch_before.to_string(),
        )?;
        ship::failpoint(&format!("{op}-cleanup"));
        match super::delete::delete_session(
            ctx,
            name,
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
    } else {
        ctx.store.clear_fact(row.id, JOURNAL)?;
    }
    Ok(output)
}

/// Commits everything in the session's worktree, merges it, and deletes the
/// session. The agent keeps running until the merge succeeded.
pub fn ship_session(
    ctx: &mut Context,
    name: &str,
    message: Option<&str>,
    opts: MergeOptions,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<ShipOutput> {
    let row = ctx.session(name)?;
    if row.remote().is_some() {
        return super::remote::ship(ctx, &row, message, opts, progress);
    }
    if !row.worktree_path.exists() && ctx.store.fact::<Journal>(row.id, JOURNAL)?.is_none() {
        bail!(
            "the worktree of `{name}` ({}) is gone; run `owt doctor --fix`",
            row.worktree_path.display()
        );
    }
    if let Some(merge) = finish_if_merged(ctx, &row, progress)? {
        return Ok(ShipOutput {
            committed: None,
            merge,
            unreviewed: Vec::new(),
            checks: None,
        });
    }
    refuse_git_locks(ctx, &row)?;
    recover(ctx, &row, progress)?;
    let unreviewed = unreviewed_before_ship(ctx, &row, progress)?;
    let base_before = ctx.repo.branch_tip(&row.base_branch)?.to_string();
    let branch_before = ctx.repo.branch_tip(&row.branch)?.to_string();
    journal(ctx, &row, "ship", "commit", &base_before, &branch_before)?;
    ship::failpoint("ship-commit");
    let message = message
        .map(str::to_string)
        .unwrap_or_else(|| default_message(&row));
    progress(&format!(
        "Committing the work in {}",
        row.worktree_path.display()
    ));
    let never = super::owned::never_staged(ctx, &row);
    let committed = ship::commit_all(&row.worktree_path, &message, &never).with_context(|| {
        format!("shipping `{name}` stopped before anything was merged; the worktree and the agent are as they were")
    });
    let committed = match committed {
        Ok(c) => c,
        Err(e) => {
            ctx.store.clear_fact(row.id, JOURNAL)?;
            return Err(e);
        }
    };
    let merge = merge_row(
        ctx,
        &row,
        "ship",
        MergeOptions {
            keep: false,
            ..opts
        },
        progress,
    )?;
    Ok(ShipOutput {
        committed: committed.map(|oid| oid.to_string()),
        merge,
        unreviewed,
        checks: None,
    })
}

/// The changed files not marked reviewed since their last change: said as
/// a warning, or a refusal (nothing changed) under `[ship] require_review`.
fn unreviewed_before_ship(
    ctx: &Context,
    row: &SessionRow,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<Vec<String>> {
    if !row.worktree_path.is_dir() {
        return Ok(Vec::new());
    }
    let review = super::review::review_status(ctx, &row.name)?;
    if review.unreviewed.is_empty() {
        return Ok(review.unreviewed);
    }
    let n = review.unreviewed.len();
    let files = format!(
        "{n} file{} not reviewed since {} last change ({})",
        if n == 1 { "" } else { "s" },
        if n == 1 { "its" } else { "their" },
        review.unreviewed.join(", ")
    );
    if ctx.config.config.ship.require_review {
        bail!(
            "not shipping `{}`: {files}, and [ship] require_review is set; read them with `owt diff {}` and mark them with `owt review {} --mark`",
            row.name,
            row.name,
            row.name
        );
    }
    progress(&format!(
        "Warning: shipping {files}; `owt diff {}` shows them",
        row.name
    ));
    Ok(review.unreviewed)
}

/// Completes a merge or ship that was interrupted after the base branch
/// already took the work (phase 2 or cleanup): only the cleanup is left.
fn finish_if_merged(
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
    let (deleted, trash) = match super::delete::delete_session(ctx, &row.name, false, how, progress)
    {
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

pub(crate) fn default_message(row: &SessionRow) -> String {
    let first = row.task.lines().next().unwrap_or("").trim();
    let subject = if first.is_empty() {
        row.name.as_str()
    } else {
        first
    };
    let subject: String = subject.chars().take(72).collect();
    format!(
        "{subject}\n\nShipped by owt from session {} ({}).",
        row.name, row.provider
    )
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

/// `owt queue --ship`: ships the ready sessions in the guard's queue order
/// (committing dirty ones as ship does), and stops at the first that does
/// not ship — leaving it and the rest exactly as they were.
pub fn queue_ship(
    ctx: &mut Context,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<owt_protocol::QueueShipOutput> {
    let report = super::guard::queue_report(ctx)?;
    let mut order: Vec<String> = report.steps.iter().map(|s| s.session.clone()).collect();
    // Ready sessions whose work is not committed yet come last.
    for view in super::list::session_views_with(ctx, false)? {
        if view.lane == owt_protocol::Lane::ReadyToShip
            && view.ahead == 0
            && !order.contains(&view.name)
        {
            order.push(view.name);
        }
    }
    let mut out = owt_protocol::QueueShipOutput {
        shipped: Vec::new(),
        stopped_at: None,
        reason: None,
        remaining: Vec::new(),
    };
    for (i, name) in order.iter().enumerate() {
        progress(&format!("Shipping {name} ({}/{})", i + 1, order.len()));
        match super::checks::ship_checked(ctx, name, None, MergeOptions::default(), false, progress)
        {
            Ok(shipped) => out.shipped.push(shipped),
            Err(e) => {
                out.stopped_at = Some(name.clone());
                out.reason = Some(format!("{e:#}"));
                out.remaining = order[i + 1..].to_vec();
                break;
            }
        }
    }
    Ok(out)
}
