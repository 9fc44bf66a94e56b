//! Folders under `base_directory` that no session of this store owns:
//! removed with `fix` only when nothing in them could be lost.

use std::path::Path;

use owt_protocol::DoctorFinding;

use super::adopt::{candidate_homes, live_hosts, session_from};
use super::finding;
use crate::git;
use crate::ops::metadata::read_metadata;
use crate::ops::Context;

/// A folder under `base_directory` that no session of the store owns:
/// re-adopted when it is a session of ours the store lost, left alone
/// when anything in or about it is alive or valuable, else removed.
pub(super) fn orphan_folder(
    ctx: &mut Context,
    path: &Path,
    fix: bool,
) -> anyhow::Result<DoctorFinding> {
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
