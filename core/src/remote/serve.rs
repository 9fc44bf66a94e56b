//! The remote end of a bridge: `owt __bridge serve`, run by the local
//! keeper as `ssh -T HOST owt -C PATH __bridge serve`, speaking
//! `owt_protocol::bridge` on its standard input and output.
//!
//! Three parts, one thread each: the *facts pusher* (inotify on this
//! machine's store file: whenever a host, hook or verb writes, the
//! sessions of this clone are re-read and what changed is pushed; hosts
//! that vanished are reconciled every 2 s), the *snapshot writer* (a
//! Conflict Guard engine over the sessions' worktrees, fed by the hosts'
//! journals and a file watcher, that writes each changed working state as a
//! commit under `refs/owt/snapshots/<session>` and says so), and the
//! *channel switch* (the main thread: host-protocol bytes between the
//! bridge and the sessions' host sockets).
//!
//! Invariants: it ends when its standard input ends (the connection went)
//! and changes nothing but refs under `refs/owt/snapshots/` and the facts
//! any `owt guard` records; logs go to standard error (the keeper's log).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use owt_protocol::bridge::{
    self, BridgeError, BridgeHello, BridgeKind, ChannelClose, ChannelOpen, FactsPush, RemoteFact,
    RemoteSession, SnapshotRef, SnapshotsPush,
};

use super::mirror::MIRRORED;
use crate::context::Context;
use crate::guard::engine::{GuardEngine, Participant};
use crate::guard::watch::{GuardWatcher, Watching};
use crate::store::{now_ms, SessionRow, Store};

/// The bridge's output: frames from every thread, one at a time. A write
/// that fails means the connection is gone: the process ends.
#[derive(Clone)]
struct Out(Arc<Mutex<std::io::Stdout>>);

impl Out {
    fn send(&self, frame: &[u8]) {
        let Ok(mut out) = self.0.lock() else {
            std::process::exit(0)
        };
        if out.write_all(frame).and_then(|()| out.flush()).is_err() {
            std::process::exit(0);
        }
    }
}

/// How often hosts that vanished without an exit are looked for.
const RECONCILE_EVERY: Duration = Duration::from_secs(2);
/// How long store writes are gathered into one push.
const FACTS_DEBOUNCE: Duration = Duration::from_millis(15);
/// How long the snapshot watcher gathers file events.
const SNAPSHOT_DEBOUNCE: Duration = Duration::from_millis(20);

/// Records the guard's facts of every session in the store (`ops` passes
/// its own: the bridge's remote end keeps the board's facts as a local
/// `owt lsp` would).
pub type RecordFacts = fn(&Store, &GuardEngine) -> anyhow::Result<()>;

/// Serves the bridge for the repository containing `dir` until standard
/// input ends; `record` keeps the guard's facts in the store.
pub fn serve(dir: Option<&Path>, record: RecordFacts) -> anyhow::Result<()> {
    crate::platform::process::ignore_pipe_signals(false);
    let out = Out(Arc::new(Mutex::new(std::io::stdout())));
    let mut input = std::io::stdin().lock();
    let first = bridge::read_frame(&mut input)
        .context("reading the bridge's hello")?
        .context("the bridge closed before saying hello")?;
    if first.kind != BridgeKind::Hello {
        anyhow::bail!("the bridge spoke {:?} before its hello", first.kind);
    }
    let hello: BridgeHello = first.json()?;
    let refuse = |message: String| {
        out.send(&bridge::encode_json(
            BridgeKind::Error,
            &BridgeError {
                message: message.clone(),
            },
        ));
        anyhow::anyhow!(message)
    };
    let ctx = match Context::open(dir) {
        Ok(ctx) => ctx,
        Err(e) => return Err(refuse(format!("{e:#}"))),
    };
    let repository = ctx.repo.main_root().to_string_lossy().into_owned();
    let welcome = bridge::answer_hello(&hello, env!("CARGO_PKG_VERSION"), &repository, now_ms())
        .map_err(|e| refuse(e.message))?;
    out.send(&bridge::encode_json(BridgeKind::Welcome, &welcome));
    tracing::info!(%repository, "bridge serving");

    let (sessions_tx, sessions_rx) = mpsc::channel::<Vec<Member>>();
    {
        let out = out.clone();
        let home = ctx.home.clone();
        let repo_id = ctx.repo_row.id;
        std::thread::Builder::new()
            .name("owt-bridge-facts".into())
            .spawn(move || {
                if let Err(e) = push_facts(&home, repo_id, &out, &sessions_tx) {
                    tracing::error!("the facts pusher stopped: {e:#}");
                }
            })?;
    }
    {
        let out = out.clone();
        let root = ctx.repo.main_root().to_path_buf();
        let home = ctx.home.clone();
        let ignore = ctx.config.config.guard.ignore.clone();
        std::thread::Builder::new()
            .name("owt-bridge-snapshots".into())
            .spawn(move || write_snapshots(&root, &home, &ignore, &out, sessions_rx, record))?;
    }
    switch_channels(&ctx, &mut input, &out);
    Ok(())
}

/// A session the snapshot writer follows.
#[derive(Debug, Clone, PartialEq)]
struct Member {
    name: String,
    session_id: i64,
    worktree: PathBuf,
    base: String,
    socket: PathBuf,
}

/// The facts pusher; see the module doc.
fn push_facts(
    home: &Path,
    repo_id: i64,
    out: &Out,
    members_tx: &Sender<Vec<Member>>,
) -> anyhow::Result<()> {
    let store = Store::open(home)?;
    let watch = StoreWatch::new(home);
    let mut sent: BTreeMap<String, RemoteSession> = BTreeMap::new();
    let mut members: Option<Vec<Member>> = None;
    let mut full = true;
    let mut last_reconcile = Instant::now() - RECONCILE_EVERY;
    loop {
        let rows = store.sessions(repo_id)?;
        if last_reconcile.elapsed() >= RECONCILE_EVERY {
            for row in &rows {
                let _ = crate::session::reconcile(&store, home, row);
            }
            last_reconcile = Instant::now();
        }
        let now = now_ms();
        let current = mirrored_sessions(&store, &rows)?;
        let changed: Vec<RemoteSession> = current
            .values()
            .filter(|s| full || sent.get(&s.name) != Some(*s))
            .cloned()
            .collect();
        let removed: Vec<String> = sent
            .keys()
            .filter(|name| !current.contains_key(*name))
            .cloned()
            .collect();
        if full || !changed.is_empty() || !removed.is_empty() {
            out.send(&bridge::encode_json(
                BridgeKind::Facts,
                &FactsPush {
                    now,
                    full,
                    sessions: changed,
                    removed,
                },
            ));
            full = false;
        }
        sent = current;
        let now_members = guard_members(home, &rows);
        if members.as_ref() != Some(&now_members) {
            members = Some(now_members.clone());
            if members_tx.send(now_members).is_err() {
                return Ok(());
            }
        }
        watch.wait(RECONCILE_EVERY);
    }
}

/// Each session as the other end records it: its row and its
/// [`MIRRORED`] facts, by name.
fn mirrored_sessions(
    store: &Store,
    rows: &[SessionRow],
) -> anyhow::Result<BTreeMap<String, RemoteSession>> {
    let mut current = BTreeMap::new();
    for row in rows {
        let facts = store
            .facts(row.id)?
            .into_iter()
            .filter(|f| MIRRORED.contains(&f.kind.as_str()))
            .map(|f| RemoteFact {
                kind: f.kind,
                value: f.value,
                observed_at: f.observed_at,
            })
            .collect();
        current.insert(
            row.name.clone(),
            RemoteSession {
                name: row.name.clone(),
                task: row.task.clone(),
                branch: row.branch.clone(),
                base: row.base_branch.clone(),
                worktree: row.worktree_path.to_string_lossy().into_owned(),
                provider: row.provider.clone(),
                kind: row.kind.as_str().to_string(),
                created_at: row.created_at,
                facts,
            },
        );
    }
    Ok(current)
}

/// The sessions whose worktree exists, as the snapshot writer needs them.
fn guard_members(home: &Path, rows: &[SessionRow]) -> Vec<Member> {
    rows.iter()
        .filter(|row| row.worktree_path.is_dir())
        .map(|row| Member {
            name: row.name.clone(),
            session_id: row.id,
            worktree: row.worktree_path.clone(),
            base: row.base_branch.clone(),
            socket: crate::session::socket_path(home, &row.short_id),
        })
        .collect()
}

/// A watch on the store's folder (inotify on Linux): wakes when `owt.db`
/// or its write-ahead log is written (any process's commit).
struct StoreWatch {
    queue: Option<crate::platform::watch::Queue>,
}

impl StoreWatch {
    fn new(home: &Path) -> StoreWatch {
        use crate::platform::watch::{Mask, Queue};
        let Ok(queue) = Queue::new() else {
            tracing::warn!("no inotify for the store: facts are pushed every 2 s only");
            return StoreWatch { queue: None };
        };
        if queue.add_watch(home, Mask::WRITES).is_err() {
            tracing::warn!(
                "cannot watch {}: facts are pushed every 2 s only",
                home.display()
            );
            return StoreWatch { queue: None };
        }
        StoreWatch { queue: Some(queue) }
    }

    /// Waits until the store was written (then a little longer, to gather
    /// a burst) or `timeout` passes.
    fn wait(&self, timeout: Duration) {
        use std::os::fd::AsFd;
        let Some(queue) = &self.queue else {
            std::thread::sleep(timeout);
            return;
        };
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            let wait = left.min(Duration::from_secs(60));
            if !crate::platform::poll::readable(queue.as_fd(), Some(wait)) {
                continue;
            }
            if self.drain_store_events() {
                std::thread::sleep(FACTS_DEBOUNCE);
                self.drain_store_events();
                return;
            }
        }
    }

    /// Reads every queued event; whether one was about the store's files.
    fn drain_store_events(&self) -> bool {
        let Some(queue) = &self.queue else {
            return false;
        };
        let mut hit = false;
        queue.read(|_, _, name| hit |= name == "owt.db" || name == "owt.db-wal");
        hit
    }
}

/// The snapshot writer; see the module doc. Rebuilt whenever the set of
/// sessions with a worktree changes.
fn write_snapshots(
    root: &Path,
    home: &Path,
    ignore: &[String],
    out: &Out,
    members_rx: Receiver<Vec<Member>>,
    record: RecordFacts,
) {
    let mut next = members_rx.recv().ok();
    while let Some(members) = next.take() {
        let watcher = match start_snapshots(root, home, ignore, out, &members, record) {
            Ok(watcher) => Some(watcher),
            Err(e) => {
                tracing::warn!("snapshots are not written: {e:#}");
                None
            }
        };
        next = members_rx.recv().ok();
        // Take the newest list when several changes queued up.
        while let Ok(newer) = members_rx.try_recv() {
            next = Some(newer);
        }
        drop(watcher);
    }
}

fn start_snapshots(
    root: &Path,
    home: &Path,
    ignore: &[String],
    out: &Out,
    members: &[Member],
    record: RecordFacts,
) -> anyhow::Result<GuardWatcher> {
    let repo = git2::Repository::open(root)?;
    let repo = git2::Repository::open(repo.commondir())?;
    let keep: BTreeSet<String> = members.iter().map(|m| m.name.clone()).collect();
    let removed = super::snapshots::remove_others(&repo, &keep);
    let mut engine = GuardEngine::new(root, ignore)?;
    for member in members {
        engine.add_participant(Participant {
            id: member.name.clone(),
            session_id: Some(member.session_id),
            worktree: member.worktree.clone(),
            base_branch: member.base.clone(),
            journal: Some(Arc::new(crate::session::HostJournal::new(
                member.socket.clone(),
            ))),
        })?;
    }
    // Watched before the first computation: a write during it is queued,
    // not missed.
    let watching = Watching::new(&engine)?;
    engine.full_recompute()?;
    let ids: Vec<String> = members.iter().map(|m| m.name.clone()).collect();
    let mut refs: Vec<SnapshotRef> = removed
        .into_iter()
        .map(|session| SnapshotRef {
            session,
            commit: None,
        })
        .collect();
    refs.extend(write_refs(&repo, &engine, &ids));
    push_snapshots(out, refs);
    let store = Store::open(home).ok();
    if let Some(store) = &store {
        let _ = record(store, &engine);
    }
    let engine = Arc::new(Mutex::new(engine));
    let out = out.clone();
    let watcher = watching.start(engine, SNAPSHOT_DEBOUNCE, move |engine, update| {
        let refs = write_refs(&repo, engine, &update.participants);
        push_snapshots(&out, refs);
        if let Some(store) = &store {
            let _ = record(store, engine);
        }
    })?;
    Ok(watcher)
}

/// Writes the snapshot commits of `ids` that changed.
fn write_refs(repo: &git2::Repository, engine: &GuardEngine, ids: &[String]) -> Vec<SnapshotRef> {
    let mut refs = Vec::new();
    for id in ids {
        let Some(tree) = engine.snapshot(id) else {
            continue;
        };
        let head = engine
            .guard_fact(id)
            .and_then(|f| f.head)
            .and_then(|h| git2::Oid::from_str(&h).ok());
        match super::snapshots::write(repo, id, tree, head) {
            Ok(Some(commit)) => refs.push(SnapshotRef {
                session: id.clone(),
                commit: Some(commit.to_string()),
            }),
            Ok(None) => {}
            Err(e) => tracing::warn!(session = %id, "writing the snapshot commit failed: {e}"),
        }
    }
    refs
}

fn push_snapshots(out: &Out, refs: Vec<SnapshotRef>) {
    if refs.is_empty() {
        return;
    }
    out.send(&bridge::encode_json(
        BridgeKind::Snapshots,
        &SnapshotsPush {
            refs,
            written_at: now_ms(),
        },
    ));
}

/// The channel switch: reads bridge frames until the input ends.
fn switch_channels(ctx: &Context, input: &mut impl Read, out: &Out) {
    let mut channels: HashMap<u32, UnixStream> = HashMap::new();
    let (gone_tx, gone_rx) = mpsc::channel::<u32>();
    loop {
        let frame = match bridge::read_frame(input) {
            Ok(Some(frame)) => frame,
            Ok(None) => return,
            Err(e) => {
                tracing::warn!("reading the bridge failed: {e}");
                return;
            }
        };
        while let Ok(id) = gone_rx.try_recv() {
            channels.remove(&id);
        }
        match frame.kind {
            BridgeKind::Ping => out.send(&bridge::encode(BridgeKind::Pong, b"")),
            BridgeKind::Open => {
                let Ok(open) = frame.json::<ChannelOpen>() else {
                    continue;
                };
                match open_channel(ctx, &open, out, gone_tx.clone()) {
                    Ok(stream) => {
                        channels.insert(open.channel, stream);
                    }
                    Err(reason) => out.send(&bridge::encode_json(
                        BridgeKind::Close,
                        &ChannelClose {
                            channel: open.channel,
                            reason: Some(reason),
                        },
                    )),
                }
            }
            BridgeKind::Data => {
                let Ok((id, bytes)) = frame.data() else {
                    continue;
                };
                let failed = channels
                    .get_mut(&id)
                    .is_some_and(|stream| stream.write_all(bytes).is_err());
                if failed {
                    if let Some(stream) = channels.remove(&id) {
                        let _ = stream.shutdown(std::net::Shutdown::Both);
                    }
                }
            }
            BridgeKind::Close => {
                if let Ok(close) = frame.json::<ChannelClose>() {
                    if let Some(stream) = channels.remove(&close.channel) {
                        let _ = stream.shutdown(std::net::Shutdown::Both);
                    }
                }
            }
            other => tracing::warn!("ignoring a {other:?} frame from the bridge"),
        }
    }
}

/// Connects a channel to the host of the session it names; a thread
/// copies what the host says into `Data` frames.
fn open_channel(
    ctx: &Context,
    open: &ChannelOpen,
    out: &Out,
    gone: Sender<u32>,
) -> Result<UnixStream, String> {
    let row = ctx
        .store
        .session_by_name(ctx.repo_row.id, &open.session)
        .map_err(|e| e.to_string())?
        .filter(|row| row.remote().is_none())
        .ok_or_else(|| format!("no session named `{}` on this machine", open.session))?;
    let socket = crate::session::socket_path(&ctx.home, &row.short_id);
    let stream = UnixStream::connect(&socket).map_err(|e| {
        format!(
            "no session host answers for {} on this machine: {e}",
            open.session
        )
    })?;
    let mut reader = stream.try_clone().map_err(|e| e.to_string())?;
    let out = out.clone();
    let channel = open.channel;
    std::thread::Builder::new()
        .name(format!("owt-bridge-ch{channel}"))
        .spawn(move || {
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                match reader.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => out.send(&bridge::encode_data(channel, &buf[..n])),
                }
            }
            out.send(&bridge::encode_json(
                BridgeKind::Close,
                &ChannelClose {
                    channel,
                    reason: None,
                },
            ));
            let _ = gone.send(channel);
        })
        .map_err(|e| e.to_string())?;
    Ok(stream)
}
