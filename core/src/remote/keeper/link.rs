//! One bridge connection: the hello, then the loop that carries facts,
//! snapshot announcements, pings and the local clients' channels until the
//! bridge ends.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::process::{Child, ChildStderr, ChildStdin};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use owt_protocol::bridge::{
    self, BridgeFrame, BridgeHello, BridgeKind, BridgeWelcome, ChannelClose, ChannelOpen,
    FactsPush, SnapshotsPush, BRIDGE_PROTOCOL_VERSION,
};
use owt_protocol::host::{self as host_proto, FrameKind, HostError};

use super::fetcher::Fetcher;
use super::{Event, Keeper, CHANNEL_QUEUE, HELLO_DEADLINE, PING_DEADLINE, PING_EVERY};
use crate::store::now_ms;

/// A bridge that is up: where frames go, the local clients' channels, the
/// pings, the snapshot fetcher and the remote's clock.
struct Link {
    writer: Writer,
    /// The loop's own events, for the channels' threads.
    events: Sender<Event>,
    channels: HashMap<u32, SyncSender<Vec<u8>>>,
    next_channel: u32,
    last_pong: Instant,
    next_ping: Instant,
    fetcher: Fetcher,
    /// The remote's clock, shifted into ours (latency included).
    offset: i64,
}

impl Keeper {
    /// One bridge over `child` (ssh running the remote's `owt __bridge
    /// serve`): the hello, then every event until the bridge ends.
    pub(super) fn run_child(&mut self, child: &mut Child) -> anyhow::Result<()> {
        let stdin = child.stdin.take().context("ssh's input")?;
        let stdout = child.stdout.take().context("ssh's output")?;
        let stderr = child.stderr.take().context("ssh's error output")?;
        let last_err = keep_last_error(stderr)?;
        let (tx, rx) = mpsc::channel::<Event>();
        {
            let tx = tx.clone();
            std::thread::Builder::new()
                .name("owt-keep-reader".into())
                .spawn(move || read_bridge(stdout, tx))?;
        }
        let writer = Writer(Arc::new(Mutex::new(stdin)));
        let welcome = handshake(&writer, &rx, &last_err)?;
        tracing::info!(remote = %self.remote.name, repository = %welcome.repository, "bridge up");
        let mut link = self.bridge_up(&welcome, writer, tx);
        // An initial fetch: snapshots written while nobody listened.
        link.fetcher.request(None);
        loop {
            let wait = link.next_ping.saturating_duration_since(Instant::now());
            let event = match rx.recv_timeout(wait) {
                Ok(event) => Some(event),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => anyhow::bail!("the bridge's reader ended"),
            };
            if Instant::now() >= link.next_ping {
                if self.idle_long_enough() {
                    // Every session of this remote is gone here: done.
                    return Ok(());
                }
                link.ping()?;
            }
            let Some(event) = event else { continue };
            match event {
                Event::Frame(frame) => self.on_frame(&mut link, frame)?,
                Event::Ended(why) => {
                    std::thread::sleep(Duration::from_millis(100));
                    anyhow::bail!("{}", why_ended(&last_err, why))
                }
                Event::Accepted(session, stream) => link.open_channel(session, stream)?,
                Event::ClientGone(id) => link.close_channel(id)?,
            }
        }
    }

    /// The bridge is up: its state written, the fetcher started, the
    /// sockets' clients routed to this connection.
    fn bridge_up(&mut self, welcome: &BridgeWelcome, writer: Writer, tx: Sender<Event>) -> Link {
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
        Link {
            writer,
            events: tx,
            channels: HashMap::new(),
            next_channel: 1,
            last_pong: Instant::now(),
            next_ping: Instant::now() + PING_EVERY,
            fetcher,
            offset,
        }
    }

    /// A frame from the remote.
    fn on_frame(&mut self, link: &mut Link, frame: BridgeFrame) -> anyhow::Result<()> {
        match frame.kind {
            BridgeKind::Facts => {
                let push: FactsPush = frame.json()?;
                self.record_facts(&push);
                self.serve_sockets();
            }
            BridgeKind::Snapshots => {
                let push: SnapshotsPush = frame.json()?;
                link.fetcher.request(Some(push.written_at + link.offset));
            }
            BridgeKind::Pong => link.last_pong = Instant::now(),
            BridgeKind::Data => link.deliver(&frame)?,
            BridgeKind::Close => link.closed_there(&frame)?,
            BridgeKind::Error => {
                let error: bridge::BridgeError = frame.json()?;
                tracing::warn!("the remote says: {}", error.message);
            }
            other => tracing::warn!("ignoring a {other:?} frame from the remote"),
        }
        Ok(())
    }

    /// Records the facts the remote pushed (a failure is logged: the next
    /// push carries them again).
    fn record_facts(&mut self, push: &FactsPush) {
        match self.mirror.apply(&mut self.ctx.store, push, now_ms()) {
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
    }
}

impl Link {
    /// Pings the remote; fails when it has not answered for
    /// [`PING_DEADLINE`].
    fn ping(&mut self) -> anyhow::Result<()> {
        if self.last_pong.elapsed() > PING_DEADLINE {
            anyhow::bail!(
                "the remote's owt stopped answering for {}s",
                PING_DEADLINE.as_secs()
            );
        }
        self.writer.send(&bridge::encode(BridgeKind::Ping, b""))?;
        self.next_ping = Instant::now() + PING_EVERY;
        Ok(())
    }

    /// Data for a local client, queued; a client that fell behind is
    /// dropped and its channel closed.
    fn deliver(&mut self, frame: &BridgeFrame) -> anyhow::Result<()> {
        let (id, bytes) = frame.data()?;
        let full = self
            .channels
            .get(&id)
            .is_some_and(|q| q.try_send(bytes.to_vec()).is_err());
        if full {
            tracing::warn!(channel = id, "a local client fell behind; dropped");
            self.channels.remove(&id);
            self.send_close(id)?;
        }
        Ok(())
    }

    /// The remote closed a channel; with a reason, the host could not be
    /// reached over there and the client hears it as its host's own error.
    fn closed_there(&mut self, frame: &BridgeFrame) -> anyhow::Result<()> {
        let close: ChannelClose = frame.json()?;
        if let (Some(queue), Some(reason)) = (self.channels.remove(&close.channel), close.reason) {
            let _ = queue.try_send(host_proto::encode_json(
                FrameKind::Error,
                &HostError { message: reason },
            ));
        }
        Ok(())
    }

    /// A local client connected to `session`'s socket: a new channel.
    fn open_channel(&mut self, session: String, stream: UnixStream) -> anyhow::Result<()> {
        let id = self.next_channel;
        self.next_channel = self.next_channel.wrapping_add(1).max(1);
        self.writer.send(&bridge::encode_json(
            BridgeKind::Open,
            &ChannelOpen {
                channel: id,
                session,
            },
        ))?;
        match start_channel(id, stream, self.writer.clone(), self.events.clone()) {
            Ok(queue) => {
                self.channels.insert(id, queue);
            }
            Err(e) => tracing::warn!("starting a channel failed: {e}"),
        }
        Ok(())
    }

    /// A local client left: its channel is closed there.
    fn close_channel(&mut self, id: u32) -> anyhow::Result<()> {
        if self.channels.remove(&id).is_some() {
            self.send_close(id)?;
        }
        Ok(())
    }

    fn send_close(&self, id: u32) -> anyhow::Result<()> {
        self.writer.send(&bridge::encode_json(
            BridgeKind::Close,
            &ChannelClose {
                channel: id,
                reason: None,
            },
        ))
    }
}

/// Sends the hello and waits for the remote's welcome; fails on an error,
/// silence, or a protocol this owt does not speak.
fn handshake(
    writer: &Writer,
    rx: &Receiver<Event>,
    last_err: &Mutex<String>,
) -> anyhow::Result<BridgeWelcome> {
    writer.send(&bridge::encode_json(
        BridgeKind::Hello,
        &BridgeHello {
            version: BRIDGE_PROTOCOL_VERSION,
            owt_version: env!("CARGO_PKG_VERSION").to_string(),
        },
    ))?;
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
            anyhow::bail!("{}", why_ended(last_err, why))
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
    Ok(welcome)
}

/// Copies ssh's error output to ours (`remote: …`) on a thread, keeping
/// its last non-empty line to say why a bridge ended.
fn keep_last_error(stderr: ChildStderr) -> std::io::Result<Arc<Mutex<String>>> {
    let last_err = Arc::new(Mutex::new(String::new()));
    let last = last_err.clone();
    std::thread::Builder::new()
        .name("owt-keep-stderr".into())
        .spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                eprintln!("remote: {line}");
                let line = line.trim().to_string();
                if !line.is_empty() {
                    *last.lock().unwrap_or_else(|e| e.into_inner()) = line;
                }
            }
        })?;
    Ok(last_err)
}

/// Why the bridge ended: `what`, with ssh's last error line when it adds
/// something.
fn why_ended(last_err: &Mutex<String>, what: String) -> String {
    let err = last_err.lock().map(|e| e.clone()).unwrap_or_default();
    if err.is_empty() || what.contains(&err) {
        what
    } else {
        format!("{what} ({err})")
    }
}

/// Carries one local client over the bridge: a thread reads the client
/// into `Data` frames; another writes what the remote sends (queued).
pub(super) fn start_channel(
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

/// The bridge's input (ssh's stdin), shared by the loop and the channels.
#[derive(Clone)]
pub(super) struct Writer(Arc<Mutex<ChildStdin>>);

impl Writer {
    pub(super) fn send(&self, frame: &[u8]) -> anyhow::Result<()> {
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
