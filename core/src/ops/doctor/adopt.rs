//! Live session hosts whose session the store does not know (a lost or
//! replaced store), re-adopted when their checkout is this repository's.

use std::path::{Path, PathBuf};

use owt_protocol::{DoctorFinding, SessionKind};

use super::finding;
use crate::git;
use crate::ops::metadata::{read_metadata, WorktreeMetadata};
use crate::ops::Context;
use crate::store::SessionRow;

/// The host specs of live session hosts under `home` (`run/*.sock` that
/// accept a connection, with `logs/<id>.spec.json`).
pub(super) fn live_hosts(home: &Path) -> Vec<crate::session::HostSpec> {
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
pub(super) fn candidate_homes(ctx: &Context, extra: Option<&Path>) -> Vec<PathBuf> {
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
pub(super) fn adopt_live_hosts(ctx: &mut Context, fix: bool) -> anyhow::Result<Vec<DoctorFinding>> {
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
pub(super) fn session_from(
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
