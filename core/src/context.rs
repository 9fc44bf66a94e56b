//! The repository a command works on: its checkout, configuration (as
//! far as the user trusts it) and owt's store, opened once per command.
//!
//! Below `ops` and `remote`, which both run over a [`Context`]; the use
//! cases add their own methods (`ops`: looking a session up by name).

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use sha2::{Digest, Sha256};

use crate::config::{self, Loaded, Trust};
use crate::git::Repo;
use crate::store::{RepoRow, Store};

/// `$OWT_HOME`, else `$XDG_STATE_HOME/owt`, else `~/.local/state/owt`.
pub fn owt_home() -> anyhow::Result<PathBuf> {
    if let Some(home) = std::env::var_os("OWT_HOME").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(home));
    }
    if let Some(state) = std::env::var_os("XDG_STATE_HOME").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(state).join("owt"));
    }
    let home = std::env::var_os("HOME")
        .filter(|v| !v.is_empty())
        .context("neither OWT_HOME nor HOME is set; set OWT_HOME to a folder owt may use")?;
    Ok(PathBuf::from(home).join(".local/state/owt"))
}

/// Everything a verb that works on one repository needs.
pub struct Context {
    pub home: PathBuf,
    pub store: Store,
    pub repo: Repo,
    pub repo_row: RepoRow,
    pub config: Loaded,
}

impl Context {
    /// Opens the repository containing `dir` (or the current directory), its
    /// configuration and the store.
    pub fn open(dir: Option<&Path>) -> anyhow::Result<Context> {
        Context::open_with(dir, owt_home)
    }

    /// As [`Context::open`], with the store under `home` (not
    /// [`owt_home`]'s).
    pub fn open_in(dir: Option<&Path>, home: &Path) -> anyhow::Result<Context> {
        Context::open_with(dir, || Ok(home.to_path_buf()))
    }

    fn open_with(
        dir: Option<&Path>,
        home: impl FnOnce() -> anyhow::Result<PathBuf>,
    ) -> anyhow::Result<Context> {
        let cwd;
        let dir = match dir {
            Some(dir) => dir,
            None => {
                cwd = std::env::current_dir().context("reading the current directory")?;
                &cwd
            }
        };
        let repo = Repo::discover(dir)?;
        let home = home()?;
        let store = Store::open(&home)?;
        let config = config::load(Some(repo.main_root()), &StoreTrust(&store))?;
        let repo_row = store.ensure_repo(repo.common_dir(), repo.main_root())?;
        Ok(Context {
            home,
            store,
            repo,
            repo_row,
            config,
        })
    }

    /// Where the agents started from this repository keep their token
    /// records (owt's environment with `[agent] env` on top).
    pub fn usage_places(&self) -> crate::usage::Places {
        crate::usage::Places::from_env(&self.home, &self.config.config.agent.env)
    }
}

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The store's record of what the user trusts.
pub struct StoreTrust<'a>(pub &'a Store);

impl Trust for StoreTrust<'_> {
    fn trusts(&self, path: &Path, bytes: &[u8]) -> bool {
        match self.0.trusted_file(path) {
            Ok(Some((sha, _))) => sha == sha256_hex(bytes),
            Ok(None) => false,
            Err(e) => {
                tracing::warn!("reading trust of {}: {e}", path.display());
                false
            }
        }
    }
}
