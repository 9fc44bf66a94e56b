//! Leases: who does a job that must not be done twice at once (watching a
//! pull request), kept as a fact of the session so they go with it.
//!
//! Invariant: taking a lease is one SQL statement — it succeeds only when
//! the lease is free, expired, or already the taker's — so two processes
//! can never both hold it.

use rusqlite::params;

use super::{Result, Store};

impl Store {
    /// Takes (or renews) the lease `kind` of a session for `holder` until
    /// `now + ttl_ms`; returns whether `holder` has it now.
    pub fn take_lease(
        &self,
        session_id: i64,
        kind: &str,
        holder: &str,
        now: i64,
        ttl_ms: i64,
    ) -> Result<bool> {
        let value = serde_json::json!({ "holder": holder, "expires_at": now + ttl_ms }).to_string();
        let n = self.conn().execute(
            "INSERT INTO facts (session_id, kind, value, observed_at) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT(session_id, kind) DO UPDATE
                SET value = excluded.value, observed_at = excluded.observed_at
                WHERE json_extract(facts.value, '$.holder') = ?5
                   OR COALESCE(json_extract(facts.value, '$.expires_at'), 0) < ?4",
            params![session_id, kind, value, now, holder],
        )?;
        Ok(n == 1)
    }

    /// Gives the lease up, if `holder` has it.
    pub fn release_lease(&self, session_id: i64, kind: &str, holder: &str) -> Result<()> {
        self.conn().execute(
            "DELETE FROM facts WHERE session_id = ?1 AND kind = ?2
                AND json_extract(value, '$.holder') = ?3",
            params![session_id, kind, holder],
        )?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::{NewSession, Store};

    #[test]
    fn one_holder_at_a_time_until_it_expires_or_is_released() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path()).unwrap();
        let repo = store
            .ensure_repo(&dir.path().join("r/.git"), &dir.path().join("r"))
            .unwrap();
        let row = store
            .insert_session(
                &NewSession {
                    repo_id: repo.id,
                    name: "s",
                    task: "t",
                    branch_template: "owt/{name}",
                    base_branch: "main",
                    worktree_template: "/wt/{name}",
                    provider: "claude",
                    kind: owt_protocol::SessionKind::Worktree,
                },
                |_| false,
            )
            .unwrap();
        let other = Store::open(dir.path()).unwrap();
        assert!(store
            .take_lease(row.id, "pr-lease", "a", 1_000, 100)
            .unwrap());
        assert!(!other
            .take_lease(row.id, "pr-lease", "b", 1_050, 100)
            .unwrap());
        assert!(
            store
                .take_lease(row.id, "pr-lease", "a", 1_090, 100)
                .unwrap(),
            "renewed"
        );
        assert!(!other
            .take_lease(row.id, "pr-lease", "b", 1_150, 100)
            .unwrap());
        assert!(
            other
                .take_lease(row.id, "pr-lease", "b", 1_191, 100)
                .unwrap(),
            "expired"
        );
        other.release_lease(row.id, "pr-lease", "a").unwrap();
        assert!(
            !store
                .take_lease(row.id, "pr-lease", "a", 1_200, 100)
                .unwrap(),
            "not a's to release"
        );
        other.release_lease(row.id, "pr-lease", "b").unwrap();
        assert!(store
            .take_lease(row.id, "pr-lease", "a", 1_200, 100)
            .unwrap());
    }
}
