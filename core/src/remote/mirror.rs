//! The local record of a remote's sessions: what a [`FactsPush`] changes
//! in this machine's store, and the `unreachable` fact while the bridge is
//! down.
//!
//! Invariants: only the fact kinds in [`MIRRORED`] are copied (the guard's
//! own facts are recomputed here); times are shifted into this machine's clock; a session is removed
//! here only when a connected remote says it is gone (a full list without
//! it, or a removal), never because the remote cannot be reached.

use std::collections::{BTreeMap, BTreeSet};

use owt_protocol::bridge::{FactsPush, RemoteSession};

use owt_protocol::SessionKind;

use crate::status::{kind, UnreachableFact};
use crate::store::{RemoteSessionRecord, Store, StoreError};

/// Fact kinds copied from a remote session (what [`crate::status`] and the
/// first prompt read); the rest stay there. (`host` says, among others,
/// whether the run is headless; its pids and socket are the remote's, so
/// nothing here reconciles or signals a remote session.)
pub const MIRRORED: &[&str] = &[
    kind::HOST,
    kind::OUTPUT,
    kind::INPUT,
    kind::EXIT,
    kind::HOST_LOST,
    kind::HOOK,
    kind::SCREEN,
    kind::REPORT,
    kind::CONFLICT,
    kind::GIT,
    kind::SUMMARY,
];

/// What one push changed here.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Applied {
    /// Local names of sessions recorded or updated.
    pub sessions: Vec<String>,
    /// Local names of sessions removed (gone on the remote).
    pub removed: Vec<String>,
    pub facts_written: usize,
}

/// The mirror of one remote: remembers what it wrote, so a push that
/// repeats a fact (with a clock offset a few ms off) writes nothing.
#[derive(Debug, Default)]
pub struct Mirror {
    pub remote: String,
    pub repo_id: i64,
    /// Local name → kind → (value, remote time).
    written: BTreeMap<String, BTreeMap<String, (serde_json::Value, i64)>>,
}

impl Mirror {
    pub fn new(remote: &str, repo_id: i64) -> Mirror {
        Mirror {
            remote: remote.to_string(),
            repo_id,
            written: BTreeMap::new(),
        }
    }

    /// Records `push` (read on the remote at `push.now`) at local time
    /// `local_now`.
    pub fn apply(
        &mut self,
        store: &mut Store,
        push: &FactsPush,
        local_now: i64,
    ) -> Result<Applied, StoreError> {
        let offset = local_now - push.now;
        let mut applied = Applied::default();
        let mut seen = BTreeSet::new();
        for session in &push.sessions {
            let local = super::local_name(&self.remote, &session.name);
            seen.insert(local.clone());
            applied.facts_written += self.record(store, &local, session, offset)?;
            applied.sessions.push(local);
        }
        let mut gone: Vec<String> = push
            .removed
            .iter()
            .map(|name| super::local_name(&self.remote, name))
            .collect();
        if push.full {
            for row in store.remote_sessions(self.repo_id, Some(&self.remote))? {
                if !seen.contains(&row.name) {
                    gone.push(row.name);
                }
            }
        }
        for name in gone {
            if let Some(row) = store.session_by_name(self.repo_id, &name)? {
                if row.remote().is_some_and(|(r, _)| r == self.remote) {
                    store.remove_session(&row, "removed-on-remote")?;
                    self.written.remove(&name);
                    applied.removed.push(name);
                }
            }
        }
        Ok(applied)
    }

    fn record(
        &mut self,
        store: &mut Store,
        local: &str,
        session: &RemoteSession,
        offset: i64,
    ) -> Result<usize, StoreError> {
        let row = store.upsert_remote_session(&RemoteSessionRecord {
            repo_id: self.repo_id,
            remote: &self.remote,
            name: local,
            task: &session.task,
            branch: &session.branch,
            base_branch: &session.base,
            worktree: &session.worktree,
            provider: &session.provider,
            kind: SessionKind::parse(&session.kind).unwrap_or(SessionKind::Worktree),
            created_at: session.created_at + offset,
        })?;
        let stored: BTreeSet<String> = store.facts(row.id)?.into_iter().map(|f| f.kind).collect();
        let written = self.written.entry(local.to_string()).or_default();
        let mut n = 0;
        let mut present = BTreeSet::new();
        for fact in &session.facts {
            if !MIRRORED.contains(&fact.kind.as_str()) {
                continue;
            }
            present.insert(fact.kind.clone());
            let key = (fact.value.clone(), fact.observed_at);
            if written.get(&fact.kind) == Some(&key) {
                continue;
            }
            store.record_fact_at(row.id, &fact.kind, &fact.value, fact.observed_at + offset)?;
            written.insert(fact.kind.clone(), key);
            n += 1;
        }
        // A fact the remote no longer has (a conflict resolved) goes here too.
        for kind in MIRRORED {
            if !present.contains(*kind) && stored.contains(*kind) {
                written.remove(*kind);
                store.clear_fact(row.id, kind)?;
                n += 1;
            }
        }
        if stored.contains(kind::UNREACHABLE) {
            store.clear_fact(row.id, kind::UNREACHABLE)?;
            store.add_event(self.repo_id, local, "reachable", &self.remote)?;
        }
        Ok(n)
    }
}

/// Marks every session of `remote` unreachable (keeping the time of the
/// first mark); returns the names newly marked.
pub fn mark_unreachable(
    store: &Store,
    repo_id: i64,
    remote: &str,
    reason: &str,
) -> Result<Vec<String>, StoreError> {
    let fact = UnreachableFact {
        remote: remote.to_string(),
        reason: Some(reason.to_string()),
    };
    let mut marked = Vec::new();
    for row in store.remote_sessions(repo_id, Some(remote))? {
        if store.record_fact_once(row.id, kind::UNREACHABLE, &fact)? {
            store.add_event(repo_id, &row.name, "unreachable", reason)?;
            marked.push(row.name);
        }
    }
    Ok(marked)
}

#[cfg(test)]
mod tests {
    use owt_protocol::bridge::RemoteFact;
    use owt_protocol::Status;

    use super::*;
    use crate::status::{derive_status, SessionFacts};

    fn fact(kind: &str, value: serde_json::Value, at: i64) -> RemoteFact {
        RemoteFact {
            kind: kind.into(),
            value,
            observed_at: at,
        }
    }

    fn session(name: &str, facts: Vec<RemoteFact>) -> RemoteSession {
        RemoteSession {
            name: name.into(),
            task: "fix the login".into(),
            branch: format!("owt/{name}"),
            base: "main".into(),
            worktree: format!("/home/me/src/app.worktrees/{name}"),
            provider: "claude".into(),
            kind: "worktree".into(),
            created_at: 1_000,
            facts,
        }
    }

    fn status_of(store: &Store, repo_id: i64, name: &str, now: i64) -> (Status, String) {
        let row = store.session_by_name(repo_id, name).unwrap().unwrap();
        let facts = SessionFacts::from_rows(row.created_at, &store.facts(row.id).unwrap());
        let d = derive_status(&facts, now);
        (d.status, d.text)
    }

    /// The remote's clock is 1 h behind: facts land at local times, so a
    /// fresh output is `working` here too; what is not mirrored stays there;
    /// a fact cleared there is cleared here; unreachable never deletes.
    #[test]
    fn a_push_is_recorded_in_local_time_and_unreachable_keeps_everything() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path()).unwrap();
        let repo = store
            .ensure_repo(std::path::Path::new("/r/.git"), std::path::Path::new("/r"))
            .unwrap();
        let mut mirror = Mirror::new("devbox", repo.id);
        let remote_now = 10_000_000;
        let local_now = remote_now + 3_600_000;
        let push = FactsPush {
            now: remote_now,
            full: true,
            sessions: vec![session(
                "fix-login",
                vec![
                    fact(kind::OUTPUT, serde_json::Value::Null, remote_now - 500),
                    fact(
                        kind::HOST,
                        serde_json::json!({"host_pid": 1, "agent_pid": 2, "socket": "/x"}),
                        5,
                    ),
                    fact("guard", serde_json::json!({"snapshot": "x"}), 5),
                    fact(
                        kind::CONFLICT,
                        serde_json::json!({"files": ["a.rs"]}),
                        remote_now - 400,
                    ),
                ],
            )],
            removed: vec![],
        };
        let applied = mirror.apply(&mut store, &push, local_now).unwrap();
        assert_eq!(applied.sessions, ["devbox:fix-login"]);
        assert_eq!(applied.facts_written, 3);
        let row = store
            .session_by_name(repo.id, "devbox:fix-login")
            .unwrap()
            .unwrap();
        assert_eq!(row.created_at, 1_000 + 3_600_000);
        let kinds: Vec<String> = store
            .facts(row.id)
            .unwrap()
            .into_iter()
            .map(|f| f.kind)
            .collect();
        assert_eq!(kinds, ["conflict", "host", "output"]);
        assert_eq!(
            status_of(&store, repo.id, "devbox:fix-login", local_now).1,
            "conflict in 1 file"
        );
        // The same push again writes nothing; the conflict resolved there
        // is cleared here.
        assert_eq!(
            mirror
                .apply(&mut store, &push, local_now + 3)
                .unwrap()
                .facts_written,
            0
        );
        let mut resolved = push.clone();
        resolved.sessions[0]
            .facts
            .retain(|f| f.kind != kind::CONFLICT);
        mirror.apply(&mut store, &resolved, local_now).unwrap();
        assert_eq!(
            status_of(&store, repo.id, "devbox:fix-login", local_now),
            (Status::Working, "working".into())
        );

        // The bridge goes down: unreachable, since the first mark; nothing
        // removed however long it lasts.
        let marked =
            mark_unreachable(&store, repo.id, "devbox", "ssh: connection refused").unwrap();
        assert_eq!(marked, ["devbox:fix-login"]);
        assert!(mark_unreachable(&store, repo.id, "devbox", "again")
            .unwrap()
            .is_empty());
        let (status, _) = status_of(&store, repo.id, "devbox:fix-login", local_now + 86_400_000);
        assert_eq!(status, Status::Unreachable);
        // Back: the next push clears it.
        mirror.apply(&mut store, &resolved, local_now + 1).unwrap();
        assert_eq!(
            status_of(&store, repo.id, "devbox:fix-login", local_now + 1000).0,
            Status::Working
        );

        // A full list without it (deleted over there) removes the record;
        // a session of this machine with a similar name is never touched.
        store
            .insert_session(
                &crate::store::NewSession {
                    repo_id: repo.id,
                    name: "fix-login",
                    task: "t",
                    branch_template: "owt/{name}",
                    base_branch: "main",
                    worktree_template: "/wt/{name}",
                    provider: "fake",
                    kind: SessionKind::Worktree,
                },
                |_| false,
            )
            .unwrap();
        let empty = FactsPush {
            now: remote_now,
            full: true,
            sessions: vec![],
            removed: vec![],
        };
        let applied = mirror.apply(&mut store, &empty, local_now).unwrap();
        assert_eq!(applied.removed, ["devbox:fix-login"]);
        let names: Vec<String> = store
            .all_sessions(repo.id)
            .unwrap()
            .into_iter()
            .map(|r| r.name)
            .collect();
        assert_eq!(names, ["fix-login"]);
    }
}
