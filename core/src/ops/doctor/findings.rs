//! Each kind of finding of `owt doctor`, and its repair with `fix`.

use std::path::PathBuf;

use owt_protocol::{DoctorFinding, DoctorReport, SessionKind, TrashEntry};

use super::adopt::adopt_live_hosts;
use super::orphans::orphan_folder;
use super::starters::starter_gone;
use super::{age_text, finding, TRASH_DAYS};
use crate::git;
use crate::ops::{facts, merge, Context};

/// `owt doctor`: every kind of finding in turn (git's stale lock files
/// first: the repairs after them need git); with `fix`, each repaired
/// where that is safe.
pub fn doctor(ctx: &mut Context, fix: bool) -> anyhow::Result<DoctorReport> {
    let mut findings = Vec::new();
    findings.extend(untrusted_config(ctx));
    findings.extend(git_locks(ctx, fix));
    findings.extend(interrupted_merges(ctx, fix)?);
    // Live sessions of this repository the store does not know (a lost or
    // replaced store): re-adopted from their hosts.
    findings.extend(adopt_live_hosts(ctx, fix)?);
    findings.extend(starter_gone(ctx, fix)?);
    findings.extend(missing_worktrees(ctx, fix)?);
    findings.extend(missing_branches(ctx, fix)?);
    findings.extend(prunable_git_worktrees(ctx, fix)?);
    findings.extend(orphan_folders(ctx, fix)?);
    let trash = trash(ctx, fix, &mut findings);
    Ok(DoctorReport { findings, trash })
}

/// Keys of the repository's configuration that were withheld (it is not
/// trusted, or it redefines a built-in agent): never fixed here.
fn untrusted_config(ctx: &Context) -> Option<DoctorFinding> {
    let notice = crate::ops::trust::notice(ctx)?;
    let mut f = finding("untrusted-config", notice, None, None);
    f.skipped_reason = Some(if crate::ops::trust::needs_trust(ctx) {
        "trusting a repository is yours to decide: `owt trust --show`, then `owt trust`".into()
    } else {
        "a repository may not redefine a built-in agent; remove those tables from its file".into()
    });
    Some(f)
}

/// Lock files left by a killed git (removed with `fix`), and those a
/// running git may hold (left).
fn git_locks(ctx: &Context, fix: bool) -> Vec<DoctorFinding> {
    let mut findings = Vec::new();
    let oldest_git = crate::procs::oldest_git_start_ms(&merge::repo_dirs(ctx));
    for lock in ctx.repo.lock_files() {
        let age = age_text(crate::store::now_ms() - lock.modified_ms);
        if merge::is_stale_lock(&lock, oldest_git) {
            let mut f = finding(
                "stale-git-lock",
                format!(
                    "{} was left by a git process that no longer runs ({age} old, older than every running git); git commands that need it fail until it is removed",
                    lock.path.display()
                ),
                Some(&lock.path),
                None,
            );
            if fix {
                match std::fs::remove_file(&lock.path) {
                    Ok(()) => {
                        tracing::warn!(path = %lock.path.display(), "removed a stale git lock");
                        f.fixed = true;
                    }
                    Err(e) => f.skipped_reason = Some(format!("cannot remove it: {e}")),
                }
            }
            findings.push(f);
        } else {
            let mut f = finding(
                "git-lock",
                format!(
                    "{} exists ({age} old) and a git process that may hold it is running",
                    lock.path.display()
                ),
                Some(&lock.path),
                None,
            );
            f.skipped_reason =
                Some("a running git may be using it; run doctor again when it is done".into());
            findings.push(f);
        }
    }
    findings
}

/// Merges and ships interrupted by a crash: completed or rolled back with
/// `fix`.
fn interrupted_merges(ctx: &mut Context, fix: bool) -> anyhow::Result<Vec<DoctorFinding>> {
    let mut findings = Vec::new();
    for row in ctx.store.sessions(ctx.repo_row.id)? {
        let Some((journal, _)) = ctx.store.fact::<facts::Journal>(row.id, facts::JOURNAL)? else {
            continue;
        };
        let mut f = finding(
            "interrupted-merge",
            format!(
                "the {} of `{}` stopped at step {}",
                journal.op, row.name, journal.step
            ),
            Some(&row.worktree_path),
            Some(&row.name),
        );
        if fix {
            match merge::repair_interrupted(ctx, &row) {
                Ok(Some(what)) => {
                    f.detail = format!("{}; {what}", f.detail);
                    f.fixed = true;
                }
                Ok(None) => {}
                Err(e) => f.skipped_reason = Some(format!("{e:#}")),
            }
        }
        findings.push(f);
    }
    Ok(findings)
}

/// Sessions whose worktree folder is gone: stopped and forgotten with
/// `fix` (git's record of the worktree pruned).
fn missing_worktrees(ctx: &mut Context, fix: bool) -> anyhow::Result<Vec<DoctorFinding>> {
    let mut findings = Vec::new();
    for row in ctx.store.sessions(ctx.repo_row.id)? {
        if row.kind != SessionKind::Worktree || row.worktree_path.exists() {
            continue;
        }
        let mut f = finding(
            "missing-worktree",
            format!(
                "session `{}` points at {}, which no longer exists",
                row.name,
                row.worktree_path.display()
            ),
            Some(&row.worktree_path),
            Some(&row.name),
        );
        if fix {
            crate::session::stop(&ctx.home, &row)?;
            if ctx.repo.worktree_admin_exists(&row.name) {
                let _ = ctx.repo.prune_worktree(&row.name);
            }
            ctx.store.remove_session(&row, "doctor")?;
            f.fixed = true;
        }
        findings.push(f);
    }
    Ok(findings)
}

/// Branch sessions whose branch is gone (a healthy one is never an
/// orphan): stopped and forgotten with `fix`.
fn missing_branches(ctx: &mut Context, fix: bool) -> anyhow::Result<Vec<DoctorFinding>> {
    let mut findings = Vec::new();
    for row in ctx.store.sessions(ctx.repo_row.id)? {
        if row.kind != SessionKind::Branch || ctx.repo.branch_exists(&row.branch) {
            continue;
        }
        let mut f = finding(
            "missing-branch",
            format!(
                "branch session `{}` points at branch {}, which no longer exists",
                row.name, row.branch
            ),
            None,
            Some(&row.name),
        );
        if fix {
            crate::session::stop(&ctx.home, &row)?;
            ctx.store.remove_session(&row, "doctor")?;
            f.fixed = true;
        }
        findings.push(f);
    }
    Ok(findings)
}

/// Git worktrees whose folder is gone: pruned with `fix`.
fn prunable_git_worktrees(ctx: &Context, fix: bool) -> anyhow::Result<Vec<DoctorFinding>> {
    let mut findings = Vec::new();
    for wt in ctx.repo.worktrees()? {
        if !wt.prunable {
            continue;
        }
        let mut f = finding(
            "prunable-git-worktree",
            format!(
                "git still lists worktree `{}` at {}, which is gone",
                wt.name,
                wt.path.display()
            ),
            Some(&wt.path),
            None,
        );
        if fix && ctx.repo.worktree_admin_exists(&wt.name) {
            match ctx.repo.prune_worktree(&wt.name) {
                Ok(()) => f.fixed = true,
                Err(e) => f.skipped_reason = Some(format!("git refuses to prune it: {e}")),
            }
        }
        findings.push(f);
    }
    Ok(findings)
}

/// Folders under `base_directory` that no session owns (see
/// [`orphan_folder`]).
fn orphan_folders(ctx: &mut Context, fix: bool) -> anyhow::Result<Vec<DoctorFinding>> {
    let mut findings = Vec::new();
    let base_dir = ctx.config.config.base_directory(ctx.repo.main_root());
    if let Ok(entries) = std::fs::read_dir(&base_dir) {
        let mut folders: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect();
        folders.sort();
        for path in folders {
            let owned = ctx
                .store
                .sessions(ctx.repo_row.id)?
                .iter()
                .any(|s| git::same_path(&s.worktree_path, &path));
            if !owned {
                findings.push(orphan_folder(ctx, &path, fix)?);
            }
        }
    }
    Ok(findings)
}

/// The trash's entries; with `fix`, those older than [`TRASH_DAYS`] are
/// emptied instead (each a finding).
fn trash(ctx: &Context, fix: bool, findings: &mut Vec<DoctorFinding>) -> Vec<TrashEntry> {
    let mut trash = Vec::new();
    for entry in crate::ops::trash::entries(&ctx.home) {
        let age_days = (crate::store::now_ms() - entry.created_at) / 86_400_000;
        if fix && age_days >= i64::from(TRASH_DAYS) {
            let mut f = finding(
                "old-trash",
                format!(
                    "{} ({}) is {age_days} days old",
                    entry.path.display(),
                    crate::ops::trash::human_bytes(entry.bytes)
                ),
                Some(&entry.path),
                entry.about.as_ref().map(|a| a.session.as_str()),
            );
            match crate::ops::trash::remove_tree(&entry.path) {
                Ok(()) => f.fixed = true,
                Err(e) => f.skipped_reason = Some(format!("cannot remove it: {e}")),
            }
            findings.push(f);
            continue;
        }
        trash.push(TrashEntry {
            path: entry.path.display().to_string(),
            session: entry.about.as_ref().map(|a| a.session.clone()),
            repository: entry.about.as_ref().map(|a| a.repository.clone()),
            worktree: entry.about.as_ref().map(|a| a.worktree.clone()),
            created_at: entry.created_at,
            bytes: entry.bytes,
            files: entry.about.map(|a| a.files).unwrap_or_default(),
        });
    }
    trash
}
