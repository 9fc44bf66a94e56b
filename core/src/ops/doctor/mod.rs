//! `owt doctor`: find what is out of order — git lock files left by a
//! killed git, interrupted merges, sessions whose worktree or branch is
//! gone, sessions whose `owt new` died before starting their agent, git
//! worktrees whose folder is gone, worktree folders the store
//! does not know, live sessions the store lost — and, with `fix`, repair
//! it. Also lists the trash and, with `fix`, empties entries older than
//! [`TRASH_DAYS`].
//!
//! Invariant: doctor never removes a folder that is not a registered
//! worktree of this repository, nor one that holds uncommitted work,
//! ignored files that are not disposable, a running process, a live
//! session host, git's worktree lock, or owt's metadata of a session
//! (those are re-adopted, or left for the state folder they belong to).
//!
//! Parts: `findings` (one function per kind of finding, and its repair),
//! `adopt` (live sessions the store lost, re-adopted), `orphans` (worktree
//! folders no session owns), `starters` (sessions an interrupted `owt new`
//! left); here the metadata kept beside a worktree's.

use std::path::{Path, PathBuf};

use owt_protocol::DoctorFinding;
use serde::{Deserialize, Serialize};

use super::Context;
use crate::store::SessionRow;

mod adopt;
mod findings;
mod orphans;
mod starters;

pub use findings::doctor;

/// `owt doctor --fix` empties trash entries older than this.
pub const TRASH_DAYS: u32 = 30;

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

/// `40s`, `12m`, `3h`, `2d`.
pub(super) fn age_text(ms: i64) -> String {
    let secs = (ms / 1000).max(0);
    match secs {
        0..=59 => format!("{secs}s"),
        60..=3599 => format!("{}m", secs / 60),
        3600..=86_399 => format!("{}h", secs / 3600),
        _ => format!("{}d", secs / 86_400),
    }
}

pub(super) fn read_metadata(admin: &Path) -> Option<WorktreeMetadata> {
    serde_json::from_slice(&std::fs::read(admin.join(METADATA_FILE)).ok()?).ok()
}

pub(super) fn finding(
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
