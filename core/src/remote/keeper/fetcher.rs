//! Snapshot refs fetched on their own thread, one fetch at a time.

use std::path::PathBuf;
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex};

use super::super::ssh::Ssh;
use super::state::{update_state, KeeperState};
use crate::store::now_ms;

/// Fetches snapshot refs on its own thread: one fetch at a time, requests
/// made during a fetch coalesced into one more.
pub(super) struct Fetcher {
    tx: Sender<Option<i64>>,
}

impl Fetcher {
    pub(super) fn start(
        local_repo: PathBuf,
        ssh: Ssh,
        repository: String,
        (state, state_file): (Arc<Mutex<KeeperState>>, PathBuf),
    ) -> Fetcher {
        let (tx, rx) = mpsc::channel::<Option<i64>>();
        let _ = std::thread::Builder::new()
            .name("owt-keep-fetch".into())
            .spawn(move || {
                let mut written_at = None;
                while let Ok(first) = rx.recv() {
                    written_at = first.or(written_at);
                    while let Ok(more) = rx.try_recv() {
                        written_at = more.or(written_at);
                    }
                    match super::super::snapshots::fetch(&local_repo, &ssh, &repository) {
                        Ok(fetched) => {
                            tracing::debug!(
                                ms = fetched.elapsed.as_millis() as u64,
                                "fetched snapshots"
                            );
                            update_state(&state, &state_file, |state| {
                                state.fetches += 1;
                                state.last_fetch_ms = Some(fetched.elapsed.as_millis() as u64);
                                state.last_snapshot_written_at = written_at;
                                state.last_snapshot_fetched_at = Some(now_ms());
                            });
                        }
                        Err(e) => tracing::warn!("{e}"),
                    }
                }
            });
        Fetcher { tx }
    }

    /// Asks for a fetch of snapshots written (remote clock, shifted) at
    /// `written_at`.
    pub(super) fn request(&self, written_at: Option<i64>) {
        let _ = self.tx.send(written_at);
    }
}
