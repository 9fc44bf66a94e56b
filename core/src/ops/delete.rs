//! `owt delete`: stop the agent, remove the worktree, delete the branch —
//! refusing to drop uncommitted work without `force`, keeping a backup ref
//! of unmerged commits, and moving the files git does not keep (ignored
//! files; with `force`, the uncommitted ones too) to the trash
//! ([`super::trash`]) instead of deleting them. Only owt's own files
//! ([`super::owned`]) and `[worktree] disposable` caches go without a copy.
//! A worktree folder that is a symbolic link is refused: owt never follows
//! a link out of a worktree.

use std::path::Path;

use anyhow::{bail, Context as _};
use owt_protocol::{DeleteOutput, SessionKind};

use super::facts::{BranchFact, BRANCH_FACT};
use super::{owned, trash, Context};
use crate::store::SessionRow;
use crate::{git, session};

/// `owt delete`: deletes the session `name` once the board allows it
/// ([`super::allowed`]; `force` also stops an agent at work).
pub fn delete_checked(
    ctx: &mut Context,
    name: &str,
    force: bool,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<DeleteOutput> {
    let row = ctx.session(name)?;
    super::allowed::check(ctx, &row, owt_protocol::SessionAction::Delete, force)?;
    delete_session(ctx, name, force, "deleted", progress)
}

/// What the files moved to the trash (`trashed`) are: uncommitted work
/// (those among `discarded`, with `--force`), files git does not keep
/// (ignored), or some of each; e.g. `2 files (1 of uncommitted work, 1 git
/// does not keep)`.
pub fn trashed_kinds(trashed: &[String], discarded: &[String]) -> String {
    let files = |n: usize| format!("{n} file{}", if n == 1 { "" } else { "s" });
    let uncommitted = trashed.iter().filter(|p| discarded.contains(p)).count();
    match (uncommitted, trashed.len() - uncommitted) {
        (0, n) => format!("{} git does not keep", files(n)),
        (n, 0) => format!("{} of uncommitted work", files(n)),
        (u, i) => format!(
            "{} ({u} of uncommitted work, {i} git does not keep)",
            files(u + i)
        ),
    }
}

/// Deletes the session `name`.
pub fn delete_session(
    ctx: &mut Context,
    name: &str,
    force: bool,
    how: &str,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<DeleteOutput> {
    let row = ctx.session(name)?;
    if row.remote().is_some() {
        return super::remote::delete(ctx, &row, force, how, progress);
    }
    let _span = tracing::info_span!("session", session = %row.name).entered();
    refuse_a_linked_worktree(&row)?;
    tracing::info!(worktree = %row.worktree_path.display(), "deleting the session");
    let worktree_exists = row.worktree_path.exists();
    let uncommitted = if worktree_exists {
        uncommitted_work(&row, force)?
    } else {
        git::Dirt::default()
    };
    // A queued session is held out of the queue first, so that nobody
    // starts its agent while it is deleted.
    let was_queued = super::queue::hold_for_delete(ctx, &row)?;
    if !was_queued {
        progress(&format!("Stopping the agent of {name}"));
        session::stop(&ctx.home, &row).with_context(|| format!("stopping the agent of {name}"))?;
    }
    // The agent's last records (some live in the worktree) before it goes;
    // the tokens stay in the store for `owt usage`.
    let places = ctx.usage_places();
    crate::usage::refresh_all(&ctx.store, &places, std::slice::from_ref(&row));

    let mut out = DeleteOutput {
        name: row.name.clone(),
        worktree_removed: false,
        branch_deleted: false,
        backup_ref: None,
        trash: None,
        trashed: Vec::new(),
        dropped: Vec::new(),
        discarded: Vec::new(),
        warnings: Vec::new(),
    };
    match row.kind {
        SessionKind::Worktree if worktree_exists => {
            remove_worktree(ctx, &row, &uncommitted, &mut out, progress)?;
        }
        SessionKind::Worktree => {
            // Folder already gone: forget git's entry for it.
            if ctx.repo.worktree_admin_exists(&row.name) {
                let _ = ctx.repo.prune_worktree(&row.name);
            }
        }
        SessionKind::Branch if worktree_exists => switch_back(&row, progress)?,
        SessionKind::Branch => {}
    }
    delete_created_branch(ctx, &row, &mut out)?;
    ctx.store.remove_session(&row, how)?;
    crate::usage::forget(&places, &row);
    if !was_queued {
        // Its place on the machine is free: a queued session may start.
        super::queue::admit(&ctx.home, progress);
    }
    Ok(out)
}

/// A worktree folder replaced by a symbolic link (to another checkout, say)
/// is refused, nothing changed: owt would otherwise list, trash and remove
/// what is at the other end.
fn refuse_a_linked_worktree(row: &SessionRow) -> anyhow::Result<()> {
    let path = &row.worktree_path;
    if !path
        .symlink_metadata()
        .is_ok_and(|m| m.file_type().is_symlink())
    {
        return Ok(());
    }
    let target = std::fs::read_link(path)
        .map(|t| format!(" (to {})", t.display()))
        .unwrap_or_default();
    bail!(
        "the worktree of `{}`, {}, is a symbolic link{target}; owt never follows a link out of a worktree, so nothing was deleted (remove the link yourself, then run `owt delete {}` again)",
        row.name,
        path.display(),
        row.name
    )
}

/// What is uncommitted in the session's worktree; refused (nothing
/// changed) unless `force`, which keeps a copy in the trash.
fn uncommitted_work(row: &SessionRow, force: bool) -> anyhow::Result<git::Dirt> {
    let name = &row.name;
    let dirt = git::dirt(&row.worktree_path).with_context(|| {
        format!(
            "checking {} for uncommitted work",
            row.worktree_path.display()
        )
    })?;
    if !dirt.is_clean() && !force {
        bail!(
            "session `{name}` has uncommitted work in {} ({} file{}: {}); commit it, or delete anyway with `owt delete {name} --force` (which keeps a copy of those files in the trash)",
            row.worktree_path.display(),
            dirt.len(),
            if dirt.len() == 1 { "" } else { "s" },
            dirt.summary()
        );
    }
    Ok(dirt)
}

/// Removes a worktree session's folder, what git does not keep going to
/// the trash first (or dropped, for disposable caches); warns of processes
/// still working inside it.
fn remove_worktree(
    ctx: &Context,
    row: &SessionRow,
    uncommitted: &git::Dirt,
    out: &mut DeleteOutput,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<()> {
    let inside = crate::procs::with_cwd_inside(&row.worktree_path);
    if !inside.is_empty() {
        out.warnings.push(format!(
            "{} still {} its working directory inside {}; it is left in a deleted folder (cd out of it)",
            crate::procs::describe(&inside),
            if inside.len() == 1 { "has" } else { "have" },
            row.worktree_path.display()
        ));
    }
    keep_leftovers(ctx, row, uncommitted, out, progress)?;
    progress(&format!(
        "Removing worktree {}",
        row.worktree_path.display()
    ));
    ctx.repo
        .remove_worktree(&row.worktree_path)
        .with_context(|| format!("removing worktree {}", row.worktree_path.display()))?;
    out.worktree_removed = true;
    Ok(())
}

/// A branch session's branch is checked out in the human's checkout: put
/// it back on the base (uncommitted changes come along, or git refuses and
/// nothing is deleted).
fn switch_back(row: &SessionRow, progress: &mut dyn FnMut(&str)) -> anyhow::Result<()> {
    let git = crate::ship::git_cli::GitCli::new(&row.worktree_path);
    let current = git
        .run(["symbolic-ref", "--quiet", "--short", "HEAD"])
        .unwrap_or_default();
    if current.trim() == row.branch {
        progress(&format!(
            "Switching your checkout back to {}",
            row.base_branch
        ));
        git.run(["switch", "--quiet", &row.base_branch])
            .with_context(|| format!("switching your checkout back to {}", row.base_branch))?;
    }
    Ok(())
}

/// Deletes the session's branch when owt created it and nothing has it
/// checked out (unmerged commits kept under a backup ref first).
fn delete_created_branch(
    ctx: &Context,
    row: &SessionRow,
    out: &mut DeleteOutput,
) -> anyhow::Result<()> {
    let created = ctx
        .store
        .fact::<BranchFact>(row.id, BRANCH_FACT)?
        .is_none_or(|(f, _)| f.created);
    if created
        && ctx.repo.branch_exists(&row.branch)
        && ctx.repo.checked_out_at(&row.branch)?.is_none()
    {
        out.backup_ref = ctx
            .repo
            .delete_branch(&row.branch, &row.base_branch, &row.name)
            .with_context(|| format!("deleting branch {}", row.branch))?;
        out.branch_deleted = true;
    }
    Ok(())
}

/// What becomes of a worktree's files that git does not keep.
#[derive(Debug, Default, PartialEq)]
pub struct Leftovers {
    /// Moved to the trash.
    pub keep: Vec<String>,
    /// Removed with the worktree: owt's own files, unchanged copies,
    /// disposable caches.
    pub drop: Vec<String>,
}

/// Sorts the ignored entries of the worktree at `worktree` into kept and
/// dropped, given the files owt put there and the disposable globs.
pub fn sort_ignored(
    worktree: &Path,
    ignored: &[String],
    owned: &[owned::OwnedFile],
    config: &crate::config::Config,
) -> Leftovers {
    let mut out = Leftovers::default();
    for entry in ignored {
        let rel = entry.trim_end_matches('/');
        let is_dir = entry.ends_with('/');
        let under = |f: &owned::OwnedFile| f.path.starts_with(&format!("{rel}/"));
        if let Some(file) = owned.iter().find(|f| f.path == rel) {
            if file.disposable_in(worktree) {
                out.drop.push(entry.clone());
            } else {
                out.keep.push(entry.clone());
            }
        } else if config.is_disposable(rel) {
            out.drop.push(entry.clone());
        } else if is_dir && owned.iter().any(under) {
            // A folder holding owt's files and maybe others: file by file.
            let inner = files_under(worktree, rel);
            let sorted = sort_ignored(worktree, &inner, owned, config);
            out.keep.extend(sorted.keep);
            out.drop.extend(sorted.drop);
        } else {
            out.keep.push(entry.clone());
        }
    }
    out
}

/// Files and links under `worktree/rel`, relative to `worktree`.
fn files_under(worktree: &Path, rel: &str) -> Vec<String> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(worktree.join(rel)) else {
        return out;
    };
    for entry in entries.flatten() {
        let child = format!("{rel}/{}", entry.file_name().to_string_lossy());
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            out.push(format!("{child}/"));
        } else {
            out.push(child);
        }
    }
    out.sort();
    out
}

/// Moves the worktree's ignored files (and, when deleting with `--force`,
/// its uncommitted files) to the trash; on failure moves them back and
/// stops the deletion.
fn keep_leftovers(
    ctx: &Context,
    row: &SessionRow,
    uncommitted: &git::Dirt,
    out: &mut DeleteOutput,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<()> {
    let worktree = &row.worktree_path;
    let ignored = git::ignored(worktree)
        .with_context(|| format!("listing the ignored files in {}", worktree.display()))?;
    let owned = owned::owned(ctx, row);
    let sorted = sort_ignored(worktree, &ignored, &owned, &ctx.config.config);
    out.dropped = sorted.drop;
    let discarded: Vec<String> = uncommitted
        .modified
        .iter()
        .chain(&uncommitted.untracked)
        .filter(|p| worktree.join(p).symlink_metadata().is_ok())
        .cloned()
        .collect();
    let mut keep = sorted.keep;
    keep.extend(discarded.iter().cloned());
    out.discarded = uncommitted
        .modified
        .iter()
        .chain(&uncommitted.untracked)
        .cloned()
        .collect();
    if keep.is_empty() {
        return Ok(());
    }
    progress(&format!(
        "Moving {} to the trash",
        trashed_kinds(&keep, &discarded)
    ));
    let mut filling = trash::begin(&ctx.home, &ctx.repo.name(), &row.name, worktree)
        .with_context(|| format!("making a trash folder under {}", ctx.home.display()))?;
    let mut taken: Vec<String> = Vec::new();
    for rel in &keep {
        if let Err(e) = filling.take(worktree, rel) {
            // Put back what was moved, so the worktree is as it was.
            for back in taken.iter().rev() {
                let back = back.trim_end_matches('/');
                let _ = std::fs::rename(filling.path.join(back), worktree.join(back));
            }
            let path = filling.path.clone();
            let _ = trash::remove_tree(&path);
            let diagnosis = crate::store::storage_diagnosis(&ctx.home)
                .map(|d| format!(" ({d})"))
                .unwrap_or_default();
            bail!(
                "could not move {rel} to the trash {}: {e}{diagnosis}; nothing was deleted",
                path.display()
            );
        }
        taken.push(rel.clone());
    }
    out.trash = filling.finish().map(|p| p.display().to_string());
    out.trashed = taken;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use owned::OwnedFile;

    #[test]
    fn ignored_files_are_kept_unless_owt_put_them_there_or_they_are_disposable() {
        let dir = tempfile::tempdir().unwrap();
        let wt = dir.path();
        std::fs::write(wt.join(".env"), "SECRET=1\n").unwrap();
        std::fs::write(wt.join(".env.local"), "EDITED=1\n").unwrap();
        std::fs::create_dir_all(wt.join(".claude")).unwrap();
        std::fs::write(wt.join(".claude/settings.local.json"), "{}").unwrap();
        std::fs::write(wt.join(".claude/notes.md"), "mine").unwrap();
        let owned = vec![
            OwnedFile::copied(".env", b"SECRET=1\n"),
            OwnedFile::copied(".env.local", b"ORIGINAL=1\n"),
            OwnedFile::written(".claude/settings.local.json"),
            OwnedFile::installed("node_modules"),
        ];
        let mut config = crate::config::Config::default();
        config.worktree.disposable = vec!["target".into(), "web/dist".into()];
        let ignored: Vec<String> = [
            ".claude/",
            ".env",
            ".env.local",
            "build/",
            "node_modules/",
            "run.log",
            "sub/target/",
            "web/dist/",
            "dist/",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let sorted = sort_ignored(wt, &ignored, &owned, &config);
        assert_eq!(
            sorted.keep,
            vec![
                ".claude/notes.md",
                ".env.local",
                "build/",
                "run.log",
                "dist/"
            ]
        );
        assert_eq!(
            sorted.drop,
            vec![
                ".claude/settings.local.json",
                ".env",
                "node_modules/",
                "sub/target/",
                "web/dist/"
            ]
        );
    }
}
