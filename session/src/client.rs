//! The client side of the host socket: connect, say hello, and make one
//! request (peek, send, status, terminate) or stream an attach.

use std::io::{self, Write};
use std::os::fd::BorrowedFd;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use owt_protocol::host::{
    self as proto, DirectAttach, Frame, FrameKind, Hello, HostError, HostStatus, JournalView,
    PeekRequest, PermissionAnswer, PermissionAnswered, Role, ScreenView, SendText, Terminate,
    TranscriptView, Welcome, HOST_PROTOCOL_VERSION,
};

use owt_guard::source::JournalSource;

use crate::SessionError;

/// An open, greeted connection to a session host.
#[derive(Debug)]
pub struct HostConn {
    pub stream: UnixStream,
    pub welcome: Welcome,
}

/// Writes all of `bytes` to `stream`, passing `fd` along with the first
/// of them (`SCM_RIGHTS`).
fn send_with_fd(stream: &UnixStream, bytes: &[u8], fd: BorrowedFd<'_>) -> io::Result<()> {
    let sent = crate::platform::socket::send_with_fd(stream, bytes, fd)?;
    (&*stream).write_all(&bytes[sent..])
}

fn io_err(context: &str, e: io::Error) -> SessionError {
    SessionError::io(context, e)
}

/// A failed read or write on the host's socket while `doing`: a timeout
/// (`EAGAIN` of a socket timeout: the host took the connection but
/// answers nothing, as a stopped host does) is [`SessionError::NoAnswer`],
/// with the host's pid (the socket's peer).
fn stream_err(stream: &UnixStream, doing: &str, e: io::Error) -> SessionError {
    if !matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    ) {
        return io_err(doing, e);
    }
    let waited = stream
        .read_timeout()
        .ok()
        .flatten()
        .or(stream.write_timeout().ok().flatten());
    SessionError::NoAnswer {
        session: None,
        doing: doing.to_string(),
        seconds: waited.map_or(0, |w| w.as_secs().max(1)),
        pid: crate::platform::socket::peer_pid(stream),
    }
}

impl HostConn {
    /// Connects to `socket` and greets the host as `role`.
    pub fn connect(
        socket: &Path,
        role: Role,
        rows: u16,
        cols: u16,
    ) -> Result<HostConn, SessionError> {
        HostConn::connect_with_version(socket, role, rows, cols, HOST_PROTOCOL_VERSION)
    }

    /// As [`HostConn::connect`], claiming protocol `version` (tests).
    pub fn connect_with_version(
        socket: &Path,
        role: Role,
        rows: u16,
        cols: u16,
        version: u32,
    ) -> Result<HostConn, SessionError> {
        HostConn::open(socket, role, rows, cols, version, Duration::from_secs(10))
    }

    /// As [`HostConn::connect`] for a control connection that gives up
    /// after `timeout` without an answer (a question that has a fallback).
    pub fn connect_quick(socket: &Path, timeout: Duration) -> Result<HostConn, SessionError> {
        HostConn::open(socket, Role::Control, 0, 0, HOST_PROTOCOL_VERSION, timeout)
    }

    /// Connects to `socket` without greeting (see [`HostConn::greet_direct`]).
    pub fn dial(socket: &Path) -> Result<UnixStream, SessionError> {
        UnixStream::connect(socket).map_err(|e| {
            SessionError::NotRunning(format!(
                "no session host answers at {}: {e}",
                socket.display()
            ))
        })
    }

    /// Greets the host on `stream` as an attach that passes its terminal
    /// `term` with the hello (`SCM_RIGHTS`). The host took it when the
    /// welcome says `direct`; otherwise (an older host, a remote session's
    /// relay) the connection is an ordinary attach. `notices`: ask the
    /// host to take `Notice` frames for the terminal.
    pub fn greet_direct(
        stream: UnixStream,
        rows: u16,
        cols: u16,
        term: BorrowedFd<'_>,
        detach_prefix: u8,
        notices: bool,
    ) -> Result<HostConn, SessionError> {
        HostConn::greet(
            stream,
            Role::Attach,
            rows,
            cols,
            HOST_PROTOCOL_VERSION,
            Duration::from_secs(10),
            Some((
                term,
                DirectAttach {
                    detach_prefix,
                    notices,
                },
            )),
        )
    }

    fn open(
        socket: &Path,
        role: Role,
        rows: u16,
        cols: u16,
        version: u32,
        timeout: Duration,
    ) -> Result<HostConn, SessionError> {
        let stream = HostConn::dial(socket)?;
        HostConn::greet(stream, role, rows, cols, version, timeout, None)
    }

    fn greet(
        mut stream: UnixStream,
        role: Role,
        rows: u16,
        cols: u16,
        version: u32,
        timeout: Duration,
        direct: Option<(BorrowedFd<'_>, DirectAttach)>,
    ) -> Result<HostConn, SessionError> {
        let _ = stream.set_read_timeout(Some(timeout));
        let _ = stream.set_write_timeout(Some(timeout));
        let hello = Hello {
            version,
            role,
            rows,
            cols,
            direct: direct.map(|(_, d)| d),
        };
        let hello = proto::encode_json(FrameKind::Hello, &hello);
        match direct {
            Some((term, _)) => send_with_fd(&stream, &hello, term),
            None => stream.write_all(&hello),
        }
        .map_err(|e| stream_err(&stream, "greeting the session host", e))?;
        let frame = read(&mut stream, "the session host's welcome")?;
        let welcome = match frame.kind {
            FrameKind::Welcome => frame
                .json::<Welcome>()
                .map_err(|e| io_err("reading the welcome", e))?,
            FrameKind::Error => return Err(host_error(&frame)),
            other => {
                return Err(SessionError::Protocol(format!(
                    "the session host answered hello with {other:?}"
                )))
            }
        };
        if welcome.version != HOST_PROTOCOL_VERSION {
            return Err(SessionError::Protocol(format!(
                "protocol mismatch: the session host speaks version {}, this owt speaks {HOST_PROTOCOL_VERSION}",
                welcome.version
            )));
        }
        let _ = stream.set_read_timeout(None);
        let _ = stream.set_write_timeout(None);
        Ok(HostConn { stream, welcome })
    }

    fn request(
        &mut self,
        kind: FrameKind,
        payload: &[u8],
        what: &str,
    ) -> Result<Frame, SessionError> {
        let _ = self.stream.set_read_timeout(Some(Duration::from_secs(10)));
        proto::write_frame(&mut self.stream, kind, payload)
            .map_err(|e| stream_err(&self.stream, &format!("sending {what}"), e))?;
        let frame = read(&mut self.stream, what)?;
        if frame.kind == FrameKind::Error {
            return Err(host_error(&frame));
        }
        Ok(frame)
    }

    /// The current screen.
    /// With `scrollback`, all of it: a page a frame, asked for until the
    /// host says there is no more (the screen is the first page's).
    pub fn peek(&mut self, scrollback: bool) -> Result<ScreenView, SessionError> {
        self.peek_with(PeekRequest {
            scrollback,
            scrollback_from: 0,
            formatted: false,
        })
    }

    /// The current screen as `request` asks for it; with `scrollback`,
    /// all of it from `scrollback_from` on, a page a frame.
    pub fn peek_with(&mut self, request: PeekRequest) -> Result<ScreenView, SessionError> {
        let mut view = self.peek_page(&request)?;
        while let Some(from) = view.scrollback_next.take() {
            let page = self.peek_page(&PeekRequest {
                scrollback: true,
                scrollback_from: from,
                formatted: false,
            })?;
            if page.scrollback.is_empty() {
                break;
            }
            view.scrollback.extend(page.scrollback);
            view.scrollback_next = page.scrollback_next.filter(|next| *next > from);
        }
        Ok(view)
    }

    fn peek_page(&mut self, request: &PeekRequest) -> Result<ScreenView, SessionError> {
        let payload = serde_json::to_vec(request).unwrap_or_default();
        let frame = self.request(FrameKind::Peek, &payload, "peek")?;
        frame.json().map_err(|e| io_err("reading the screen", e))
    }

    /// Types `text` (then Enter).
    pub fn send(&mut self, text: &str, enter: bool) -> Result<(), SessionError> {
        let payload = serde_json::to_vec(&SendText {
            text: text.to_string(),
            enter,
        })
        .unwrap_or_default();
        self.request(FrameKind::Send, &payload, "send")?;
        Ok(())
    }

    /// Presses `keys` (raw bytes, straight to the agent's terminal, as an
    /// attached client types them): for owt's own keys only, never for
    /// outside text (that goes through [`HostConn::send`], which types
    /// control characters as visible escapes). Returns once the host has
    /// taken them (a status round trip after them).
    pub fn press(&mut self, keys: &[u8]) -> Result<(), SessionError> {
        proto::write_frame(&mut self.stream, FrameKind::Input, keys)
            .map_err(|e| stream_err(&self.stream, "pressing keys", e))?;
        self.status().map(drop)
    }

    pub fn status(&mut self) -> Result<HostStatus, SessionError> {
        let frame = self.request(FrameKind::StatusRequest, b"", "status")?;
        frame
            .json()
            .map_err(|e| io_err("reading the host status", e))
    }

    /// The host's work journal of the agent's worktree, waiting at most
    /// `timeout` for it.
    pub fn journal(&mut self, timeout: Duration) -> Result<JournalView, SessionError> {
        let _ = self.stream.set_read_timeout(Some(timeout));
        proto::write_frame(&mut self.stream, FrameKind::JournalRequest, b"")
            .map_err(|e| io_err("asking for the journal", e))?;
        let frame = read(&mut self.stream, "the journal")?;
        if frame.kind != FrameKind::Journal {
            return Err(match frame.kind {
                FrameKind::Error => host_error(&frame),
                other => SessionError::Protocol(format!(
                    "the session host answered a journal request with {other:?}"
                )),
            });
        }
        frame.json().map_err(|e| io_err("reading the journal", e))
    }

    /// Answers the ACP agent's pending permission request.
    pub fn answer(
        &mut self,
        answer: &PermissionAnswer,
    ) -> Result<PermissionAnswered, SessionError> {
        let payload = serde_json::to_vec(answer).unwrap_or_default();
        let frame = self.request(FrameKind::Answer, &payload, "the answer")?;
        frame
            .json()
            .map_err(|e| io_err("reading the answer's reply", e))
    }

    /// Cancels the ACP agent's turn in progress.
    pub fn cancel(&mut self) -> Result<(), SessionError> {
        self.request(FrameKind::Cancel, b"", "cancel")?;
        Ok(())
    }

    /// Connects as an `Events` client of an ACP session's host: the
    /// transcript so far; then read `Event` frames from `stream`.
    pub fn events(socket: &Path) -> Result<(HostConn, TranscriptView), SessionError> {
        let mut conn = HostConn::connect(socket, Role::Events, 0, 0)?;
        let _ = conn.stream.set_read_timeout(Some(Duration::from_secs(10)));
        let frame = read(&mut conn.stream, "the transcript")?;
        let _ = conn.stream.set_read_timeout(None);
        match frame.kind {
            FrameKind::Transcript => {
                let view = frame
                    .json()
                    .map_err(|e| io_err("reading the transcript", e))?;
                Ok((conn, view))
            }
            FrameKind::Error => Err(host_error(&frame)),
            other => Err(SessionError::Host(format!(
                "the session host sent {other:?} instead of the transcript"
            ))),
        }
    }

    /// Asks the host to hang up the agent (and kill it after `grace`).
    pub fn terminate(&mut self, grace: Duration) -> Result<(), SessionError> {
        let payload = serde_json::to_vec(&Terminate {
            grace_ms: grace.as_millis() as u64,
        })
        .unwrap_or_default();
        self.request(FrameKind::Terminate, &payload, "terminate")?;
        Ok(())
    }
}

fn read(stream: &mut UnixStream, what: &str) -> Result<Frame, SessionError> {
    match proto::read_frame(stream) {
        Ok(Some(frame)) => Ok(frame),
        Ok(None) => Err(SessionError::Host(format!(
            "the session host closed the connection before {what}"
        ))),
        Err(e) => Err(stream_err(stream, &format!("reading {what}"), e)),
    }
}

fn host_error(frame: &Frame) -> SessionError {
    match frame.json::<HostError>() {
        Ok(e) => SessionError::Host(e.message),
        Err(e) => SessionError::Protocol(format!("the session host sent an unreadable error: {e}")),
    }
}

/// A session host's work journal, as the Conflict Guard asks for it
/// ([`JournalSource`]) before walking the agent's checkout.
#[derive(Debug, Clone)]
pub struct HostJournal {
    socket: PathBuf,
}

/// How long a full scan waits for a host's journal before walking.
const ASK_TIMEOUT: Duration = Duration::from_secs(2);

impl HostJournal {
    /// The journal of the host at `socket`.
    pub fn new(socket: PathBuf) -> HostJournal {
        HostJournal { socket }
    }
}

impl JournalSource for HostJournal {
    fn ask(&self) -> Option<JournalView> {
        let mut conn = HostConn::connect_quick(&self.socket, ASK_TIMEOUT).ok()?;
        match conn.journal(ASK_TIMEOUT) {
            Ok(view) => view.ready.then_some(view),
            Err(e) => {
                tracing::debug!("no journal from {}: {e}", self.socket.display());
                None
            }
        }
    }
}
