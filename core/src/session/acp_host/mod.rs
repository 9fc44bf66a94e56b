//! The session host of an ACP session (`owt __host run` with transport
//! `acp`): runs the agent's ACP server on pipes and is its client, keeps
//! the transcript, records the session's status from the protocol, and
//! serves the same unix socket as a terminal session's host.
//!
//! Threads (std only): the reader (the agent's stdout: responses, its
//! requests — files, terminals, permission — and `session/update`s, handled
//! in order), the driver (`initialize`, `session/new` or `session/load`,
//! then one `session/prompt` at a time from the prompt queue), the waiter
//! (the agent's exit), the acceptor (main thread), and per connection a
//! reader and, for `Events` clients, a writer.
//!
//! Status facts are written as the protocol moves (`acp`: starting,
//! working, blocked, waiting, failed; `acp-permission`; `acp-usage`;
//! `input` per prompt; `exit`), by whichever thread sees the change, under
//! one store lock: a permission request is `blocked` in the store before
//! anything else happens to it.
//!
//! Invariants: the agent never waits on a client (events go to bounded
//! per-client queues; a client that falls behind is dropped); files and
//! terminals the agent asks for stay in the session's worktree
//! ([`crate::acp::fs`], [`crate::acp::terminal`]); a line from the agent
//! that is not JSON-RPC, or an update of a kind owt does not know, is
//! logged and skipped; lock order: `State`, then `clients`, then `store`.
//!
//! Parts: [`start`] (the socket, the agent's process, the first facts),
//! [`drive`] (the driver thread), [`agent`] (what the reader thread gets
//! from the agent), [`clients`] (the socket's connections and requests).

mod agent;
mod clients;
mod drive;
mod start;

use std::collections::{HashSet, VecDeque};
use std::fs::File;
use std::io::{BufReader, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use owt_protocol::host::{self as proto, AcpEvent, AgentExit, FrameKind, PendingPermission};
use owt_protocol::AcpView;
use serde_json::{json, Value};

use crate::acp::conn::Conn;
use crate::acp::rpc::Id;
use crate::acp::terminal::Terminals;
use crate::acp::transcript::{self, Transcript};
use crate::session::host::{accept_clients, follow_git_facts, lock, spawn_guarded, Sent};
use crate::session::{HostSpec, SessionError};
use crate::status::{kind, AcpFact, AcpState, ExitFact};
use crate::store::{now_ms, Store};

use agent::on_incoming;
use clients::serve_client;
use drive::drive;
use start::start;

/// How long the agent may take to answer `initialize` and `session/new`
/// (an adapter started through npm can take a while).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(120);
/// Events queued for one client before it is considered gone.
const CLIENT_QUEUE: usize = 4096;
/// At most one `output` fact per this interval.
const OUTPUT_FACT_MS: i64 = 1_000;
/// How long the host stays after the agent exits, so a last peek works.
const LINGER_MS: u64 = 500;
/// Lines that are not JSON-RPC answered with an error (and logged).
const MALFORMED_ANSWERED: u64 = 20;
/// Time between hang-up and kill when the host stops the agent itself.
const STOP_GRACE: Duration = Duration::from_secs(3);

fn host_err(context: &str, e: impl std::fmt::Display) -> SessionError {
    SessionError::Host(format!("{context}: {e}"))
}

/// A permission request the agent waits on.
struct Pending {
    permission: PendingPermission,
    rpc_id: Id,
}

struct State {
    transcript: Transcript,
    acp_session: Option<String>,
    prompts: VecDeque<String>,
    turn_running: bool,
    /// Oldest first; the first is the one answers apply to.
    pending: VecDeque<Pending>,
    next_permission: u64,
    usage: AcpView,
    acp: AcpFact,
    /// The prompt of the running turn was recorded by owt: the agent's
    /// echo of it (`user_message_chunk`) is not shown twice.
    echo_expected: bool,
    last_output_at: Option<i64>,
    last_input_at: Option<i64>,
    recorded_output_at: Option<i64>,
    unknown_kinds: HashSet<String>,
    exit: Option<AgentExit>,
}

/// One `Events` connection's queue.
struct EventClient {
    tx: mpsc::SyncSender<Vec<u8>>,
    stream: UnixStream,
}

struct Host {
    spec: HostSpec,
    root: PathBuf,
    host_pid: u32,
    agent_pid: u32,
    started_at: i64,
    conn: Arc<Conn>,
    state: Mutex<State>,
    /// Signalled when a prompt is queued or the agent is gone.
    prompt_ready: Condvar,
    clients: Mutex<Vec<EventClient>>,
    store: Mutex<Option<Store>>,
    terminals: Terminals,
    exiting: AtomicBool,
    /// Lines from the agent that were not JSON-RPC, so far.
    malformed: AtomicU64,
    /// The work journal of the agent's checkout (as a terminal session's
    /// host keeps it), for Conflict Guard.
    journal: Option<crate::guard::journal::Journal>,
}

/// Runs an ACP host until its agent exits.
pub fn run(spec: HostSpec, mut ready: Option<File>) -> Result<(), SessionError> {
    match start(&spec) {
        Ok((host, listener, child, stdout)) => {
            if let Some(mut r) = ready.take() {
                let _ = writeln!(r, "ok {}", host.agent_pid);
            }
            serve(host, listener, child, stdout);
            Ok(())
        }
        Err(e) => {
            tracing::error!("{e}");
            if let Some(mut r) = ready.take() {
                let _ = writeln!(r, "error: {}", e.to_string().replace('\n', " "));
            }
            Err(e)
        }
    }
}

/// The git-facts thread, as a terminal session's host has: the checkout's
/// commits ahead and changed files recorded (`host-git`) whenever the
/// journal changes, so that `owt list` reads the store instead of walking
/// the checkout.
fn spawn_git_facts(host: &Arc<Host>) {
    let checkout = lock(&host.store)
        .as_ref()
        .and_then(|store| store.session_by_id(host.spec.session_id).ok().flatten())
        .filter(|row| row.remote().is_none() && host.journal.is_some())
        .map(|row| (row.worktree_path, row.base_branch));
    let Some((worktree, base_branch)) = checkout else {
        return;
    };
    let host = host.clone();
    spawn_guarded("git-facts", move || {
        let Some(journal) = host.journal.as_ref() else {
            return;
        };
        follow_git_facts(
            journal,
            &host.exiting,
            &worktree,
            &base_branch,
            |fact| match lock(&host.store).as_ref() {
                Some(store) => match store.record_fact(host.spec.session_id, kind::HOST_GIT, &fact)
                {
                    Ok(()) => Sent::Yes,
                    Err(e) => {
                        tracing::warn!("recording a host-git fact: {e}");
                        Sent::NotNow
                    }
                },
                None => Sent::NotNow,
            },
        );
    });
}

impl Host {
    fn record<T: serde::Serialize>(&self, kind: &str, value: &T) {
        if let Some(store) = lock(&self.store).as_ref() {
            if let Err(e) = store.record_fact(self.spec.session_id, kind, value) {
                tracing::warn!("recording a {kind} fact: {e}");
            }
        }
    }

    fn clear(&self, kind: &str) {
        if let Some(store) = lock(&self.store).as_ref() {
            if let Err(e) = store.clear_fact(self.spec.session_id, kind) {
                tracing::warn!("clearing the {kind} fact: {e}");
            }
        }
    }

    /// Moves the conversation's state (recorded at once).
    fn set_state(&self, state: &mut State, next: AcpState, stop_reason: Option<String>) {
        let fact = AcpFact {
            state: next,
            stop_reason: stop_reason.or_else(|| state.acp.stop_reason.clone()),
            error: None,
        };
        if fact != state.acp {
            state.acp = fact;
            self.record(kind::ACP, &state.acp);
        }
    }

    /// Sends `event` to every `Events` client (call with the state lock
    /// held, so events and transcript snapshots are in one order).
    fn broadcast(&self, event: &AcpEvent) {
        let frame = proto::encode_json(FrameKind::Event, event);
        lock(&self.clients).retain(|c| match c.tx.try_send(frame.clone()) {
            Ok(()) => true,
            Err(_) => {
                tracing::debug!("an events client fell behind or left");
                let _ = c.stream.shutdown(std::net::Shutdown::Both);
                false
            }
        });
    }

    fn note(&self, state: &mut State, text: &str) {
        state.transcript.note(text);
        self.broadcast(&AcpEvent::Note {
            text: text.to_string(),
        });
    }

    fn output_seen(&self, state: &mut State) {
        let now = now_ms();
        state.last_output_at = Some(now);
        let due = state
            .recorded_output_at
            .is_none_or(|prev| now - prev >= OUTPUT_FACT_MS);
        if due {
            state.recorded_output_at = Some(now);
            if let Some(store) = lock(&self.store).as_ref() {
                let _ = store.record_fact_at(self.spec.session_id, kind::OUTPUT, &(), now);
            }
        }
    }

    /// The connection cannot go on: say why, and stop the agent.
    fn fail(self: &Arc<Self>, why: &str) {
        tracing::error!("{why}");
        let mut state = lock(&self.state);
        self.note(&mut state, why);
        state.acp = AcpFact {
            state: AcpState::Failed,
            stop_reason: None,
            error: Some(why.to_string()),
        };
        self.record(kind::ACP, &state.acp);
        drop(state);
        self.stop_agent(STOP_GRACE);
    }

    /// Hangs up the agent's process group; kills it after `grace`.
    fn stop_agent(self: &Arc<Self>, grace: Duration) {
        use crate::platform::process::{signal_group, Signal};
        // The agent leads its group.
        let pgid = self.agent_pid;
        signal_group(pgid, Signal::HUP);
        signal_group(pgid, Signal::TERM);
        let host = self.clone();
        spawn_guarded("stop-agent", move || {
            let deadline = Instant::now() + grace;
            while Instant::now() < deadline {
                if lock(&host.state).exit.is_some() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            tracing::info!("the agent ignored the hang-up; killing it");
            signal_group(pgid, Signal::KILL);
        });
    }

    fn mcp_servers(&self) -> Value {
        let exe = crate::platform::exe::owt()
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_else(|_| "owt".into());
        let mut servers = vec![json!({
            "name": crate::provider::integration::claude::SERVER_NAME,
            "command": exe,
            "args": ["mcp"],
            "env": [
                {"name": "OWT_SESSION", "value": self.spec.short_id},
                {"name": "OWT_HOME", "value": self.spec.home.display().to_string()},
            ],
        })];
        servers.extend(
            self.spec
                .acp_mcp_servers
                .iter()
                .filter(|s| s["name"] != crate::provider::integration::claude::SERVER_NAME)
                .cloned(),
        );
        Value::Array(servers)
    }
}

fn serve(
    host: Arc<Host>,
    listener: UnixListener,
    mut child: std::process::Child,
    stdout: std::process::ChildStdout,
) {
    let (reader_done_tx, reader_done_rx) = mpsc::channel::<()>();
    {
        let host = host.clone();
        spawn_guarded("acp-reader", move || {
            let conn = host.conn.clone();
            conn.read_loop(BufReader::with_capacity(64 * 1024, stdout), |incoming| {
                on_incoming(&host, incoming)
            });
            // Wake the driver: no prompt will ever be answered now.
            host.prompt_ready.notify_all();
            let _ = reader_done_tx.send(());
        });
    }
    {
        let host = host.clone();
        spawn_guarded("acp-driver", move || drive(&host));
    }
    spawn_git_facts(&host);
    {
        let host = host.clone();
        spawn_guarded("waiter", move || {
            let exit = match child.wait() {
                Ok(status) => AgentExit {
                    code: status.code(),
                    signal: status.signal().map(|s| {
                        match crate::platform::process::signal_name(s) {
                            Some(name @ ("SIGHUP" | "SIGTERM" | "SIGKILL")) => name.to_string(),
                            _ => format!("signal {s}"),
                        }
                    }),
                },
                Err(e) => AgentExit {
                    code: None,
                    signal: Some(format!("lost: {e}")),
                },
            };
            tracing::info!(?exit, "agent exited");
            // Let the reader take what the agent wrote last.
            let _ = reader_done_rx.recv_timeout(Duration::from_millis(1_000));
            finish(&host, exit);
        });
    }
    accept_clients(&listener, &Mutex::default(), move |stream| {
        serve_client(&host, stream)
    });
}

/// The agent is gone: record it, save the transcript, tell everyone, leave.
fn finish(host: &Arc<Host>, exit: AgentExit) {
    host.terminals.kill_all();
    let text = {
        let mut state = lock(&host.state);
        state.exit = Some(exit.clone());
        let what = match (exit.code, &exit.signal) {
            (Some(code), _) => format!("the agent exited with code {code}"),
            (None, Some(signal)) => format!("the agent exited ({signal})"),
            _ => "the agent exited".to_string(),
        };
        let what = if state.turn_running {
            format!("{what} in the middle of a turn")
        } else {
            what
        };
        host.note(&mut state, &what);
        // Answers can no longer reach it.
        state.pending.clear();
        host.clear(kind::ACP_PERMISSION);
        if let Some(store) = lock(&host.store).as_ref() {
            if let Some(at) = state.last_output_at {
                let _ = store.record_fact_at(host.spec.session_id, kind::OUTPUT, &(), at);
            }
            let fact = ExitFact {
                code: exit.code,
                signal: exit.signal.clone(),
            };
            if let Err(e) = store.record_fact(host.spec.session_id, kind::EXIT, &fact) {
                tracing::warn!("recording the exit: {e}");
            }
        }
        transcript::render(&state.transcript.view().entries).join("\n") + "\n"
    };
    host.prompt_ready.notify_all();
    let screen_file = crate::session::screen_path(&host.spec.home, &host.spec.short_id);
    if let Some(dir) = screen_file.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    if let Err(e) = crate::store::write_private(&screen_file, text.as_bytes()) {
        tracing::warn!("saving the transcript to {}: {e}", screen_file.display());
    }
    let frame = proto::encode_json(FrameKind::Exited, &exit);
    for c in lock(&host.clients).iter() {
        let _ = c.tx.try_send(frame.clone());
    }
    host.exiting.store(true, Ordering::SeqCst);
    std::thread::sleep(Duration::from_millis(LINGER_MS));
    let _ = std::fs::remove_file(crate::session::socket_path(
        &host.spec.home,
        &host.spec.short_id,
    ));
    tracing::info!("host exiting");
    std::process::exit(0);
}
