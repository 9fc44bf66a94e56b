//! A JSON record a long-lived process keeps under `$OWT_HOME` for others
//! to read while it runs (`owt lsp`'s unsaved buffers, [`super::unsaved`];
//! the repository its guard serves, [`super::warm`]): written atomically
//! and private, and told apart from the record of a process that is gone
//! by the pid and start time it names.

use std::path::Path;

use serde::de::DeserializeOwned;
use serde::Serialize;

/// Writes `value` as `dir/name` (0600, through a temporary file renamed
/// over it: a reader never sees half of it), making `dir` (0700) first.
pub fn write(dir: &Path, name: &str, value: &impl Serialize) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let tmp = dir.join(format!("{name}.tmp"));
    let json = serde_json::to_vec(value).map_err(std::io::Error::other)?;
    crate::store::write_private(&tmp, &json)?;
    std::fs::rename(&tmp, dir.join(name))
}

/// The record in `path`; `None` when it cannot be read or parsed.
pub fn read<T: DeserializeOwned>(path: &Path) -> Option<T> {
    std::fs::read(path)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
}

/// When process `pid` started (clock ticks after boot); `None` where
/// `/proc` cannot tell.
pub fn start_ticks(pid: u32) -> Option<u64> {
    crate::platform::procs::start_ticks(pid)
}

/// Whether the process that wrote a record naming `pid` and `started`
/// still runs: its pid is there and started then (not a reused pid).
pub fn still_running(pid: u32, started: Option<u64>) -> bool {
    start_ticks(pid).is_some_and(|ticks| started.is_none_or(|s| s == ticks))
}
