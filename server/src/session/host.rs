//! The session host process (`owt __host run`): owns one agent's PTY, its
//! screen model and the unix socket clients attach to.
//!
//! Threads (std only, no async): the PTY reader (fans output out to
//! attached clients at once and hands it, bounded, to the parser), the
//! parser (the `vt100` screen model; answers terminal queries when nobody is
//! attached; makes redraws at their exact place in the stream), the PTY
//! writer (sent text, typed prompts, query answers; attached keys are
//! written directly), the child waiter, the monitor (the only owner of the
//! store: output/input/screen facts, typed prompt), the acceptor (main
//! thread), and per connection a reader and a writer.
//!
//! Invariants: the agent never waits on a client — every client has a
//! bounded queue, and a client that falls behind gets a fresh redraw instead
//! of the bytes it missed. Lock order: `clients`, `State`, a client's queue.
//! Nothing here panics on purpose; thread bodies are wrapped so a panic is
//! logged (to the host log) instead of unwinding into nothing.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use owt_protocol::host::{
    self as proto, AgentExit, FrameKind, HostError, HostStatus, JournalView, PeekRequest, Resize,
    Role, ScreenView, SendText, Terminate, Welcome, HOST_PROTOCOL_VERSION,
};
use portable_pty::{CommandBuilder, MasterPty, PtySize};

use super::queries::{self, QueryScanner};
use super::{rules, HostSpec, SessionError};
use crate::status::{kind, AgentSignal, ExitFact, HostFact};
use crate::store::{now_ms, Store};

/// Largest screen the host models; a client asking for more gets this (the
/// screen model allocates every cell, and its scrollback every line).
pub const MAX_ROWS: u16 = 500;
pub const MAX_COLS: u16 = 1_000;
/// Queued output bytes after which a client is considered behind.
const CLIENT_QUEUE_LIMIT: usize = 4 * 1024 * 1024;
/// At most one `output` fact per this interval.
const OUTPUT_FACT_MS: i64 = 1_000;
/// Quiet output after which the host gives back what the burst used
/// ([`crate::memory::release_after_burst`]), at most every
/// [`RELEASE_INTERVAL`].
const RELEASE_QUIET_MS: u64 = 200;
const RELEASE_INTERVAL: Duration = Duration::from_secs(5);
/// Quiet time after output before a typed prompt may be typed.
const PROMPT_QUIET_MS: u64 = 800;
/// A typed prompt is typed after this long when the agent's screen never
/// shows an input box it recognises — unless a question is on screen (owt
/// answers nothing on the human's behalf).
const PROMPT_DEADLINE_MS: u64 = 8_000;
/// The same for agents with a ready rule of their own (Aider).
const PROMPT_DEADLINE_KNOWN_MS: u64 = 30_000;
/// With the task on its command line, a built-in agent whose screen shows
/// an idle input box has not started on it yet
/// (`rules::input_box_before_argv_task`): it reads as working until its
/// screen shows work or a dialog, a native signal arrives, the human types,
/// or this long passes.
const FIRST_TURN_GRACE_MS: u64 = 60_000;
/// An idle input box reads as waiting only once the output has been quiet
/// this long: Codex shows its input box, and no spinner, while the model's
/// answer streams in; a screen that still changes is not idle.
const INPUT_BOX_QUIET_MS: u64 = 1_000;
/// An unchanged screen judgement is recorded again after this long.
const SCREEN_FACT_REFRESH_MS: u64 = 10_000;
/// Pause between typed text and its Enter (TUIs treat a fast Enter as part
/// of a paste).
const ENTER_DELAY_MS: u64 = 60;
/// How long the host stays after the agent exits, so a last peek works.
const LINGER_MS: u64 = 500;

/// Runs a host until its agent exits. `ready` receives `ok <agent pid>` once
/// the socket serves, or `error: …` if starting fails.
pub fn run(spec: HostSpec, mut ready: Option<File>) -> Result<(), SessionError> {
    match start(&spec) {
        Ok(started) => {
            if let Some(mut r) = ready.take() {
                let _ = writeln!(r, "ok {}", started.agent_pid.unwrap_or(0));
            }
            serve(started);
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

fn host_err(context: &str, e: impl std::fmt::Display) -> SessionError {
    SessionError::Host(format!("{context}: {e}"))
}

/// Messages for the PTY writer thread.
enum ToAgent {
    Bytes(Vec<u8>),
    /// Input that counts as the human's (records an `input` fact).
    Input(Vec<u8>),
    Pause(Duration),
}

/// Messages for the parser thread, in the order of the output stream.
enum ToParser {
    /// An encoded `Output` frame (header, then the agent's bytes).
    Chunk(Arc<[u8]>),
    /// A client needs a redraw at this point of the stream.
    Redraw(Arc<Client>),
    End,
}

/// Output chunks up to this size are parsed by the reader itself when the
/// parser has nothing queued.
const INLINE_PARSE_MAX: usize = 512;
/// Chunks the reader may run ahead of the parser.
const PARSER_BACKLOG: usize = 64;

/// Messages for the monitor thread.
enum ToMonitor {
    /// Record the exit, then acknowledge.
    Exited(AgentExit, mpsc::Sender<()>),
    /// Record what is pending (the input just typed) now, then acknowledge:
    /// a `send` returns only once its input is a fact, so a status read
    /// right after it never sees the screen from before it.
    Flush(mpsc::Sender<()>),
}

struct ClientQueue {
    /// The unwritten rest of a frame a direct write cut short: it goes out
    /// before anything else and is never dropped (the stream would tear).
    head: Vec<u8>,
    frames: VecDeque<Arc<[u8]>>,
    bytes: usize,
    /// Someone (the writer thread, or the reader with a direct write) is
    /// writing to the socket; nobody else may.
    writing: bool,
    /// A redraw is coming from the parser; hold everything until then.
    awaiting_redraw: bool,
    /// Where that redraw goes in `frames`.
    redraw_at: usize,
    closed: bool,
}

struct Client {
    id: u64,
    queue: Mutex<ClientQueue>,
    ready: Condvar,
    /// The client's socket, written by the writer thread or, when its queue
    /// is empty, directly by the PTY reader (one thread hop less per echo).
    stream: UnixStream,
}

impl Client {
    fn new(id: u64, stream: UnixStream) -> Arc<Client> {
        Arc::new(Client {
            id,
            queue: Mutex::new(ClientQueue {
                head: Vec::new(),
                frames: VecDeque::new(),
                bytes: 0,
                writing: false,
                awaiting_redraw: false,
                redraw_at: 0,
                closed: false,
            }),
            ready: Condvar::new(),
            stream,
        })
    }

    /// Queues a reply or control frame (never dropped).
    fn push(&self, frame: Vec<u8>) {
        let mut q = lock(&self.queue);
        q.bytes += frame.len();
        q.frames.push_back(frame.into());
        drop(q);
        self.ready.notify_one();
    }

    /// Queues output. A client too far behind loses its queue (this frame
    /// included) and gets a redraw instead; returns whether the caller must
    /// ask the parser for that redraw.
    fn push_output(&self, frame: &Arc<[u8]>) -> bool {
        let mut q = lock(&self.queue);
        if q.closed {
            return false;
        }
        if !q.awaiting_redraw && !q.writing && q.head.is_empty() && q.frames.is_empty() {
            // Nothing is ahead of this frame: try the socket right away.
            q.writing = true;
            drop(q);
            let sent = send_now(&self.stream, frame);
            let mut q = lock(&self.queue);
            q.writing = false;
            match sent {
                Ok(n) if n < frame.len() => {
                    q.head.extend_from_slice(&frame[n..]);
                    q.bytes += frame.len() - n;
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::debug!("client write: {e}");
                    q.closed = true;
                    let _ = self.stream.shutdown(std::net::Shutdown::Both);
                }
            }
            let wake = q.closed || !q.head.is_empty() || !q.frames.is_empty();
            drop(q);
            if wake {
                self.ready.notify_one();
            }
            return false;
        }
        if !q.awaiting_redraw && q.bytes + frame.len() > CLIENT_QUEUE_LIMIT {
            q.frames.clear();
            q.bytes = q.head.len();
            q.awaiting_redraw = true;
            q.redraw_at = 0;
            return true;
        }
        q.bytes += frame.len();
        q.frames.push_back(frame.clone());
        drop(q);
        self.ready.notify_one();
        false
    }

    /// Holds the queue until a redraw arrives (placed after what is queued).
    fn await_redraw(&self) {
        let mut q = lock(&self.queue);
        q.awaiting_redraw = true;
        q.redraw_at = q.frames.len();
    }

    /// Puts the awaited redraw in place and releases the queue.
    fn deliver_redraw(&self, redraw: Vec<u8>) {
        let mut q = lock(&self.queue);
        let at = q.redraw_at.min(q.frames.len());
        q.bytes += redraw.len();
        q.frames.insert(at, redraw.into());
        q.awaiting_redraw = false;
        drop(q);
        self.ready.notify_one();
    }

    fn close(&self) {
        lock(&self.queue).closed = true;
        self.ready.notify_one();
    }
}

/// Locks a mutex, recovering from poisoning (a panicked thread was already
/// reported; the data is still the best we have).
pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

struct State {
    parser: vt100::Parser,
    scanner: QueryScanner,
    /// Bumped on every read of output.
    output_seq: u64,
    last_output: Option<Instant>,
    last_output_at: Option<i64>,
    last_input_at: Option<i64>,
    screen_signal: Option<AgentSignal>,
    /// The last desktop notification (OSC 9) the agent sent, as a signal,
    /// and when (ms); `native_seq` counts them.
    native: Option<(AgentSignal, i64)>,
    native_seq: u64,
    exit: Option<AgentExit>,
}

struct Shared {
    spec: HostSpec,
    host_pid: u32,
    agent_pid: Option<u32>,
    started_at: i64,
    state: Mutex<State>,
    master: Mutex<Box<dyn MasterPty + Send>>,
    /// Attached clients. Lock order: `clients`, then `State`, then a queue.
    clients: Mutex<Vec<Arc<Client>>>,
    n_attached: AtomicUsize,
    /// Output chunks and redraw requests, in stream order, to the parser.
    to_parser: mpsc::SyncSender<ToParser>,
    parser_done: AtomicBool,
    /// Messages sent to the parser and not yet handled: while there are
    /// none, the reader may parse a small chunk itself (in stream order).
    parser_pending: AtomicUsize,
    /// The PTY writer; input from clients is written directly.
    pty_writer: Mutex<Box<dyn Write + Send>>,
    to_agent: mpsc::Sender<ToAgent>,
    /// Held while one `send` queues its text, pause and Enter, so two
    /// concurrent sends never interleave (`textAtextB⏎⏎`).
    typing: Mutex<()>,
    next_client: AtomicU64,
    exiting: AtomicBool,
    /// The monitor's inbox (set once it runs).
    to_monitor: Mutex<Option<mpsc::Sender<ToMonitor>>>,
    /// The work journal of the agent's checkout (`None` outside a
    /// repository, or when inotify refused).
    journal: Option<crate::guard::journal::Journal>,
}

struct Started {
    shared: Arc<Shared>,
    listener: UnixListener,
    agent_pid: Option<u32>,
    child: Box<dyn portable_pty::Child + Send + Sync>,
    reader: Box<dyn Read + Send>,
    /// The PTY master's descriptor, to see whether more output is ready.
    master_fd: Option<std::os::fd::RawFd>,
    parser_rx: mpsc::Receiver<ToParser>,
    to_agent_rx: mpsc::Receiver<ToAgent>,
    store: Option<Store>,
}

/// The run folder: created 0700 and refused if another user owns it.
pub(super) fn ensure_private_dir(dir: &Path) -> Result<(), SessionError> {
    std::fs::create_dir_all(dir)
        .map_err(|e| host_err(&format!("creating {}", dir.display()), e))?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
        .map_err(|e| host_err(&format!("restricting {} to its owner", dir.display()), e))?;
    Ok(())
}

fn start(spec: &HostSpec) -> Result<Started, SessionError> {
    let socket = super::socket_path(&spec.home, &spec.short_id);
    let run_dir = socket.parent().unwrap_or(&spec.home).to_path_buf();
    ensure_private_dir(&run_dir)?;
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

    let rows = if spec.rows == 0 { 40 } else { spec.rows };
    let cols = if spec.cols == 0 { 120 } else { spec.cols };
    let pty = portable_pty::native_pty_system()
        .openpty(PtySize {
            rows,
            cols,
            pixel_width: 0,
            pixel_height: 0,
        })
        .map_err(|e| host_err("opening a pseudo-terminal", e))?;
    if spec.argv.is_empty() {
        return Err(SessionError::Host("the agent's argv is empty".into()));
    }
    let mut cmd = CommandBuilder::from_argv(spec.argv.iter().map(Into::into).collect());
    cmd.cwd(&spec.cwd);
    for (k, v) in &spec.env {
        cmd.env(k, v);
    }
    cmd.env("OWT_SESSION", &spec.short_id);
    cmd.env("OWT_HOME", &spec.home);
    cmd.env("TERM", "xterm-256color");
    let child = pty.slave.spawn_command(cmd).map_err(|e| {
        host_err(
            &format!("starting `{}` in {}", spec.argv[0], spec.cwd.display()),
            e,
        )
    })?;
    // portable-pty's recipe: the slave belongs to the child now.
    drop(pty.slave);
    let agent_pid = child.process_id();
    let master_fd = pty.master.as_raw_fd();
    let reader = pty
        .master
        .try_clone_reader()
        .map_err(|e| host_err("reading the pseudo-terminal", e))?;
    let writer = pty
        .master
        .take_writer()
        .map_err(|e| host_err("writing the pseudo-terminal", e))?;

    let host_pid = std::process::id();
    let store = match Store::open(&spec.home) {
        Ok(store) => {
            let fact = HostFact {
                host_pid,
                agent_pid,
                socket: socket.to_string_lossy().into_owned(),
                headless: spec.headless,
                transport: Default::default(),
            };
            if let Err(e) = store.record_fact(spec.session_id, kind::HOST, &fact) {
                tracing::warn!("recording the host fact: {e}");
            }
            Some(store)
        }
        Err(e) => {
            tracing::warn!("opening the store: {e}; facts will not be recorded");
            None
        }
    };
    let journal = match crate::guard::journal::Journal::start(&spec.cwd) {
        Ok(journal) => Some(journal),
        Err(e) => {
            tracing::info!("no work journal for {}: {e}", spec.cwd.display());
            None
        }
    };
    let (to_agent, to_agent_rx) = mpsc::channel();
    let (to_parser, parser_rx) = mpsc::sync_channel(PARSER_BACKLOG);
    let shared = Arc::new(Shared {
        spec: spec.clone(),
        host_pid,
        agent_pid,
        started_at: now_ms(),
        state: Mutex::new(State {
            parser: vt100::Parser::new(rows, cols, spec.scrollback),
            scanner: QueryScanner::new(),
            output_seq: 0,
            last_output: None,
            last_output_at: None,
            last_input_at: None,
            screen_signal: None,
            native: None,
            native_seq: 0,
            exit: None,
        }),
        master: Mutex::new(pty.master),
        clients: Mutex::new(Vec::new()),
        n_attached: AtomicUsize::new(0),
        to_parser,
        parser_done: AtomicBool::new(false),
        parser_pending: AtomicUsize::new(0),
        pty_writer: Mutex::new(writer),
        to_agent,
        typing: Mutex::new(()),
        next_client: AtomicU64::new(1),
        exiting: AtomicBool::new(false),
        to_monitor: Mutex::new(None),
        journal,
    });
    tracing::info!(session = %spec.session_name, agent_pid = ?agent_pid, "host started");
    Ok(Started {
        shared,
        listener,
        agent_pid,
        child,
        reader,
        master_fd,
        parser_rx,
        to_agent_rx,
        store,
    })
}

/// Runs `body` on a named thread; a panic is logged instead of unwinding
/// into nothing.
pub(super) fn spawn_guarded(
    name: &str,
    body: impl FnOnce() + Send + 'static,
) -> Option<std::thread::JoinHandle<()>> {
    let thread_name = name.to_string();
    std::thread::Builder::new()
        .name(name.to_string())
        .spawn(move || {
            if let Err(panic) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)) {
                let msg = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                tracing::error!("thread {thread_name} panicked: {msg}");
            }
        })
        .map_err(|e| tracing::error!("spawning thread {name}: {e}"))
        .ok()
}

fn serve(started: Started) {
    let Started {
        shared,
        listener,
        agent_pid: _,
        mut child,
        reader,
        master_fd,
        parser_rx,
        to_agent_rx,
        store,
    } = started;
    let (monitor_tx, monitor_rx) = mpsc::channel::<ToMonitor>();
    *lock(&shared.to_monitor) = Some(monitor_tx.clone());
    let (reader_done_tx, reader_done_rx) = mpsc::channel::<()>();

    {
        let shared = shared.clone();
        spawn_guarded("pty-reader", move || read_agent(&shared, reader, master_fd));
    }
    {
        let shared = shared.clone();
        spawn_guarded("parser", move || {
            parse_output(&shared, parser_rx);
            shared.parser_done.store(true, Ordering::SeqCst);
            let _ = reader_done_tx.send(());
        });
    }
    {
        let shared = shared.clone();
        spawn_guarded("pty-writer", move || write_agent(&shared, to_agent_rx));
    }
    {
        let shared = shared.clone();
        spawn_guarded("monitor", move || monitor(&shared, store, monitor_rx));
    }
    if !shared.spec.headless {
        // Checks when the agent's turn ends, the failure typed back.
        let typer = shared.clone();
        let watcher = shared.clone();
        let side = crate::feedback::turn::HostSide {
            session_id: shared.spec.session_id,
            home: shared.spec.home.clone(),
            type_text: Box::new(move |text| type_text(&typer, text, true)),
            exiting: Box::new(move || watcher.exiting.load(Ordering::SeqCst)),
        };
        spawn_guarded("feedback", move || crate::feedback::turn::run(side));
    }
    {
        let shared = shared.clone();
        spawn_guarded("waiter", move || {
            let exit = match child.wait() {
                Ok(status) => AgentExit {
                    code: if status.signal().is_some() {
                        None
                    } else {
                        Some(status.exit_code() as i32)
                    },
                    signal: status.signal().map(str::to_string),
                },
                Err(e) => {
                    tracing::error!("waiting for the agent: {e}");
                    AgentExit {
                        code: None,
                        signal: Some(format!("lost: {e}")),
                    }
                }
            };
            tracing::info!(?exit, "agent exited");
            // Let the reader drain what the agent wrote last.
            let _ = reader_done_rx.recv_timeout(Duration::from_millis(1_000));
            finish(&shared, exit, &monitor_tx);
        });
    }
    for conn in listener.incoming() {
        match conn {
            Ok(stream) => {
                let shared = shared.clone();
                spawn_guarded("client", move || serve_client(&shared, stream));
            }
            Err(e) => {
                tracing::warn!("accepting a client: {e}");
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
}

/// The agent is gone: save its last screen, tell everyone, linger, leave.
fn finish(shared: &Arc<Shared>, exit: AgentExit, monitor: &mpsc::Sender<ToMonitor>) {
    let text = {
        let mut state = lock(&shared.state);
        state.exit = Some(exit.clone());
        screen_view(&mut state.parser, false).text()
    };
    let clients = lock(&shared.clients).clone();
    let screen_file = super::screen_path(&shared.spec.home, &shared.spec.short_id);
    if let Some(dir) = screen_file.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    if let Err(e) = crate::store::write_private(&screen_file, text.as_bytes()) {
        tracing::warn!("saving the final screen to {}: {e}", screen_file.display());
    }
    let (done_tx, done_rx) = mpsc::channel();
    if monitor
        .send(ToMonitor::Exited(exit.clone(), done_tx))
        .is_ok()
    {
        let _ = done_rx.recv_timeout(Duration::from_secs(5));
    }
    let frame = proto::encode_json(FrameKind::Exited, &exit);
    for client in &clients {
        client.push(frame.clone());
    }
    shared.exiting.store(true, Ordering::SeqCst);
    std::thread::sleep(Duration::from_millis(LINGER_MS));
    // A checks run still going ends with the host.
    crate::feedback::run::kill_all();
    let _ = std::fs::remove_file(super::socket_path(&shared.spec.home, &shared.spec.short_id));
    tracing::info!("host exiting");
    std::process::exit(0);
}

/// Reads the agent's output and fans it out to attached clients at once;
/// the parser thread follows behind (bounded), so the screen model costs
/// throughput only when it is the bottleneck.
fn read_agent(
    shared: &Arc<Shared>,
    mut reader: Box<dyn Read + Send>,
    master_fd: Option<std::os::fd::RawFd>,
) {
    let mut buf = vec![0u8; 64 * 1024];
    let mut lagging = Vec::new();
    let mut found = Vec::new();
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                tracing::debug!("pty read ended: {e}");
                break;
            }
        };
        // A PTY hands out about 4 KiB per read: take what is already there
        // too, so a burst costs one frame, not sixteen.
        let mut n = n;
        while let Some(fd) = master_fd {
            if buf.len() - n < 4096 || !readable_now(fd) {
                break;
            }
            match reader.read(&mut buf[n..]) {
                Ok(0) | Err(_) => break,
                Ok(more) => n += more,
            }
        }
        let frame: Arc<[u8]> = proto::encode(FrameKind::Output, &buf[..n]).into();
        // Fan-out and the parser's queue in one order: a redraw request sits
        // exactly where the client's stream was cut.
        let clients = lock(&shared.clients);
        for client in clients.iter() {
            if client.push_output(&frame) {
                lagging.push(client.clone());
            }
        }
        // A small chunk with nothing queued ahead of it (a key's echo, a
        // status line) is parsed right here: no parser thread woken for it.
        // Under the clients lock no redraw request can slip in between.
        let sent = if n <= INLINE_PARSE_MAX
            && lagging.is_empty()
            && shared.parser_pending.load(Ordering::SeqCst) == 0
        {
            parse_chunk(shared, &frame[proto::HEADER_LEN..], &mut found);
            true
        } else {
            send_to_parser(shared, ToParser::Chunk(frame))
                && lagging
                    .drain(..)
                    .all(|c| send_to_parser(shared, ToParser::Redraw(c)))
        };
        drop(clients);
        if !sent {
            break;
        }
    }
    let _ = send_to_parser(shared, ToParser::End);
}

/// Whether `fd` has input ready right now.
fn readable_now(fd: std::os::fd::RawFd) -> bool {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd, no timeout.
    unsafe { libc::poll(&mut pfd, 1, 0) == 1 && pfd.revents & libc::POLLIN != 0 }
}

/// Feeds output into the screen model, answers terminal queries when
/// nobody is attached, and makes redraws at their place in the stream.
fn parse_output(shared: &Arc<Shared>, rx: mpsc::Receiver<ToParser>) {
    let mut found = Vec::new();
    for msg in rx {
        match msg {
            ToParser::Chunk(frame) => parse_chunk(shared, &frame[proto::HEADER_LEN..], &mut found),
            ToParser::Redraw(client) => {
                let bytes = proto::encode(
                    FrameKind::Redraw,
                    &redraw(lock(&shared.state).parser.screen()),
                );
                client.deliver_redraw(bytes);
            }
            ToParser::End => break,
        }
        shared.parser_pending.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Queues `msg` for the parser; false once the parser is gone.
fn send_to_parser(shared: &Shared, msg: ToParser) -> bool {
    shared.parser_pending.fetch_add(1, Ordering::SeqCst);
    let sent = shared.to_parser.send(msg).is_ok();
    if !sent {
        shared.parser_pending.fetch_sub(1, Ordering::SeqCst);
    }
    sent
}

/// Feeds one chunk of output to the screen model and answers the terminal
/// queries in it when nobody attached will.
fn parse_chunk(shared: &Shared, chunk: &[u8], found: &mut Vec<(usize, queries::Query)>) {
    let mut replies = Vec::new();
    let mut state = lock(&shared.state);
    found.clear();
    state.scanner.scan(chunk, found);
    for message in state.scanner.take_notifications() {
        if let Some(signal) = rules::notification_signal(&shared.spec.provider, &message) {
            tracing::info!(?signal, "the agent sent a notification");
            state.native = Some((signal, now_ms()));
            state.native_seq += 1;
        }
    }
    if found.is_empty() || shared.n_attached.load(Ordering::SeqCst) > 0 {
        state.parser.process(chunk);
    } else {
        // Answer each query from the screen as it was when asked.
        let mut at = 0;
        for &(end, query) in found.iter() {
            state.parser.process(&chunk[at..end]);
            at = end;
            replies.extend(queries::answer(query, state.parser.screen()));
        }
        state.parser.process(&chunk[at..]);
    }
    state.output_seq += 1;
    state.last_output = Some(Instant::now());
    state.last_output_at = Some(now_ms());
    drop(state);
    if !replies.is_empty() {
        let _ = shared.to_agent.send(ToAgent::Bytes(replies));
    }
}

fn write_agent(shared: &Shared, rx: mpsc::Receiver<ToAgent>) {
    for msg in rx {
        let result = match msg {
            ToAgent::Bytes(bytes) | ToAgent::Input(bytes) => write_pty(shared, &bytes),
            ToAgent::Pause(d) => {
                std::thread::sleep(d);
                Ok(())
            }
        };
        if let Err(e) = result {
            tracing::debug!("pty write failed: {e}");
        }
    }
}

fn write_pty(shared: &Shared, bytes: &[u8]) -> std::io::Result<()> {
    let mut w = lock(&shared.pty_writer);
    w.write_all(bytes)?;
    w.flush()
}

/// Queues `bytes` as the human's input and notes when.
fn type_input(shared: &Shared, bytes: Vec<u8>) {
    lock(&shared.state).last_input_at = Some(now_ms());
    let _ = shared.to_agent.send(ToAgent::Input(bytes));
}

/// Types `text` as one input (see [`typed_bytes`]), then Enter after a
/// short pause.
fn type_text(shared: &Shared, text: &str, enter: bool) {
    let _typing = lock(&shared.typing);
    let paste_mode = lock(&shared.state).parser.screen().bracketed_paste();
    type_input(shared, typed_bytes(&shared.spec.provider, text, paste_mode));
    if enter {
        let _ = shared
            .to_agent
            .send(ToAgent::Pause(Duration::from_millis(ENTER_DELAY_MS)));
        type_input(shared, b"\r".to_vec());
    }
}

/// The bytes that type `text` into `provider` as one input, never as one
/// submission per line: one bracketed paste when the agent enabled paste
/// mode; else Aider's own multi-line form (`{owt` … `owt}`); else, for
/// programs with no known multi-line form, the lines joined by spaces.
pub(crate) fn typed_bytes(provider: &str, text: &str, paste_mode: bool) -> Vec<u8> {
    if !text.contains('\n') {
        return text.as_bytes().to_vec();
    }
    if paste_mode {
        let mut bytes = Vec::with_capacity(text.len() + 12);
        bytes.extend_from_slice(b"\x1b[200~");
        bytes.extend_from_slice(text.as_bytes());
        bytes.extend_from_slice(b"\x1b[201~");
        return bytes;
    }
    if provider == "aider" {
        return format!("{{owt\r{}\rowt}}", text.replace('\n', "\r")).into_bytes();
    }
    text.split('\n')
        .map(str::trim_end)
        .collect::<Vec<_>>()
        .join(" ")
        .into_bytes()
}

/// The monitor: sole owner of the store. Records throttled output, input
/// and screen facts and the agent's own notifications, types the prompt
/// when the agent is ready, and records the exit.
fn monitor(shared: &Arc<Shared>, store: Option<Store>, rx: mpsc::Receiver<ToMonitor>) {
    let id = shared.spec.session_id;
    let provider = shared.spec.provider.as_str();
    let record = |kind: &str, at: i64, value: &dyn erased::Value| {
        if let Some(store) = &store {
            if let Err(e) = value.record(store, id, kind, at) {
                tracing::warn!("recording a {kind} fact: {e}");
            }
        }
    };
    let started = Instant::now();
    let mut recorded_output_at: Option<i64> = None;
    let mut recorded_input_at: Option<i64> = None;
    let mut judged_seq = 0u64;
    let mut judged_at: Option<Instant> = None;
    // The last screen fact recorded: its signal, when, and the input it
    // was judged after.
    let mut recorded_screen: Option<(AgentSignal, Instant, Option<i64>)> = None;
    let mut native_seq = 0u64;
    // The last judgement saw an input box while output still flowed: judge
    // again once it is quiet.
    let mut input_box_pending = false;
    let mut first_turn = shared.spec.prompt_in_argv
        && !shared.spec.headless
        && rules::input_box_before_argv_task(provider);
    let mut prompt = shared.spec.typed_prompt.clone().filter(|p| !p.is_empty());
    let mut question_noted = false;
    // The agent's memory, sampled now and then (`memory` facts; queued
    // sessions are looked at when it gives back a lot).
    let mut memory = shared.agent_pid.map(super::memory::Sampler::new);
    // The output sequence number last followed by a release of memory, and
    // when that was.
    let mut released_seq = 0u64;
    let mut released_at: Option<Instant> = None;
    loop {
        let mut flushed = None;
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(ToMonitor::Flush(ack)) => flushed = Some(ack),
            Ok(ToMonitor::Exited(exit, done)) => {
                let (out_at, in_at) = {
                    let s = lock(&shared.state);
                    (s.last_output_at, s.last_input_at)
                };
                if let Some(at) = out_at.filter(|at| Some(*at) != recorded_output_at) {
                    record(kind::OUTPUT, at, &());
                }
                if let Some(at) = in_at.filter(|at| Some(*at) != recorded_input_at) {
                    record(kind::INPUT, at, &());
                }
                let fact = ExitFact {
                    code: exit.code,
                    signal: exit.signal,
                };
                record(kind::EXIT, now_ms(), &fact);
                // Its place on the machine is free: a queued session may start.
                if let Some(store) = &store {
                    super::admit_if_queued(store, &shared.spec.home);
                }
                let _ = done.send(());
                return;
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => return,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        if let Some(sample) = memory.as_mut().and_then(|m| m.poll()) {
            if let (Some(fact), Some(store)) = (sample.record, &store) {
                record(kind::MEMORY, now_ms(), &fact);
                if let Err(e) =
                    store.record_agent_peak(&shared.spec.short_id, provider, fact.peak_bytes)
                {
                    tracing::warn!("recording the agent's peak memory: {e}");
                }
            }
            if let (true, Some(store)) = (sample.freed, &store) {
                super::admit_if_queued(store, &shared.spec.home);
            }
        }
        let now = now_ms();
        let quiet_enough =
            |q: Option<Duration>, ms: u64| q.is_some_and(|q| q >= Duration::from_millis(ms));
        let prompt_deadline = if provider == "aider" {
            PROMPT_DEADLINE_KNOWN_MS
        } else {
            PROMPT_DEADLINE_MS
        };
        let late = started.elapsed() >= Duration::from_millis(prompt_deadline);
        let (out_at, in_at, seq, quiet_for, screen, paste_mode, native, due) = {
            let s = lock(&shared.state);
            let quiet_for = s.last_output.map(|t| t.elapsed());
            // Judge when output settles, and at least every REJUDGE_MS
            // while it never does (animated TUIs); never a screen that
            // does not show the last input's effect yet (no output since).
            let shows_input = s.last_input_at <= s.last_output_at;
            let due = shows_input
                && ((s.output_seq != judged_seq
                    && (quiet_enough(quiet_for, rules::SETTLE_MS)
                        || judged_at.is_none_or(|t| {
                            t.elapsed() >= Duration::from_millis(rules::REJUDGE_MS)
                        })))
                    || (input_box_pending && quiet_enough(quiet_for, INPUT_BOX_QUIET_MS)));
            let for_prompt = prompt.is_some() && (quiet_enough(quiet_for, PROMPT_QUIET_MS) || late);
            let screen =
                (due || for_prompt).then(|| rules::ScreenText::from_screen(s.parser.screen()));
            let native = (s.native_seq != native_seq).then_some((s.native, s.native_seq));
            (
                s.last_output_at,
                s.last_input_at,
                s.output_seq,
                quiet_for,
                screen,
                s.parser.screen().bracketed_paste(),
                native,
                due,
            )
        };
        // A burst of output is over: its buffers go back, and the binary's
        // pages mapped to start the agent and parse its output too.
        if seq != released_seq
            && quiet_enough(quiet_for, RELEASE_QUIET_MS)
            && released_at.is_none_or(|t| t.elapsed() >= RELEASE_INTERVAL)
        {
            released_seq = seq;
            released_at = Some(Instant::now());
            crate::memory::release_after_burst();
        }
        if let Some(at) = out_at {
            let due =
                recorded_output_at.is_none_or(|prev| at > prev && now - prev >= OUTPUT_FACT_MS);
            if due {
                record(kind::OUTPUT, at, &());
                recorded_output_at = Some(at);
            }
        }
        if let Some(at) = in_at.filter(|at| Some(*at) != recorded_input_at) {
            record(kind::INPUT, at, &());
            recorded_input_at = Some(at);
            // The human (or owt send) took over: the screen is honest now.
            first_turn = false;
        }
        if let Some(ack) = flushed.take() {
            let _ = ack.send(());
        }
        if let Some((signal, seq)) = native {
            native_seq = seq;
            if let Some((signal, at)) = signal {
                // What the agent said itself, like a hook.
                record(kind::HOOK, at, &signal);
                first_turn = false;
            }
        }
        if let Some(screen) = screen.as_ref().filter(|_| due) {
            judged_seq = seq;
            judged_at = Some(Instant::now());
            let verdict = rules::screen_verdict(provider, screen);
            let mut signal = verdict.signal();
            input_box_pending = false;
            // Before the agent has its task (a typed prompt still to type),
            // or before it shows that it started on the one on its command
            // line, its idle input box means "starting", not "waiting".
            let grace = started.elapsed() < Duration::from_millis(FIRST_TURN_GRACE_MS);
            if first_turn && !grace {
                first_turn = false;
            }
            let before_task = first_turn || prompt.is_some();
            match verdict {
                rules::Verdict::Working | rules::Verdict::Blocked => first_turn = false,
                rules::Verdict::InputBox | rules::Verdict::Unknown if before_task => {
                    signal = AgentSignal::Working
                }
                rules::Verdict::InputBox if !quiet_enough(quiet_for, INPUT_BOX_QUIET_MS) => {
                    // No opinion yet: the output's recency decides.
                    signal = AgentSignal::Idle;
                    input_box_pending = true;
                }
                _ => {}
            }
            lock(&shared.state).screen_signal = Some(signal);
            let record_it = recorded_screen.is_none_or(|(prev, at, input)| {
                prev != signal
                    || input != in_at
                    || at.elapsed() >= Duration::from_millis(SCREEN_FACT_REFRESH_MS)
            });
            if record_it {
                record(kind::SCREEN, now_ms(), &signal);
                recorded_screen = Some((signal, Instant::now(), in_at));
            }
        }
        if prompt.is_some() {
            let quiet = quiet_enough(quiet_for, PROMPT_QUIET_MS);
            let readiness = screen
                .as_ref()
                .filter(|_| quiet || late)
                .map(|screen| rules::prompt_readiness(provider, screen, paste_mode));
            let type_now = match readiness {
                Some(rules::Readiness::Ready) => true,
                Some(rules::Readiness::Question) => {
                    if !question_noted {
                        tracing::info!(
                            "a question is on screen: the first prompt waits until it is answered"
                        );
                        question_noted = true;
                    }
                    false
                }
                // Never typed into a question, even late.
                Some(rules::Readiness::NotYet) => late,
                None => false,
            };
            if type_now {
                if let Some(p) = prompt.take() {
                    tracing::info!(?readiness, "typing the first prompt");
                    type_text(shared, &p, true);
                }
            }
        }
    }
}

#[cfg(test)]
mod typing_tests {
    use super::typed_bytes;

    /// Regression (issue 16): Aider's multi-line first prompt was typed
    /// before its line editor turned bracketed paste on, and each line was
    /// submitted on its own (12 model requests for one task).
    #[test]
    fn regression_a_multi_line_prompt_is_one_input() {
        let text = "Fix it\n\n## Your session\nYou are `x`.";
        assert_eq!(
            typed_bytes("aider", text, true),
            b"\x1b[200~Fix it\n\n## Your session\nYou are `x`.\x1b[201~".to_vec()
        );
        assert_eq!(
            typed_bytes("aider", text, false),
            b"{owt\rFix it\r\r## Your session\rYou are `x`.\rowt}".to_vec(),
            "Aider's own multi-line form"
        );
        assert_eq!(
            typed_bytes("my-tool", text, false),
            b"Fix it  ## Your session You are `x`.".to_vec(),
            "never one submission per line"
        );
        assert_eq!(
            typed_bytes("aider", "one line", false),
            b"one line".to_vec()
        );
    }
}

/// Recording facts of different value types through one closure.
mod erased {
    use crate::store::{Store, StoreError};

    pub trait Value {
        fn record(&self, store: &Store, id: i64, kind: &str, at: i64) -> Result<(), StoreError>;
    }

    impl<T: serde::Serialize> Value for T {
        fn record(&self, store: &Store, id: i64, kind: &str, at: i64) -> Result<(), StoreError> {
            store.record_fact_at(id, kind, self, at)
        }
    }
}

/// The screen as text; with `scrollback`, the lines above it too.
pub(crate) fn screen_view(parser: &mut vt100::Parser, scrollback: bool) -> ScreenView {
    let screen = parser.screen();
    let (rows, cols) = screen.size();
    let cursor = screen.cursor_position();
    let alternate_screen = screen.alternate_screen();
    let lines: Vec<String> = screen
        .rows(0, cols)
        .map(|l| l.trim_end().to_string())
        .collect();
    let mut above = Vec::new();
    if scrollback && !alternate_screen {
        let screen = parser.screen_mut();
        screen.set_scrollback(usize::MAX);
        let total = screen.scrollback();
        // Walk the scrollback a screenful at a time, oldest first.
        let mut offset = total;
        while offset > 0 {
            screen.set_scrollback(offset);
            let take = offset.min(rows as usize);
            above.extend(
                screen
                    .rows(0, cols)
                    .take(take)
                    .map(|l| l.trim_end().to_string()),
            );
            offset -= take;
        }
        screen.set_scrollback(0);
    }
    ScreenView {
        rows,
        cols,
        cursor,
        alternate_screen,
        lines,
        scrollback: above,
    }
}

/// Bytes that repaint a client's terminal with the current screen.
fn redraw(screen: &vt100::Screen) -> Vec<u8> {
    let mut out = screen.state_formatted();
    let (row, col) = screen.cursor_position();
    out.extend_from_slice(format!("\x1b[{};{}H", row + 1, col + 1).as_bytes());
    out
}

pub(super) fn peer_uid(stream: &UnixStream) -> Option<u32> {
    use std::os::fd::AsRawFd;
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `cred` and `len` are valid for writes of the sizes given.
    let rc = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    (rc == 0).then_some(cred.uid)
}

fn serve_client(shared: &Arc<Shared>, mut stream: UnixStream) {
    let Some(hello) = accept_hello(&mut stream) else {
        return;
    };
    if hello.role == Role::Events {
        let _ = proto::write_json(
            &mut stream,
            FrameKind::Error,
            &HostError {
                message: format!(
                    "{} runs in a terminal, not through ACP: attach to it (owt attach {})",
                    shared.spec.session_name, shared.spec.session_name
                ),
            },
        );
        return;
    }
    let write_half = match stream.try_clone() {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!("cloning a client socket: {e}");
            return;
        }
    };
    let client = Client::new(
        shared.next_client.fetch_add(1, Ordering::Relaxed),
        write_half,
    );
    client.push(proto::encode_json(
        FrameKind::Welcome,
        &Welcome {
            version: HOST_PROTOCOL_VERSION,
            host_pid: shared.host_pid,
            agent_pid: shared.agent_pid,
            session_name: shared.spec.session_name.clone(),
            short_id: shared.spec.short_id.clone(),
        },
    ));
    let writer = {
        let client = client.clone();
        spawn_guarded("client-writer", move || write_client(&client))
    };
    if hello.role == Role::Attach {
        if hello.rows > 0 && hello.cols > 0 {
            resize(shared, hello.rows, hello.cols);
        }
        let mut clients = lock(&shared.clients);
        client.await_redraw();
        clients.push(client.clone());
        shared.n_attached.fetch_add(1, Ordering::SeqCst);
        let queued = !shared.parser_done.load(Ordering::SeqCst)
            && send_to_parser(shared, ToParser::Redraw(client.clone()));
        drop(clients);
        if !queued {
            // The agent is gone and the parser with it: the screen is final.
            let state = lock(&shared.state);
            client.deliver_redraw(proto::encode(
                FrameKind::Redraw,
                &redraw(state.parser.screen()),
            ));
        }
        if let Some(exit) = &lock(&shared.state).exit {
            client.push(proto::encode_json(FrameKind::Exited, exit));
        }
    }
    // Buffered: a frame costs one read, not two (header, then payload).
    let mut incoming = std::io::BufReader::with_capacity(16 * 1024, &stream);
    loop {
        let frame = match proto::read_frame(&mut incoming) {
            Ok(Some(frame)) => frame,
            Ok(None) => break,
            Err(e) => {
                tracing::debug!("client read: {e}");
                break;
            }
        };
        let reply = handle_request(shared, &frame);
        match reply {
            Reply::None => {}
            Reply::Frame(bytes) => client.push(bytes),
            Reply::Close => break,
        }
    }
    {
        let mut clients = lock(&shared.clients);
        let before = clients.len();
        clients.retain(|c| c.id != client.id);
        shared
            .n_attached
            .fetch_sub(before - clients.len(), Ordering::SeqCst);
    }
    client.close();
    if let Some(writer) = writer {
        let _ = writer.join();
    }
}

enum Reply {
    None,
    Frame(Vec<u8>),
    Close,
}

fn error_reply(message: String) -> Reply {
    Reply::Frame(proto::encode_json(FrameKind::Error, &HostError { message }))
}

/// The first frame of a connection, checked (pure: no I/O), its size
/// clamped like a resize. `Err` is the message of the `Error` frame the
/// host answers before hanging up.
/// A new client's first steps, shared by both kinds of host: refuses
/// another user, then reads its hello (10 s at most). `None`: the client
/// was answered with an error, or went away.
pub(crate) fn accept_hello(stream: &mut UnixStream) -> Option<proto::Hello> {
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if peer_uid(stream) != Some(me) {
        tracing::warn!("refused a client of another user");
        let _ = proto::write_json(
            stream,
            FrameKind::Error,
            &HostError {
                message: "this session host belongs to another user".into(),
            },
        );
        return None;
    }
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let hello = match proto::read_frame(stream) {
        Ok(Some(frame)) => match decode_hello(&frame) {
            Ok(hello) => hello,
            Err(message) => {
                let _ = proto::write_json(stream, FrameKind::Error, &HostError { message });
                return None;
            }
        },
        Ok(None) | Err(_) => return None,
    };
    let _ = stream.set_read_timeout(None);
    Some(hello)
}

pub(crate) fn decode_hello(frame: &proto::Frame) -> Result<proto::Hello, String> {
    if frame.kind != FrameKind::Hello {
        return Err(format!(
            "expected a hello frame first, got {:?}",
            frame.kind
        ));
    }
    // Check the version before the rest of the hello: another version may
    // shape it differently.
    let version = serde_json::from_slice::<serde_json::Value>(&frame.payload)
        .ok()
        .and_then(|v| v.get("version").and_then(|v| v.as_u64()));
    if version != Some(u64::from(HOST_PROTOCOL_VERSION)) {
        let theirs = version.map_or("an unknown version".to_string(), |v| format!("version {v}"));
        return Err(format!(
            "protocol mismatch: this session host speaks owt host protocol version {HOST_PROTOCOL_VERSION}, \
             the client speaks {theirs}; use the owt that started the session (or restart the session)"
        ));
    }
    let hello: proto::Hello = frame.json().map_err(|e| format!("bad hello: {e}"))?;
    Ok(proto::Hello {
        rows: hello.rows.min(MAX_ROWS),
        cols: hello.cols.min(MAX_COLS),
        ..hello
    })
}

/// What a client asked for, decoded from one frame after the hello (pure:
/// no I/O; [`handle_request`] carries it out). Sizes are clamped to
/// [`MAX_ROWS`] × [`MAX_COLS`].
#[derive(Debug, PartialEq)]
pub(crate) enum Request<'a> {
    /// Keys for the PTY.
    Input(&'a [u8]),
    Resize {
        rows: u16,
        cols: u16,
    },
    Send(SendText),
    Peek(PeekRequest),
    Status,
    /// Hang up the agent; kill it after the grace time.
    Terminate(Duration),
    Detach,
    Journal,
    /// Answered with an `Error` frame carrying this message.
    Invalid(String),
}

pub(crate) fn decode_request(frame: &proto::Frame) -> Request<'_> {
    match frame.kind {
        FrameKind::Input => Request::Input(&frame.payload),
        FrameKind::Resize => match frame.json::<Resize>() {
            Ok(r) if r.rows > 0 && r.cols > 0 => Request::Resize {
                rows: r.rows.min(MAX_ROWS),
                cols: r.cols.min(MAX_COLS),
            },
            Ok(r) => Request::Invalid(format!("bad size {}x{}", r.cols, r.rows)),
            Err(e) => Request::Invalid(e.to_string()),
        },
        FrameKind::Send => match frame.json::<SendText>() {
            Ok(send) => Request::Send(send),
            Err(e) => Request::Invalid(e.to_string()),
        },
        FrameKind::Peek => Request::Peek(frame.json::<PeekRequest>().unwrap_or_default()),
        FrameKind::StatusRequest => Request::Status,
        FrameKind::Terminate => {
            let grace = frame.json::<Terminate>().map_or(3_000, |t| t.grace_ms);
            Request::Terminate(Duration::from_millis(grace))
        }
        FrameKind::Detach => Request::Detach,
        FrameKind::JournalRequest => Request::Journal,
        other => Request::Invalid(format!("unexpected {other:?} frame from a client")),
    }
}

fn handle_request(shared: &Arc<Shared>, frame: &proto::Frame) -> Reply {
    match decode_request(frame) {
        Request::Input(bytes) => {
            // Keys go straight to the PTY: the shortest echo path.
            lock(&shared.state).last_input_at = Some(now_ms());
            if let Err(e) = write_pty(shared, bytes) {
                tracing::debug!("pty write failed: {e}");
            }
            Reply::None
        }
        Request::Resize { rows, cols } => {
            resize(shared, rows, cols);
            Reply::None
        }
        Request::Send(send) => {
            type_text(shared, &send.text, send.enter);
            let (ack_tx, ack_rx) = mpsc::channel();
            let asked = lock(&shared.to_monitor)
                .as_ref()
                .is_some_and(|m| m.send(ToMonitor::Flush(ack_tx)).is_ok());
            if asked {
                let _ = ack_rx.recv_timeout(Duration::from_secs(2));
            }
            Reply::Frame(proto::encode(FrameKind::Ok, b""))
        }
        Request::Peek(req) => {
            let view = screen_view(&mut lock(&shared.state).parser, req.scrollback);
            Reply::Frame(proto::encode_json(FrameKind::Screen, &view))
        }
        Request::Status => Reply::Frame(proto::encode_json(FrameKind::Status, &status(shared))),
        Request::Terminate(grace) => {
            terminate(shared, grace);
            Reply::Frame(proto::encode(FrameKind::Ok, b""))
        }
        Request::Detach => Reply::Close,
        Request::Journal => {
            let view = shared
                .journal
                .as_ref()
                .map_or_else(JournalView::not_ready, |journal| journal.view());
            Reply::Frame(proto::encode_json(FrameKind::Journal, &view))
        }
        Request::Invalid(message) => error_reply(message),
    }
}

fn status(shared: &Shared) -> HostStatus {
    let state = lock(&shared.state);
    let (rows, cols) = state.parser.screen().size();
    HostStatus {
        host_pid: shared.host_pid,
        agent_pid: shared.agent_pid,
        exit: state.exit.clone(),
        attached_clients: shared.n_attached.load(Ordering::SeqCst) as u32,
        rows,
        cols,
        started_at: shared.started_at,
        last_output_at: state.last_output_at,
        last_input_at: state.last_input_at,
        screen_signal: state.screen_signal.map(|s| {
            serde_json::to_value(s)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default()
        }),
    }
}

fn resize(shared: &Shared, rows: u16, cols: u16) {
    // The screen model first, so output drawn for the new size lands right.
    lock(&shared.state).parser.screen_mut().set_size(rows, cols);
    let size = PtySize {
        rows,
        cols,
        pixel_width: 0,
        pixel_height: 0,
    };
    if let Err(e) = lock(&shared.master).resize(size) {
        tracing::warn!("resizing the pseudo-terminal: {e}");
    }
}

/// Hangs up the agent's process group; kills it after `grace`.
fn terminate(shared: &Arc<Shared>, grace: Duration) {
    let Some(pid) = shared.agent_pid else { return };
    let pgid = pid as libc::pid_t;
    tracing::info!("hanging up the agent");
    // SAFETY: kill has no memory preconditions; a negative pid names the group.
    unsafe {
        libc::kill(-pgid, libc::SIGHUP);
        libc::kill(pgid, libc::SIGHUP);
    }
    let shared = shared.clone();
    spawn_guarded("terminate", move || {
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if lock(&shared.state).exit.is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        tracing::info!("the agent ignored the hang-up; killing it");
        // SAFETY: as above.
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
            libc::kill(pgid, libc::SIGKILL);
        }
    });
}

fn write_client(client: &Client) {
    let mut stream = &client.stream;
    let mut batch: Vec<Arc<[u8]>> = Vec::new();
    let mut head = Vec::new();
    loop {
        {
            let mut q = lock(&client.queue);
            // What a direct write left unfinished goes first, even past an
            // awaited redraw (it is the end of a frame already begun).
            let idle = |q: &ClientQueue| {
                q.writing || (q.head.is_empty() && (q.frames.is_empty() || q.awaiting_redraw))
            };
            while idle(&q) && !q.closed {
                q = client.ready.wait(q).unwrap_or_else(|e| e.into_inner());
            }
            if q.closed && idle(&q) {
                return;
            }
            std::mem::swap(&mut head, &mut q.head);
            if !q.awaiting_redraw {
                batch.extend(q.frames.drain(..));
            }
            q.bytes = q.frames.iter().map(|f| f.len()).sum();
            q.writing = true;
        }
        let mut result = stream.write_all(&head);
        head.clear();
        for frame in batch.drain(..) {
            if result.is_err() {
                break;
            }
            result = stream.write_all(&frame);
        }
        let mut q = lock(&client.queue);
        q.writing = false;
        if let Err(e) = result {
            tracing::debug!("client write: {e}");
            q.closed = true;
            drop(q);
            let _ = stream.shutdown(std::net::Shutdown::Both);
            return;
        }
    }
}

/// Writes what the socket takes right now (never blocks); how much.
fn send_now(stream: &UnixStream, bytes: &[u8]) -> std::io::Result<usize> {
    use std::os::fd::AsRawFd;
    // SAFETY: a valid socket and buffer; MSG_DONTWAIT keeps it from
    // blocking, MSG_NOSIGNAL turns a gone peer into EPIPE, not SIGPIPE.
    let n = unsafe {
        libc::send(
            stream.as_raw_fd(),
            bytes.as_ptr().cast(),
            bytes.len(),
            libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
        )
    };
    if n >= 0 {
        return Ok(n as usize);
    }
    let e = std::io::Error::last_os_error();
    match e.kind() {
        std::io::ErrorKind::WouldBlock => Ok(0),
        std::io::ErrorKind::Interrupted => send_now(stream, bytes),
        _ => Err(e),
    }
}

/// Where the host's log goes.
pub fn log_path(home: &Path, short_id: &str) -> PathBuf {
    home.join("logs").join(format!("{short_id}.log"))
}
