//! Files owt puts into a session's worktree: agent hooks, MCP
//! registrations, files copied from the main checkout (`.env`),
//! dependencies it installed. One list per session (the `owned_files`
//! fact), so every verb treats them alike:
//!
//! - they are kept out of commits and out of Conflict Guard: written or
//!   copied files get a root-anchored line in the repository's
//!   `info/exclude` ([`crate::git::exclude_paths`]), and `owt ship` never
//!   stages them ([`crate::ship::commit_all`]'s exclusions);
//! - `owt delete` removes them without a copy — a copied file only while
//!   it is unchanged (same SHA-256 as when copied); an edited one goes to
//!   the trash like any other ignored file.
//!
//! Whoever writes a file into a worktree (setup, hooks, MCP registration,
//! an agent adapter's own config files) records it here with [`own`].

use serde::{Deserialize, Serialize};

use super::Context;
use crate::store::SessionRow;

/// Fact kind of the list of files owt put into a session's worktree.
pub const OWNED_FACT: &str = "owned_files";

/// One path owt put into a worktree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OwnedFile {
    /// Relative to the worktree, `/`-separated.
    pub path: String,
    /// `copied` (from the main checkout), `written` (hooks, MCP
    /// registration, agent configuration) or `installed` (dependencies).
    pub origin: String,
    /// SHA-256 of a copied file's content when it was copied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
}

impl OwnedFile {
    pub fn copied(path: &str, bytes: &[u8]) -> OwnedFile {
        OwnedFile {
            path: path.trim_start_matches('/').to_string(),
            origin: "copied".into(),
            sha256: Some(super::trust::sha256_hex(bytes)),
        }
    }

    pub fn written(path: &str) -> OwnedFile {
        OwnedFile {
            path: path.trim_start_matches('/').to_string(),
            origin: "written".into(),
            sha256: None,
        }
    }

    pub fn installed(path: &str) -> OwnedFile {
        OwnedFile {
            path: path.trim_start_matches('/').to_string(),
            origin: "installed".into(),
            sha256: None,
        }
    }

    /// Whether it is kept out of commits (`info/exclude`): files owt wrote
    /// or copied; installed dependencies follow the repository's own
    /// `.gitignore`.
    pub fn excluded(&self) -> bool {
        self.origin != "installed"
    }

    /// Whether `owt delete` may remove it without a copy, given the
    /// worktree it is in.
    pub fn disposable_in(&self, worktree: &std::path::Path) -> bool {
        match (&self.origin[..], &self.sha256) {
            // Read without following a link (a copy the agent replaced by
            // a link to `/dev/zero` is not the copy).
            ("copied", Some(sha)) => {
                crate::safe_fs::read_beneath(worktree, self.path.as_ref(), COPY_LIMIT)
                    .ok()
                    .flatten()
                    .is_some_and(|bytes| super::trust::sha256_hex(&bytes) == *sha)
            }
            ("copied", None) => false,
            _ => true,
        }
    }
}

/// The largest copied file whose content `owt delete` compares.
const COPY_LIMIT: u64 = 64 << 20;

/// The files owt put into `session`'s worktree.
pub fn owned(ctx: &Context, session: &SessionRow) -> Vec<OwnedFile> {
    match ctx.store.fact::<Vec<OwnedFile>>(session.id, OWNED_FACT) {
        Ok(Some((files, _))) => files,
        Ok(None) => Vec::new(),
        Err(e) => {
            tracing::warn!("reading the files owt put in {}: {e}", session.name);
            Vec::new()
        }
    }
}

/// Records `files` as put into `session`'s worktree by owt, and keeps the
/// ones it wrote or copied out of commits and the guard.
pub fn own(ctx: &Context, session: &SessionRow, files: &[OwnedFile]) -> anyhow::Result<()> {
    if files.is_empty() {
        return Ok(());
    }
    let mut all = owned(ctx, session);
    for file in files {
        match all.iter_mut().find(|f| f.path == file.path) {
            Some(existing) => *existing = file.clone(),
            None => all.push(file.clone()),
        }
    }
    ctx.store.record_fact(session.id, OWNED_FACT, &all)?;
    let excluded: Vec<String> = files
        .iter()
        .filter(|f| f.excluded())
        .map(|f| f.path.clone())
        .collect();
    crate::git::exclude_paths(&ctx.repo, &excluded)?;
    Ok(())
}

/// The paths `owt ship` must never stage for `session`.
pub fn never_staged(ctx: &Context, session: &SessionRow) -> Vec<String> {
    owned(ctx, session)
        .into_iter()
        .filter(|f| f.excluded())
        .map(|f| f.path)
        .collect()
}
