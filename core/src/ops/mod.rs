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
pub mod watch;

use crate::store::SessionRow;

pub use crate::context::{owt_home, Context};

impl Context {
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
