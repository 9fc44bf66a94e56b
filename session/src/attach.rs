//! `owt attach`: the user's terminal in raw mode, wired to a session host.
//!
//! Direct (the default when stdin and stdout are one terminal): the
//! terminal itself goes to the host with the hello (`SCM_RIGHTS`); the host
//! reads the keys from it and writes the output to it, like tmux, so no
//! process of ours wakes per keystroke. This process keeps the terminal in
//! raw mode, turns window-size changes into `Resize` and its quit signals
//! into `Detach`, and waits for the end (`Detached`, `Exited`, the host
//! gone).
//!
//! Relayed (an older host, a remote session, stdout not the terminal,
//! `--relay`): one thread reads the host's frames and writes them to the
//! terminal; the calling thread polls stdin and the signals.
//!
//! While attached, the terminal may be told when another session needs
//! its user ([`Notices`], `[notify] terminal`): a thread of its own asks
//! for them, so the output never waits on it; relayed, this process puts
//! each notice into the stream it copies between two of the agent's
//! escape sequences ([`Splicer`]); direct, it sends the host a `Notice`
//! frame and the host does so (a host that does not take them: none).
//!
//! The detach sequence is `<prefix> d`; the prefix twice types one literal
//! prefix. The terminal is restored on every exit path (a guard's `Drop`,
//! which also runs on unwinding).

use std::io::{IsTerminal, Read, Write};
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::{mpsc, Arc, Mutex, MutexGuard};
use std::time::Duration;

use crate::platform::terminal::{self, SavedMode};
use owt_protocol::host::{self as proto, AgentExit, FrameKind, Resize, Role, TerminalNotice};

use crate::client::HostConn;
use crate::notice::{self, Splicer};
use crate::SessionError;

/// How an attach ended.
#[derive(Debug, Clone, PartialEq)]
pub enum AttachEnd {
    /// The user detached; the agent keeps running.
    Detached,
    /// The agent exited while attached.
    Exited(AgentExit),
    /// The host went away.
    HostGone,
}

/// The size of the terminal on `fd`, if it is one.
pub fn terminal_size(fd: impl AsFd) -> Option<(u16, u16)> {
    terminal::size(fd)
}

/// Raw mode on the terminal plus our screen setup; undone on drop.
struct TerminalGuard {
    saved: SavedMode,
}

impl TerminalGuard {
    fn enter() -> Result<TerminalGuard, SessionError> {
        let stdin = std::io::stdin();
        let saved = terminal::save_mode(&stdin)
            .map_err(|e| SessionError::io("reading the terminal mode", e))?;
        terminal::switch_to_raw(&stdin, &saved)
            .map_err(|e| SessionError::io("switching the terminal to raw mode", e))?;
        write_stdout(b"\x1b[?1049h\x1b[H\x1b[2J");
        Ok(TerminalGuard { saved })
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        // Leave the agent's modes (mouse, paste, keypad, cursor keys, hidden
        // cursor, attributes) and the alternate screen.
        write_stdout(
            b"\x1b[0m\x1b[?25h\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l\x1b[?2004l\x1b[?1l\x1b>\x1b[?1049l",
        );
        let _ = terminal::restore_mode(std::io::stdin(), &self.saved);
    }
}

/// Standard output, unbuffered: each write goes to the terminal at once
/// (std's `Stdout` holds lines back).
struct RawStdout;

impl Write for RawStdout {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        crate::platform::fd::write_unbuffered(std::io::stdout(), bytes)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn write_stdout(bytes: &[u8]) {
    let _ = RawStdout.write_all(bytes);
}

/// What the detach-key state machine makes of one input chunk.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct KeyScan {
    /// Bytes to type into the agent.
    pub forward: Vec<u8>,
    pub detach: bool,
}

/// Detach-sequence recogniser: `<prefix> d` detaches, `<prefix> <prefix>`
/// types one prefix, `<prefix> <other>` types both.
#[derive(Debug, Clone)]
pub struct DetachKeys {
    prefix: u8,
    pending: bool,
}

impl DetachKeys {
    pub fn new(prefix: u8) -> DetachKeys {
        DetachKeys {
            prefix,
            pending: false,
        }
    }

    pub fn feed(&mut self, input: &[u8]) -> KeyScan {
        let mut scan = KeyScan::default();
        for (i, &b) in input.iter().enumerate() {
            if self.pending {
                self.pending = false;
                match b {
                    b'd' | 0x04 => {
                        scan.detach = true;
                        let _ = i;
                        return scan;
                    }
                    b if b == self.prefix => scan.forward.push(b),
                    b => {
                        scan.forward.push(self.prefix);
                        scan.forward.push(b);
                    }
                }
            } else if b == self.prefix {
                self.pending = true;
            } else {
                scan.forward.push(b);
            }
        }
        scan
    }
}

/// The signals an attach handles: `window` wakes it after a window-size
/// change, `quit` after a hang-up, termination or quit (detach).
type Signals = crate::platform::process::TerminalSignals;

/// Reads whatever is queued on a non-blocking socket.
fn drain(stream: &UnixStream) {
    let mut bytes = [0u8; 64];
    while (&*stream).read(&mut bytes).is_ok_and(|n| n > 0) {}
}

/// Whether stdin and stdout are one terminal (the same device), the
/// condition for handing it to the host.
fn one_terminal() -> bool {
    terminal::same_terminal(std::io::stdin(), std::io::stdout())
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// What to tell the attached terminal's user, and how often to ask.
pub struct Notices {
    /// Asked every [`NOTICE_POLL`] on a thread of its own: the notices
    /// to show now (each once: the caller debounces).
    pub poll: Box<dyn FnMut() -> Vec<TerminalNotice> + Send>,
}

/// How often [`Notices::poll`] is asked.
pub const NOTICE_POLL: Duration = Duration::from_millis(500);

/// A relayed stream's splicer; `None` once the terminal is ours again.
type RelaySplicer = Arc<Mutex<Option<Splicer>>>;

/// Where notices go.
enum NoticeSink {
    /// Into the stream this process relays, at a ground point.
    Relay(RelaySplicer),
    /// To the host, which writes them into the terminal it was handed
    /// (the frames written under the lock: one writer at a time).
    Host(Arc<Mutex<UnixStream>>),
}

impl NoticeSink {
    /// Delivers `notice`; false once nothing more can be.
    fn deliver(&self, notice: &TerminalNotice) -> bool {
        match self {
            NoticeSink::Relay(splicer) => {
                let mut splicer = lock(splicer);
                let Some(splicer) = splicer.as_mut() else {
                    return false;
                };
                if let Some(bytes) = splicer.offer(&notice.title, notice::encode(notice)) {
                    write_stdout(&bytes);
                }
                true
            }
            NoticeSink::Host(stream) => {
                proto::write_json(&mut *lock(stream), FrameKind::Notice, notice).is_ok()
            }
        }
    }
}

/// The thread that asks for notices and delivers them; told to stop when
/// dropped (it is not waited for: a poll in progress ends on its own).
struct NoticeWatch {
    _stop: mpsc::Sender<()>,
}

impl NoticeWatch {
    fn start(mut notices: Notices, sink: NoticeSink) -> Option<NoticeWatch> {
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("attach-notices".into())
            .spawn(move || loop {
                match stopped.recv_timeout(NOTICE_POLL) {
                    Err(mpsc::RecvTimeoutError::Timeout) => {}
                    _ => return,
                }
                for notice in (notices.poll)() {
                    if !sink.deliver(&notice) {
                        return;
                    }
                }
            });
        match thread {
            Ok(_) => Some(NoticeWatch { _stop: stop }),
            Err(e) => {
                tracing::warn!("starting the notices' thread: {e}");
                None
            }
        }
    }
}

/// Attaches this process's terminal to the host at `socket` until the user
/// detaches (`prefix` then `d`), the agent exits or the host goes. `direct`:
/// hand the terminal to the host when it can take it (else relay).
/// `notices`: what to tell this terminal meanwhile (only when stdout is a
/// terminal).
pub fn attach(
    socket: &Path,
    prefix: u8,
    direct: bool,
    notices: Option<Notices>,
) -> Result<AttachEnd, SessionError> {
    if !std::io::stdin().is_terminal() {
        return Err(SessionError::NotATerminal);
    }
    // The terminal's own user only: nothing into a pipe or a file.
    let notices = notices.filter(|_| std::io::stdout().is_terminal());
    let (rows, cols) = terminal_size(std::io::stdin()).unwrap_or((24, 80));
    let signals =
        Signals::register().map_err(|e| SessionError::io("handling the terminal's signals", e))?;
    if direct && one_terminal() {
        let stream = HostConn::dial(socket)?;
        // Raw mode and the alternate screen before the hello: the host may
        // draw as soon as it has the terminal.
        let guard = TerminalGuard::enter()?;
        let stdin = std::io::stdin();
        let conn =
            HostConn::greet_direct(stream, rows, cols, stdin.as_fd(), prefix, notices.is_some())?;
        if conn.welcome.direct {
            let writer = conn
                .stream
                .try_clone()
                .map_err(|e| SessionError::io("cloning the host socket", e))?;
            let writer = Arc::new(Mutex::new(writer));
            let watch = match notices {
                Some(notices) if conn.welcome.notices => {
                    NoticeWatch::start(notices, NoticeSink::Host(writer.clone()))
                }
                Some(_) => {
                    tracing::debug!("the session host takes no notices (an older owt)");
                    None
                }
                None => None,
            };
            let end = direct_loop(&signals, conn.stream, &writer);
            drop(watch);
            drop(guard);
            return Ok(end);
        }
        return relay(conn, &signals, prefix, guard, notices);
    }
    let conn = HostConn::connect(socket, Role::Attach, rows, cols)?;
    let guard = TerminalGuard::enter()?;
    relay(conn, &signals, prefix, guard, notices)
}

/// Waits out a direct attach: the host has the terminal; this process
/// forwards window-size changes and turns its quit signals into a detach
/// (its frames written through `writer`, which the notices share).
fn direct_loop(signals: &Signals, mut stream: UnixStream, writer: &Mutex<UnixStream>) -> AttachEnd {
    loop {
        let fds = [stream.as_fd(), signals.window.as_fd(), signals.quit.as_fd()];
        let ready = match crate::platform::poll::wait_readable(fds, None) {
            Ok(ready) => ready,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return AttachEnd::HostGone,
        };
        if ready[2] {
            // The host lets go of the terminal first, then says so.
            if proto::write_frame(&mut *lock(writer), FrameKind::Detach, b"").is_err() {
                return AttachEnd::Detached;
            }
            let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(5)));
            loop {
                match direct_end(&mut stream) {
                    Some(AttachEnd::Exited(exit)) => return AttachEnd::Exited(exit),
                    Some(_) => return AttachEnd::Detached,
                    None => {}
                }
            }
        }
        if ready[1] {
            drain(&signals.window);
            if let Some((rows, cols)) = terminal_size(std::io::stdin()) {
                let resize = Resize { rows, cols };
                let _ = proto::write_json(&mut *lock(writer), FrameKind::Resize, &resize);
            }
        }
        if ready[0] {
            if let Some(end) = direct_end(&mut stream) {
                return end;
            }
        }
    }
}

/// Reads the host's next frame in a direct attach: how the attach ended,
/// or `None` for a frame that does not end it.
fn direct_end(stream: &mut UnixStream) -> Option<AttachEnd> {
    match proto::read_frame(stream) {
        Ok(Some(frame)) => match frame.kind {
            FrameKind::Detached => Some(AttachEnd::Detached),
            FrameKind::Exited => Some(AttachEnd::Exited(frame.json().unwrap_or(AgentExit {
                code: None,
                signal: None,
            }))),
            _ => None,
        },
        Ok(None) | Err(_) => Some(AttachEnd::HostGone),
    }
}

/// The relayed attach: keys and output copied through this process.
fn relay(
    conn: HostConn,
    signals: &Signals,
    prefix: u8,
    guard: TerminalGuard,
    notices: Option<Notices>,
) -> Result<AttachEnd, SessionError> {
    let splicer: Option<RelaySplicer> = notices
        .as_ref()
        .map(|_| Arc::new(Mutex::new(Some(Splicer::new()))));
    let watch = notices
        .zip(splicer.clone())
        .and_then(|(notices, splicer)| NoticeWatch::start(notices, NoticeSink::Relay(splicer)));
    let mut to_host = conn.stream;
    let from_host = to_host
        .try_clone()
        .map_err(|e| SessionError::io("cloning the host socket", e))?;
    // The output thread says it ended on this pair.
    let (done, done_tx) =
        UnixStream::pair().map_err(|e| SessionError::io("creating a socket pair", e))?;
    let output_splicer = splicer.clone();
    let output = std::thread::Builder::new()
        .name("attach-output".into())
        .spawn(move || {
            let end = pump_output(from_host, output_splicer.as_ref());
            // Wake the input loop.
            let _ = (&done_tx).write_all(b"x");
            end
        })
        .map_err(|e| SessionError::io("spawning the output thread", e))?;

    let end = input_loop(signals, &done, prefix, &mut to_host);
    let end = match end {
        Some(end) => {
            let _ = proto::write_frame(&mut to_host, FrameKind::Detach, b"");
            let _ = to_host.shutdown(std::net::Shutdown::Both);
            let _ = output.join();
            end
        }
        None => output.join().unwrap_or(AttachEnd::HostGone),
    };
    // No notice after this: the terminal is ours again.
    drop(watch);
    if let Some(splicer) = &splicer {
        lock(splicer).take();
    }
    drop(guard);
    Ok(end)
}

/// Writes relayed bytes to the terminal, with the notices waiting put in
/// at a ground point when there is a `splicer`.
fn relay_out(splicer: Option<&RelaySplicer>, bytes: &[u8]) -> std::io::Result<()> {
    let Some(splicer) = splicer else {
        return RawStdout.write_all(bytes);
    };
    let mut splicer = lock(splicer);
    match splicer.as_mut() {
        Some(splicer) => RawStdout.write_all(&splicer.pass(bytes)),
        None => RawStdout.write_all(bytes),
    }
}

/// Copies the host's output and redraws to the terminal until the stream
/// ends or the agent exits.
fn pump_output(from_host: UnixStream, splicer: Option<&RelaySplicer>) -> AttachEnd {
    // Buffered: a small frame (an echoed key) costs one read, not two.
    let mut from_host = std::io::BufReader::with_capacity(64 * 1024, from_host);
    loop {
        match proto::read_frame(&mut from_host) {
            Ok(Some(frame)) => match frame.kind {
                FrameKind::Output if relay_out(splicer, &frame.payload).is_err() => {
                    return AttachEnd::HostGone;
                }
                FrameKind::Output => {}
                FrameKind::Redraw => {
                    // A redraw repaints from scratch: reset what the client
                    // terminal may hold from the dropped bytes.
                    let _ = relay_out(splicer, b"\x1b[0m\x1b[H\x1b[2J");
                    let _ = relay_out(splicer, &frame.payload);
                }
                FrameKind::Exited => {
                    return AttachEnd::Exited(frame.json().unwrap_or(AgentExit {
                        code: None,
                        signal: None,
                    }))
                }
                _ => {}
            },
            Ok(None) | Err(_) => return AttachEnd::HostGone,
        }
    }
}

/// Forwards stdin to the host until a detach, a signal to quit, or the
/// output side ending (`None`).
fn input_loop(
    signals: &Signals,
    done: &UnixStream,
    prefix: u8,
    to_host: &mut UnixStream,
) -> Option<AttachEnd> {
    let stdin = std::io::stdin();
    let mut keys = DetachKeys::new(prefix);
    let mut buf = [0u8; 4096];
    loop {
        let fds = [
            stdin.as_fd(),
            signals.window.as_fd(),
            signals.quit.as_fd(),
            done.as_fd(),
        ];
        let ready = match crate::platform::poll::wait_readable(fds, None) {
            Ok(ready) => ready,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return Some(AttachEnd::HostGone),
        };
        if ready[3] {
            return None;
        }
        if ready[2] {
            return Some(AttachEnd::Detached);
        }
        if ready[1] {
            drain(&signals.window);
            if let Some((rows, cols)) = terminal_size(&stdin) {
                let _ = proto::write_json(to_host, FrameKind::Resize, &Resize { rows, cols });
            }
        }
        if ready[0] {
            let n = match crate::platform::fd::read_unbuffered(&stdin, &mut buf) {
                Ok(0) | Err(_) => return Some(AttachEnd::Detached),
                Ok(n) => n,
            };
            let scan = keys.feed(&buf[..n]);
            if !scan.forward.is_empty()
                && proto::write_frame(to_host, FrameKind::Input, &scan.forward).is_err()
            {
                return None;
            }
            if scan.detach {
                return Some(AttachEnd::Detached);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detach_sequence() {
        let mut keys = DetachKeys::new(0x1c);
        assert_eq!(
            keys.feed(b"ab\x1cd"),
            KeyScan {
                forward: b"ab".to_vec(),
                detach: true
            }
        );
        let mut keys = DetachKeys::new(0x1c);
        assert_eq!(keys.feed(b"\x1c\x1c").forward, b"\x1c");
        assert_eq!(keys.feed(b"\x1cx").forward, b"\x1cx");
        // Split across reads.
        assert_eq!(keys.feed(b"q\x1c").forward, b"q");
        assert!(keys.feed(b"d").detach);
    }
}
