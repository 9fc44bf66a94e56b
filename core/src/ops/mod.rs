//! Use cases: the one library function each CLI verb (and, later, each LSP
//! command) calls — create a session, list them, delete one, doctor.
//!
//! Invariant: the functions here combine `git`, `store`, `provider`,
//! `session` and `status`; they print nothing (they return values and
//! report progress through a callback) and know nothing of clap or LSP.
//!
//! Layers, bottom up: a module names modules of its own layer or below,
//! never one above, and no two name each other (`scripts/check-cycles`
//! finds no cycle among these modules; `OPS_LEAVES` and `OPS_SERVICES` in
//! `scripts/check-layers` keep the three layers).
//!
//! 1. **Leaf helpers** (and the verbs others call that name no module
//!    above them: `review`, `trust`, `conflicts`): `facts` (the
//!    session facts several use cases share: how the branch came to be,
//!    who is making the session, its parent conductor, the merge journal),
//!    `interrupt` (an interrupted `owt new`), `metadata` (owt's file beside
//!    a worktree's git metadata), `ship_message`, `ports`, `prompt`,
//!    `review`, `trash`, `conflicts`, `deps`, `trust` (→ `deps`), `owned`
//!    (→ `trust`).
//! 2. **Shared services**: `list` (session views, git facts), `guard` (→
//!    `list`), `allowed` (→ `list`: the check before a board action),
//!    `launch` (a session's agent launched: the request, its options, the
//!    host's spec; below `new`, `queue`, `resume` and `fork`), `queue` (→
//!    `launch`: admission), `setup` (the new worktree's setup), `remote`
//!    (→ `guard`, `launch`: remotes, a remote session's record and delete).
//! 3. **Use cases**, one per verb, over the services and helpers and over
//!    one another one way only: `delete` (→ `queue`, `remote`); `new` (→
//!    `delete`, `queue`, `setup`, `launch`); `merge` (→ `delete`,
//!    `remote`; it merges and ships remote sessions too, and ships behind
//!    the checks); `fork`, `conduct`, `acp` (→ `new`); `checks`, `doctor`,
//!    `conduct` (→ `merge`); `cleanup`, `pr_monitor`, `doctor` (→ `delete`);
//!    `resume`, `agent`, `pr`, and the rest.

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
pub mod facts;
pub mod fork;
pub mod guard;
pub mod host;
pub mod interrupt;
pub mod launch;
pub mod list;
pub mod merge;
pub mod metadata;
pub mod new;
pub mod notes;
pub mod owned;
pub mod ports;
pub mod pr;
pub mod pr_monitor;
pub mod prompt;
pub mod queue;
pub mod remote;
pub mod resume;
pub mod review;
pub mod setup;
pub mod ship_message;
pub mod sync;
pub mod trash;
pub mod trust;
pub mod usage;

use crate::store::SessionRow;

pub use crate::context::{owt_home, Context};

impl Context {
    /// Lines of scrollback a session host keeps: `[agent] scrollback`, or
    /// the host's default.
    pub fn scrollback(&self) -> usize {
        self.config
            .config
            .agent
            .scrollback
            .map_or(crate::session::DEFAULT_SCROLLBACK, |n| n as usize)
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
