//! `owt sync`: bring the base branch (first fast-forwarded from its
//! upstream, when it has one) into session branches, with the same conflict
//! safety as merge: a conflict restores the worktree exactly, unless asked
//! to leave it.

use std::collections::BTreeMap;

use owt_protocol::{SyncOutput, SyncResult};

use super::Context;
use crate::ship::{self, git_cli::GitCli, Method, Phase1};
use crate::status::{self, ConflictFact};
use crate::store::SessionRow;

pub fn sync(
    ctx: &mut Context,
    names: &[String],
    leave_conflicts: bool,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<SyncOutput> {
    let rows: Vec<SessionRow> = if names.is_empty() {
        ctx.store.sessions(ctx.repo_row.id)?
    } else {
        names
            .iter()
            .map(|n| ctx.session(n))
            .collect::<anyhow::Result<_>>()?
    };
    // Each base is fetched at most once per run.
    let mut fetched: BTreeMap<String, Option<String>> = BTreeMap::new();
    let mut out = SyncOutput {
        sessions: Vec::new(),
    };
    for row in rows {
        let mut result = SyncResult {
            name: row.name.clone(),
            base: row.base_branch.clone(),
            outcome: "skipped".into(),
            fetched_from: None,
            conflicts: Vec::new(),
            detail: None,
        };
        if let Some(why) = why_not(&row)? {
            result.detail = Some(why);
            out.sessions.push(result);
            continue;
        }
        if !fetched.contains_key(&row.base_branch) {
            let upstream = update_from_upstream(ctx, &row.base_branch, progress);
            fetched.insert(row.base_branch.clone(), upstream);
        }
        result.fetched_from = fetched.get(&row.base_branch).cloned().flatten();
        progress(&format!("Bringing {} into {}", row.base_branch, row.branch));
        bring_base_in(ctx, &row, leave_conflicts, &mut result)?;
        out.sessions.push(result);
    }
    Ok(out)
}

/// Why the session is not synced here: it runs on a remote, its worktree
/// is gone, a merge or rebase is in progress there, or it has uncommitted
/// work.
fn why_not(row: &SessionRow) -> anyhow::Result<Option<String>> {
    if let Some((remote, _)) = row.remote() {
        return Ok(Some(format!(
            "it runs on {remote}, whose clone has its own base; sync it there"
        )));
    }
    if !row.worktree_path.is_dir() {
        return Ok(Some(format!(
            "its worktree {} is gone",
            row.worktree_path.display()
        )));
    }
    if ship::in_progress(&row.worktree_path).is_some() {
        return Ok(Some(
            "a merge or rebase is already in progress there".into(),
        ));
    }
    let dirt = crate::git::dirt(&row.worktree_path)?;
    if !dirt.is_clean() {
        return Ok(Some(format!(
            "uncommitted work ({}); commit it first",
            dirt.summary()
        )));
    }
    Ok(None)
}

/// Merges the base into the session's branch in its worktree; conflicts
/// are left there (and recorded) only when asked, else the worktree is
/// restored. What happened goes into `result`.
fn bring_base_in(
    ctx: &Context,
    row: &SessionRow,
    leave_conflicts: bool,
    result: &mut SyncResult,
) -> anyhow::Result<()> {
    match ship::bring_base_in(
        &ctx.repo,
        &row.worktree_path,
        &row.base_branch,
        Method::Merge,
        None,
        leave_conflicts,
    ) {
        Ok(Phase1::UpToDate) => result.outcome = "up-to-date".into(),
        Ok(Phase1::Done) => result.outcome = "synced".into(),
        Ok(Phase1::Conflicts { files, left }) => {
            result.outcome = "conflicts".into();
            result.detail = Some(if left {
                "the conflicts are left in the worktree for you to resolve".into()
            } else {
                "nothing changed: the worktree was restored".into()
            });
            if left {
                ctx.store.record_fact(
                    row.id,
                    status::kind::CONFLICT,
                    &ConflictFact {
                        files: files.clone(),
                    },
                )?;
            }
            result.conflicts = files;
        }
        Err(e) => result.detail = Some(e.to_string()),
    }
    Ok(())
}

/// Fast-forwards `base` from its upstream (fetching it first); returns the
/// upstream's name when that happened or was already so.
fn update_from_upstream(
    ctx: &Context,
    base: &str,
    progress: &mut dyn FnMut(&str),
) -> Option<String> {
    let repo = ctx.repo.git2();
    let branch = repo.find_branch(base, git2::BranchType::Local).ok()?;
    let upstream = branch.upstream().ok()?;
    let upstream_name = upstream.name().ok().flatten()?.to_string();
    let (remote, remote_branch) = upstream_name.split_once('/')?;
    progress(&format!("Fetching {upstream_name}"));
    if let Err(e) =
        GitCli::new(ctx.repo.main_root()).run(["fetch", "--quiet", remote, remote_branch])
    {
        progress(&format!("Could not fetch {upstream_name}: {e}"));
        return None;
    }
    let repo = git2::Repository::open(ctx.repo.common_dir()).ok()?;
    let upstream_tip = repo
        .find_branch(&upstream_name, git2::BranchType::Remote)
        .ok()?
        .get()
        .target()?;
    match ship::advance_base(&ctx.repo, base, upstream_tip) {
        Ok(_) => Some(upstream_name),
        Err(e) => {
            progress(&format!(
                "{base} was not fast-forwarded to {upstream_name}: {e}"
            ));
            None
        }
    }
}
