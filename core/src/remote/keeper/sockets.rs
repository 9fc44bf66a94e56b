//! The host socket of each remote session, served here: local clients
//! accepted (this user only) and carried as channels over the bridge, or
//! told why the remote cannot be reached.

use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::sync::mpsc::{self, Sender, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use owt_protocol::bridge;
use owt_protocol::host::{self as host_proto, FrameKind, HostError};

use super::link::Writer;
use super::state::private_dir;
use super::{Event, Route, CHANNEL_QUEUE};

/// Binds `socket`, replacing a stale file nobody answers on.
pub(super) fn listen(socket: &Path) -> std::io::Result<UnixListener> {
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
pub(super) fn accept_loop(
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
    crate::platform::poll::readable(listener, Some(timeout));
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

/// Whether the peer of a unix socket is this user.
fn same_user(stream: &UnixStream) -> bool {
    crate::platform::socket::peer_is_this_user(stream)
}
