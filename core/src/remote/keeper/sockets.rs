//! The host socket of each remote session, served here: local clients
//! accepted (this user only) and carried as channels over the bridge, or
//! told why the remote cannot be reached.

use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use owt_protocol::host::{self as host_proto, FrameKind, HostError};

use super::state::private_dir;
use super::{Event, Route};

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

/// Whether the peer of a unix socket is this user.
fn same_user(stream: &UnixStream) -> bool {
    crate::platform::socket::peer_is_this_user(stream)
}
