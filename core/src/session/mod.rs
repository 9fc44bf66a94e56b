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
pub mod attach;
pub mod client;
pub mod hooks;
pub mod host;
pub mod memory;
pub mod queries;
pub mod rules;

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use owt_protocol::host::{PeekView, Role, ScreenView, Transport};
use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::process::{Pid, Signal};
use serde::{Deserialize, Serialize};

use crate::status::{self, kind, Derived, ExitFact, HostFact, SessionFacts};
use crate::store::{now_ms, SessionRow, Store};

pub use client::{HostConn, HostJournal};
pub use hooks::record_hook;

/// What went wrong with a session host. Each variant prints its cause in
/// its own message (none is also a `source`: `{:#}` says it once).
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// What went wrong inside a session host, or what it reported.
    #[error("session host: {0}")]
    Host(String),
    /// The host does not answer (exited, lost or never started).
    #[error("session host: {0}")]
    NotRunning(String),
    /// The host speaks another protocol version, or answered out of turn.
    #[error("session host: {0}")]
    Protocol(String),
    /// The host did not say it was ready in time.
    #[error("the session host did not become ready within {seconds}s; see {}", log.display())]
    NotReady { seconds: u64, log: PathBuf },
    /// The host ended before it was ready (`tail`: the end of its log).
    #[error("the session host exited before it was ready; see {}{}", log.display(), if tail.is_empty() { String::new() } else { format!(":\n{tail}") })]
    ExitedEarly { log: PathBuf, tail: String },
    /// A file, pipe, socket or process operation failed while `doing` it.
    #[error("{doing}: {error}")]
    Io {
        doing: String,
        error: std::io::Error,
    },
    /// An agent settings file owt leaves alone.
    #[error("{}: {problem}; not touching it", path.display())]
    Settings { path: PathBuf, problem: String },
    /// No session has this short id (a hook of a deleted session).
    #[error("no session with id {short_id} in {}", home.display())]
    UnknownSession { short_id: String, home: PathBuf },
    /// `owt attach` needs a terminal on standard input.
    #[error(
        "owt attach needs a terminal on standard input (use `owt send` / `owt peek` in scripts)"
    )]
    NotATerminal,
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
}

impl SessionError {
    /// An I/O failure while `doing` something.
    pub fn io(doing: impl Into<String>, error: std::io::Error) -> SessionError {
        SessionError::Io {
            doing: doing.into(),
            error,
        }
    }

    /// What a person can do about it, when something helps.
    pub fn hint(&self) -> Option<String> {
        match self {
            SessionError::NotRunning(_) => Some(
                "`owt list` shows whether the agent is still running; `owt peek NAME` shows its last screen"
                    .into(),
            ),
            SessionError::Settings { path, .. } => Some(format!(
                "fix {} (or move it away) and run the command again",
                path.display()
            )),
            SessionError::Protocol(_) => Some(
                "the session was started by another version of owt; finish it with that version, or `owt delete` it"
                    .into(),
            ),
            _ => None,
        }
    }
}

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
}

/// Lines of scrollback a host keeps unless configured: tmux's default
/// (`history-limit`).
pub const DEFAULT_SCROLLBACK: usize = 2_000;

fn default_scrollback() -> usize {
    DEFAULT_SCROLLBACK
}

/// A started host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Started {
    pub host_pid: u32,
    pub agent_pid: Option<u32>,
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

/// How long [`start_host`] waits for a host to serve its socket.
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// Starts a detached host for `spec` and waits until it serves its socket.
/// The host is this program's `__host run` (or `$OWT_BIN`, for tests that
/// link this library into another executable).
pub fn start_host(spec: &HostSpec) -> Result<Started, SessionError> {
    start_host_with(spec, &owt_exe()?)
}

/// As [`start_host`], running the host from the owt binary `exe`.
pub fn start_host_with(spec: &HostSpec, exe: &Path) -> Result<Started, SessionError> {
    let err = |doing: &str, e: std::io::Error| SessionError::io(doing, e);
    let logs = spec.home.join("logs");
    host::ensure_private_dir(&logs)?;
    let spec_file = logs.join(format!("{}.spec.json", spec.short_id));
    let json = serde_json::to_vec_pretty(spec)
        .map_err(|e| err("encoding the host spec", std::io::Error::other(e)))?;
    crate::store::write_private(&spec_file, &json)
        .map_err(|e| err(&format!("writing {}", spec_file.display()), e))?;
    let log_file = log_path(&spec.home, &spec.short_id);
    let log = File::options()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(&log_file)
        .map_err(|e| err(&format!("opening {}", log_file.display()), e))?;
    let log2 = log
        .try_clone()
        .map_err(|e| err("duplicating the log file", e))?;

    let (read_end, write_end) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)
        .map_err(|e| err("creating the readiness pipe", e.into()))?;
    let write_fd = write_end.as_raw_fd();
    const READY_FD: i32 = 3;

    let mut cmd = Command::new(exe);
    cmd.args(["__host", "run", "--spec"])
        .arg(&spec_file)
        .args(["--ready-fd", &READY_FD.to_string()])
        .env("OWT_HOME", &spec.home)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log2);
    // SAFETY: `pre_exec` runs between fork and exec, where only
    // async-signal-safe calls are allowed: setsid, fcntl and dup2 are, and
    // nothing here allocates or takes a lock. No crate covers this step
    // (the raw descriptor numbers are the point: the child must find the
    // pipe at READY_FD).
    unsafe {
        cmd.pre_exec(move || {
            rustix::process::setsid()?;
            // dup2 clears close-on-exec on the copy (but is a no-op when
            // the descriptor already has that number).
            if write_fd == READY_FD {
                libc::fcntl(READY_FD, libc::F_SETFD, 0);
            } else if libc::dup2(write_fd, READY_FD) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| err(&format!("starting the session host {}", exe.display()), e))?;
    drop(write_end);
    let host_pid = child.id();

    // Wait for one line on the pipe (or its end), with a deadline.
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            kill(host_pid, Signal::KILL);
            let _ = child.wait();
            return Err(SessionError::NotReady {
                seconds: START_TIMEOUT.as_secs(),
                log: log_file,
            });
        }
        let wait = left.min(Duration::from_secs(1));
        let timeout = Timespec {
            tv_sec: wait.as_secs() as i64,
            tv_nsec: i64::from(wait.subsec_nanos()),
        };
        let mut fds = [PollFd::new(&read_end, PollFlags::IN)];
        if rustix::event::poll(&mut fds, Some(&timeout)).is_ok_and(|n| n > 0) {
            break;
        }
    }
    let mut line = String::new();
    let _ = BufReader::new(File::from(read_end)).read_line(&mut line);
    let line = line.trim();
    if let Some(rest) = line.strip_prefix("ok") {
        let agent_pid = rest.trim().parse::<u32>().ok().filter(|p| *p != 0);
        // Reap the host when it ends, if this process lives that long.
        std::thread::spawn(move || {
            let _ = child.wait();
        });
        return Ok(Started {
            host_pid,
            agent_pid,
        });
    }
    let _ = child.wait();
    if let Some(message) = line.strip_prefix("error: ") {
        return Err(SessionError::Host(message.to_string()));
    }
    let tail = std::fs::read_to_string(&log_file)
        .map(|t| {
            t.lines()
                .rev()
                .take(5)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default();
    Err(SessionError::ExitedEarly {
        log: log_file,
        tail,
    })
}

/// The owt binary to run for hosts and helpers: `$OWT_BIN` (tests that
/// link this library into another executable) or this program.
fn owt_exe() -> Result<PathBuf, SessionError> {
    match std::env::var_os("OWT_BIN").filter(|v| !v.is_empty()) {
        Some(bin) => Ok(PathBuf::from(bin)),
        None => std::env::current_exe().map_err(|e| SessionError::io("finding the owt binary", e)),
    }
}

/// Starts `owt __admit` detached (its own session, no terminal): it
/// starts the queued sessions there is room for now. What a session host
/// does when its agent ended or gave back memory, and `owt lsp` when it
/// sees sessions waiting; it returns at once.
pub fn spawn_admitter(home: &Path) -> Result<(), SessionError> {
    let exe = owt_exe()?;
    let log = File::options()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(home.join("logs").join("admit.log"))
        .ok();
    let mut cmd = Command::new(&exe);
    cmd.arg("__admit")
        .env("OWT_HOME", home)
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    match log {
        Some(log) => cmd.stderr(log),
        None => cmd.stderr(Stdio::null()),
    };
    // SAFETY: only async-signal-safe calls (setsid) between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| SessionError::io(format!("starting {} __admit", exe.display()), e))?;
    // Reap it when it ends, if this process lives that long.
    std::thread::spawn(move || {
        let _ = child.wait();
    });
    Ok(())
}

/// Starts an admitter ([`spawn_admitter`]) when sessions wait in the
/// queue; logs what goes wrong.
pub fn admit_if_queued(store: &Store, home: &Path) {
    match store.any_queued() {
        Ok(true) => {
            if let Err(e) = spawn_admitter(home) {
                tracing::warn!("starting queued sessions: {e}");
            }
        }
        Ok(false) => {}
        Err(e) => tracing::warn!("looking for queued sessions: {e}"),
    }
}

/// Runs the host in this process (the `__host run` subcommand).
/// `ready_fd` is the readiness pipe [`start_host`] passes; `hooks`, what a
/// terminal session's feedback loop asks of the use cases above
/// (`ops::host::turn_hooks`).
pub fn run_host(
    spec: HostSpec,
    ready_fd: Option<i32>,
    hooks: crate::feedback::turn::TurnHooks,
) -> Result<(), SessionError> {
    let ready = ready_fd.map(|fd| {
        // SAFETY: the parent passed this descriptor number for this process
        // to own (`--ready-fd`), and nothing else here uses it. Taking
        // ownership of an inherited descriptor has no safe API.
        let file = unsafe { File::from_raw_fd(fd) };
        // Keep it out of the agent.
        let _ = rustix::io::fcntl_setfd(&file, rustix::io::FdFlags::CLOEXEC);
        file
    });
    // A dying client must not kill the host.
    // SAFETY: SIG_IGN is no handler, so nothing runs in signal context;
    // rustix offers no safe way to set a disposition.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
        libc::signal(libc::SIGHUP, libc::SIG_IGN);
    }
    match spec.transport {
        Transport::Pty => host::run(spec, ready, hooks),
        Transport::Acp => acp_host::run(spec, ready),
    }
}

/// Whether `pid` is a live (not zombie) process.
pub fn pid_alive(pid: u32) -> bool {
    if pid == 0 {
        return false;
    }
    let Some(process) = i32::try_from(pid).ok().and_then(Pid::from_raw) else {
        return false;
    };
    match rustix::process::test_kill_process(process) {
        // Another user's process exists too.
        Ok(()) | Err(rustix::io::Errno::PERM) => {}
        Err(_) => return false,
    }
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the parenthesised command name.
        Ok(stat) => !stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with(['Z', 'X'])),
        Err(_) => true,
    }
}

/// Whether a host answers on the session's socket.
pub fn host_answers(home: &Path, short_id: &str) -> bool {
    HostConn::connect(&socket_path(home, short_id), Role::Control, 0, 0).is_ok()
}

/// Records `host-lost` for a session whose host is gone without an exit fact.
pub fn reconcile(store: &Store, home: &Path, session: &SessionRow) -> Result<(), SessionError> {
    // A remote session's host is over there (its own owt reconciles it).
    if session.remote().is_some() {
        return Ok(());
    }
    let facts = store.facts(session.id)?;
    let has = |k: &str| facts.iter().any(|f| f.kind == k);
    if has(kind::EXIT) || has(kind::HOST_LOST) {
        return Ok(());
    }
    let Some((host, _)) = store.fact::<HostFact>(session.id, kind::HOST)? else {
        return Ok(());
    };
    // Its host process runs: no need to connect (a connection wakes the
    // host, which a listing of 64 sessions pays for 64 times on a busy
    // machine).
    if pid_alive(host.host_pid) && is_host_of(host.host_pid, &session.short_id) {
        return Ok(());
    }
    if std::os::unix::net::UnixStream::connect(socket_path(home, &session.short_id)).is_ok() {
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

/// Time between hang-up and kill when stopping an agent.
pub const STOP_GRACE: Duration = Duration::from_secs(3);

/// Stops the agent (hang-up, then kill after a grace period), its host,
/// and whatever the agent left running for this session outside its
/// process group (a daemon it detached, see [`stop_leftovers`]).
pub fn stop(home: &Path, session: &SessionRow) -> Result<(), SessionError> {
    stop_agent_and_host(home, session)?;
    stop_leftovers(home, &session.short_id);
    Ok(())
}

/// Processes started for the session `short_id` of `home` that are still
/// running: every process of this user whose environment carries both
/// `OWT_SESSION=<short id>` and `OWT_HOME=<home>` (the host gives them to
/// the agent, and a daemon the agent detaches inherits them), this process
/// excepted.
pub fn session_processes(home: &Path, short_id: &str) -> Vec<u32> {
    let session = format!("OWT_SESSION={short_id}");
    let owt_home = format!("OWT_HOME={}", home.display());
    let me = std::process::id();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| *pid != me)
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|env| {
                let mut vars = env.split(|b| *b == 0);
                let (mut has_session, mut has_home) = (false, false);
                for var in &mut vars {
                    has_session |= var == session.as_bytes();
                    has_home |= var == owt_home.as_bytes();
                }
                has_session && has_home
            })
        })
        .filter(|pid| pid_alive(*pid))
        .collect()
}

/// Ends what the session left running once its agent and host are gone
/// (e.g. a background server the agent detached with `setsid`): hang-up
/// and terminate, then kill after [`STOP_GRACE`]. Nothing else is touched.
pub fn stop_leftovers(home: &Path, short_id: &str) {
    let left = session_processes(home, short_id);
    if left.is_empty() {
        return;
    }
    tracing::info!(?left, "stopping what the session left running");
    for pid in &left {
        kill(*pid, Signal::HUP);
        kill(*pid, Signal::TERM);
    }
    let deadline = Instant::now() + STOP_GRACE;
    while left.iter().any(|p| pid_alive(*p)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    for pid in session_processes(home, short_id) {
        kill(pid, Signal::KILL);
    }
}

fn stop_agent_and_host(home: &Path, session: &SessionRow) -> Result<(), SessionError> {
    let store = Store::open(home)?;
    let host = store
        .fact::<HostFact>(session.id, kind::HOST)?
        .map(|(h, _)| h);
    let socket = socket_path(home, &session.short_id);
    if let Ok(mut conn) = HostConn::connect(&socket, Role::Control, 0, 0) {
        conn.terminate(STOP_GRACE)?;
        let host_pid = conn.welcome.host_pid;
        drop(conn);
        let deadline = Instant::now() + STOP_GRACE + Duration::from_secs(5);
        while pid_alive(host_pid) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        if pid_alive(host_pid) {
            return Err(SessionError::Host(format!(
                "the session host (pid {host_pid}) of {} did not exit after its agent was stopped",
                session.name
            )));
        }
        return Ok(());
    }
    // The socket is dead: kill what is left, if it is still ours.
    let Some(host) = host else { return Ok(()) };
    if let Some(agent) = host
        .agent_pid
        .filter(|p| pid_alive(*p) && is_agent_of(*p, &session.short_id))
    {
        kill_group(agent, Signal::HUP);
        let deadline = Instant::now() + STOP_GRACE;
        while pid_alive(agent) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        if pid_alive(agent) {
            kill_group(agent, Signal::KILL);
        }
    }
    if pid_alive(host.host_pid) && is_host_of(host.host_pid, &session.short_id) {
        kill(host.host_pid, Signal::KILL);
    }
    Ok(())
}

/// Sends `signal` to process `pid` (best effort: it may be gone).
fn kill(pid: u32, signal: Signal) {
    if let Some(pid) = i32::try_from(pid).ok().and_then(Pid::from_raw) {
        let _ = rustix::process::kill_process(pid, signal);
    }
}

/// Sends `signal` to the process group led by `pid` (best effort).
fn kill_group(pid: u32, signal: Signal) {
    if let Some(pid) = i32::try_from(pid).ok().and_then(Pid::from_raw) {
        let _ = rustix::process::kill_process_group(pid, signal);
    }
}

/// Whether `pid`'s environment names this session (`OWT_SESSION`).
fn is_agent_of(pid: u32, short_id: &str) -> bool {
    std::fs::read(format!("/proc/{pid}/environ"))
        .map(|env| {
            env.split(|b| *b == 0)
                .any(|kv| kv == format!("OWT_SESSION={short_id}").as_bytes())
        })
        .unwrap_or(false)
}

/// Whether `pid` is an owt host for this session (its spec file is named
/// after the short id).
fn is_host_of(pid: u32, short_id: &str) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|cmd| {
            let args: Vec<&[u8]> = cmd.split(|b| *b == 0).collect();
            args.contains(&&b"__host"[..])
                && args
                    .iter()
                    .any(|a| String::from_utf8_lossy(a).ends_with(&format!("{short_id}.spec.json")))
        })
        .unwrap_or(false)
}

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
    let socket = socket_path(home, &session.short_id);
    match HostConn::connect(&socket, Role::Control, 0, 0) {
        Ok(mut conn) => Ok(PeekView {
            session: session.name.clone(),
            live: true,
            screen: conn.peek(scrollback)?,
        }),
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
                },
            })
        }
        Err(e) => Err(e),
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
            other => other,
        })?;
    conn.send(text, enter)
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

/// Answers an ACP session's pending permission request.
pub fn answer_permission(
    store: &Store,
    home: &Path,
    session: &SessionRow,
    answer: &owt_protocol::host::PermissionAnswer,
) -> Result<owt_protocol::host::PermissionAnswered, SessionError> {
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
