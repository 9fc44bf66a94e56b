//! Sessions as the editor sees them: re-read from the store (every tick,
//! and when a worker, the guard or the git refresher changed something),
//! `owt/boardChanged` when the board differs, one message per status
//! transition and per agent report.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use owt_protocol::{Board, SessionView, Status};
use tower_lsp_server::ls_types::MessageType;

use super::git_refresher::{GitPoke, GitRefresher};
use super::outbox::Outgoing;
use super::state::State;
use owt_core::ops::guard::SnapshotGitFact;
use owt_core::ops::pr_monitor::PairSource;
use owt_core::ops::{self, Context};
use owt_core::status::{kind, GitFact, ReportFact};

/// What was last told to the editor about sessions.
#[derive(Default)]
pub struct SessionMonitor {
    last_board: Option<Board>,
    last_status: HashMap<String, (Status, Option<i32>)>,
    /// Time of the last agent report seen, per session.
    last_report: HashMap<String, i64>,
    seen_once: bool,
    /// Git facts the live guard's snapshots showed that the store does not
    /// hold yet (its one writer, the git refresher, records them at once):
    /// views use these meanwhile, so nothing shown goes back and forth. An
    /// entry lapses after [`PENDING_GIT`] whatever the store says.
    pending_git: HashMap<String, (GitFact, Instant)>,
    /// ACP permission requests already put to the user.
    asked: super::permission::Asked,
}

/// How long a git fact from the guard stands in for the stored one.
const PENDING_GIT: Duration = Duration::from_secs(5);

impl SessionMonitor {
    /// Re-reads sessions into `state.sessions`, with one message per status
    /// transition; whether any session's status text changed (`None`: none
    /// could be read). Git facts are re-read on the git refresher thread
    /// (now, when `force_git`), which sends `Event::GitRefreshed` when done;
    /// the pull-request watcher starts with the first refresh, with `pairs`
    /// (where its conflict pass takes the guard's pairs). Then
    /// [`super::owner::Owner::refresh_sessions`] brings the live guard up to
    /// date and calls [`SessionMonitor::notify_board`].
    pub fn refresh(
        &mut self,
        state: &mut State,
        force_git: bool,
        pairs: impl FnOnce() -> PairSource,
    ) -> Option<bool> {
        reopen_replaced_store(state);
        let ctx = state.ctx.as_ref()?;
        match &state.git {
            Some(git) if force_git => git.poke(GitPoke::All),
            Some(_) => {}
            None => {
                state.git = GitRefresher::start(
                    ctx.repo.main_root().to_path_buf(),
                    ctx.home.clone(),
                    state.tx.clone(),
                );
            }
        }
        if state.pr_monitor.is_none() {
            // Never two watchers for one pull request: a lease in the store.
            // Its conflict pass reads the live guard's pairs (see
            // `GuardLive::pair_source`).
            state.pr_monitor = owt_core::ops::pr_monitor::Background::start_with(
                ctx.repo.main_root(),
                Some(pairs()),
            );
        }
        self.pending_git.retain(|name, (git, since)| {
            since.elapsed() < PENDING_GIT && !ops::list::git_fact_recorded(ctx, name, git)
        });
        let newer: HashMap<String, GitFact> = self
            .pending_git
            .iter()
            .map(|(name, (git, _))| (name.clone(), git.clone()))
            .collect();
        let views = match ops::list::session_views_newer_git(ctx, &newer) {
            Ok(views) => views,
            Err(e) => {
                tracing::warn!("reading sessions failed: {e:#}");
                return None;
            }
        };
        self.notify_transitions(state, &views);
        let statuses_changed = state.sessions.len() != views.len()
            || state
                .sessions
                .iter()
                .zip(&views)
                .any(|(a, b)| a.name != b.name || a.status_text != b.status_text);
        state.sessions = views;
        Some(statuses_changed)
    }

    /// Sends `owt/boardChanged` when the board differs from the last one sent.
    pub fn notify_board(&mut self, state: &State) {
        if let Some(board) = board(state) {
            if self.last_board.as_ref() != Some(&board) {
                self.last_board = Some(board.clone());
                state.outbox.send(Outgoing::BoardChanged(board));
            }
        }
    }

    /// The git facts the live guard's snapshots show: the views of those
    /// sessions are derived again with them at once (the store gets them from
    /// the git refresher), so the board and code actions match the
    /// diagnostics just published.
    pub fn apply_guard_git(&mut self, state: &mut State, facts: &[SnapshotGitFact]) {
        let Some(ctx) = &state.ctx else { return };
        let mut changed = false;
        for git in facts {
            self.pending_git
                .insert(git.session.clone(), (git.fact.clone(), Instant::now()));
            let Some(i) = state.sessions.iter().position(|s| s.name == git.session) else {
                continue;
            };
            let shown = &state.sessions[i];
            if shown.ahead == git.fact.ahead && shown.changed_files == git.fact.changed_files {
                continue;
            }
            match ops::list::session_view_newer_git(ctx, &git.session, &git.fact) {
                Ok(view) => {
                    state.sessions[i] = view;
                    changed = true;
                }
                Err(e) => tracing::warn!("reading session {} failed: {e:#}", git.session),
            }
        }
        if changed {
            self.notify_board(state);
        }
    }

    fn notify_transitions(&mut self, state: &State, views: &[SessionView]) {
        let first_read = !self.seen_once;
        self.asked.retain(views);
        for view in views {
            let now = (view.status, view.exit_code);
            let before = self.last_status.insert(view.name.clone(), now);
            // A permission request is asked with its options instead.
            let permission = super::permission::notify(state, &mut self.asked, view, first_read);
            if first_read || before == Some(now) || permission {
                continue;
            }
            if let Some((typ, text)) = transition_message(view) {
                state.outbox.show_message(typ, text);
            }
        }
        self.last_status
            .retain(|name, _| views.iter().any(|v| &v.name == name));
        self.notify_reports(state, views, first_read);
        self.seen_once = true;
    }

    /// One message per new agent report (MCP `report_status`).
    fn notify_reports(&mut self, state: &State, views: &[SessionView], first_read: bool) {
        let Some(ctx) = &state.ctx else { return };
        for view in views {
            let Ok(row) = ctx.session(&view.name) else {
                continue;
            };
            let Ok(Some((report, at))) = ctx.store.fact::<ReportFact>(row.id, kind::REPORT) else {
                continue;
            };
            let before = self.last_report.insert(view.name.clone(), at);
            if first_read || before == Some(at) {
                continue;
            }
            let typ = match report.kind.as_str() {
                "blocked" => MessageType::WARNING,
                _ => MessageType::INFO,
            };
            state.outbox.show_message(
                typ,
                format!(
                    "owt: {} reports {}: {}",
                    view.name, report.kind, report.text
                ),
            );
        }
    }
}

/// When the store's file was deleted, replaced or truncated under this
/// server, opens the store at its path again (the git refresher too) and
/// tells the user.
fn reopen_replaced_store(state: &mut State) {
    let Some(ctx) = &state.ctx else { return };
    let Some(how) = ctx.store.replaced() else {
        return;
    };
    let Some(root) = state.root.clone() else {
        return;
    };
    let path = ctx.store.path().to_path_buf();
    match Context::open_in(Some(&root), &ctx.home) {
        Ok(ctx) => {
            state.ctx = Some(ctx);
            state.git = None;
            state.store_trouble = None;
            state.outbox.show_message(
                MessageType::WARNING,
                format!(
                    "owt: the status store {} {how} while this editor's owt was running; owt now reads the store at that path (sessions it does not know yet: run `owt doctor --fix` in a terminal to re-adopt the ones still running)",
                    path.display()
                ),
            );
        }
        Err(e) => {
            // Keep the old store until the new one opens; say so once.
            let message = format!(
                "owt: the status store {} {how} while this editor's owt was running, and opening it again failed: {e:#}",
                path.display()
            );
            if state.store_trouble.as_ref() != Some(&message) {
                state
                    .outbox
                    .show_message(MessageType::ERROR, message.clone());
                state.store_trouble = Some(message);
            }
        }
    }
}

/// The board from the sessions last read.
pub fn board(state: &State) -> Option<Board> {
    let ctx = state.ctx.as_ref()?;
    Some(ops::list::board(
        ctx.repo.main_root().to_string_lossy().into_owned(),
        state.sessions.clone(),
    ))
}

/// The message a status transition deserves, if any.
fn transition_message(view: &SessionView) -> Option<(MessageType, String)> {
    let name = &view.name;
    match view.status {
        Status::NeedsInput => Some((
            MessageType::INFO,
            format!("owt: {name} is waiting for your input"),
        )),
        Status::Blocked => Some((
            MessageType::WARNING,
            format!("owt: {name} is blocked on a permission prompt"),
        )),
        Status::Done => Some((MessageType::INFO, format!("owt: {name} is done"))),
        Status::Exited if view.host_lost || view.exit_code.is_some_and(|c| c != 0) => Some((
            MessageType::ERROR,
            format!("owt: {name} {}", view.status_text),
        )),
        Status::Conflict => Some((
            MessageType::WARNING,
            format!("owt: {name} stopped on a merge conflict"),
        )),
        Status::ChecksFailed | Status::CiFailed | Status::ChangesRequested => Some((
            if view.lane == owt_protocol::Lane::NeedsYou {
                MessageType::WARNING
            } else {
                MessageType::INFO
            },
            format!("owt: {name}: {}", view.status_text),
        )),
        Status::Merged => Some((
            MessageType::INFO,
            format!("owt: {name}: its pull request was merged; delete the session to clean up"),
        )),
        _ => None,
    }
}
