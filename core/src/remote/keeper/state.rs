//! A keeper's state file (`owt remote list` reads it) and its lock (one
//! keeper per remote and repository).

use std::path::Path;
use std::sync::Mutex;

use owt_protocol::BridgeState;
use serde::{Deserialize, Serialize};

use super::super::keeper_file;
use crate::store::now_ms;

/// What a keeper writes to its state file (`owt remote list` reads it).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct KeeperState {
    pub pid: u32,
    pub connected: bool,
    /// Unix ms: connected since, or unreachable since.
    pub since: i64,
    pub last_error: Option<String>,
    /// Unix ms of the next attempt, while unreachable.
    pub retry_at: Option<i64>,
    /// The remote clone (absolute, there), once known.
    pub repository: Option<String>,
    pub fetches: u64,
    pub last_fetch_ms: Option<u64>,
    /// Unix ms when the last announced snapshot was fetched, and when the
    /// remote wrote it (its clock, shifted into ours).
    pub last_snapshot_written_at: Option<i64>,
    pub last_snapshot_fetched_at: Option<i64>,
}

/// The state of `remote`'s keeper for the repository, as `owt remote list`
/// shows it (`None` when none was ever started).
pub fn state(home: &Path, repo_id: i64, remote: &str) -> Option<BridgeState> {
    let file = keeper_file(home, repo_id, remote, "json");
    let text = std::fs::read_to_string(file).ok()?;
    let state: KeeperState = serde_json::from_str(&text).ok()?;
    let running = is_running(home, repo_id, remote);
    Some(BridgeState {
        running,
        connected: running && state.connected,
        since: state.since,
        last_error: state.last_error,
        retry_in_s: state
            .retry_at
            .filter(|_| running)
            .map(|at| ((at - now_ms()).max(0) / 1000) as u64),
    })
}

/// The raw state file (for benchmarks and tests).
pub fn raw_state(home: &Path, repo_id: i64, remote: &str) -> Option<KeeperState> {
    let text = std::fs::read_to_string(keeper_file(home, repo_id, remote, "json")).ok()?;
    serde_json::from_str(&text).ok()
}

/// Whether a keeper holds the lock of `remote` for the repository.
pub fn is_running(home: &Path, repo_id: i64, remote: &str) -> bool {
    match try_lock(&keeper_file(home, repo_id, remote, "lock")) {
        Ok(Some(_lock)) => false,
        Ok(None) => true,
        Err(_) => false,
    }
}

/// The lock file, locked; `None` when another process holds it.
pub(super) fn try_lock(path: &Path) -> std::io::Result<Option<std::fs::File>> {
    use std::os::unix::fs::OpenOptionsExt;
    if let Some(parent) = path.parent() {
        private_dir(parent)?;
    }
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(path)?;
    Ok(crate::platform::fd::try_lock_exclusive(&file)?.then_some(file))
}

/// Changes the keeper's state and writes its file (replaced whole).
pub(super) fn update_state<T>(
    state: &Mutex<KeeperState>,
    file: &Path,
    change: impl FnOnce(&mut KeeperState) -> T,
) -> T {
    let mut state = state.lock().unwrap_or_else(|e| e.into_inner());
    let result = change(&mut state);
    if let Ok(json) = serde_json::to_vec_pretty(&*state) {
        let tmp = file.with_extension("json.tmp");
        if crate::store::write_private(&tmp, &json).is_ok() {
            let _ = std::fs::rename(&tmp, file);
        }
    }
    result
}

/// Creates `dir` (and its parents) readable by its owner only.
pub(super) fn private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
}
