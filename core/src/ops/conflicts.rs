//! Conflict Guard's real conflicts, routed to the agents concerned
//! (`[feedback] conflicts = "tell"`): each agent is told once per new
//! conflict — the other party, the files and both sides' lines — not on
//! every recompute.
//!
//! Invariants: a conflict is told again only after it went away and came
//! back (or its set of paths changed); nothing is typed into an agent that
//! is not live or shows a permission dialog (it is told later, once it can
//! be); the keys told are a fact (`told-conflicts`) so every process that
//! computes the guard agrees.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use owt_protocol::guard::{GuardPair, Level};
use owt_protocol::Status;

use crate::feedback::messages::{self, ConflictPath};
use crate::status::feedback::{kind, ToldConflicts};
use crate::status::{derive_status, SessionFacts};
use crate::store::{now_ms, Store};

/// One session's conflicts with one other party.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    pub session: String,
    pub other: String,
    pub with_base: bool,
    pub paths: Vec<ConflictPath>,
}

impl Notice {
    /// Names this conflict: the other party and the conflicting paths.
    pub fn key(&self) -> String {
        let paths: Vec<&str> = self.paths.iter().map(|p| p.path.as_str()).collect();
        format!(
            "{}{}:{}",
            if self.with_base { "base:" } else { "" },
            self.other,
            paths.join("\u{0}")
        )
    }

    pub fn message(&self) -> String {
        messages::guard_conflict(&self.other, self.with_base, &self.paths)
    }
}

/// Every session's conflicts in `pairs` (pure), one notice per session
/// and other party, paths sorted.
pub fn notices(pairs: &[GuardPair]) -> Vec<Notice> {
    let mut out: BTreeMap<(String, String), Notice> = BTreeMap::new();
    for pair in pairs.iter().filter(|p| p.level == Level::Conflict) {
        for (me, other, mine_is_a) in [(&pair.a, &pair.b, true), (&pair.b, &pair.a, false)] {
            if me == crate::guard::YOU {
                continue;
            }
            let mut paths: Vec<ConflictPath> = pair
                .paths
                .iter()
                .filter(|p| p.level == Level::Conflict || pair.conflicting_paths.contains(&p.path))
                .map(|p| ConflictPath {
                    path: p.path.clone(),
                    mine: if mine_is_a {
                        p.a_ranges.clone()
                    } else {
                        p.b_ranges.clone()
                    },
                    theirs: if mine_is_a {
                        p.b_ranges.clone()
                    } else {
                        p.a_ranges.clone()
                    },
                })
                .collect();
            if paths.is_empty() {
                paths = pair
                    .conflicting_paths
                    .iter()
                    .map(|path| ConflictPath {
                        path: path.clone(),
                        mine: Vec::new(),
                        theirs: Vec::new(),
                    })
                    .collect();
            }
            paths.sort_by(|a, b| a.path.cmp(&b.path));
            out.insert(
                (me.clone(), other.clone()),
                Notice {
                    session: me.clone(),
                    other: other.clone(),
                    with_base: false,
                    paths,
                },
            );
        }
    }
    out.into_values().collect()
}

/// Types each new conflict into its session's agent and records what was
/// told; returns `(session, message)` for each message typed.
pub fn tell_new(
    store: &Store,
    home: &Path,
    repo_id: i64,
    notices: &[Notice],
) -> Vec<(String, String)> {
    let mut by_session: BTreeMap<&str, Vec<&Notice>> = BTreeMap::new();
    for notice in notices {
        by_session.entry(&notice.session).or_default().push(notice);
    }
    let mut sent = Vec::new();
    let sessions = match store.sessions(repo_id) {
        Ok(rows) => rows,
        Err(e) => {
            tracing::warn!("conflict feedback: listing sessions: {e}");
            return sent;
        }
    };
    for row in sessions {
        let current: Vec<&Notice> = by_session.remove(row.name.as_str()).unwrap_or_default();
        let told = store
            .fact::<ToldConflicts>(row.id, kind::TOLD_CONFLICTS)
            .ok()
            .flatten()
            .map(|(t, _)| t)
            .unwrap_or_default();
        let told: BTreeSet<String> = told.keys.into_iter().collect();
        let current_keys: BTreeSet<String> = current.iter().map(|n| n.key()).collect();
        // Forget conflicts that went away: if they come back, they are new.
        let mut keep: BTreeSet<String> = told.intersection(&current_keys).cloned().collect();
        let fresh: Vec<&&Notice> = current
            .iter()
            .filter(|n| !told.contains(&n.key()))
            .collect();
        if !fresh.is_empty() && can_be_told(store, &row) {
            for notice in fresh {
                let text = notice.message();
                match crate::session::send(home, &row, &text, true) {
                    Ok(()) => {
                        keep.insert(notice.key());
                        sent.push((row.name.clone(), text));
                    }
                    Err(e) => {
                        tracing::info!(session = %row.name, "conflict feedback not typed: {e}")
                    }
                }
            }
        }
        if keep != told {
            let fact = ToldConflicts {
                keys: keep.into_iter().collect(),
            };
            if let Err(e) = store.record_fact(row.id, kind::TOLD_CONFLICTS, &fact) {
                tracing::warn!("conflict feedback: recording what was told: {e}");
            }
        }
    }
    sent
}

/// The agent runs and shows no permission dialog (where typed text would
/// be an answer).
pub fn can_be_told(store: &Store, row: &crate::store::SessionRow) -> bool {
    let Ok(rows) = store.facts(row.id) else {
        return false;
    };
    let mut facts = SessionFacts::from_rows(row.created_at, &rows);
    facts.feedback = Default::default();
    let derived = derive_status(&facts, now_ms());
    !matches!(
        derived.status,
        Status::Exited | Status::Blocked | Status::Starting
    ) && facts.host.is_some()
}

#[cfg(test)]
mod tests {
    use owt_protocol::guard::{GuardPath, LineRange};

    use super::*;

    fn pair(a: &str, b: &str, level: Level, path: &str) -> GuardPair {
        GuardPair {
            a: a.into(),
            b: b.into(),
            level,
            paths: vec![GuardPath {
                path: path.into(),
                level,
                a_ranges: vec![LineRange { start: 3, lines: 2 }],
                b_ranges: vec![LineRange { start: 4, lines: 1 }],
                detail: None,
                ignored: false,
                a_change: None,
                b_change: None,
                a_symbols: Vec::new(),
                b_symbols: Vec::new(),
            }],
            conflicting_paths: if level == Level::Conflict {
                vec![path.into()]
            } else {
                Vec::new()
            },
            conflicting_orders: Vec::new(),
            not_merged: Vec::new(),
            lines_from: None,
            semantic: Vec::new(),
        }
    }

    #[test]
    fn each_session_hears_of_its_conflicts_with_its_own_lines_first() {
        let got = notices(&[
            pair("a", "b", Level::Conflict, "src/x.rs"),
            pair("a", "you", Level::Conflict, "src/y.rs"),
            pair("b", "c", Level::HunkOverlap, "src/z.rs"),
        ]);
        let summary: Vec<(String, String, String, u32)> = got
            .iter()
            .map(|n| {
                (
                    n.session.clone(),
                    n.other.clone(),
                    n.paths[0].path.clone(),
                    n.paths[0].mine[0].start,
                )
            })
            .collect();
        assert_eq!(
            summary,
            vec![
                ("a".into(), "b".into(), "src/x.rs".into(), 3),
                ("a".into(), "you".into(), "src/y.rs".into(), 3),
                ("b".into(), "a".into(), "src/x.rs".into(), 4),
            ],
            "no notice for `you`, none below the conflict level"
        );
        assert_ne!(got[0].key(), got[1].key());
    }
}
