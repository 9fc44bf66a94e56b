//! Use cases: the one library function each CLI verb (and, later, each LSP
//! command) calls — create a session, list them, delete one, doctor.
//!
//! Invariant: the functions here combine `git`, `store`, `provider`,
//! `session` and `status`; they print nothing (they return values and
//! report progress through a callback) and know nothing of clap or LSP.

pub mod acp;
pub mod agent;
pub mod allowed;
pub mod attached;
pub mod checks;
pub mod cleanup;
pub mod conduct;
pub mod conflicts;
pub mod db;
pub mod delete;
pub mod deps;
pub mod doctor;
pub mod editor;
pub mod fork;
pub mod guard;
pub mod host;
pub mod list;
pub mod merge;
pub mod new;
pub mod notes;
pub mod owned;
pub mod ports;
pub mod pr;
pub mod prompt;
pub mod queue;
pub mod remote;
pub mod resume;
pub mod review;
pub mod setup;
pub mod sync;
pub mod trash;
pub mod trust;
pub mod usage;
pub mod watch;

use std::path::{Path, PathBuf};

use anyhow::Context as _;

use crate::config::{self, Loaded};
use crate::git::Repo;
use crate::store::{RepoRow, SessionRow, Store};

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
        let config = config::load(Some(repo.main_root()), &trust::StoreTrust(&store))?;
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

    /// The session called `name` in this repository, or an error listing
    /// the sessions that exist.
    pub fn session(&self, name: &str) -> anyhow::Result<SessionRow> {
        if let Some(row) = self.store.session_by_name(self.repo_row.id, name)? {
            if row.remote().is_some() {
                // Its host socket here is served by the remote's bridge.
                crate::remote::keeper::ensure_socket(self, &row);
            }
            return Ok(row);
        }
        let names: Vec<String> = self
            .store
            .all_sessions(self.repo_row.id)?
            .into_iter()
            .map(|s| s.name)
            .collect();
        if names.is_empty() {
            anyhow::bail!("no session named `{name}`; this repository has no sessions (start one with `owt new \"task\"`)")
        }
        // A unique prefix names the session (`owt peek add-a-ch`).
        match crate::names::lookup(name, &names) {
            crate::names::Lookup::Found(full) => {
                if let Some(row) = self.store.session_by_name(self.repo_row.id, &full)? {
                    return self.session(&row.name);
                }
                anyhow::bail!("no session named `{name}`")
            }
            crate::names::Lookup::Ambiguous(several) => anyhow::bail!(
                "`{name}` is the start of several sessions: {}; give more of the name",
                several.join(", ")
            ),
            crate::names::Lookup::Missing { near } if !near.is_empty() => anyhow::bail!(
                "no session named `{name}`; did you mean {}? (sessions here: {})",
                near.iter()
                    .map(|n| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(" or "),
                names.join(", ")
            ),
            crate::names::Lookup::Missing { .. } => anyhow::bail!(
                "no session named `{name}`; sessions here: {}",
                names.join(", ")
            ),
        }
    }
}
