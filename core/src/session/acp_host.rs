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

use std::collections::{HashSet, VecDeque};
use std::fs::File;
use std::io::{BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use owt_protocol::host::{
    self as proto, AcpEvent, AgentExit, FrameKind, HostError, HostStatus, JournalView,
    PendingPermission, PermissionAnswer, PermissionAnswered, Role, ScreenView, Transport, Welcome,
    HOST_PROTOCOL_VERSION,
};
use owt_protocol::AcpView;
use serde_json::{json, Value};

use super::host::{accept_hello, decode_request, lock, spawn_guarded, Request};
use super::{HostSpec, SessionError};
use crate::acp::conn::{CallError, Conn, Incoming};
use crate::acp::rpc::{self, Id, RpcError};
use crate::acp::schema::{self, method, Update};
use crate::acp::terminal::Terminals;
use crate::acp::transcript::{self, Transcript};
use crate::status::{kind, AcpFact, AcpState, ExitFact, HostFact};
use crate::store::{now_ms, Store};

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

fn listen(spec: &HostSpec) -> Result<UnixListener, SessionError> {
    let socket = super::socket_path(&spec.home, &spec.short_id);
    let run_dir = socket.parent().unwrap_or(&spec.home).to_path_buf();
    super::host::ensure_private_dir(&run_dir)?;
    if socket.exists() {
        if UnixStream::connect(&socket).is_ok() {
            return Err(SessionError::Host(format!(
                "another host already serves {}",
                socket.display()
            )));
        }
        let _ = std::fs::remove_file(&socket);
    }
    let listener = UnixListener::bind(&socket)
        .map_err(|e| host_err(&format!("binding {}", socket.display()), e))?;
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| host_err("restricting the socket to its owner", e))?;
    Ok(listener)
}

/// The environment the agent (and its terminals) get on top of the host's.
fn agent_env(spec: &HostSpec) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = spec
        .env
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    env.push(("OWT_SESSION".into(), spec.short_id.clone()));
    env.push(("OWT_HOME".into(), spec.home.display().to_string()));
    env
}

type Started = (
    Arc<Host>,
    UnixListener,
    std::process::Child,
    std::process::ChildStdout,
);

fn start(spec: &HostSpec) -> Result<Started, SessionError> {
    let listener = listen(spec)?;
    if spec.argv.is_empty() {
        return Err(SessionError::Host(
            "the agent's ACP command is empty".into(),
        ));
    }
    let log = super::log_path(&spec.home, &spec.short_id);
    let stderr = File::options()
        .create(true)
        .append(true)
        .open(&log)
        .map_err(|e| host_err(&format!("opening {}", log.display()), e))?;
    let env = agent_env(spec);
    let mut cmd = Command::new(&spec.argv[0]);
    cmd.args(&spec.argv[1..])
        .current_dir(&spec.cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(stderr))
        // Its own process group: stopping the agent stops what it started.
        .process_group(0);
    for (k, v) in &env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().map_err(|e| {
        host_err(
            &format!("starting `{}` in {}", spec.argv[0], spec.cwd.display()),
            e,
        )
    })?;
    let agent_pid = child.id();
    let stdin = child.stdin.take().expect("piped stdin");
    let stdout = child.stdout.take().expect("piped stdout");
    let host_pid = std::process::id();
    let socket = super::socket_path(&spec.home, &spec.short_id);
    let store = match Store::open(&spec.home) {
        Ok(store) => {
            let fact = HostFact {
                host_pid,
                agent_pid: Some(agent_pid),
                socket: socket.to_string_lossy().into_owned(),
                headless: false,
                transport: Transport::Acp,
            };
            let starting = AcpFact {
                state: AcpState::Starting,
                stop_reason: None,
                error: None,
            };
            for result in [
                store.record_fact(spec.session_id, kind::HOST, &fact),
                store.record_fact(spec.session_id, kind::ACP, &starting),
                store.clear_fact(spec.session_id, kind::ACP_PERMISSION),
            ] {
                if let Err(e) = result {
                    tracing::warn!("recording the host facts: {e}");
                }
            }
            Some(store)
        }
        Err(e) => {
            tracing::warn!("opening the store: {e}; facts will not be recorded");
            None
        }
    };
    let root = spec.cwd.canonicalize().unwrap_or_else(|_| spec.cwd.clone());
    let journal = match crate::guard::journal::Journal::start(&spec.cwd) {
        Ok(journal) => Some(journal),
        Err(e) => {
            tracing::info!("no work journal for {}: {e}", spec.cwd.display());
            None
        }
    };
    let mut prompts = VecDeque::new();
    if let Some(p) = spec.typed_prompt.clone().filter(|p| !p.is_empty()) {
        prompts.push_back(p);
    }
    let host = Arc::new(Host {
        spec: spec.clone(),
        terminals: Terminals::new(&root, env),
        root,
        host_pid,
        agent_pid,
        started_at: now_ms(),
        conn: Arc::new(Conn::new(Box::new(stdin))),
        state: Mutex::new(State {
            transcript: Transcript::new(),
            acp_session: spec.acp_load.clone(),
            prompts,
            turn_running: false,
            pending: VecDeque::new(),
            next_permission: 1,
            usage: AcpView::default(),
            acp: AcpFact {
                state: AcpState::Starting,
                stop_reason: None,
                error: None,
            },
            echo_expected: false,
            last_output_at: None,
            last_input_at: None,
            recorded_output_at: None,
            unknown_kinds: HashSet::new(),
            exit: None,
        }),
        prompt_ready: Condvar::new(),
        clients: Mutex::new(Vec::new()),
        store: Mutex::new(store),
        exiting: AtomicBool::new(false),
        malformed: AtomicU64::new(0),
        journal,
    });
    tracing::info!(session = %spec.session_name, agent_pid, "ACP host started");
    Ok((host, listener, child, stdout))
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
        let pgid = self.agent_pid as libc::pid_t;
        // SAFETY: kill has no memory preconditions; the agent leads its group.
        unsafe {
            libc::kill(-pgid, libc::SIGHUP);
            libc::kill(-pgid, libc::SIGTERM);
        }
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
            // SAFETY: as above.
            unsafe { libc::kill(-pgid, libc::SIGKILL) };
        });
    }

    fn mcp_servers(&self) -> Value {
        let exe = std::env::current_exe()
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
    {
        let host = host.clone();
        spawn_guarded("waiter", move || {
            let exit = match child.wait() {
                Ok(status) => AgentExit {
                    code: status.code(),
                    signal: status.signal().map(|s| match s {
                        libc::SIGHUP => "SIGHUP".to_string(),
                        libc::SIGTERM => "SIGTERM".to_string(),
                        libc::SIGKILL => "SIGKILL".to_string(),
                        other => format!("signal {other}"),
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
    for conn in listener.incoming() {
        match conn {
            Ok(stream) => {
                let host = host.clone();
                spawn_guarded("client", move || serve_client(&host, stream));
            }
            Err(e) => {
                tracing::warn!("accepting a client: {e}");
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
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
    let screen_file = super::screen_path(&host.spec.home, &host.spec.short_id);
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
    let _ = std::fs::remove_file(super::socket_path(&host.spec.home, &host.spec.short_id));
    tracing::info!("host exiting");
    std::process::exit(0);
}

/// The conversation: connect, open the session, then prompt after prompt.
fn drive(host: &Arc<Host>) {
    let conn = host.conn.clone();
    let init = match conn.request(
        method::INITIALIZE,
        schema::initialize_params(),
        Some(CONNECT_TIMEOUT),
    ) {
        Ok(result) => result,
        Err(CallError::Closed) => return,
        Err(e) => {
            return host.fail(&format!("the agent did not answer `initialize`: {e}"));
        }
    };
    let init = match schema::read_initialize(&init) {
        Ok(init) => init,
        Err(why) => return host.fail(&why),
    };
    tracing::info!(agent = ?init.agent, "the agent speaks ACP");
    let cwd = host.spec.cwd.display().to_string();
    let load = host.spec.acp_load.clone().filter(|_| init.load_session);
    let opened = match &load {
        Some(id) => conn
            .request(
                method::SESSION_LOAD,
                json!({"sessionId": id, "cwd": cwd, "mcpServers": host.mcp_servers()}),
                Some(CONNECT_TIMEOUT),
            )
            .map(|_| id.clone()),
        None => conn
            .request(
                method::SESSION_NEW,
                json!({"cwd": cwd, "mcpServers": host.mcp_servers()}),
                Some(CONNECT_TIMEOUT),
            )
            .and_then(|r| {
                r["sessionId"]
                    .as_str()
                    .map(str::to_string)
                    .ok_or_else(|| CallError::Rpc(RpcError::internal("no sessionId in the answer")))
            }),
    };
    let session_id = match opened {
        Ok(id) => id,
        Err(CallError::Closed) => return,
        Err(CallError::Rpc(e)) if e.code == rpc::code::AUTH_REQUIRED => {
            return host.fail(&format!(
                "the agent wants you to log in first ({}); log in with the agent's own CLI, then start the session again",
                e.describe()
            ));
        }
        Err(e) => {
            let what = if load.is_some() {
                "session/load"
            } else {
                "session/new"
            };
            return host.fail(&format!("the agent refused `{what}`: {e}"));
        }
    };
    {
        let mut state = lock(&host.state);
        state.acp_session = Some(session_id.clone());
        state.usage.agent = init.agent.clone();
        state.usage.session_id = Some(session_id.clone());
        host.record(kind::ACP_USAGE, &state.usage);
        let next = if state.prompts.is_empty() {
            AcpState::Waiting
        } else {
            AcpState::Working
        };
        host.set_state(&mut state, next, None);
    }
    loop {
        let prompt = {
            let mut state = lock(&host.state);
            loop {
                if state.exit.is_some() || conn.is_closed() {
                    return;
                }
                if let Some(p) = state.prompts.pop_front() {
                    break p;
                }
                state = host
                    .prompt_ready
                    .wait(state)
                    .unwrap_or_else(|e| e.into_inner());
            }
        };
        {
            let mut state = lock(&host.state);
            state.turn_running = true;
            state.echo_expected = true;
            state.transcript.user(&prompt);
            host.broadcast(&AcpEvent::Prompt {
                text: prompt.clone(),
            });
            host.set_state(&mut state, AcpState::Working, None);
        }
        let result = conn.request(
            method::SESSION_PROMPT,
            schema::prompt_params(&session_id, &prompt),
            None,
        );
        let mut state = lock(&host.state);
        if matches!(result, Err(CallError::Closed)) {
            // The agent is gone mid-turn: the waiter says so (the turn
            // stays running until then).
            return;
        }
        state.turn_running = false;
        state.echo_expected = false;
        let stop = match result {
            Ok(result) => {
                let (stop, usage) = schema::read_prompt_result(&result);
                state.usage.turns += 1;
                if let Some(u) = usage {
                    state.usage.input_tokens += u.input;
                    state.usage.output_tokens += u.output;
                    state.usage.cache_read_tokens += u.cache_read;
                    state.usage.cache_write_tokens += u.cache_write;
                    state.usage.thought_tokens += u.thought;
                }
                host.record(kind::ACP_USAGE, &state.usage);
                state.transcript.turn_ended(&stop);
                host.broadcast(&AcpEvent::TurnEnded {
                    stop_reason: stop.clone(),
                    usage: result.get("usage").cloned(),
                });
                stop
            }
            Err(e) => {
                host.note(
                    &mut state,
                    &format!("the agent ended the turn with an error: {e}"),
                );
                host.broadcast(&AcpEvent::TurnEnded {
                    stop_reason: "error".into(),
                    usage: None,
                });
                "error".to_string()
            }
        };
        // Requests of the turn the agent left unanswered are void now.
        if !state.pending.is_empty() {
            state.pending.clear();
            host.clear(kind::ACP_PERMISSION);
        }
        let next = if state.prompts.is_empty() {
            AcpState::Waiting
        } else {
            AcpState::Working
        };
        host.set_state(&mut state, next, Some(stop));
    }
}

/// What the agent sent (on the reader thread, in order).
fn on_incoming(host: &Arc<Host>, incoming: Incoming) {
    match incoming {
        Incoming::Notification { method, params } => {
            if method == method::SESSION_UPDATE {
                on_update(host, &params["update"]);
            } else {
                tracing::debug!("ignoring the agent's notification {method}");
            }
        }
        Incoming::Request { id, method, params } => on_request(host, id, &method, params),
        Incoming::Malformed(e) => {
            // Answered and logged up to a limit: a program that echoes
            // what it reads would otherwise bounce error responses back
            // and forth without end.
            let n = host.malformed.fetch_add(1, Ordering::Relaxed) + 1;
            if n <= MALFORMED_ANSWERED {
                tracing::warn!("the agent sent a line that is not JSON-RPC: {e}");
                host.conn.send(&e.response());
            } else if n == MALFORMED_ANSWERED + 1 {
                tracing::warn!(
                    "the agent sent {MALFORMED_ANSWERED} lines that are not JSON-RPC; \
                     skipping further ones without an answer (is its stdout ACP?)"
                );
            }
        }
    }
}

fn on_update(host: &Arc<Host>, raw: &Value) {
    let update = schema::read_update(raw);
    let mut state = lock(&host.state);
    match &update {
        Update::Unknown(kind) if state.unknown_kinds.insert(kind.clone()) => {
            tracing::info!("ignoring session/update of unknown kind {kind:?}");
        }
        Update::Usage {
            used,
            size,
            cost_usd,
        } => {
            state.usage.context_used = used.or(state.usage.context_used);
            state.usage.context_size = size.or(state.usage.context_size);
            if cost_usd.is_some() {
                state.usage.cost_usd = *cost_usd;
            }
            host.record(kind::ACP_USAGE, &state.usage);
        }
        _ => {}
    }
    let echo = state.echo_expected;
    state.transcript.apply(&update, echo);
    host.output_seen(&mut state);
    host.broadcast(&AcpEvent::Update {
        update: raw.clone(),
    });
}

fn on_request(host: &Arc<Host>, id: Id, method: &str, params: Value) {
    let root = &host.root;
    let reply = |result: Result<Value, RpcError>| {
        host.conn.respond(id.clone(), result);
    };
    match method {
        method::REQUEST_PERMISSION => {
            let mut state = lock(&host.state);
            let n = state.next_permission;
            match schema::read_permission(&params, n) {
                Ok(permission) => {
                    state.next_permission += 1;
                    let first = state.pending.is_empty();
                    if first {
                        // Blocked, in the store, before anything else.
                        host.record(kind::ACP_PERMISSION, &permission);
                        host.set_state(&mut state, AcpState::Blocked, None);
                    }
                    tracing::info!(question = %permission.question, "the agent asks for permission");
                    state.transcript.permission(&permission);
                    host.broadcast(&AcpEvent::Permission {
                        pending: permission.clone(),
                        tool_call: params["toolCall"].clone(),
                        options: params["options"].clone(),
                    });
                    state.pending.push_back(Pending {
                        permission,
                        rpc_id: id,
                    });
                }
                Err(why) => {
                    drop(state);
                    reply(Err(RpcError::invalid_params(why)));
                }
            }
        }
        method::FS_READ => {
            let path = params["path"].as_str().unwrap_or("");
            reply(
                crate::acp::fs::read_text(
                    root,
                    path,
                    params["line"].as_u64(),
                    params["limit"].as_u64(),
                )
                .map(|content| json!({"content": content})),
            );
        }
        method::FS_WRITE => {
            let path = params["path"].as_str().unwrap_or("");
            let content = params["content"].as_str().unwrap_or("");
            let written = crate::acp::fs::write_text(root, path, content);
            if let Err(e) = &written {
                tracing::info!("refused a write: {e}");
            }
            reply(written.map(|_| Value::Null));
        }
        method::TERMINAL_CREATE => reply(host.terminals.create(&params)),
        method::TERMINAL_OUTPUT => reply(host.terminals.output(&params)),
        method::TERMINAL_KILL => reply(host.terminals.kill(&params)),
        method::TERMINAL_RELEASE => reply(host.terminals.release(&params)),
        method::TERMINAL_WAIT => {
            // Blocks until the command exits: not on the reader.
            let host = host.clone();
            spawn_guarded("terminal-wait", move || {
                let result = host.terminals.wait_for_exit(&params);
                host.conn.respond(id, result);
            });
        }
        other => {
            tracing::info!("the agent asked for {other}, which owt does not offer");
            reply(Err(RpcError::method_not_found(other)));
        }
    }
}

/// Answers the first pending request.
fn answer(host: &Arc<Host>, answer: &PermissionAnswer) -> Result<PermissionAnswered, String> {
    let mut state = lock(&host.state);
    let Some(first) = state.pending.front() else {
        return Err(format!(
            "{} has no pending permission request",
            host.spec.session_name
        ));
    };
    if answer.id.is_some_and(|id| id != first.permission.id) {
        return Err(format!(
            "permission request {} of {} was already answered",
            answer.id.unwrap_or_default(),
            host.spec.session_name
        ));
    }
    let chosen = schema::choose_option(
        &first.permission.options,
        answer.option.as_deref(),
        answer.deny,
    )?
    .cloned();
    let Some(pending) = state.pending.pop_front() else {
        return Err("the request was answered meanwhile".into());
    };
    let option_id = chosen.as_ref().map(|o| o.id.clone());
    host.conn.respond(
        pending.rpc_id,
        Ok(schema::permission_outcome(option_id.as_deref())),
    );
    let name = chosen
        .as_ref()
        .map_or_else(|| "cancelled".to_string(), |o| o.name.clone());
    tracing::info!(answer = %name, "answered the permission request");
    state.transcript.answered(&name);
    host.broadcast(&AcpEvent::Answered {
        id: pending.permission.id,
        option_id: option_id.clone(),
    });
    match state.pending.front() {
        Some(next) => host.record(kind::ACP_PERMISSION, &next.permission),
        None => {
            host.clear(kind::ACP_PERMISSION);
            host.set_state(&mut state, AcpState::Working, None);
        }
    }
    Ok(PermissionAnswered {
        question: pending.permission.question,
        option_id,
        name,
    })
}

/// `session/cancel`, and every pending request answered `cancelled` (the
/// protocol asks the client to).
fn cancel(host: &Arc<Host>) {
    let mut state = lock(&host.state);
    let Some(session) = state.acp_session.clone() else {
        return;
    };
    host.conn
        .notify(method::SESSION_CANCEL, json!({"sessionId": session}));
    while let Some(p) = state.pending.pop_front() {
        host.conn
            .respond(p.rpc_id, Ok(schema::permission_outcome(None)));
        state.transcript.answered("cancelled");
        host.broadcast(&AcpEvent::Answered {
            id: p.permission.id,
            option_id: None,
        });
    }
    host.clear(kind::ACP_PERMISSION);
    if state.turn_running {
        host.set_state(&mut state, AcpState::Working, None);
    }
}

/// Queues a prompt; recorded as input before this returns.
fn queue_prompt(host: &Arc<Host>, text: &str) {
    let mut state = lock(&host.state);
    let now = now_ms();
    state.last_input_at = Some(now);
    if let Some(store) = lock(&host.store).as_ref() {
        let _ = store.record_fact_at(host.spec.session_id, kind::INPUT, &(), now);
    }
    state.prompts.push_back(text.to_string());
    if state.acp.state == AcpState::Waiting {
        host.set_state(&mut state, AcpState::Working, None);
    }
    drop(state);
    host.prompt_ready.notify_all();
}

fn view(state: &State) -> owt_protocol::host::TranscriptView {
    let mut view = state.transcript.view();
    view.pending = state.pending.front().map(|p| p.permission.clone());
    view.turn_running = state.turn_running;
    view.acp_session_id = state.acp_session.clone();
    view
}

/// The transcript's last lines as a screen (`owt peek`).
fn screen(state: &State, rows: usize, scrollback: bool) -> ScreenView {
    let lines = transcript::render(&state.transcript.view().entries);
    let split = lines.len().saturating_sub(rows);
    let (above, shown) = lines.split_at(split);
    ScreenView {
        rows: shown.len() as u16,
        cols: lines.iter().map(|l| l.chars().count()).max().unwrap_or(0) as u16,
        cursor: (0, 0),
        alternate_screen: false,
        lines: shown.to_vec(),
        scrollback: if scrollback {
            above.to_vec()
        } else {
            Vec::new()
        },
    }
}

fn status(host: &Host) -> HostStatus {
    let state = lock(&host.state);
    HostStatus {
        host_pid: host.host_pid,
        agent_pid: Some(host.agent_pid),
        exit: state.exit.clone(),
        attached_clients: lock(&host.clients).len() as u32,
        rows: 0,
        cols: 0,
        started_at: host.started_at,
        last_output_at: state.last_output_at,
        last_input_at: state.last_input_at,
        screen_signal: serde_json::to_value(state.acp.state)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string)),
    }
}

fn serve_client(host: &Arc<Host>, mut stream: UnixStream) {
    let Some(hello) = accept_hello(&mut stream) else {
        return;
    };
    if hello.role == Role::Attach {
        let _ = proto::write_json(
            &mut stream,
            FrameKind::Error,
            &HostError {
                message: format!(
                    "{} talks to its agent through ACP, not a terminal; `owt attach {}` shows its transcript",
                    host.spec.session_name, host.spec.session_name
                ),
            },
        );
        return;
    }
    let welcome = proto::encode_json(
        FrameKind::Welcome,
        &Welcome {
            version: HOST_PROTOCOL_VERSION,
            host_pid: host.host_pid,
            agent_pid: Some(host.agent_pid),
            session_name: host.spec.session_name.clone(),
            short_id: host.spec.short_id.clone(),
        },
    );
    // Replies and events go through one queue, written by one thread.
    let (tx, rx) = mpsc::sync_channel::<Vec<u8>>(CLIENT_QUEUE);
    let Ok(write_half) = stream.try_clone() else {
        return;
    };
    let writer = spawn_guarded("client-writer", move || {
        let mut w = write_half;
        for frame in rx {
            if w.write_all(&frame).is_err() {
                let _ = w.shutdown(std::net::Shutdown::Both);
                break;
            }
        }
    });
    let _ = tx.send(welcome);
    if hello.role == Role::Events {
        let state = lock(&host.state);
        let _ = tx.send(proto::encode_json(FrameKind::Transcript, &view(&state)));
        if let Some(exit) = &state.exit {
            let _ = tx.send(proto::encode_json(FrameKind::Exited, exit));
        } else if let Ok(s) = stream.try_clone() {
            lock(&host.clients).push(EventClient {
                tx: tx.clone(),
                stream: s,
            });
        }
    }
    let mut incoming = BufReader::with_capacity(16 * 1024, &stream);
    loop {
        let frame = match proto::read_frame(&mut incoming) {
            Ok(Some(frame)) => frame,
            Ok(None) => break,
            Err(e) => {
                tracing::debug!("client read: {e}");
                break;
            }
        };
        let reply = handle_request(host, &frame);
        // The client is gone, or it left.
        let done = match reply {
            Some(bytes) => tx.send(bytes).is_err(),
            None => frame.kind == FrameKind::Detach,
        };
        if done {
            break;
        }
    }
    drop(tx);
    if let Some(writer) = writer {
        let _ = writer.join();
    }
}

fn error_frame(message: String) -> Vec<u8> {
    proto::encode_json(FrameKind::Error, &HostError { message })
}

fn handle_request(host: &Arc<Host>, frame: &proto::Frame) -> Option<Vec<u8>> {
    match frame.kind {
        FrameKind::Answer => {
            let answer = match frame.json::<PermissionAnswer>() {
                Ok(a) => a,
                Err(e) => return Some(error_frame(e.to_string())),
            };
            return Some(match self::answer(host, &answer) {
                Ok(done) => proto::encode_json(FrameKind::Answered, &done),
                Err(message) => error_frame(message),
            });
        }
        FrameKind::Cancel => {
            cancel(host);
            return Some(proto::encode(FrameKind::Ok, b""));
        }
        _ => {}
    }
    match decode_request(frame) {
        Request::Send(send) => {
            if lock(&host.state).exit.is_some() {
                return Some(error_frame(format!(
                    "{} has exited",
                    host.spec.session_name
                )));
            }
            queue_prompt(host, &send.text);
            Some(proto::encode(FrameKind::Ok, b""))
        }
        Request::Peek(req) => {
            let state = lock(&host.state);
            Some(proto::encode_json(
                FrameKind::Screen,
                &screen(&state, 40, req.scrollback),
            ))
        }
        Request::Status => Some(proto::encode_json(FrameKind::Status, &status(host))),
        Request::Terminate(grace) => {
            host.stop_agent(grace);
            Some(proto::encode(FrameKind::Ok, b""))
        }
        Request::Journal => Some(proto::encode_json(
            FrameKind::Journal,
            &host
                .journal
                .as_ref()
                .map_or_else(JournalView::not_ready, |journal| journal.view()),
        )),
        Request::Detach => None,
        Request::Input(_) | Request::Resize { .. } => Some(error_frame(format!(
            "{} talks to its agent through ACP: send a prompt (owt send) instead of keys",
            host.spec.session_name
        ))),
        Request::Invalid(message) => Some(error_frame(message)),
    }
}
