//! The peer tools as library functions: who the caller is, and what each
//! tool reads from and writes to the store. [`super::server`] only parses
//! arguments and formats these results.
//!
//! Invariants: every write goes through [`owt_core::store::Store`]; results are
//! plain serde values (the tools' JSON output); errors are [`PeerError`]s
//! whose messages tell the agent what to do instead.

use std::path::Path;

use anyhow::Context as _;
use owt_protocol::Status;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::kind;
use owt_core::git;
use owt_core::ops::{self, list, Context};
use owt_core::status::{self, derive_status, ReportFact, SessionFacts};
use owt_core::store::{now_ms, SessionRow, Store, StoreError};

/// What the human is called in messages (the sender with no session).
pub const HUMAN: &str = "human";

#[derive(Debug, thiserror::Error)]
pub enum PeerError {
    #[error("no peer named `{name}`; {known}")]
    UnknownPeer { name: String, known: String },
    #[error("`{name}` is you; send to a peer (see list_peers) or to `*` for every other session")]
    ToSelf { name: String },
    #[error("{tool} works only inside an owt session (OWT_SESSION is not set); agents started with `owt new` have it")]
    NeedsSession { tool: &'static str },
    #[error(
        "this session ({name}) no longer exists; it was deleted, so nothing can be recorded for it"
    )]
    SessionGone { name: String },
    #[error("`{field}` is empty; {hint}")]
    Empty {
        field: &'static str,
        hint: &'static str,
    },
    #[error("reading the changed files of `{peer}`: {message}")]
    Changes { peer: String, message: String },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Other(#[from] anyhow::Error),
}

/// Fact [`kind::SUMMARY`]: the one-line summary an agent published.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SummaryFact {
    pub summary: String,
}

/// `report_status` kinds. `done`, `blocked` and `question` change the
/// derived status (done, blocked, needs-input); `note` only informs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ReportKind {
    Done,
    Blocked,
    Question,
    Note,
}

impl ReportKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ReportKind::Done => "done",
            ReportKind::Blocked => "blocked",
            ReportKind::Question => "question",
            ReportKind::Note => "note",
        }
    }
}

/// One other session, as `list_peers` shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PeerInfo {
    pub name: String,
    pub branch: String,
    pub task: String,
    /// Derived status: starting, working, idle, needs-input, blocked, done,
    /// exited, conflict.
    pub status: Status,
    pub status_text: String,
    /// Its latest `set_summary`, if any.
    pub summary: Option<String>,
    /// Its latest `report_status`, if any.
    pub report: Option<ReportFact>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PeerList {
    /// The caller's session name (`human` outside a session).
    pub you: String,
    pub peers: Vec<PeerInfo>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sent {
    pub id: i64,
    /// A peer name, or `*`.
    pub to: String,
    /// The sessions that will see it in `check_messages`.
    pub recipients: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub id: i64,
    /// A session name, or `human`.
    pub from: String,
    /// The caller's name, or `*` for a broadcast.
    pub to: String,
    pub text: String,
    /// Milliseconds since the Unix epoch.
    pub sent_at: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Inbox {
    pub messages: Vec<Message>,
}

/// A peer's changed files.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PeerFiles {
    pub peer: String,
    /// `guard` (paths and hunks from the Conflict Guard) or `git` (paths
    /// only, read from the worktree because the guard has not scanned it).
    pub source: String,
    /// When the guard computed them (ms since the epoch); `None` for `git`.
    pub computed_at: Option<i64>,
    pub files: Vec<PeerFile>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PeerFile {
    pub path: String,
    /// The path in the base, for a rename.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_path: Option<String>,
    /// added, deleted, modified, mode-changed, type-changed, renamed; `None`
    /// when only the path is known.
    pub change: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub binary: bool,
    /// Changed line ranges: `old_*` in the base branch, `new_*` in the
    /// peer's file. Empty when unknown (source `git`) or binary.
    pub hunks: Vec<HunkView>,
}

/// One hunk of a guard fact (the shape of `owt_core::guard::Hunk`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct HunkView {
    pub old_start: u32,
    pub old_lines: u32,
    pub new_start: u32,
    pub new_lines: u32,
}

/// The part of the Conflict Guard's fact (`owt_core::guard::GuardFact`) this
/// module reads; unknown fields are ignored, so the guard may grow.
#[derive(Debug, Clone, Default, Deserialize)]
struct GuardFactView {
    #[serde(default)]
    changes: Vec<GuardChangeView>,
    #[serde(default)]
    computed_at: Option<i64>,
}

#[derive(Debug, Clone, Deserialize)]
struct GuardChangeView {
    path: String,
    #[serde(default)]
    old_path: Option<String>,
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    binary: bool,
    #[serde(default)]
    hunks: Vec<HunkView>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SummarySet {
    pub summary: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reported {
    pub kind: ReportKind,
    pub text: String,
    /// The caller's derived status once the report is recorded.
    pub status: Status,
}

/// The peer tools of one caller in one repository.
pub struct Peers {
    pub(crate) ctx: Context,
    pub(crate) me: Option<SessionRow>,
}

impl std::fmt::Debug for Peers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Peers")
            .field("repo", &self.ctx.repo_row.common_dir)
            .field("me", &self.me.as_ref().map(|s| &s.name))
            .finish()
    }
}

impl Peers {
    /// Opens the caller's repository: the one of session `session` (its
    /// short id from `OWT_SESSION`, or its name), else the one containing
    /// `dir` (or the current directory).
    pub fn open(dir: Option<&Path>, session: Option<&str>) -> anyhow::Result<Peers> {
        let Some(wanted) = session.map(str::trim).filter(|s| !s.is_empty()) else {
            return Ok(Peers {
                ctx: Context::open(dir)?,
                me: None,
            });
        };
        let home = ops::owt_home()?;
        let by_id = Store::open(&home)?.session_by_short_id(wanted)?;
        let repo_dir = by_id
            .as_ref()
            .map(|row| row.worktree_path.clone())
            .filter(|path| path.exists());
        let ctx = match repo_dir.as_deref() {
            Some(worktree) => Context::open(Some(worktree))
                .with_context(|| format!("opening the repository of {}", worktree.display()))?,
            None => Context::open(dir)?,
        };
        let me = match by_id {
            Some(row) if row.repo_id == ctx.repo_row.id => row,
            Some(row) => anyhow::bail!(
                "session {wanted} ({}) belongs to another repository than {}; run owt mcp from its worktree",
                row.name,
                ctx.repo.main_root().display()
            ),
            // `OWT_SESSION` holds a name in setup scripts.
            None => ctx.store.session_by_name(ctx.repo_row.id, wanted)?.ok_or_else(|| {
                anyhow::anyhow!(
                    "OWT_SESSION={wanted} names no session in {} (store {}); unset it to use the tools as the human",
                    ctx.repo.main_root().display(),
                    home.display()
                )
            })?,
        };
        Ok(Peers { ctx, me: Some(me) })
    }

    /// A second handle on the same repository for the same caller: a call
    /// that waits (`wait_session`) runs on it, so the other tools do not
    /// queue behind the wait.
    pub fn reopen(&self) -> anyhow::Result<Peers> {
        let dir = self
            .me
            .as_ref()
            .map(|me| me.worktree_path.clone())
            .filter(|path| path.exists())
            .unwrap_or_else(|| self.ctx.repo.main_root().to_path_buf());
        Ok(Peers {
            ctx: Context::open(Some(&dir))?,
            me: self.me.clone(),
        })
    }

    /// Peers over an open context (tests).
    pub fn with_context(ctx: Context, me: Option<SessionRow>) -> Peers {
        Peers { ctx, me }
    }

    /// The caller's session name, or [`HUMAN`].
    pub fn caller_name(&self) -> &str {
        self.me.as_ref().map_or(HUMAN, |s| s.name.as_str())
    }

    /// The caller's session, re-read (it may have been deleted since).
    pub(crate) fn me(&self, tool: &'static str) -> Result<SessionRow, PeerError> {
        let me = self.me.as_ref().ok_or(PeerError::NeedsSession { tool })?;
        self.ctx
            .store
            .session_by_id(me.id)?
            .ok_or_else(|| PeerError::SessionGone {
                name: me.name.clone(),
            })
    }

    fn is_me(&self, row: &SessionRow) -> bool {
        self.me.as_ref().is_some_and(|me| me.id == row.id)
    }

    fn others(&self) -> Result<Vec<SessionRow>, PeerError> {
        Ok(self
            .ctx
            .store
            .sessions(self.ctx.repo_row.id)?
            .into_iter()
            .filter(|row| !self.is_me(row))
            .collect())
    }

    fn unknown_peer(&self, name: &str) -> Result<PeerError, PeerError> {
        let names: Vec<String> = self.others()?.into_iter().map(|s| s.name).collect();
        let known = if names.is_empty() {
            "this repository has no other sessions".to_string()
        } else {
            format!("peers: {}", names.join(", "))
        };
        Ok(PeerError::UnknownPeer {
            name: name.to_string(),
            known,
        })
    }

    /// A session of this repository by name (the caller included).
    fn session_named(&self, name: &str) -> Result<SessionRow, PeerError> {
        match self.ctx.store.session_by_name(self.ctx.repo_row.id, name)? {
            Some(row) => Ok(row),
            None => Err(self.unknown_peer(name)?),
        }
    }

    /// `list_peers`: every other session with its derived status, summary
    /// and last report.
    pub fn list_peers(&self) -> Result<PeerList, PeerError> {
        let views = list::session_views_with(&self.ctx, false)?;
        let mut peers = Vec::new();
        for view in views {
            if self.me.as_ref().is_some_and(|me| me.short_id == view.id) {
                continue;
            }
            let Some(row) = self
                .ctx
                .store
                .session_by_name(self.ctx.repo_row.id, &view.name)?
            else {
                continue;
            };
            let summary = self
                .ctx
                .store
                .fact::<SummaryFact>(row.id, kind::SUMMARY)
                .ok()
                .flatten()
                .map(|(f, _)| f.summary);
            let report = self
                .ctx
                .store
                .fact::<ReportFact>(row.id, status::kind::REPORT)
                .ok()
                .flatten()
                .map(|(f, _)| f);
            peers.push(PeerInfo {
                name: view.name,
                branch: view.branch,
                task: view.task,
                status: view.status,
                status_text: view.status_text,
                summary,
                report,
            });
        }
        Ok(PeerList {
            you: self.caller_name().to_string(),
            peers,
        })
    }

    /// `send_message`: to one peer by name, or to `*` (every other session).
    pub fn send_message(&self, to: &str, text: &str) -> Result<Sent, PeerError> {
        let to = to.trim();
        if text.trim().is_empty() {
            return Err(PeerError::Empty {
                field: "text",
                hint: "write the message to send",
            });
        }
        if to.is_empty() {
            return Err(PeerError::Empty {
                field: "to",
                hint: "give a peer name (see list_peers) or `*` for every other session",
            });
        }
        let from = self.me.as_ref().map(|s| s.name.as_str());
        if from.is_some() {
            self.me("send_message")?;
        }
        let repo_id = self.ctx.repo_row.id;
        if to == "*" {
            let recipients = self.others()?.into_iter().map(|s| s.name).collect();
            let id = self.ctx.store.add_message(repo_id, from, None, text)?;
            return Ok(Sent {
                id,
                to: to.to_string(),
                recipients,
            });
        }
        let peer = self.session_named(to)?;
        if self.is_me(&peer) {
            return Err(PeerError::ToSelf { name: peer.name });
        }
        let id = self
            .ctx
            .store
            .add_message(repo_id, from, Some(&peer.name), text)?;
        Ok(Sent {
            id,
            to: peer.name.clone(),
            recipients: vec![peer.name],
        })
    }

    /// `check_messages`: unread messages to the caller (and broadcasts by
    /// others), oldest first; each is returned once.
    pub fn check_messages(&mut self) -> Result<Inbox, PeerError> {
        let me = self.me("check_messages")?;
        let rows = self.ctx.store.take_messages(me.repo_id, &me.name)?;
        let messages = rows
            .into_iter()
            .map(|m| Message {
                id: m.id,
                from: m.from_session.unwrap_or_else(|| HUMAN.to_string()),
                to: m.to_session.unwrap_or_else(|| "*".to_string()),
                text: m.body,
                sent_at: m.created_at,
            })
            .collect();
        Ok(Inbox { messages })
    }

    /// `set_summary`: replaces the caller's summary.
    pub fn set_summary(&self, summary: &str) -> Result<SummarySet, PeerError> {
        let me = self.me("set_summary")?;
        let summary = summary.trim();
        if summary.is_empty() {
            return Err(PeerError::Empty {
                field: "summary",
                hint: "say in a sentence what you are working on",
            });
        }
        let fact = SummaryFact {
            summary: summary.to_string(),
        };
        self.ctx.store.record_fact(me.id, kind::SUMMARY, &fact)?;
        Ok(SummarySet {
            summary: fact.summary,
        })
    }

    /// `get_peer_files`: the peer's changed files and hunks from the
    /// Conflict Guard's fact; its changed paths from git when the guard has
    /// recorded nothing (or nothing yet) for it.
    pub fn get_peer_files(&self, peer: &str) -> Result<PeerFiles, PeerError> {
        let peer = peer.trim();
        if peer.is_empty() {
            return Err(PeerError::Empty {
                field: "peer",
                hint: "give a peer name (see list_peers)",
            });
        }
        let row = self.session_named(peer)?;
        let guard = self
            .ctx
            .store
            .fact::<GuardFactView>(row.id, kind::GUARD)
            .ok()
            .flatten()
            .map(|(f, _)| f);
        if let Some(fact) = &guard {
            if !fact.changes.is_empty() {
                return Ok(files_from_guard(&row.name, fact));
            }
        }
        if !row.worktree_path.exists() {
            return Ok(PeerFiles {
                peer: row.name,
                source: "git".into(),
                computed_at: None,
                files: Vec::new(),
                note: Some("its worktree no longer exists".into()),
            });
        }
        let paths = git::changed_paths(&self.ctx.repo, &row.worktree_path, &row.base_branch)
            .map_err(|e| PeerError::Changes {
                peer: row.name.clone(),
                message: e.to_string(),
            })?;
        match guard {
            Some(fact) if paths.is_empty() => Ok(files_from_guard(&row.name, &fact)),
            _ => Ok(PeerFiles {
                peer: row.name,
                source: "git".into(),
                computed_at: None,
                files: paths
                    .into_iter()
                    .map(|path| PeerFile {
                        path,
                        old_path: None,
                        change: None,
                        binary: false,
                        hunks: Vec::new(),
                    })
                    .collect(),
                note: Some(
                    "paths only: hunks appear once the Conflict Guard (owt lsp in an editor, or `owt guard`) has scanned this session"
                        .into(),
                ),
            }),
        }
    }

    /// `report_status`: records a `report` fact (what the editor shows as a
    /// notification, and what the derived status reads) and an event.
    pub fn report_status(&self, kind: ReportKind, text: &str) -> Result<Reported, PeerError> {
        let me = self.me("report_status")?;
        let text = text.trim();
        if text.is_empty() && kind != ReportKind::Done {
            return Err(PeerError::Empty {
                field: "text",
                hint: "say what blocks you, what you ask, or what you note",
            });
        }
        let fact = ReportFact {
            kind: kind.as_str().to_string(),
            text: text.to_string(),
        };
        let store = &self.ctx.store;
        store.record_fact(me.id, status::kind::REPORT, &fact)?;
        let detail = if text.is_empty() {
            kind.as_str().to_string()
        } else {
            format!("{}: {text}", kind.as_str())
        };
        store.add_event(me.repo_id, &me.name, "report", &detail)?;
        let facts = SessionFacts::from_rows(me.created_at, &store.facts(me.id)?);
        Ok(Reported {
            kind,
            text: fact.text,
            status: derive_status(&facts, now_ms()).status,
        })
    }
}

fn files_from_guard(peer: &str, fact: &GuardFactView) -> PeerFiles {
    PeerFiles {
        peer: peer.to_string(),
        source: "guard".into(),
        computed_at: fact.computed_at,
        files: fact
            .changes
            .iter()
            .map(|c| PeerFile {
                path: c.path.clone(),
                old_path: c.old_path.clone(),
                change: c.kind.clone(),
                binary: c.binary,
                hunks: c.hunks.clone(),
            })
            .collect(),
        note: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_guard_fact_shape() {
        // As `owt_core::guard::GuardFact` serializes (guard branch).
        let stored = serde_json::json!({
            "snapshot": "4b825dc642cb6eb9a060e54bf8d69288fbee4904",
            "head": "abc", "merge_base": "def",
            "changes": [
                {"path": "src/a.rs", "kind": "modified",
                 "hunks": [{"old_start": 3, "old_lines": 2, "new_start": 3, "new_lines": 4}]},
                {"path": "b.png", "kind": "added", "binary": true, "hunks": []},
                {"path": "new.rs", "old_path": "old.rs", "kind": "renamed", "hunks": []}
            ],
            "computed_at": 1700000000000i64
        });
        let fact: GuardFactView = serde_json::from_value(stored).unwrap();
        let files = files_from_guard("a", &fact);
        let json = serde_json::to_string(&files).unwrap();
        expect_test::expect![[r#"{"peer":"a","source":"guard","computed_at":1700000000000,"files":[{"path":"src/a.rs","change":"modified","hunks":[{"old_start":3,"old_lines":2,"new_start":3,"new_lines":4}]},{"path":"b.png","change":"added","binary":true,"hunks":[]},{"path":"new.rs","old_path":"old.rs","change":"renamed","hunks":[]}]}"#]].assert_eq(&json);
    }

    #[test]
    fn report_kinds_match_the_status_rules() {
        for (kind, text) in [
            (ReportKind::Done, "\"done\""),
            (ReportKind::Blocked, "\"blocked\""),
            (ReportKind::Question, "\"question\""),
            (ReportKind::Note, "\"note\""),
        ] {
            assert_eq!(serde_json::to_string(&kind).unwrap(), text);
            assert_eq!(format!("\"{}\"", kind.as_str()), text);
        }
    }
}
