//! What a full scan of a checkout asks before walking it: the checkout's
//! journal, where one vouches for it ([`JournalSource`]), and the identity
//! of the index the journal's view was taken with ([`index_id`]). A leaf
//! below `snapshot` (which asks) and `journal` (which answers).

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use owt_protocol::host::JournalView;

/// What identifies the index file's content without reading it: git
/// replaces the index by renaming a new file over it, so any rewrite
/// changes the inode and the change time.
pub fn index_id(git_dir: &Path) -> String {
    match std::fs::metadata(git_dir.join("index")) {
        Ok(m) => format!(
            "{}:{}:{}.{:09}:{}.{:09}",
            m.ino(),
            m.len(),
            m.mtime(),
            m.mtime_nsec(),
            m.ctime(),
            m.ctime_nsec()
        ),
        Err(_) => "none".to_string(),
    }
}

/// Where a full scan asks for a checkout's journal before walking it. The
/// session client implements it for a host's socket
/// (`session::HostJournal`): the guard asks, and knows nothing of hosts.
pub trait JournalSource: Send + Sync + std::fmt::Debug {
    /// The journal, when there is one it can vouch for (`None`: no host,
    /// an older host, a walk under way).
    fn ask(&self) -> Option<JournalView>;
}
