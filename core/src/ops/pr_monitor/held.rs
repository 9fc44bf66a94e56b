//! The pull-request watcher's kept [`Context`] (see [`Held`]).

use std::path::Path;
use std::time::Duration;

use crate::ops::Context;

/// How long the watcher keeps one [`Context`] at most: a trust decision
/// recorded in the store since (what the repository's configuration may
/// do) is seen within this.
const CONTEXT_MAX_AGE: Duration = Duration::from_secs(60);

/// The watcher's [`Context`], kept from one look to the next: opening one
/// (the store and its migrations, the repository, the configuration
/// files) every second was most of what an idle `owt lsp` did, and the
/// code it ran most of what the idle server kept mapped of the binary.
/// It is opened again when the store file was replaced, a configuration
/// file changed, or after [`CONTEXT_MAX_AGE`].
pub(super) struct Held {
    pub(super) ctx: Context,
    opened: std::time::Instant,
    config: Vec<Option<FileStamp>>,
}

/// What tells a changed file from the same one without reading it.
type FileStamp = (u64, u64, i64, i64);

impl Held {
    pub(super) fn open(dir: &Path) -> anyhow::Result<Held> {
        let ctx = Context::open(Some(dir))?;
        // Stamped right after reading (a change in between is seen at
        // [`CONTEXT_MAX_AGE`]).
        let config = config_stamps(ctx.repo.main_root());
        Ok(Held {
            ctx,
            opened: std::time::Instant::now(),
            config,
        })
    }

    pub(super) fn stale(&self) -> bool {
        self.opened.elapsed() >= CONTEXT_MAX_AGE
            || self.ctx.store.replaced().is_some()
            || config_stamps(self.ctx.repo.main_root()) != self.config
    }
}

/// The stamps of the configuration files a [`Context`] of the checkout at
/// `root` reads (the user's, and each file the repository's could be;
/// `None`: absent).
pub(super) fn config_stamps(root: &Path) -> Vec<Option<FileStamp>> {
    use std::os::unix::fs::MetadataExt;
    let repo_files = std::iter::once(crate::config::repo_config_path(root))
        .chain(crate::config::SEED_FILES.iter().map(|f| root.join(f)));
    crate::config::user_config_path()
        .into_iter()
        .chain(repo_files)
        .map(|path| {
            std::fs::metadata(path)
                .ok()
                .map(|m| (m.ino(), m.len(), m.mtime(), m.mtime_nsec()))
        })
        .collect()
}
