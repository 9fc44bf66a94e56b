//! Session hosts: one detached process per agent that owns the agent's PTY,
//! its screen model and a unix socket for attach / send / peek.
//!
//! This module is the library face of hosts: starting one ([`start_host`],
//! detached, returning once it serves its socket), talking to one
//! ([`client`]), noticing a dead one ([`reconcile`]), stopping one
//! ([`stop`]), waiting on a session's status ([`wait`]), attaching a
//! terminal ([`attach`]) and agent hooks ([`hooks`]). The host process
//! itself is [`host`]; the frames it speaks are `owt_protocol::host`.
//!
//! Invariants: a host is found by its socket (`$OWT_HOME/run/<short id>.sock`)
//! and its pids in the `host` fact, never by a process name; a session is
//! alive while its host answers or its host pid lives; nothing here kills a
//! process it cannot show is this session's.

pub mod acp_attach;
pub mod acp_host;
pub mod hooks;
pub mod host;
pub mod memory;
mod starting;
mod stopping;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use owt_protocol::host::{PeekView, Role, ScreenView, Transport};
use serde::{Deserialize, Serialize};

use crate::status::{self, kind, Derived, ExitFact, HostFact, SessionFacts};
use crate::store::{now_ms, SessionRow, Store};

pub use hooks::record_hook;
/// The client side of hosts, the crate `owt-session` (session/):
/// `session::client`, `session::attach`, … keep their paths.
pub use owt_session::{
    attach, client, dialog, notice, queries, rules, HostConn, HostJournal, SessionError,
};
pub use starting::{
    admit_if_queued, run_host, spawn_admitter, spawn_detached, start_host, start_host_with,
    OWT_VERSION,
};
pub use stopping::{session_processes, stop, stop_leftovers, STOP_GRACE};

/// Everything a session host needs to start an agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostSpec {
    pub session_id: i64,
    pub session_name: String,
    pub short_id: String,
    pub provider: String,
    pub argv: Vec<String>,
    pub cwd: PathBuf,
    pub env: BTreeMap<String, String>,
    /// Typed into the terminal once the agent is ready.
    pub typed_prompt: Option<String>,
    /// The first prompt is on the agent's command line: until its screen
    /// shows it at work, an idle input box means it has not started yet.
    #[serde(default)]
    pub prompt_in_argv: bool,
    /// Run to completion (the provider's non-interactive form).
    pub headless: bool,
    /// `$OWT_HOME`: the store and `run/` live here.
    pub home: PathBuf,
    pub rows: u16,
    pub cols: u16,
    /// How the host talks to the agent: `acp` runs `argv` as the agent's
    /// ACP server and `typed_prompt` is the first prompt.
    #[serde(default)]
    pub transport: Transport,
    /// ACP: reopen this conversation of the agent (`session/load`) instead
    /// of starting one.
    #[serde(default)]
    pub acp_load: Option<String>,
    /// ACP: MCP servers to pass to the agent besides owt's own (what an
    /// editor gave `owt acp` in `session/new`).
    #[serde(default)]
    pub acp_mcp_servers: Vec<serde_json::Value>,
    /// Lines of scrollback the host keeps (`[agent] scrollback`).
    #[serde(default = "default_scrollback")]
    pub scrollback: usize,
    /// `[agent] on_limit = "wait"`: type "continue" once a limit the agent
    /// showed resets.
    #[serde(default)]
    pub on_limit_wait: bool,
}

/// Lines of scrollback a host keeps unless configured: tmux's default
/// (`history-limit`).
pub const DEFAULT_SCROLLBACK: usize = 2_000;

/// The most lines of scrollback a host keeps, whatever `[agent]
/// scrollback` says: 100 000 lines, some 20 MB of text at 200 columns.
pub const MAX_SCROLLBACK: usize = 100_000;

fn default_scrollback() -> usize {
    DEFAULT_SCROLLBACK
}

/// A started host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Started {
    pub host_pid: u32,
    pub agent_pid: Option<u32>,
}

/// For a process that keeps its store connections open for long and uses
/// them little (a session host, two connections): no up-front allocations
/// per SQLite connection — SQLite's default is a 20-page block of page
/// cache (~86 KiB, all of it written at once) and 48 KiB of lookaside
/// slots, whatever the connection reads: most of the ~210 KiB SQLite held
/// in an idle host. Pages are then allocated one by one as they are read.
/// Call before the process opens any connection (it has no effect after).
/// Here rather than in the store (`owt-store` has no `unsafe`): the
/// platform layer sets it through SQLite's C interface.
pub fn configure_for_idle_process() {
    crate::platform::sqlite::no_upfront_allocations();
}

/// `$OWT_HOME/run/<short_id>.sock`.
pub fn socket_path(home: &Path, short_id: &str) -> PathBuf {
    home.join("run").join(format!("{short_id}.sock"))
}

/// `$OWT_HOME/logs/<short_id>.screen`: the agent's last screen, as text,
/// saved by the host when the agent exits.
pub fn screen_path(home: &Path, short_id: &str) -> PathBuf {
    home.join("logs").join(format!("{short_id}.screen"))
}

/// `$OWT_HOME/logs/<short_id>.log`: the host's own log.
pub fn log_path(home: &Path, short_id: &str) -> PathBuf {
    host::log_path(home, short_id)
}

/// Whether `pid` is a live (not zombie) process.
pub fn pid_alive(pid: u32) -> bool {
    if pid == 0 {
        return false;
    }
    crate::platform::process::is_alive(pid)
}

/// Whether a host answers on the session's socket.
pub fn host_answers(home: &Path, short_id: &str) -> bool {
    HostConn::connect(&socket_path(home, short_id), Role::Control, 0, 0).is_ok()
}

/// Records `host-lost` for a session whose host is gone without an exit fact.
pub fn reconcile(store: &Store, home: &Path, session: &SessionRow) -> Result<(), SessionError> {
    let facts = store.facts(session.id)?;
    if settled(session, &facts) {
        return Ok(());
    }
    let Some(host) = host_of(&facts) else {
        return Ok(());
    };
    // The recorded process is gone or is another program now: a host that
    // serves the socket anyway answers a greeting. A bare connection is not
    // enough: a killed host's socket still takes connections into its
    // backlog while its threads are torn down, after its main thread
    // already shows as a zombie, and never answers them.
    let socket = socket_path(home, &session.short_id);
    if HostConn::connect_quick(&socket, HOST_ANSWER_TIMEOUT).is_ok() {
        return Ok(());
    }
    if pid_alive(host.host_pid) {
        return Ok(());
    }
    if store.record_fact_once(session.id, kind::HOST_LOST, &())? {
        tracing::info!(session = %session.name, "host lost");
    }
    Ok(())
}

/// Whether [`reconcile`] has nothing to do for `session`, whose stored
/// facts are `facts`: it runs on a remote (whose own owt reconciles it),
/// it ended or was recorded lost, it never had a host, or its host process
/// runs. Reads no store: a listing reads every session's facts in one
/// read of the store and reconciles only the sessions not settled.
pub fn settled(session: &SessionRow, facts: &[crate::store::FactRow]) -> bool {
    if session.remote().is_some() {
        return true;
    }
    let has = |k: &str| facts.iter().any(|f| f.kind == k);
    if has(kind::EXIT) || has(kind::HOST_LOST) {
        return true;
    }
    let Some(host) = host_of(facts) else {
        return true;
    };
    // Its host process runs: no need to connect (a connection wakes the
    // host, which a listing of 64 sessions pays for 64 times on a busy
    // machine). A process whose command line names this session's host is
    // alive and no zombie (a zombie's reads empty): no other check.
    stopping::is_host_of(host.host_pid, &session.short_id)
}

/// The session's host fact among its `facts`.
fn host_of(facts: &[crate::store::FactRow]) -> Option<HostFact> {
    let row = facts.iter().find(|f| f.kind == kind::HOST)?;
    HostFact::deserialize(&row.value).ok()
}

/// How long [`reconcile`] waits for a greeting from a socket whose
/// recorded host process is gone.
const HOST_ANSWER_TIMEOUT: Duration = Duration::from_secs(1);

/// The session's derived status now (after reconciling it).
pub fn derived_status(
    store: &Store,
    home: &Path,
    session: &SessionRow,
) -> Result<Derived, SessionError> {
    reconcile(store, home, session)?;
    let facts = SessionFacts::from_rows(session.created_at, &store.facts(session.id)?);
    Ok(status::derive_status(&facts, now_ms()))
}

/// The agent's screen: live from its host, else the final screen it saved.
pub fn peek(home: &Path, session: &SessionRow, scrollback: bool) -> Result<PeekView, SessionError> {
    let request = owt_protocol::host::PeekRequest {
        scrollback,
        scrollback_from: 0,
        formatted: false,
    };
    peek_with(home, session, request)
}

/// As [`peek`], as `request` asks (`formatted`: the live screen's colours
/// too, as the control plane shows it).
pub fn peek_with(
    home: &Path,
    session: &SessionRow,
    request: owt_protocol::host::PeekRequest,
) -> Result<PeekView, SessionError> {
    let socket = socket_path(home, &session.short_id);
    match HostConn::connect(&socket, Role::Control, 0, 0) {
        Ok(mut conn) => {
            let screen = conn
                .peek_with(request)
                .map_err(|e| e.of_session(&session.name))?;
            let dialog = dialog_on(session, &screen).map(|d| d.question);
            Ok(PeekView {
                session: session.name.clone(),
                live: true,
                screen,
                dialog,
            })
        }
        Err(SessionError::NotRunning(why)) => {
            let saved = screen_path(home, &session.short_id);
            let text = std::fs::read_to_string(&saved).map_err(|_| {
                SessionError::NotRunning(format!(
                    "{why}; and no saved screen at {}",
                    saved.display()
                ))
            })?;
            let lines: Vec<String> = text.lines().map(str::to_string).collect();
            Ok(PeekView {
                session: session.name.clone(),
                live: false,
                screen: ScreenView {
                    rows: lines.len() as u16,
                    cols: lines.iter().map(|l| l.chars().count()).max().unwrap_or(0) as u16,
                    cursor: (0, 0),
                    alternate_screen: false,
                    lines,
                    scrollback: Vec::new(),
                    scrollback_next: None,
                    formatted: None,
                },
                dialog: None,
            })
        }
        Err(e) => Err(e.of_session(&session.name)),
    }
}

/// Types `text` into the session's agent (then Enter, if `enter`).
pub fn send(
    home: &Path,
    session: &SessionRow,
    text: &str,
    enter: bool,
) -> Result<(), SessionError> {
    let mut conn = HostConn::connect(&socket_path(home, &session.short_id), Role::Control, 0, 0)
        .map_err(|e| match e {
            SessionError::NotRunning(_) => {
                SessionError::NotRunning(format!("{} is not running", session.name))
            }
            other => other.of_session(&session.name),
        })?;
    conn.send(text, enter)
        .map_err(|e| e.of_session(&session.name))
}

/// How the session's host talks to its agent (from its host fact; a
/// session whose host never started is a terminal one).
pub fn transport(store: &Store, session: &SessionRow) -> Result<Transport, SessionError> {
    Ok(store
        .fact::<HostFact>(session.id, kind::HOST)?
        .map_or(Transport::Pty, |(h, _)| h.transport))
}

/// A control connection to a live ACP session's host.
fn acp_conn(store: &Store, home: &Path, session: &SessionRow) -> Result<HostConn, SessionError> {
    if transport(store, session)? != Transport::Acp {
        return Err(SessionError::Host(format!(
            "{} runs its agent in a terminal, not through ACP: answer its dialog there (owt attach {}, or owt send {} <key>)",
            session.name, session.name, session.name
        )));
    }
    HostConn::connect(&socket_path(home, &session.short_id), Role::Control, 0, 0).map_err(|e| {
        match e {
            SessionError::NotRunning(_) => {
                SessionError::NotRunning(format!("{} is not running", session.name))
            }
            other => other,
        }
    })
}

/// The permission dialog on a terminal session's screen, as owt reads it.
fn dialog_on(session: &SessionRow, screen: &ScreenView) -> Option<dialog::Dialog> {
    let text = rules::ScreenText {
        lines: screen.lines.clone(),
        cursor: screen.cursor,
        alternate: screen.alternate_screen,
    };
    dialog::dialog(&session.provider, &text)
}

/// Answers the permission dialog on a terminal session's screen with its
/// agent's own key (`approve`: allow once; else refuse); the question
/// answered. Refused, with nothing typed, when no dialog is on screen (a
/// key typed then would be a new prompt).
pub fn answer_dialog(
    home: &Path,
    session: &SessionRow,
    approve: bool,
) -> Result<String, SessionError> {
    let mut conn = HostConn::connect(&socket_path(home, &session.short_id), Role::Control, 0, 0)
        .map_err(|e| match e {
            SessionError::NotRunning(_) => {
                SessionError::NotRunning(format!("{} is not running", session.name))
            }
            other => other,
        })?;
    let screen = conn.peek(false)?;
    let Some(dialog) = dialog_on(session, &screen) else {
        return Err(SessionError::Host(format!(
            "{} shows no permission dialog owt knows how to answer: nothing was typed (see its screen with owt peek {})",
            session.name, session.name
        )));
    };
    let keys = if approve { dialog.approve } else { dialog.deny };
    // owt's own keys (Enter, Esc, arrows), pressed as keys: `send` would
    // type their control characters as visible escapes.
    conn.press(keys.as_bytes())?;
    Ok(dialog.question)
}

/// Answers an ACP session's pending permission request, or the dialog on
/// a terminal session's screen ([`answer_dialog`]; it has no options to
/// pick: `option` must be `None`).
pub fn answer_permission(
    store: &Store,
    home: &Path,
    session: &SessionRow,
    answer: &owt_protocol::host::PermissionAnswer,
) -> Result<owt_protocol::host::PermissionAnswered, SessionError> {
    if transport(store, session)? == Transport::Pty {
        if answer.option.is_some() {
            return Err(SessionError::Host(format!(
                "{} runs its agent in a terminal: its dialog has no options to pick by name (approve it without one)",
                session.name
            )));
        }
        let question = answer_dialog(home, session, !answer.deny)?;
        let name = if answer.deny { "denied" } else { "approved" };
        return Ok(owt_protocol::host::PermissionAnswered {
            question,
            option_id: None,
            name: name.to_string(),
        });
    }
    acp_conn(store, home, session)?.answer(answer)
}

/// Cancels an ACP session's turn in progress.
pub fn cancel_turn(store: &Store, home: &Path, session: &SessionRow) -> Result<(), SessionError> {
    acp_conn(store, home, session)?.cancel()
}

/// How [`wait`] ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WaitOutcome {
    /// Done, needs input or blocked: the agent is waiting for the human.
    Ready(Derived),
    /// The agent exited (see `exit_code` / `host_lost`).
    Exited(Derived),
    TimedOut(Derived),
}

/// How often [`wait`] re-reads the store.
const WAIT_POLL: Duration = Duration::from_millis(150);

/// Blocks until the session is done, needs the human, or exited, or until
/// `timeout` passes.
pub fn wait(
    store: &Store,
    home: &Path,
    session: &SessionRow,
    timeout: Option<Duration>,
) -> Result<WaitOutcome, SessionError> {
    use owt_protocol::Status;
    let deadline = timeout.map(|t| Instant::now() + t);
    loop {
        let derived = derived_status(store, home, session)?;
        match derived.status {
            Status::Exited => return Ok(WaitOutcome::Exited(derived)),
            Status::Done | Status::NeedsInput | Status::Blocked => {
                return Ok(WaitOutcome::Ready(derived))
            }
            // The feedback loops' statuses: ready once nobody is at work
            // on them (checks or CI the agent fixes are still in flight).
            Status::ChecksFailed
            | Status::CiFailed
            | Status::ChangesRequested
            | Status::PrOpen
            | Status::Merged
                if derived.lane != owt_protocol::Lane::InFlight =>
            {
                return Ok(WaitOutcome::Ready(derived))
            }
            _ => {}
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Ok(WaitOutcome::TimedOut(derived));
        }
        std::thread::sleep(WAIT_POLL);
    }
}

/// The exit fact of a session, if it has one.
pub fn exit_fact(store: &Store, session: &SessionRow) -> Result<Option<ExitFact>, SessionError> {
    Ok(store
        .fact::<ExitFact>(session.id, kind::EXIT)?
        .map(|(e, _)| e))
}

#[cfg(test)]
mod tests;
