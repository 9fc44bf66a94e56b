//! `owt doctor`: find what is out of order — git lock files left by a
//! killed git, interrupted merges, sessions whose worktree or branch is
//! gone, git worktrees whose folder is gone, worktree folders the store
//! does not know, live sessions the store lost — and, with `fix`, repair
//! it. Also lists the trash and, with `fix`, empties entries older than
//! [`TRASH_DAYS`].
//!
//! Invariant: doctor never removes a folder that is not a registered
//! worktree of this repository, nor one that holds uncommitted work,
//! ignored files that are not disposable, a running process, a live
//! session host, git's worktree lock, or owt's metadata of a session
//! (those are re-adopted, or left for the state folder they belong to).

use std::path::{Path, PathBuf};

use owt_protocol::{DoctorFinding, DoctorReport, SessionKind, TrashEntry};
use serde::{Deserialize, Serialize};

use super::Context;
use crate::git;
use crate::store::SessionRow;

/// `owt doctor --fix` empties trash entries older than this.
pub const TRASH_DAYS: u32 = 30;

/// Name of owt's metadata file in a worktree's git admin folder.
const METADATA_FILE: &str = "owt.json";

/// What owt knows of a session, kept beside git's own metadata of its
/// worktree (`<common dir>/worktrees/<name>/owt.json`) so that a session
/// can be re-adopted when the store is lost, and so that an owt using
/// another state folder knows the worktree is not an orphan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorktreeMetadata {
    pub session_id: i64,
    pub name: String,
    pub short_id: String,
    pub task: String,
    pub branch: String,
    pub base_branch: String,
    pub provider: String,
    pub created_at: i64,
    /// The state folder (`OWT_HOME`) whose store holds the session.
    pub owt_home: PathBuf,
}

/// Writes the metadata of a new worktree session.
pub fn write_metadata(ctx: &Context, row: &SessionRow) -> anyhow::Result<()> {
    let Some(admin) = ctx.repo.admin_dir_of(&row.worktree_path) else {
        anyhow::bail!(
            "{} is not a worktree git knows",
            row.worktree_path.display()
        );
    };
    let meta = WorktreeMetadata {
        session_id: row.id,
        name: row.name.clone(),
        short_id: row.short_id.clone(),
        task: row.task.clone(),
        branch: row.branch.clone(),
        base_branch: row.base_branch.clone(),
        provider: row.provider.clone(),
        created_at: row.created_at,
        owt_home: ctx.home.clone(),
    };
    std::fs::write(admin.join(METADATA_FILE), serde_json::to_vec_pretty(&meta)?)?;
    Ok(())
}

/// `40s`, `12m`, `3h`, `2d`.
fn age_text(ms: i64) -> String {
    let secs = (ms / 1000).max(0);
    match secs {
        0..=59 => format!("{secs}s"),
        60..=3599 => format!("{}m", secs / 60),
        3600..=86_399 => format!("{}h", secs / 3600),
        _ => format!("{}d", secs / 86_400),
    }
}

fn read_metadata(admin: &Path) -> Option<WorktreeMetadata> {
    serde_json::from_slice(&std::fs::read(admin.join(METADATA_FILE)).ok()?).ok()
}

fn finding(
    kind: &str,
    detail: String,
    path: Option<&Path>,
    session: Option<&str>,
) -> DoctorFinding {
    DoctorFinding {
        kind: kind.into(),
        detail,
        path: path.map(|p| p.to_string_lossy().into_owned()),
        session: session.map(str::to_string),
        fixed: false,
        skipped_reason: None,
    }
}

pub fn doctor(ctx: &mut Context, fix: bool) -> anyhow::Result<DoctorReport> {
    let mut findings = Vec::new();

    if let Some(notice) = super::trust::notice(ctx) {
        let mut f = finding("untrusted-config", notice, None, None);
        f.skipped_reason = Some(if super::trust::needs_trust(ctx) {
            "trusting a repository is yours to decide: `owt trust --show`, then `owt trust`".into()
        } else {
            "a repository may not redefine a built-in agent; remove those tables from its file"
                .into()
        });
        findings.push(f);
    }

    // Lock files left by a killed git (first: the repairs below need git).
    let oldest_git = crate::procs::oldest_git_start_ms(&super::merge::repo_dirs(ctx));
    for lock in ctx.repo.lock_files() {
        let age = age_text(crate::store::now_ms() - lock.modified_ms);
        if super::merge::is_stale_lock(&lock, oldest_git) {
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

    // Merges and ships interrupted by a crash.
    for row in ctx.store.sessions(ctx.repo_row.id)? {
        let Some((journal, _)) = ctx
            .store
            .fact::<super::merge::Journal>(row.id, super::merge::JOURNAL)?
        else {
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
            match super::merge::repair_interrupted(ctx, &row) {
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

    // Live sessions of this repository the store does not know (a lost or
    // replaced store): re-adopted from their hosts.
    findings.extend(adopt_live_hosts(ctx, fix)?);

    // Sessions whose worktree folder is gone.
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

    // Branch sessions whose branch is gone (a healthy one is never an orphan).
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

    // Git worktrees whose folder is gone.
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

    // Folders under base_directory that no session owns.
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

    // The trash.
    let mut trash = Vec::new();
    for entry in super::trash::entries(&ctx.home) {
        let age_days = (crate::store::now_ms() - entry.created_at) / 86_400_000;
        if fix && age_days >= i64::from(TRASH_DAYS) {
            let mut f = finding(
                "old-trash",
                format!(
                    "{} ({}) is {age_days} days old",
                    entry.path.display(),
                    super::trash::human_bytes(entry.bytes)
                ),
                Some(&entry.path),
                entry.about.as_ref().map(|a| a.session.as_str()),
            );
            match super::trash::remove_tree(&entry.path) {
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
    Ok(DoctorReport { findings, trash })
}

/// The host specs of live session hosts under `home` (`run/*.sock` that
/// accept a connection, with `logs/<id>.spec.json`).
fn live_hosts(home: &Path) -> Vec<crate::session::HostSpec> {
    let Ok(entries) = std::fs::read_dir(home.join("run")) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let Some(short_id) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".sock"))
        else {
            continue;
        };
        if std::os::unix::net::UnixStream::connect(&path).is_err() {
            continue;
        }
        let spec = std::fs::read(home.join("logs").join(format!("{short_id}.spec.json")))
            .ok()
            .and_then(|b| serde_json::from_slice::<crate::session::HostSpec>(&b).ok());
        if let Some(spec) = spec {
            out.push(spec);
        }
    }
    out
}

/// State folders a session host of this user may live under: ours, the
/// defaults (`$XDG_STATE_HOME/owt`, `~/.local/state/owt`) and `extra`.
fn candidate_homes(ctx: &Context, extra: Option<&Path>) -> Vec<PathBuf> {
    let mut homes = vec![ctx.home.clone()];
    if let Some(state) = std::env::var_os("XDG_STATE_HOME").filter(|v| !v.is_empty()) {
        homes.push(PathBuf::from(state).join("owt"));
    }
    if let Some(home) = std::env::var_os("HOME").filter(|v| !v.is_empty()) {
        homes.push(PathBuf::from(home).join(".local/state/owt"));
    }
    homes.extend(extra.map(Path::to_path_buf));
    let mut unique: Vec<PathBuf> = Vec::new();
    for home in homes {
        if !unique.iter().any(|u| git::same_path(u, &home)) {
            unique.push(home);
        }
    }
    unique
}

/// Re-adopts the live hosts under our state folder whose session the store
/// does not know and whose checkout belongs to this repository.
fn adopt_live_hosts(ctx: &mut Context, fix: bool) -> anyhow::Result<Vec<DoctorFinding>> {
    let mut findings = Vec::new();
    for spec in live_hosts(&ctx.home) {
        if ctx.store.session_by_short_id(&spec.short_id)?.is_some() {
            continue;
        }
        let in_repo = git::Repo::discover(&spec.cwd)
            .is_ok_and(|r| git::same_path(r.common_dir(), ctx.repo.common_dir()));
        if !in_repo {
            continue;
        }
        let admin = ctx.repo.admin_dir_of(&spec.cwd);
        let meta = admin.as_deref().and_then(read_metadata);
        let row = session_from(ctx, &spec.cwd, meta.as_ref(), Some(&spec));
        let mut f = finding(
            "lost-session",
            format!(
                "session `{}` runs (its host serves {}) in {}, but the store does not know it",
                row.name,
                crate::session::socket_path(&ctx.home, &spec.short_id).display(),
                spec.cwd.display()
            ),
            Some(&spec.cwd),
            Some(&row.name),
        );
        if fix {
            match ctx.store.adopt_session(&row) {
                Ok(adopted) => {
                    f.detail = format!("{}; re-adopted as `{}`", f.detail, adopted.name);
                    f.fixed = true;
                }
                Err(e) => f.skipped_reason = Some(format!("cannot re-adopt it: {e}")),
            }
        }
        findings.push(f);
    }
    Ok(findings)
}

/// A session row for the checkout at `path`, from owt's metadata of its
/// worktree, else its live host's spec, else git.
fn session_from(
    ctx: &Context,
    path: &Path,
    meta: Option<&WorktreeMetadata>,
    spec: Option<&crate::session::HostSpec>,
) -> SessionRow {
    let head_branch = git2::Repository::open(path)
        .ok()
        .and_then(|r| r.head().ok()?.shorthand().map(str::to_string));
    let is_main = git::same_path(path, ctx.repo.main_root());
    SessionRow {
        id: meta
            .map(|m| m.session_id)
            .or(spec.map(|s| s.session_id))
            .unwrap_or(0),
        repo_id: ctx.repo_row.id,
        name: meta
            .map(|m| m.name.clone())
            .or(spec.map(|s| s.session_name.clone()))
            .unwrap_or_else(|| {
                crate::names::slugify(&path.file_name().unwrap_or_default().to_string_lossy())
            }),
        short_id: meta
            .map(|m| m.short_id.clone())
            .or(spec.map(|s| s.short_id.clone()))
            .unwrap_or_default(),
        task: meta.map(|m| m.task.clone()).unwrap_or_else(|| {
            "(re-adopted by owt doctor; the task was lost with the store)".into()
        }),
        branch: meta
            .map(|m| m.branch.clone())
            .or(head_branch)
            .unwrap_or_default(),
        base_branch: meta
            .map(|m| m.base_branch.clone())
            .or_else(|| ctx.repo.default_base().ok())
            .unwrap_or_else(|| "main".into()),
        worktree_path: path.to_path_buf(),
        provider: meta
            .map(|m| m.provider.clone())
            .or(spec.map(|s| s.provider.clone()))
            .unwrap_or_else(|| "unknown".into()),
        kind: if is_main {
            SessionKind::Branch
        } else {
            SessionKind::Worktree
        },
        created_at: meta
            .map(|m| m.created_at)
            .unwrap_or_else(crate::store::now_ms),
    }
}

/// A folder under `base_directory` that no session of the store owns:
/// re-adopted when it is a session of ours the store lost, left alone
/// when anything in or about it is alive or valuable, else removed.
fn orphan_folder(ctx: &mut Context, path: &Path, fix: bool) -> anyhow::Result<DoctorFinding> {
    let mut f = finding(
        "orphan-worktree-folder",
        format!("{} belongs to no session", path.display()),
        Some(path),
        None,
    );
    let Some(admin) = ctx.repo.admin_dir_of(path) else {
        f.skipped_reason = Some(
            "not a worktree of this repository; owt does not delete folders it did not create"
                .into(),
        );
        return Ok(f);
    };
    let meta = read_metadata(&admin);
    if let Some(meta) = &meta {
        if !git::same_path(&meta.owt_home, &ctx.home) {
            f.kind = "foreign-session".into();
            f.session = Some(meta.name.clone());
            f.detail = format!(
                "{} is the worktree of session `{}` of another owt state folder, {}",
                path.display(),
                meta.name,
                meta.owt_home.display()
            );
            f.skipped_reason = Some(format!(
                "it belongs to that state folder; run `OWT_HOME={} owt doctor` to check it",
                meta.owt_home.display()
            ));
            return Ok(f);
        }
        // Ours, and the store lost it: re-adopt instead of deleting.
        let spec = live_hosts(&ctx.home)
            .into_iter()
            .find(|s| s.short_id == meta.short_id);
        let row = session_from(ctx, path, Some(meta), spec.as_ref());
        f.kind = "lost-session".into();
        f.session = Some(row.name.clone());
        f.detail = format!(
            "{} is the worktree of session `{}`, which the store lost",
            path.display(),
            row.name
        );
        if fix {
            match ctx.store.adopt_session(&row) {
                Ok(adopted) => {
                    f.detail = format!("{}; re-adopted as `{}`", f.detail, adopted.name);
                    f.fixed = true;
                }
                Err(e) => f.skipped_reason = Some(format!("cannot re-adopt it: {e}")),
            }
        }
        return Ok(f);
    }
    // No metadata (made by an older owt, or by hand): remove only a
    // folder nothing needs any more.
    if let Some(reason) = keep_reason(ctx, path, &admin) {
        f.skipped_reason = Some(reason);
        return Ok(f);
    }
    if fix {
        ctx.repo.remove_worktree(path)?;
        f.fixed = true;
    }
    Ok(f)
}

/// Why the worktree folder at `path` must not be removed, if anything.
fn keep_reason(ctx: &Context, path: &Path, admin: &Path) -> Option<String> {
    let inside = crate::procs::with_cwd_inside(path);
    if !inside.is_empty() {
        return Some(format!(
            "{} {} running inside it",
            crate::procs::describe(&inside),
            if inside.len() == 1 { "is" } else { "are" }
        ));
    }
    for home in candidate_homes(ctx, None) {
        if let Some(spec) = live_hosts(&home)
            .into_iter()
            .find(|s| git::same_path(&s.cwd, path))
        {
            return Some(format!(
                "the session host of `{}` under {} serves it",
                spec.session_name,
                home.display()
            ));
        }
    }
    if let Ok(reason) = std::fs::read_to_string(admin.join("locked")) {
        return Some(format!(
            "git's worktree lock is set{}",
            if reason.trim().is_empty() {
                String::new()
            } else {
                format!(": {}", crate::printable::line(reason.trim()))
            }
        ));
    }
    match git::dirt(path) {
        Ok(dirt) if !dirt.is_clean() => {
            return Some(format!(
                "holds uncommitted work ({}); commit or remove it yourself",
                dirt.summary()
            ))
        }
        Ok(_) => {}
        Err(e) => return Some(format!("cannot read its status: {e}")),
    }
    match git::ignored(path) {
        Ok(ignored) => {
            let valuable: Vec<&String> = ignored
                .iter()
                .filter(|p| !ctx.config.config.is_disposable(p))
                .collect();
            if !valuable.is_empty() {
                return Some(format!(
                    "holds ignored files that are not [worktree] disposable ({}); move them away or remove the folder yourself",
                    valuable
                        .iter()
                        .take(5)
                        .map(|p| p.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
        }
        Err(e) => return Some(format!("cannot list its ignored files: {e}")),
    }
    None
}
