//! The metadata owt keeps beside git's own of a session's worktree
//! (`<common dir>/worktrees/<name>/owt.json`): `new` writes it, `doctor`
//! reads it to re-adopt a session or to know a folder is not an orphan.
//!
//! A leaf of `ops`: it names no other `ops` module.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::Context;
use crate::store::SessionRow;

/// Name of owt's metadata file in a worktree's git admin folder.
const METADATA_FILE: &str = "owt.json";

/// What owt knows of a session, kept beside git's own metadata of its
/// worktree (`<common dir>/worktrees/<name>/owt.json`) so that a session
/// can be re-adopted when the store is lost, and so that an owt using
/// another state folder knows the worktree is not an orphan. The file is
/// 0600.
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
    // Private (0600): it holds the task, which is the user's own text.
    crate::store::write_private(
        &admin.join(METADATA_FILE),
        &serde_json::to_vec_pretty(&meta)?,
    )?;
    Ok(())
}

pub(crate) fn read_metadata(admin: &Path) -> Option<WorktreeMetadata> {
    serde_json::from_slice(&std::fs::read(admin.join(METADATA_FILE)).ok()?).ok()
}
