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
//! left); the metadata kept beside a worktree's is `ops::metadata`'s.

use std::path::Path;

use owt_protocol::DoctorFinding;

mod adopt;
mod findings;
mod orphans;
mod starters;

pub use findings::doctor;

/// `owt doctor --fix` empties trash entries older than this.
pub const TRASH_DAYS: u32 = 30;

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
