//! The remote's half of a bridge's requests (`owt __bridge info|commit`),
//! run by the owt on the remote machine.

use std::path::Path;

use anyhow::{bail, Context as _};
use owt_protocol::bridge::{RemoteCommit, RemoteInfo, BRIDGE_PROTOCOL_VERSION};

use crate::ops::Context;

/// `owt __bridge info` (on the remote): this owt and the clone.
pub fn info(dir: Option<&Path>, base: Option<&str>) -> RemoteInfo {
    let mut info = RemoteInfo {
        version: env!("CARGO_PKG_VERSION").to_string(),
        bridge_protocol: BRIDGE_PROTOCOL_VERSION,
        repository: None,
        error: None,
        base: base.map(str::to_string),
        base_tip: None,
    };
    let dir = dir
        .map(Path::to_path_buf)
        .or_else(|| std::env::current_dir().ok());
    match dir.as_deref().map(crate::git::Repo::discover) {
        Some(Ok(repo)) => {
            info.repository = Some(repo.main_root().to_string_lossy().into_owned());
            info.base_tip = base
                .and_then(|b| repo.branch_tip(b).ok())
                .map(|t| t.to_string());
        }
        Some(Err(e)) => info.error = Some(e.to_string()),
        None => info.error = Some("no folder given".into()),
    }
    info
}

/// `owt __bridge commit NAME` (on the remote): commits the session's work
/// (as `owt ship` does, hooks included); with `dry_run` only says what is
/// uncommitted.
pub fn commit(
    ctx: &Context,
    name: &str,
    message: Option<&str>,
    dry_run: bool,
) -> anyhow::Result<RemoteCommit> {
    let row = ctx.session(name)?;
    if row.remote().is_some() {
        bail!("{name} runs on another machine");
    }
    let dirt = crate::git::dirt(&row.worktree_path)?;
    let mut dirty = dirt.modified.clone();
    dirty.extend(dirt.untracked.iter().cloned());
    let never = crate::ops::owned::never_staged(ctx, &row);
    dirty.retain(|p| !never.contains(p));
    let committed = if dry_run || dirty.is_empty() {
        None
    } else {
        let message = message
            .map(str::to_string)
            .unwrap_or_else(|| crate::ops::ship_message::default_message(&row));
        crate::ship::commit_all(&row.worktree_path, &message, &never)
            .with_context(|| format!("committing the work of {name}"))?
    };
    Ok(RemoteCommit {
        session: row.name.clone(),
        branch: row.branch.clone(),
        base: row.base_branch.clone(),
        committed: committed.map(|c| c.to_string()),
        tip: ctx.repo.branch_tip(&row.branch)?.to_string(),
        dirty: if dry_run { dirty } else { Vec::new() },
    })
}
