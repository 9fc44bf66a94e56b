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
//!
//! Parts: `state` (the state file and the lock), `start` (starting a
//! keeper detached), `link` (one bridge connection and its loop),
//! `sockets` (the remote sessions' host sockets here and their channels),
//! `fetcher` (snapshot fetches, one at a time).

use std::collections::{BTreeMap, HashMap};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use owt_protocol::bridge::BridgeFrame;

use super::mirror::{mark_unreachable, Mirror};
use super::ssh::Ssh;
use super::{keeper_file, Remote};
use crate::context::Context;
use crate::store::now_ms;

mod fetcher;
mod link;
mod sockets;
mod start;
mod state;

use sockets::{accept_loop, listen};
pub use start::{ensure, ensure_all, ensure_socket};
pub use state::{is_running, raw_state, state, KeeperState};
use state::{try_lock, update_state};

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

/// Everything the keeper's loop reacts to.
pub(super) enum Event {
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
    crate::platform::process::ignore_pipe_signals(true);
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
        crate::platform::process::signal_process(
            child.id(),
            crate::platform::process::Signal::TERM,
        );
        let _ = child.wait();
        result
    }
}
