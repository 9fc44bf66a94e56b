//! `owt doctor`: find orphans (worktree folders with no session, sessions
//! whose worktree is gone, git worktrees whose folder is gone) and, with
//! `fix`, repair them — never deleting a folder that holds uncommitted work.

use owt_protocol::{DoctorFinding, DoctorReport, SessionKind};

use super::Context;
use crate::git;

pub fn doctor(ctx: &mut Context, fix: bool) -> anyhow::Result<DoctorReport> {
    let mut findings = Vec::new();
    let sessions = ctx.store.sessions(ctx.repo_row.id)?;

    // Merges and ships interrupted by a crash.
    for row in &sessions {
        let Some((journal, _)) = ctx
            .store
            .fact::<super::merge::Journal>(row.id, super::merge::JOURNAL)?
        else {
            continue;
        };
        let mut finding = DoctorFinding {
            kind: "interrupted-merge".into(),
            detail: format!(
                "the {} of `{}` stopped at step {}",
                journal.op, row.name, journal.step
            ),
            path: Some(row.worktree_path.to_string_lossy().into_owned()),
            session: Some(row.name.clone()),
            fixed: false,
            skipped_reason: None,
        };
        if fix {
            if let Some(what) = super::merge::repair_interrupted(ctx, row)? {
                finding.detail = format!("{}; {what}", finding.detail);
                finding.fixed = true;
            }
        }
        findings.push(finding);
    }
    let sessions = ctx.store.sessions(ctx.repo_row.id)?;

    // Sessions whose worktree folder is gone.
    for row in &sessions {
        if row.kind != SessionKind::Worktree || row.worktree_path.exists() {
            continue;
        }
        let mut finding = DoctorFinding {
            kind: "missing-worktree".into(),
            detail: format!(
                "session `{}` points at {}, which no longer exists",
                row.name,
                row.worktree_path.display()
            ),
            path: Some(row.worktree_path.to_string_lossy().into_owned()),
            session: Some(row.name.clone()),
            fixed: false,
            skipped_reason: None,
        };
        if fix {
            crate::session::stop(&ctx.home, row)?;
            if ctx.repo.worktree_admin_exists(&row.name) {
                let _ = ctx.repo.prune_worktree(&row.name);
            }
            ctx.store.remove_session(row, "doctor")?;
            finding.fixed = true;
        }
        findings.push(finding);
    }

    // Branch sessions whose branch is gone (a healthy one is never an orphan).
    for row in ctx.store.sessions(ctx.repo_row.id)? {
        if row.kind != SessionKind::Branch || ctx.repo.branch_exists(&row.branch) {
            continue;
        }
        let mut finding = DoctorFinding {
            kind: "missing-branch".into(),
            detail: format!(
                "branch session `{}` points at branch {}, which no longer exists",
                row.name, row.branch
            ),
            path: None,
            session: Some(row.name.clone()),
            fixed: false,
            skipped_reason: None,
        };
        if fix {
            crate::session::stop(&ctx.home, &row)?;
            ctx.store.remove_session(&row, "doctor")?;
            finding.fixed = true;
        }
        findings.push(finding);
    }

    // Git worktrees whose folder is gone.
    for wt in ctx.repo.worktrees()? {
        if !wt.prunable {
            continue;
        }
        let mut finding = DoctorFinding {
            kind: "prunable-git-worktree".into(),
            detail: format!(
                "git still lists worktree `{}` at {}, which is gone",
                wt.name,
                wt.path.display()
            ),
            path: Some(wt.path.to_string_lossy().into_owned()),
            session: None,
            fixed: false,
            skipped_reason: None,
        };
        if fix && ctx.repo.worktree_admin_exists(&wt.name) {
            ctx.repo.prune_worktree(&wt.name)?;
            finding.fixed = true;
        }
        findings.push(finding);
    }

    // Folders under base_directory that no session owns.
    let base_dir = ctx.config.config.base_directory(ctx.repo.main_root());
    let owned: Vec<_> = ctx
        .store
        .sessions(ctx.repo_row.id)?
        .into_iter()
        .map(|s| s.worktree_path)
        .collect();
    let git_worktrees = ctx.repo.worktrees()?;
    if let Ok(entries) = std::fs::read_dir(&base_dir) {
        for entry in entries.flatten() {
            let path = entry.path();
            if !path.is_dir() || owned.iter().any(|o| git::same_path(o, &path)) {
                continue;
            }
            let registered = git_worktrees
                .iter()
                .find(|wt| git::same_path(&wt.path, &path));
            let mut finding = DoctorFinding {
                kind: "orphan-worktree-folder".into(),
                detail: format!("{} belongs to no session", path.display()),
                path: Some(path.to_string_lossy().into_owned()),
                session: None,
                fixed: false,
                skipped_reason: None,
            };
            if fix {
                match registered {
                    None => {
                        finding.skipped_reason =
                            Some("not a worktree of this repository; owt does not delete folders it did not create".into())
                    }
                    Some(_) => match git::dirt(&path) {
                        Ok(dirt) if dirt.is_clean() => {
                            ctx.repo.remove_worktree(&path)?;
                            finding.fixed = true;
                        }
                        Ok(dirt) => {
                            finding.skipped_reason = Some(format!(
                                "holds uncommitted work ({}); commit or remove it yourself",
                                dirt.summary()
                            ))
                        }
                        Err(e) => finding.skipped_reason = Some(format!("cannot read its status: {e}")),
                    },
                }
            }
            findings.push(finding);
        }
    }
    Ok(DoctorReport { findings })
}
