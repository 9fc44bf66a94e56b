//! The local end of a bridge: `owt __bridge keep --remote NAME`, one
//! detached process per remote and repository (like a session host: no
//! daemon, started by the verbs that need it, [`ensure`]).
//!
//! It opens the shared SSH connection, runs the remote's `owt __bridge
//! serve`, and then: records the facts the remote pushes (via
//! [`super::mirror`]), `git fetch`es the snapshot refs it announces (one
//! fetch at a time, announcements during a fetch coalesced into the next),
//! and serves each remote session's host socket here
//! (`$OWT_HOME/run/<short id>.sock`), carrying every connection as a
//! channel over the bridge. When the bridge goes (the network drops, sshd
//! dies, the remote owt is killed, a ping goes unanswered for 20 s), every
//! session of the remote is marked `unreachable` and it reconnects with
//! backoff (1 s, doubling, at most 30 s); connections to a host socket are
//! then answered with a host-protocol `Error` saying so.
//!
//! Invariants: one keeper per remote and repository (an `flock` on its
//! lock file); it removes nothing but its own stale socket files; it ends
//! once the repository has had no session on the remote for a minute.

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError, Sender, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use owt_protocol::bridge::{
    self, BridgeFrame, BridgeHello, BridgeKind, BridgeWelcome, ChannelClose, ChannelOpen,
    FactsPush, SnapshotsPush, BRIDGE_PROTOCOL_VERSION,
};
use owt_protocol::host::{self as host_proto, FrameKind, HostError};
use owt_protocol::BridgeState;
use serde::{Deserialize, Serialize};

use super::mirror::{mark_unreachable, Mirror};
use super::ssh::Ssh;
use super::{keeper_file, Remote};
use crate::ops::Context;
use crate::store::now_ms;

/// How often the bridge is pinged; unanswered for [`PING_DEADLINE`], it is
/// taken for gone.
const PING_EVERY: Duration = Duration::from_secs(5);
const PING_DEADLINE: Duration = Duration::from_secs(20);
/// How long the remote may take to answer the hello.
const HELLO_DEADLINE: Duration = Duration::from_secs(30);
/// Reconnection delays: the first, and the longest.
const BACKOFF_FIRST: Duration = Duration::from_secs(1);
const BACKOFF_MAX: Duration = Duration::from_secs(30);
/// A keeper with no session on its remote for this long ends.
const IDLE_EXIT: Duration = Duration::from_secs(60);
/// Chunks queued for one local client before it is dropped.
const CHANNEL_QUEUE: usize = 1024;

/// What a keeper writes to its state file (`owt remote list` reads it).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct KeeperState {
    pub pid: u32,
    pub connected: bool,
    /// Unix ms: connected since, or unreachable since.
    pub since: i64,
    pub last_error: Option<String>,
    /// Unix ms of the next attempt, while unreachable.
    pub retry_at: Option<i64>,
    /// The remote clone (absolute, there), once known.
    pub repository: Option<String>,
    pub fetches: u64,
    pub last_fetch_ms: Option<u64>,
    /// Unix ms when the last announced snapshot was fetched, and when the
    /// remote wrote it (its clock, shifted into ours).
    pub last_snapshot_written_at: Option<i64>,
    pub last_snapshot_fetched_at: Option<i64>,
}

/// The state of `remote`'s keeper for the repository, as `owt remote list`
/// shows it (`None` when none was ever started).
pub fn state(home: &Path, repo_id: i64, remote: &str) -> Option<BridgeState> {
    let file = keeper_file(home, repo_id, remote, "json");
    let text = std::fs::read_to_string(file).ok()?;
    let state: KeeperState = serde_json::from_str(&text).ok()?;
    let running = is_running(home, repo_id, remote);
    Some(BridgeState {
        running,
        connected: running && state.connected,
        since: state.since,
        last_error: state.last_error,
        retry_in_s: state
            .retry_at
            .filter(|_| running)
            .map(|at| ((at - now_ms()).max(0) / 1000) as u64),
    })
}

/// The raw state file (for benchmarks and tests).
pub fn raw_state(home: &Path, repo_id: i64, remote: &str) -> Option<KeeperState> {
    let text = std::fs::read_to_string(keeper_file(home, repo_id, remote, "json")).ok()?;
    serde_json::from_str(&text).ok()
}

/// Whether a keeper holds the lock of `remote` for the repository.
pub fn is_running(home: &Path, repo_id: i64, remote: &str) -> bool {
    match try_lock(&keeper_file(home, repo_id, remote, "lock")) {
        Ok(Some(_lock)) => false,
        Ok(None) => true,
        Err(_) => false,
    }
}

/// The lock file, locked; `None` when another process holds it.
fn try_lock(path: &Path) -> std::io::Result<Option<std::fs::File>> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    if let Some(parent) = path.parent() {
        private_dir(parent)?;
    }
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(path)?;
    // SAFETY: a valid descriptor.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc == 0 {
        Ok(Some(file))
    } else {
        let err = std::io::Error::last_os_error();
        if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
            Ok(None)
        } else {
            Err(err)
        }
    }
}

/// Starts the keeper of `remote` for the repository of `ctx` unless one
/// runs (detached, in its own session; its log is
/// `$OWT_HOME/logs/remote-<repo>-<name>.log`).
pub fn ensure(ctx: &Context, remote: &str) -> anyhow::Result<()> {
    if is_running(&ctx.home, ctx.repo_row.id, remote) {
        return Ok(());
    }
    let exe = match std::env::var_os("OWT_BIN").filter(|v| !v.is_empty()) {
        Some(bin) => PathBuf::from(bin),
        None => std::env::current_exe().context("finding the owt binary")?,
    };
    let log_path = keeper_file(&ctx.home, ctx.repo_row.id, remote, "log");
    if let Some(parent) = log_path.parent() {
        private_dir(parent)?;
    }
    let log = {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(&log_path)
            .with_context(|| format!("opening {}", log_path.display()))?
    };
    let mut cmd = std::process::Command::new(exe);
    cmd.arg("-C")
        .arg(ctx.repo.main_root())
        .args(["__bridge", "keep", "--remote", remote])
        .env("OWT_HOME", &ctx.home)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    // SAFETY: only setsid (async-signal-safe) between fork and exec.
    unsafe {
        use std::os::unix::process::CommandExt;
        cmd.pre_exec(|| {
            if libc::setsid() == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().context("starting the bridge keeper")?;
    std::thread::spawn(move || {
        let _ = child.wait();
    });
    Ok(())
}

/// Starts the keepers of every remote the repository has sessions on.
pub fn ensure_all(ctx: &Context) {
    let Ok(rows) = ctx.store.remote_sessions(ctx.repo_row.id, None) else {
        return;
    };
    let mut remotes: Vec<&str> = rows
        .iter()
        .filter_map(|r| r.remote().map(|x| x.0))
        .collect();
    remotes.sort_unstable();
    remotes.dedup();
    for remote in remotes {
        if let Err(e) = ensure(ctx, remote) {
            tracing::warn!(remote, "starting the bridge keeper failed: {e:#}");
        }
    }
}

/// Makes sure a remote session's host socket is served here (its keeper
/// runs), waiting a little for a keeper just started.
pub fn ensure_socket(ctx: &Context, row: &crate::store::SessionRow) {
    let Some((remote, _)) = row.remote() else {
        return;
    };
    if let Err(e) = ensure(ctx, remote) {
        tracing::warn!(remote, "starting the bridge keeper failed: {e:#}");
        return;
    }
    let socket = crate::session::socket_path(&ctx.home, &row.short_id);
    let deadline = Instant::now() + Duration::from_secs(5);
    while !socket.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Everything the keeper's loop reacts to.
enum Event {
    Frame(BridgeFrame),
    /// The bridge's output ended (or broke), with why.
    Ended(String),
    /// A local client connected to a remote session's socket.
    Accepted(String, UnixStream),
    /// A local client left.
    ClientGone(u32),
}

/// The connection the socket listeners hand clients to (none while down).
type Route = Arc<Mutex<Option<Sender<Event>>>>;

struct Keeper {
    ctx: Context,
    ssh: Ssh,
    remote: Remote,
    state: Arc<Mutex<KeeperState>>,
    state_file: PathBuf,
    route: Route,
    /// Why the remote is unreachable, for refused clients.
    down: Arc<Mutex<String>>,
    /// Short ids whose socket is served, with the listener's stop flag.
    listeners: HashMap<String, Arc<std::sync::atomic::AtomicBool>>,
    mirror: Mirror,
    no_sessions_since: Option<Instant>,
}

/// Runs the keeper of `remote_name` for the repository containing `dir`.
pub fn keep(dir: Option<&Path>, remote_name: &str) -> anyhow::Result<()> {
    // SAFETY: setting signal dispositions has no memory preconditions.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
        libc::signal(libc::SIGHUP, libc::SIG_IGN);
    }
    let ctx = Context::open(dir)?;
    let remote = Remote::named(&ctx.config.config, remote_name)?;
    let lock_path = keeper_file(&ctx.home, ctx.repo_row.id, remote_name, "lock");
    let Some(_lock) = try_lock(&lock_path)? else {
        tracing::info!("another keeper runs for {remote_name}");
        return Ok(());
    };
    let ssh = Ssh::new(&ctx.home, &remote);
    let state_file = keeper_file(&ctx.home, ctx.repo_row.id, remote_name, "json");
    let mirror = Mirror::new(remote_name, ctx.repo_row.id);
    let mut keeper = Keeper {
        ssh,
        remote,
        state: Arc::new(Mutex::new(KeeperState {
            pid: std::process::id(),
            since: now_ms(),
            ..KeeperState::default()
        })),
        state_file,
        route: Arc::new(Mutex::new(None)),
        down: Arc::new(Mutex::new("the bridge is starting".into())),
        listeners: HashMap::new(),
        mirror,
        no_sessions_since: None,
        ctx,
    };
    keeper.run()
}

impl Keeper {
    fn run(&mut self) -> anyhow::Result<()> {
        let mut backoff = BACKOFF_FIRST;
        loop {
            self.serve_sockets();
            if self.idle_long_enough() {
                tracing::info!(
                    "no session on {} for a minute: the keeper ends",
                    self.remote.name
                );
                self.update_state(|state| {
                    state.connected = false;
                    state.last_error = Some("stopped: no session on this remote".into());
                    state.retry_at = None;
                });
                return Ok(());
            }
            let started = Instant::now();
            let reason = match self.connect_and_run() {
                Ok(()) => "the bridge closed".to_string(),
                Err(e) => format!("{e:#}"),
            };
            *self.route.lock().unwrap_or_else(|e| e.into_inner()) = None;
            if self.idle_long_enough() {
                // No session left to be unreachable: end without a retry.
                continue;
            }
            if started.elapsed() > Duration::from_secs(30) {
                backoff = BACKOFF_FIRST;
            }
            tracing::warn!(remote = %self.remote.name, "bridge down: {reason}; next try in {}s", backoff.as_secs());
            let store = &self.ctx.store;
            if let Err(e) =
                mark_unreachable(store, self.ctx.repo_row.id, &self.remote.name, &reason)
            {
                tracing::warn!("recording unreachable failed: {e}");
            }
            let retry_at = now_ms() + backoff.as_millis() as i64;
            let since = self.update_state(|state| {
                if state.connected || state.last_error.is_none() {
                    state.since = now_ms();
                }
                state.connected = false;
                state.last_error = Some(reason.clone());
                state.retry_at = Some(retry_at);
                state.since
            });
            *self.down.lock().unwrap_or_else(|e| e.into_inner()) = format!(
                "{} is unreachable (for {}): {reason}; owt reconnects on its own",
                self.remote.name,
                crate::printable::age(since, now_ms())
            );
            std::thread::sleep(backoff);
            backoff = (backoff * 2).min(BACKOFF_MAX);
        }
    }

    fn idle_long_enough(&mut self) -> bool {
        let none = self
            .ctx
            .store
            .remote_sessions(self.ctx.repo_row.id, Some(&self.remote.name))
            .map(|rows| rows.is_empty())
            .unwrap_or(false);
        if !none {
            self.no_sessions_since = None;
            return false;
        }
        let since = *self.no_sessions_since.get_or_insert_with(Instant::now);
        since.elapsed() >= IDLE_EXIT
    }

    /// Changes the state and writes it out.
    fn update_state<T>(&self, change: impl FnOnce(&mut KeeperState) -> T) -> T {
        update_state(&self.state, &self.state_file, change)
    }

    /// Serves the host socket of every session of the remote (here), and
    /// stops serving those that are gone.
    fn serve_sockets(&mut self) {
        let Ok(rows) = self
            .ctx
            .store
            .remote_sessions(self.ctx.repo_row.id, Some(&self.remote.name))
        else {
            return;
        };
        let wanted: BTreeMap<String, String> = rows
            .iter()
            .filter_map(|row| {
                let (_, name) = super::split_local_name(&row.name)?;
                Some((row.short_id.clone(), name.to_string()))
            })
            .collect();
        self.listeners.retain(|short_id, stop| {
            let keep = wanted.contains_key(short_id);
            if !keep {
                stop.store(true, std::sync::atomic::Ordering::SeqCst);
            }
            keep
        });
        for (short_id, name) in wanted {
            if self.listeners.contains_key(&short_id) {
                continue;
            }
            let socket = crate::session::socket_path(&self.ctx.home, &short_id);
            match listen(&socket) {
                Ok(listener) => {
                    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
                    let route = self.route.clone();
                    let down = self.down.clone();
                    let flag = stop.clone();
                    let spawned = std::thread::Builder::new()
                        .name(format!("owt-keep-{short_id}"))
                        .spawn(move || accept_loop(listener, &socket, name, route, down, flag));
                    if spawned.is_ok() {
                        self.listeners.insert(short_id, stop);
                    }
                }
                Err(e) => tracing::warn!("cannot serve {}: {e}", socket.display()),
            }
        }
    }

    /// One connection: hello, then events until it ends.
    fn connect_and_run(&mut self) -> anyhow::Result<()> {
        self.ssh.ensure_master()?;
        let script = self
            .ssh
            .owt_script(&["__bridge".to_string(), "serve".to_string()]);
        let mut child = self
            .ssh
            .command(&script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .context("running ssh")?;
        let result = self.run_child(&mut child);
        // SAFETY: kill has no memory preconditions; the pid is our child's.
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
        let _ = child.wait();
        result
    }

    fn run_child(&mut self, child: &mut Child) -> anyhow::Result<()> {
        let stdin = child.stdin.take().context("ssh's input")?;
        let stdout = child.stdout.take().context("ssh's output")?;
        let stderr = child.stderr.take().context("ssh's error output")?;
        let last_err = Arc::new(Mutex::new(String::new()));
        {
            let last_err = last_err.clone();
            std::thread::Builder::new()
                .name("owt-keep-stderr".into())
                .spawn(move || {
                    for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                        eprintln!("remote: {line}");
                        let line = line.trim().to_string();
                        if !line.is_empty() {
                            *last_err.lock().unwrap_or_else(|e| e.into_inner()) = line;
                        }
                    }
                })?;
        }
        let (tx, rx) = mpsc::channel::<Event>();
        {
            let tx = tx.clone();
            std::thread::Builder::new()
                .name("owt-keep-reader".into())
                .spawn(move || read_bridge(stdout, tx))?;
        }
        let writer = Writer(Arc::new(Mutex::new(stdin)));
        writer.send(&bridge::encode_json(
            BridgeKind::Hello,
            &BridgeHello {
                version: BRIDGE_PROTOCOL_VERSION,
                owt_version: env!("CARGO_PKG_VERSION").to_string(),
            },
        ))?;
        let why_ended = |what: String| {
            let err = last_err.lock().map(|e| e.clone()).unwrap_or_default();
            if err.is_empty() || what.contains(&err) {
                what
            } else {
                format!("{what} ({err})")
            }
        };
        let welcome: BridgeWelcome = match rx.recv_timeout(HELLO_DEADLINE) {
            Ok(Event::Frame(frame)) if frame.kind == BridgeKind::Welcome => frame.json()?,
            Ok(Event::Frame(frame)) if frame.kind == BridgeKind::Error => {
                let error: bridge::BridgeError = frame.json()?;
                anyhow::bail!("{}", error.message)
            }
            Ok(Event::Frame(frame)) => {
                anyhow::bail!("the remote's owt answered the hello with {:?}", frame.kind)
            }
            Ok(Event::Ended(why)) => {
                // Give the error output a moment to arrive.
                std::thread::sleep(Duration::from_millis(100));
                anyhow::bail!("{}", why_ended(why))
            }
            Ok(_) => anyhow::bail!("unexpected event before the hello"),
            Err(_) => anyhow::bail!(
                "the remote's owt did not answer within {}s",
                HELLO_DEADLINE.as_secs()
            ),
        };
        if welcome.version != BRIDGE_PROTOCOL_VERSION {
            anyhow::bail!(
                "{}",
                bridge::mismatch_message(
                    welcome.version,
                    &welcome.owt_version,
                    BRIDGE_PROTOCOL_VERSION,
                    env!("CARGO_PKG_VERSION")
                )
            );
        }
        tracing::info!(remote = %self.remote.name, repository = %welcome.repository, "bridge up");
        // The remote's clock, shifted into ours (latency included).
        let offset = now_ms() - welcome.now;
        self.update_state(|state| {
            state.connected = true;
            state.since = now_ms();
            state.last_error = None;
            state.retry_at = None;
            state.repository = Some(welcome.repository.clone());
        });
        let fetcher = Fetcher::start(
            self.ctx.repo.main_root().to_path_buf(),
            self.ssh.clone(),
            welcome.repository.clone(),
            (self.state.clone(), self.state_file.clone()),
        );
        *self.route.lock().unwrap_or_else(|e| e.into_inner()) = Some(tx.clone());
        let mut channels: HashMap<u32, SyncSender<Vec<u8>>> = HashMap::new();
        let mut next_channel: u32 = 1;
        let mut last_pong = Instant::now();
        let mut next_ping = Instant::now() + PING_EVERY;
        // An initial fetch: snapshots written while nobody listened.
        fetcher.request(None);
        loop {
            let wait = next_ping.saturating_duration_since(Instant::now());
            let event = match rx.recv_timeout(wait) {
                Ok(event) => Some(event),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => anyhow::bail!("the bridge's reader ended"),
            };
            if Instant::now() >= next_ping {
                if self.idle_long_enough() {
                    // Every session of this remote is gone here: done.
                    return Ok(());
                }
                if last_pong.elapsed() > PING_DEADLINE {
                    anyhow::bail!(
                        "the remote's owt stopped answering for {}s",
                        PING_DEADLINE.as_secs()
                    );
                }
                writer.send(&bridge::encode(BridgeKind::Ping, b""))?;
                next_ping = Instant::now() + PING_EVERY;
            }
            let Some(event) = event else { continue };
            match event {
                Event::Frame(frame) => match frame.kind {
                    BridgeKind::Facts => {
                        let push: FactsPush = frame.json()?;
                        match self.mirror.apply(&mut self.ctx.store, &push, now_ms()) {
                            Ok(applied) => {
                                if !applied.removed.is_empty() || push.full {
                                    tracing::info!(
                                        sessions = applied.sessions.len(),
                                        removed = ?applied.removed,
                                        "facts"
                                    );
                                }
                            }
                            Err(e) => tracing::warn!("recording the remote's facts failed: {e}"),
                        }
                        self.serve_sockets();
                    }
                    BridgeKind::Snapshots => {
                        let push: SnapshotsPush = frame.json()?;
                        fetcher.request(Some(push.written_at + offset));
                    }
                    BridgeKind::Pong => last_pong = Instant::now(),
                    BridgeKind::Data => {
                        let (id, bytes) = frame.data()?;
                        let full = channels
                            .get(&id)
                            .is_some_and(|q| q.try_send(bytes.to_vec()).is_err());
                        if full {
                            tracing::warn!(channel = id, "a local client fell behind; dropped");
                            channels.remove(&id);
                            writer.send(&bridge::encode_json(
                                BridgeKind::Close,
                                &ChannelClose {
                                    channel: id,
                                    reason: None,
                                },
                            ))?;
                        }
                    }
                    BridgeKind::Close => {
                        let close: ChannelClose = frame.json()?;
                        if let (Some(queue), Some(reason)) =
                            (channels.remove(&close.channel), close.reason)
                        {
                            // The host could not be reached over there: the
                            // client hears it as its host's own error.
                            let _ = queue.try_send(host_proto::encode_json(
                                FrameKind::Error,
                                &HostError { message: reason },
                            ));
                        }
                    }
                    BridgeKind::Error => {
                        let error: bridge::BridgeError = frame.json()?;
                        tracing::warn!("the remote says: {}", error.message);
                    }
                    other => tracing::warn!("ignoring a {other:?} frame from the remote"),
                },
                Event::Ended(why) => {
                    std::thread::sleep(Duration::from_millis(100));
                    anyhow::bail!("{}", why_ended(why))
                }
                Event::Accepted(session, stream) => {
                    let id = next_channel;
                    next_channel = next_channel.wrapping_add(1).max(1);
                    writer.send(&bridge::encode_json(
                        BridgeKind::Open,
                        &ChannelOpen {
                            channel: id,
                            session,
                        },
                    ))?;
                    match start_channel(id, stream, writer.clone(), tx.clone()) {
                        Ok(queue) => {
                            channels.insert(id, queue);
                        }
                        Err(e) => tracing::warn!("starting a channel failed: {e}"),
                    }
                }
                Event::ClientGone(id) => {
                    if channels.remove(&id).is_some() {
                        writer.send(&bridge::encode_json(
                            BridgeKind::Close,
                            &ChannelClose {
                                channel: id,
                                reason: None,
                            },
                        ))?;
                    }
                }
            }
        }
    }
}

/// The bridge's input (ssh's stdin), shared by the loop and the channels.
#[derive(Clone)]
struct Writer(Arc<Mutex<ChildStdin>>);

impl Writer {
    fn send(&self, frame: &[u8]) -> anyhow::Result<()> {
        let mut stdin = self.0.lock().unwrap_or_else(|e| e.into_inner());
        stdin
            .write_all(frame)
            .and_then(|()| stdin.flush())
            .context("writing to the bridge")
    }
}

fn read_bridge(mut stdout: impl Read, tx: Sender<Event>) {
    let mut reader = BufReader::with_capacity(64 * 1024, &mut stdout);
    loop {
        match bridge::read_frame(&mut reader) {
            Ok(Some(frame)) => {
                if tx.send(Event::Frame(frame)).is_err() {
                    return;
                }
            }
            Ok(None) => {
                let _ = tx.send(Event::Ended("the bridge closed".into()));
                return;
            }
            Err(e) => {
                let _ = tx.send(Event::Ended(format!("reading the bridge failed: {e}")));
                return;
            }
        }
    }
}

/// Binds `socket`, replacing a stale file nobody answers on.
fn listen(socket: &Path) -> std::io::Result<UnixListener> {
    use std::os::unix::fs::PermissionsExt;
    if let Some(parent) = socket.parent() {
        private_dir(parent)?;
    }
    if socket.exists() {
        if UnixStream::connect(socket).is_ok() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::AddrInUse,
                "another process serves it",
            ));
        }
        std::fs::remove_file(socket)?;
    }
    let listener = UnixListener::bind(socket)?;
    std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o600))?;
    Ok(listener)
}

/// Accepts local clients of one remote session's socket: each becomes a
/// channel while the bridge is up, or hears why it is not.
fn accept_loop(
    listener: UnixListener,
    socket: &Path,
    session: String,
    route: Route,
    down: Arc<Mutex<String>>,
    stop: Arc<std::sync::atomic::AtomicBool>,
) {
    let _ = listener.set_nonblocking(true);
    loop {
        if stop.load(std::sync::atomic::Ordering::SeqCst) {
            let _ = std::fs::remove_file(socket);
            return;
        }
        let stream = match listener.accept() {
            Ok((stream, _)) => stream,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                wait_readable(&listener, Duration::from_millis(500));
                continue;
            }
            Err(e) => {
                tracing::warn!("accepting on {} failed: {e}", socket.display());
                std::thread::sleep(Duration::from_millis(200));
                continue;
            }
        };
        let _ = stream.set_nonblocking(false);
        if !same_user(&stream) {
            continue;
        }
        let sender = route.lock().ok().and_then(|r| r.clone());
        let refused = match sender {
            Some(tx) => tx
                .send(Event::Accepted(session.clone(), stream))
                .err()
                .map(|e| match e.0 {
                    Event::Accepted(_, stream) => stream,
                    _ => unreachable!("only Accepted is sent here"),
                }),
            None => Some(stream),
        };
        if let Some(stream) = refused {
            let message = down.lock().map(|d| d.clone()).unwrap_or_default();
            std::thread::spawn(move || refuse(stream, &message));
        }
    }
}

fn wait_readable(listener: &UnixListener, timeout: Duration) {
    use std::os::fd::AsRawFd;
    let mut pfd = libc::pollfd {
        fd: listener.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    unsafe { libc::poll(&mut pfd, 1, timeout.as_millis() as i32) };
}

/// Answers a client's hello with the host protocol's `Error`.
fn refuse(mut stream: UnixStream, message: &str) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let _ = host_proto::read_frame(&mut stream);
    let _ = host_proto::write_json(
        &mut stream,
        FrameKind::Error,
        &HostError {
            message: message.to_string(),
        },
    );
}

/// Carries one local client over the bridge: a thread reads the client
/// into `Data` frames; another writes what the remote sends (queued).
fn start_channel(
    id: u32,
    stream: UnixStream,
    writer: Writer,
    events: Sender<Event>,
) -> std::io::Result<SyncSender<Vec<u8>>> {
    let mut reader = stream.try_clone()?;
    let mut client = stream;
    let (queue, queued) = mpsc::sync_channel::<Vec<u8>>(CHANNEL_QUEUE);
    std::thread::Builder::new()
        .name(format!("owt-keep-in{id}"))
        .spawn(move || {
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                match reader.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        if writer.send(&bridge::encode_data(id, &buf[..n])).is_err() {
                            break;
                        }
                    }
                }
            }
            let _ = events.send(Event::ClientGone(id));
        })?;
    std::thread::Builder::new()
        .name(format!("owt-keep-out{id}"))
        .spawn(move || {
            for chunk in queued {
                if client.write_all(&chunk).is_err() {
                    break;
                }
            }
            let _ = client.shutdown(std::net::Shutdown::Both);
        })?;
    Ok(queue)
}

/// Fetches snapshot refs on its own thread: one fetch at a time, requests
/// made during a fetch coalesced into one more.
struct Fetcher {
    tx: Sender<Option<i64>>,
}

impl Fetcher {
    fn start(
        local_repo: PathBuf,
        ssh: Ssh,
        repository: String,
        (state, state_file): (Arc<Mutex<KeeperState>>, PathBuf),
    ) -> Fetcher {
        let (tx, rx) = mpsc::channel::<Option<i64>>();
        let _ = std::thread::Builder::new()
            .name("owt-keep-fetch".into())
            .spawn(move || {
                let mut written_at = None;
                while let Ok(first) = rx.recv() {
                    written_at = first.or(written_at);
                    while let Ok(more) = rx.try_recv() {
                        written_at = more.or(written_at);
                    }
                    match super::snapshots::fetch(&local_repo, &ssh, &repository) {
                        Ok(fetched) => {
                            tracing::debug!(
                                ms = fetched.elapsed.as_millis() as u64,
                                "fetched snapshots"
                            );
                            update_state(&state, &state_file, |state| {
                                state.fetches += 1;
                                state.last_fetch_ms = Some(fetched.elapsed.as_millis() as u64);
                                state.last_snapshot_written_at = written_at;
                                state.last_snapshot_fetched_at = Some(now_ms());
                            });
                        }
                        Err(e) => tracing::warn!("{e}"),
                    }
                }
            });
        Fetcher { tx }
    }

    /// Asks for a fetch of snapshots written (remote clock, shifted) at
    /// `written_at`.
    fn request(&self, written_at: Option<i64>) {
        let _ = self.tx.send(written_at);
    }
}

/// Changes the keeper's state and writes its file (replaced whole).
fn update_state<T>(
    state: &Mutex<KeeperState>,
    file: &Path,
    change: impl FnOnce(&mut KeeperState) -> T,
) -> T {
    let mut state = state.lock().unwrap_or_else(|e| e.into_inner());
    let result = change(&mut state);
    if let Ok(json) = serde_json::to_vec_pretty(&*state) {
        let tmp = file.with_extension("json.tmp");
        if crate::store::write_private(&tmp, &json).is_ok() {
            let _ = std::fs::rename(&tmp, file);
        }
    }
    result
}

/// Creates `dir` (and its parents) readable by its owner only.
fn private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
}

/// Whether the peer of a unix socket is this user (`SO_PEERCRED`).
fn same_user(stream: &UnixStream) -> bool {
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
    // SAFETY: geteuid has no preconditions.
    rc == 0 && cred.uid == unsafe { libc::geteuid() }
}
