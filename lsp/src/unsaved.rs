//! This server's record of your unsaved buffers, for the agents' pre-edit
//! hook (`owt hook --pre-edit`, a separate process):
//! `$OWT_HOME/unsaved/<pid>.json` ([`owt_core::guard::unsaved`]) lists
//! the open documents of the repository's checkouts (the main one and the
//! sessions' worktrees) whose text differs from the file on disk, with the
//! lines of the file they change.
//!
//! Written a moment after the buffers change (keystrokes coalesced), on a
//! save, and every tick while something is unsaved (a file that changed on
//! disk under a buffer); replaced only when what it says changed; removed
//! once nothing is unsaved and when the server ends. The records of
//! killed servers are removed when a server starts.
//!
//! Invariant: each document's changed lines are computed again only when
//! its version or its file on disk (size, modification time) moved.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use owt_core::guard::unsaved::{self, Record, UnsavedFile};
use tower_lsp_server::ls_types::Uri;

use super::convert::uri_to_path;
use super::state::State;

/// How long keystrokes are coalesced before the record is written.
const DELAY: Duration = Duration::from_millis(50);

/// The record's part of the owner's state ([`super::owner::Owner`]).
#[derive(Default)]
pub struct UnsavedRecord {
    /// When the record is next brought up to date.
    pub due: Option<Instant>,
    /// Per document: what its changed lines were computed from (version,
    /// the file's size and modification time), and the result.
    cache: HashMap<Uri, (Key, Option<UnsavedFile>)>,
    /// What the record on disk says (`None`: there is none).
    written: Option<Vec<UnsavedFile>>,
    /// Stale records were looked for.
    swept: bool,
}

type Key = (i32, Option<(u64, Option<SystemTime>)>);

impl UnsavedRecord {
    /// A buffer opened, changed, saved or closed: update the record soon.
    pub fn changed(&mut self) {
        if self.due.is_none() {
            self.due = Some(Instant::now() + DELAY);
        }
    }

    /// The tick: while something is unsaved, a file may have changed on
    /// disk under its buffer.
    pub fn tick(&mut self) {
        if self.written.is_some() {
            self.changed();
        }
    }

    /// Brings the record up to date.
    pub fn update(&mut self, state: &State) {
        self.due = None;
        let Ok(home) = state.home.clone() else { return };
        if !self.swept {
            self.swept = true;
            unsaved::remove_stale(&home);
        }
        let roots = checkouts(state);
        let mut files = Vec::new();
        let mut cache = std::mem::take(&mut self.cache);
        cache.retain(|uri, _| state.docs.contains_key(uri));
        for (uri, doc) in &state.docs {
            let Some(path) = uri_to_path(uri) else {
                continue;
            };
            let path = unsaved::resolved(&path);
            if !roots.iter().any(|root| path.starts_with(root)) {
                continue;
            }
            let key: Key = (
                doc.version,
                std::fs::metadata(&path)
                    .ok()
                    .map(|m| (m.len(), m.modified().ok())),
            );
            let file = match cache.get(uri) {
                Some((cached, file)) if *cached == key => file.clone(),
                _ => {
                    let file = unsaved::unsaved_file(&path, &doc.text);
                    cache.insert(uri.clone(), (key, file.clone()));
                    file
                }
            };
            files.extend(file);
        }
        self.cache = cache;
        files.sort_by(|a, b| a.path.cmp(&b.path));
        if self.written.as_ref() == Some(&files) || (files.is_empty() && self.written.is_none()) {
            return;
        }
        let pid = std::process::id();
        if files.is_empty() {
            unsaved::remove(&home, pid);
            self.written = None;
            return;
        }
        let record = Record {
            pid,
            started: unsaved::start_ticks(pid),
            updated_ms: owt_core::store::now_ms(),
            files,
        };
        match unsaved::write(&home, &record) {
            Ok(()) => self.written = Some(record.files),
            Err(e) => tracing::warn!("recording the unsaved buffers for the pre-edit hook: {e}"),
        }
    }

    /// The server ends: nothing of it is unsaved any more.
    pub fn clear(&mut self, state: &State) {
        if self.written.take().is_some() {
            if let Ok(home) = &state.home {
                unsaved::remove(home, std::process::id());
            }
        }
    }
}

/// The repository's checkouts: the main one and the sessions' worktrees.
fn checkouts(state: &State) -> Vec<PathBuf> {
    let Some(ctx) = &state.ctx else {
        return Vec::new();
    };
    std::iter::once(ctx.repo.main_root().to_path_buf())
        .chain(
            state
                .sessions
                .iter()
                .filter(|s| !s.worktree.is_empty())
                .map(|s| PathBuf::from(&s.worktree)),
        )
        .map(|p| unsaved::resolved(Path::new(&p)))
        .collect()
}
