//! The session host process (`owt __host run`): owns one agent's PTY, its
//! screen model and the unix socket clients attach to.
//!
//! Threads (std only, no async): the PTY reader (fans output out to
//! attached clients at once and hands it, bounded, to the parser; it also
//! reads the keys of directly attached terminals, so a key and its echo
//! wake this one thread, as in tmux's server), the
//! parser (the `vt100` screen model; answers terminal queries when nobody is
//! attached; makes redraws at their exact place in the stream), the PTY
//! writer (sent text, typed prompts, query answers, and a direct
//! terminal's keys the PTY could not take at once; other attached keys are
//! written directly), the child waiter, the monitor (the only owner of the
//! store: output/input/screen facts, typed prompt; it drives the feedback
//! loop, whose `feedback` thread runs only while a turn's checks or pull
//! request hooks do), the git-facts thread
//! (reads the checkout's git facts from the work journal when it changes,
//! for the monitor to record), the acceptor (main thread), and per
//! connection a reader and a writer.
//!
//! Invariants: the PTY reader never waits (the PTY master is
//! non-blocking; a key the PTY cannot take waits in the writer's queue),
//! but for a keystroke's echo, at most 200 µs and awake (`EchoWatch`);
//! the agent never waits on a client — every client has a
//! bounded queue, and a client that falls behind gets a fresh redraw instead
//! of the bytes it missed. Lock order: `clients`, `redraws`, `State`, a
//! client's queue.
//! Nothing here panics on purpose; thread bodies are wrapped so a panic is
//! logged (to the host log) instead of unwinding into nothing.

use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use owt_protocol::host::{
    self as proto, AgentExit, FrameKind, HostError, HostStatus, JournalView, PeekRequest, Resize,
    Role, ScreenView, SendText, Terminate, Welcome, HOST_PROTOCOL_VERSION,
};
use portable_pty::{CommandBuilder, MasterPty, PtySize};

mod clients;
mod git_facts;
mod monitor;
mod output;
mod screen;
mod socket;
mod spawn;
mod terminal;
mod typing;

use clients::{Client, ClientQueue};
pub(crate) use git_facts::{follow as follow_git_facts, Sent};
use monitor::*;
use output::*;
use screen::*;
pub use screen::{peek_reply, screen_view};
pub(crate) use socket::accept_clients;
pub(crate) use socket::accept_hello;
use socket::*;
pub use socket::{decode_hello, decode_request, Request};
use spawn::*;
pub(crate) use spawn::{listen, open_store_logged, spawn_guarded};
use terminal::*;
use typing::*;

use super::queries::{self, QueryScanner};
use super::{rules, HostSpec, SessionError};
use crate::status::{kind, AgentSignal, ExitFact, HostFact};
use crate::store::{now_ms, SessionRow, Store};

/// Largest screen the host models; a client asking for more gets this (the
/// screen model allocates every cell, and its scrollback every line).
pub const MAX_ROWS: u16 = 500;
pub const MAX_COLS: u16 = 1_000;
/// Queued output bytes after which a client is considered behind.
const CLIENT_QUEUE_LIMIT: usize = 4 * 1024 * 1024;
/// At most one `output` fact per this interval.
const OUTPUT_FACT_MS: i64 = 1_000;
/// Quiet output after which the host gives back what the burst used
/// ([`crate::platform::allocator::release_after_burst`]), at most every
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

/// What the monitor drives besides the agent's own facts, on its store
/// connection: the feedback loop and the notifications out (owt-core's
/// `feedback`, made by `session::starting`; the host names no
/// configuration, checks run or use case).
pub trait Watcher: Send {
    /// One look, at every monitor tick.
    fn poll(&mut self, store: &Store);
    /// The agent exited (its exit fact recorded): a last look before the
    /// host leaves.
    fn exited(self: Box<Self>, _store: &Store) {}
}

/// Makes a [`Watcher`] from what only the host knows.
pub type MakeWatcher<T> = Box<dyn FnOnce(T) -> Box<dyn Watcher> + Send>;

/// What a terminal session's host is given by the layers above it.
pub struct HostHooks {
    /// The notifications out of the session (its row).
    pub notifier: MakeWatcher<SessionRow>,
    /// The feedback loop (none for a headless agent), given the agent.
    pub feedback: MakeWatcher<AgentSide>,
    /// Ends what a watcher left running (a checks run) as the host exits
    /// (`std::process::exit` runs no destructor).
    pub on_exit: fn(),
}

/// What the feedback loop may do with its agent.
pub struct AgentSide {
    /// Types text into the agent as one input, then Enter.
    pub type_text: Box<dyn Fn(&str) + Send>,
    /// The agent is gone (the host is about to exit).
    pub exiting: Box<dyn Fn() -> bool + Send>,
}

/// Runs a host until its agent exits. `ready` receives `ok <agent pid>` once
/// the socket serves, or `error: …` if starting fails. `hooks`: what the
/// layers above drive beside the agent ([`HostHooks`]).
pub fn run(spec: HostSpec, mut ready: Option<File>, hooks: HostHooks) -> Result<(), SessionError> {
    match start(&spec) {
        Ok(started) => {
            if let Some(mut r) = ready.take() {
                let _ = writeln!(r, "ok {}", started.agent_pid.unwrap_or(0));
            }
            serve(started, hooks);
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
    /// Keys of a direct terminal the PTY could not take at once (the
    /// reader never waits for the PTY: see [`forward_keys`]).
    Keys(Vec<u8>),
    Pause(Duration),
}

/// Messages for the parser thread, in the order of the output stream.
enum ToParser {
    /// An encoded `Output` frame (header, then the agent's bytes).
    Chunk(Arc<[u8]>),
    /// A redraw is waiting (see [`Redraws`]): make it once its place in
    /// the stream is parsed.
    Wake,
    End,
}

/// Clients waiting for a redraw, each at its place in the output stream:
/// after the first `after` chunks (the chunks fanned out before it joined,
/// or before its queue was cut). The parser makes each one when exactly
/// that many chunks are parsed (`State::output_seq`), so the redraw and
/// the output the client gets after it neither miss nor repeat a byte.
/// They wait here rather than in the parser's (bounded) queue: a client
/// joining never waits for the parser while it holds `clients`, which the
/// PTY reader takes for every chunk.
#[derive(Default)]
struct Redraws {
    waiting: Vec<(u64, Arc<Client>)>,
    /// The parser is gone: the screen is final, redraws are made at once.
    done: bool,
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
    /// Record the git fact read from the journal (`git_facts`).
    GitFact(crate::status::HostGitFact),
}

/// Locks a mutex, recovering from poisoning (a panicked thread was already
/// reported; the data is still the best we have).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

struct State {
    parser: ScreenModel,
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
    /// The screen model and what the monitor reads. Fair (`parking_lot`):
    /// the parser hands it over after each chunk (`unlock_fair`).
    state: parking_lot::Mutex<State>,
    master: Mutex<Box<dyn MasterPty + Send>>,
    /// Attached clients. Lock order: `clients`, `redraws`, `State`, a
    /// client's queue.
    clients: Mutex<Vec<Arc<Client>>>,
    n_attached: AtomicUsize,
    /// Output chunks, in stream order, to the parser (and wake-ups for
    /// waiting redraws).
    to_parser: mpsc::SyncSender<ToParser>,
    /// Output chunks fanned out to the clients so far (changed and read
    /// under `clients`).
    fanned: AtomicU64,
    /// Redraws waiting for the parser. Lock order: `clients`, `redraws`,
    /// `State`.
    redraws: Mutex<Redraws>,
    /// How many redraws wait (read without the lock).
    redraws_waiting: AtomicUsize,
    /// Messages sent to the parser and not yet handled: while there are
    /// none (and no redraw waits), the reader may parse a small chunk
    /// itself (in stream order).
    parser_pending: AtomicUsize,
    /// The PTY writer; input from clients is written directly. The
    /// master is non-blocking: a writer that must wait for room polls for
    /// it while holding this lock (see [`write_pty`]).
    pty_writer: Mutex<Box<dyn Write + Send>>,
    /// The PTY master's descriptor (non-blocking, shared with the
    /// reader's and the writer's copies).
    master_fd: std::os::fd::RawFd,
    /// `Keys` messages queued for the PTY writer and not yet written: while
    /// there are any, later keys queue behind them (in typing order).
    keys_queued: AtomicUsize,
    to_agent: mpsc::Sender<ToAgent>,
    /// Held while one `send` queues its text, pause and Enter, so two
    /// concurrent sends never interleave (`textAtextB⏎⏎`).
    typing: Mutex<()>,
    next_client: AtomicU64,
    exiting: AtomicBool,
    /// The connections' threads, joined once ended (by the acceptor, and
    /// by the monitor while no one connects).
    client_threads: Arc<Mutex<Vec<std::thread::JoinHandle<()>>>>,
    /// The monitor's inbox (set once it runs).
    to_monitor: Mutex<Option<mpsc::Sender<ToMonitor>>>,
    /// The work journal of the agent's checkout (`None` outside a
    /// repository, or when inotify refused).
    journal: Option<crate::guard::journal::Journal>,
    /// Direct terminals handed to the PTY reader (which takes them when
    /// `directs_wake` is readable).
    new_directs: Mutex<Vec<Direct>>,
    directs_wake: UnixStream,
    directs_wake_tx: UnixStream,
}

struct Started {
    shared: Arc<Shared>,
    listener: UnixListener,
    agent_pid: Option<u32>,
    child: Box<dyn portable_pty::Child + Send + Sync>,
    reader: Box<dyn Read + Send>,
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

fn serve(started: Started, hooks: HostHooks) {
    let Started {
        shared,
        listener,
        agent_pid: _,
        mut child,
        reader,
        parser_rx,
        to_agent_rx,
        store,
    } = started;
    let (monitor_tx, monitor_rx) = mpsc::channel::<ToMonitor>();
    *lock(&shared.to_monitor) = Some(monitor_tx.clone());
    let (reader_done_tx, reader_done_rx) = mpsc::channel::<()>();

    {
        let shared = shared.clone();
        spawn_guarded("pty-reader", move || read_agent(&shared, reader));
    }
    {
        let shared = shared.clone();
        spawn_guarded("parser", move || {
            parse_output(&shared, parser_rx);
            let _ = reader_done_tx.send(());
        });
    }
    {
        let shared = shared.clone();
        spawn_guarded("pty-writer", move || write_agent(&shared, to_agent_rx));
    }
    let row = store
        .as_ref()
        .and_then(|store| store.session_by_id(shared.spec.session_id).ok().flatten());
    let HostHooks {
        notifier,
        feedback,
        on_exit,
    } = hooks;
    let notifier = row.clone().map(notifier);
    // The checkout and base branch whose git facts the host keeps.
    let checkout = row
        .filter(|row| row.remote().is_none() && shared.journal.is_some())
        .map(|row| (row.worktree_path, row.base_branch));
    let feedback = (!shared.spec.headless).then(|| feedback(agent_side(&shared)));
    // In this order at every tick: the feedback loop, then the notifications.
    let watchers: Vec<Box<dyn Watcher>> = feedback.into_iter().chain(notifier).collect();
    {
        let shared = shared.clone();
        spawn_guarded("monitor", move || {
            monitor(&shared, store, watchers, monitor_rx)
        });
    }
    if let Some((worktree, base_branch)) = checkout {
        let shared = shared.clone();
        spawn_guarded("git-facts", move || {
            git_facts::follow_journal(&shared, worktree, base_branch)
        });
    }
    {
        let shared = shared.clone();
        spawn_guarded("waiter", move || {
            let exit = wait_agent(child.as_mut());
            // Let the reader drain what the agent wrote last.
            let _ = reader_done_rx.recv_timeout(Duration::from_millis(1_000));
            finish(&shared, exit, &monitor_tx, on_exit);
        });
    }
    // Starting went deeper than accepting ever will.
    crate::platform::allocator::release_stack();
    let threads = shared.client_threads.clone();
    accept_clients(&listener, &threads, move |stream| {
        serve_client(&shared, stream)
    });
}

/// The agent as the feedback loop (checks when the agent's turn ends, the
/// failure typed back) reaches it.
fn agent_side(shared: &Arc<Shared>) -> AgentSide {
    let typer = shared.clone();
    let watcher = shared.clone();
    AgentSide {
        type_text: Box::new(move |text| type_text(&typer, text, true)),
        exiting: Box::new(move || watcher.exiting.load(Ordering::SeqCst)),
    }
}

/// Waits for the agent to exit: its code, or the signal that ended it.
fn wait_agent(child: &mut (dyn portable_pty::Child + Send + Sync)) -> AgentExit {
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
    exit
}

/// The agent is gone: save its last screen, tell everyone, linger, leave.
fn finish(shared: &Arc<Shared>, exit: AgentExit, monitor: &mpsc::Sender<ToMonitor>, on_exit: fn()) {
    let text = {
        let mut state = shared.state.lock();
        state.exit = Some(exit.clone());
        screen_view(state.parser.live(), false).text()
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
    on_exit();
    let _ = std::fs::remove_file(super::socket_path(&shared.spec.home, &shared.spec.short_id));
    tracing::info!("host exiting");
    std::process::exit(0);
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

/// Where the host's log goes.
pub fn log_path(home: &Path, short_id: &str) -> PathBuf {
    home.join("logs").join(format!("{short_id}.log"))
}
