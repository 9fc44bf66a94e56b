//! `owt ship`: everything in the worktree committed, then merged, behind
//! the checks (`ship_checked`); and `owt queue --ship`, the ready sessions
//! shipped in the guard's order.

use anyhow::{bail, Context as _};
use owt_protocol::ShipOutput;

use super::{
    finish_if_merged, journal, merge_row, recover, refuse_git_locks, Journal, MergeOptions, JOURNAL,
};
use crate::feedback::checks::{self, Gate, Trigger};
use crate::ops::Context;
use crate::ship;
use crate::store::SessionRow;

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
        .unwrap_or_else(|| crate::ops::ship_message::default_message(&row));
    progress(&format!(
        "Committing the work in {}",
        row.worktree_path.display()
    ));
    let never = crate::ops::owned::never_staged(ctx, &row);
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
    )
    .map_err(|e| match committed {
        Some(oid) => stopped_after_commit(&row, oid, e),
        None => e,
    })?;
    Ok(ShipOutput {
        committed: committed.map(|oid| oid.to_string()),
        merge,
        unreviewed,
        checks: None,
    })
}

/// A ship that stopped after it committed the worktree (as `commit`): the
/// merge's error, saying truly what changed — the commit on the branch,
/// nothing merged.
fn stopped_after_commit(
    row: &SessionRow,
    commit: git2::Oid,
    merge: anyhow::Error,
) -> anyhow::Error {
    let committed = format!(
        "ship committed the work in its worktree first, as {} on {} (now one commit further)",
        &commit.to_string()[..10],
        row.branch
    );
    let said = format!("{merge:#}");
    if said.contains("nothing was changed") {
        anyhow::anyhow!(
            "{}",
            said.replacen(
                "nothing was changed",
                &format!("nothing was merged; {committed}"),
                1
            )
        )
    } else {
        anyhow::anyhow!("{said}\n{committed}; nothing was merged")
    }
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
    let mut review = crate::ops::review::review_status(ctx, &row.name)?;
    // A file just as the base has it now came from the base (a merge of
    // it in progress or done): not the agent's work to review.
    review.unreviewed.retain(|path| !as_in_base(ctx, row, path));
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

/// Whether `path` in `row`'s worktree is exactly as its base branch's tip
/// has it (both without it counts).
fn as_in_base(ctx: &Context, row: &SessionRow, path: &str) -> bool {
    let repo = ctx.repo.git2();
    let in_base = ctx
        .repo
        .branch_tip(&row.base_branch)
        .ok()
        .and_then(|tip| repo.find_commit(tip).ok())
        .and_then(|c| c.tree().ok())
        .map(|tree| tree.get_path(std::path::Path::new(path)).map(|e| e.id()));
    let Some(in_base) = in_base else {
        return false;
    };
    let file = row.worktree_path.join(path);
    match std::fs::symlink_metadata(&file) {
        Ok(meta) if meta.is_file() => {
            git2::Oid::hash_file(git2::ObjectType::Blob, &file).ok() == in_base.ok()
        }
        Ok(_) => false,
        Err(_) => in_base.is_err(),
    }
}

/// `owt ship` behind the checks: the gate (which may run them), then the
/// ship. `no_checks` skips the gate, and the output says so. `owt ship`,
/// `owt queue --ship` and the editors' ship command refuse work whose
/// `[checks]` fail, unless told `--no-checks`.
pub fn ship_checked(
    ctx: &mut Context,
    name: &str,
    message: Option<&str>,
    opts: MergeOptions,
    no_checks: bool,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<ShipOutput> {
    let row = ctx.session(name)?;
    crate::ops::allowed::check(ctx, &row, owt_protocol::SessionAction::Ship, opts.now)?;
    let gate = if row.worktree_path.exists() {
        checks::gate(
            &ctx.store,
            &ctx.home,
            &row,
            &ctx.config.config.checks,
            Trigger::Ship,
            no_checks,
            progress,
        )?
    } else {
        // An interrupted ship being completed: nothing left to check.
        Gate::NotConfigured
    };
    if gate == Gate::Skipped {
        progress("Checks skipped (--no-checks).");
    }
    let mut out = ship_session(ctx, name, message, opts, progress)?;
    out.checks = match gate {
        Gate::NotConfigured => None,
        Gate::Skipped => Some("skipped".into()),
        Gate::NotRun => Some("not-run".into()),
        Gate::Passed(_) => Some("passed".into()),
    };
    Ok(out)
}

/// `owt queue --ship`: ships the ready sessions in the guard's queue order
/// (committing dirty ones as ship does), and stops at the first that does
/// not ship — leaving it and the rest exactly as they were.
pub fn queue_ship(
    ctx: &mut Context,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<owt_protocol::QueueShipOutput> {
    // The queue `owt queue` shows: the READY TO SHIP sessions, those whose
    // work is not committed yet last.
    let report = crate::ops::guard::queue_report(ctx)?;
    let order: Vec<String> = report.steps.iter().map(|s| s.session.clone()).collect();
    let mut out = owt_protocol::QueueShipOutput {
        shipped: Vec::new(),
        stopped_at: None,
        reason: None,
        remaining: Vec::new(),
    };
    for (i, name) in order.iter().enumerate() {
        progress(&format!("Shipping {name} ({}/{})", i + 1, order.len()));
        match ship_checked(ctx, name, None, MergeOptions::default(), false, progress) {
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
