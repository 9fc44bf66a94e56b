//! The conductor tools as library functions over [`Peers`]: a conductor
//! session spawns children, lists and waits for them, reads their diffs,
//! types into them and (when allowed) ships them. The rules (who may
//! conduct, how many children, whose children) are
//! `owt_core::ops::conduct`'s; this module adds the caller's identity and
//! the tools' JSON shapes.

use std::time::Duration;

use owt_core::ops::{self, conduct};
use owt_core::session::WaitOutcome;
use owt_core::store::SessionRow;
use owt_protocol::Status;
use serde::{Deserialize, Serialize};

use super::peers::{PeerError, Peers};

/// The longest `wait_session` blocks (its `timeout_secs` is capped here).
pub const MAX_WAIT_SECS: u64 = 1800;

/// A child as `list_sessions` shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChildInfo {
    pub name: String,
    pub branch: String,
    pub agent: String,
    pub task: String,
    pub status: Status,
    pub status_text: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Children {
    /// The conductor's session name.
    pub you: String,
    pub children: Vec<ChildInfo>,
    /// `[mcp] max_children`.
    pub max_children: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Spawned {
    pub name: String,
    pub branch: String,
    pub worktree: String,
    pub agent: String,
    /// The conductor (you).
    pub parent: String,
    /// Its agent started; `false` with `queued`: it waits for room.
    pub started: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queued: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Waited {
    pub name: String,
    /// needs-you (done, needs input, blocked), exited, or timeout.
    pub outcome: String,
    pub status: Status,
    pub status_text: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SentTo {
    pub name: String,
    pub sent: bool,
}

impl Peers {
    /// Whether the caller may conduct (it then gets the conductor tools).
    pub fn is_conductor(&self) -> bool {
        self.me
            .as_ref()
            .is_some_and(|me| conduct::may_conduct(&self.ctx, me).is_ok())
    }

    /// The caller, when it may conduct.
    fn conductor(&self, tool: &'static str) -> Result<SessionRow, PeerError> {
        let me = self.me(tool)?;
        conduct::may_conduct(&self.ctx, &me)
            .map_err(|why| PeerError::Other(anyhow::anyhow!(why)))?;
        Ok(me)
    }

    /// `spawn_session`: a child session on `task`.
    pub fn spawn_session(&mut self, req: &conduct::SpawnRequest) -> Result<Spawned, PeerError> {
        let me = self.conductor("spawn_session")?;
        if req.task.trim().is_empty() {
            return Err(PeerError::Empty {
                field: "task",
                hint: "say what the child agent should do",
            });
        }
        let made = conduct::spawn(&mut self.ctx, &me, req)?;
        Ok(Spawned {
            name: made.session.name.clone(),
            branch: made.session.branch.clone(),
            worktree: made.session.worktree_path.display().to_string(),
            agent: made.session.provider.clone(),
            parent: me.name,
            started: made.agent_started,
            queued: made.queued,
            warnings: made.warnings,
        })
    }

    /// `list_sessions`: the caller's children with their status.
    pub fn list_sessions(&self) -> Result<Children, PeerError> {
        let me = self.conductor("list_sessions")?;
        let mut children = Vec::new();
        for row in conduct::children(&self.ctx, &me)? {
            let view = ops::list::session_view(&self.ctx, &row)?;
            children.push(ChildInfo {
                name: row.name,
                branch: row.branch,
                agent: row.provider,
                task: row.task,
                status: view.status,
                status_text: view.status_text,
            });
        }
        Ok(Children {
            you: me.name,
            children,
            max_children: self.ctx.config.config.mcp.max_children,
        })
    }

    /// `wait_session`: blocks until the child needs you, is done or
    /// exited, or `timeout_secs` pass.
    pub fn wait_session(&self, name: &str, timeout_secs: u64) -> Result<Waited, PeerError> {
        let me = self.conductor("wait_session")?;
        let row = conduct::child(&self.ctx, &me, name)?;
        let timeout = Duration::from_secs(timeout_secs.clamp(1, MAX_WAIT_SECS));
        let (name, outcome) = ops::agent::wait(&self.ctx, &row.name, Some(timeout))?;
        let (outcome, derived) = match outcome {
            WaitOutcome::Ready(d) => ("needs-you", d),
            WaitOutcome::Exited(d) => ("exited", d),
            WaitOutcome::TimedOut(d) => ("timeout", d),
        };
        Ok(Waited {
            name,
            outcome: outcome.to_string(),
            status: derived.status,
            status_text: derived.text,
        })
    }

    /// `session_diff`: the child's changes against its base.
    pub fn session_diff(&self, name: &str) -> Result<serde_json::Value, PeerError> {
        let me = self.conductor("session_diff")?;
        let row = conduct::child(&self.ctx, &me, name)?;
        let report = ops::review::diff(&self.ctx, &row.name, None)?;
        serde_json::to_value(report).map_err(|e| PeerError::Other(e.into()))
    }

    /// `send_to_session`: types `text` (then Enter) into the child.
    pub fn send_to_session(&self, name: &str, text: &str) -> Result<SentTo, PeerError> {
        let me = self.conductor("send_to_session")?;
        if text.trim().is_empty() {
            return Err(PeerError::Empty {
                field: "text",
                hint: "say what to type into the child",
            });
        }
        let row = conduct::child(&self.ctx, &me, name)?;
        let to = ops::agent::SendTo::Session(row.name.clone());
        let sent = ops::agent::send(&self.ctx, &to, text, true)?;
        if let Some((_, e)) = sent.failed.into_iter().next() {
            return Err(PeerError::Other(e));
        }
        Ok(SentTo {
            name: row.name,
            sent: true,
        })
    }

    /// `ship_session`: ships the child, when `[mcp] conductor_can_ship`.
    pub fn ship_session(&mut self, name: &str) -> Result<serde_json::Value, PeerError> {
        let me = self.conductor("ship_session")?;
        let shipped = conduct::ship_child(&mut self.ctx, &me, name)?;
        serde_json::to_value(shipped).map_err(|e| PeerError::Other(e.into()))
    }
}
