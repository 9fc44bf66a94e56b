//! `owt attach`: the user's terminal in raw mode, wired to a session host.
//!
//! One thread reads the host's frames and writes them to the terminal; the
//! calling thread polls stdin and a signal pipe (window-size changes,
//! hang-up, termination). The detach sequence is `<prefix> d`; the prefix
//! twice types one literal prefix. The terminal is restored on every exit
//! path (a guard's `Drop`, which also runs on unwinding).

use std::fs::File;
use std::io::{Read, Write};
use std::mem::ManuallyDrop;
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::atomic::{AtomicI32, Ordering};

use owt_protocol::host::{self as proto, AgentExit, FrameKind, Resize, Role};

use super::client::HostConn;
use super::SessionError;

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

/// The signal pipe's write end, for the async-signal-safe handler.
static SIGNAL_PIPE: AtomicI32 = AtomicI32::new(-1);

extern "C" fn on_signal(signo: libc::c_int) {
    let fd = SIGNAL_PIPE.load(Ordering::Relaxed);
    if fd >= 0 {
        let b = signo as u8;
        // SAFETY: write(2) is async-signal-safe; one byte from the stack.
        unsafe { libc::write(fd, (&b as *const u8).cast(), 1) };
    }
}

fn os_err(context: &str) -> SessionError {
    SessionError::io(context, std::io::Error::last_os_error())
}

/// The size of the terminal on `fd`, if it is one.
pub fn terminal_size(fd: RawFd) -> Option<(u16, u16)> {
    // SAFETY: winsize is plain data; TIOCGWINSZ writes one.
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let rc = unsafe { libc::ioctl(fd, libc::TIOCGWINSZ, &mut ws) };
    (rc == 0 && ws.ws_row > 0 && ws.ws_col > 0).then_some((ws.ws_row, ws.ws_col))
}

/// Raw mode on the terminal plus our screen setup; undone on drop.
struct TerminalGuard {
    fd: RawFd,
    saved: libc::termios,
}

impl TerminalGuard {
    fn enter(fd: RawFd) -> Result<TerminalGuard, SessionError> {
        // SAFETY: termios is plain data filled by tcgetattr.
        let mut saved: libc::termios = unsafe { std::mem::zeroed() };
        // SAFETY: valid pointer to a termios.
        if unsafe { libc::tcgetattr(fd, &mut saved) } != 0 {
            return Err(os_err("reading the terminal mode"));
        }
        let mut raw = saved;
        // SAFETY: cfmakeraw edits the struct in place.
        unsafe { libc::cfmakeraw(&mut raw) };
        // SAFETY: valid pointer to a termios.
        if unsafe { libc::tcsetattr(fd, libc::TCSANOW, &raw) } != 0 {
            return Err(os_err("switching the terminal to raw mode"));
        }
        write_stdout(b"\x1b[?1049h\x1b[H\x1b[2J");
        Ok(TerminalGuard { fd, saved })
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        // Leave the agent's modes (mouse, paste, keypad, cursor keys, hidden
        // cursor, attributes) and the alternate screen.
        write_stdout(
            b"\x1b[0m\x1b[?25h\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l\x1b[?2004l\x1b[?1l\x1b>\x1b[?1049l",
        );
        // SAFETY: restoring the mode read in `enter`.
        unsafe { libc::tcsetattr(self.fd, libc::TCSANOW, &self.saved) };
    }
}

fn stdout_file() -> ManuallyDrop<File> {
    // SAFETY: fd 1 stays open for the life of the process; ManuallyDrop
    // keeps us from closing it.
    ManuallyDrop::new(unsafe { File::from_raw_fd(1) })
}

fn write_stdout(bytes: &[u8]) {
    let mut out = stdout_file();
    let _ = out.write_all(bytes);
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

/// Attaches this process's terminal to the host at `socket` until the user
/// detaches (`prefix` then `d`), the agent exits or the host goes.
pub fn attach(socket: &Path, prefix: u8) -> Result<AttachEnd, SessionError> {
    let stdin_fd = std::io::stdin().as_raw_fd();
    // SAFETY: isatty has no preconditions.
    if unsafe { libc::isatty(stdin_fd) } != 1 {
        return Err(SessionError::NotATerminal);
    }
    let (rows, cols) = terminal_size(stdin_fd).unwrap_or((24, 80));
    let conn = HostConn::connect(socket, Role::Attach, rows, cols)?;
    let mut to_host = conn.stream;
    let from_host = to_host
        .try_clone()
        .map_err(|e| SessionError::io("cloning the host socket", e))?;

    // Signals arrive as bytes on a pipe the main loop polls.
    let mut sig_fds = [0; 2];
    // SAFETY: room for two descriptors.
    if unsafe { libc::pipe2(sig_fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
        return Err(os_err("creating the signal pipe"));
    }
    // And the output thread says it ended on another.
    let mut done_fds = [0; 2];
    // SAFETY: room for two descriptors.
    if unsafe { libc::pipe2(done_fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(os_err("creating a pipe"));
    }
    SIGNAL_PIPE.store(sig_fds[1], Ordering::Relaxed);
    let handled = [libc::SIGWINCH, libc::SIGHUP, libc::SIGTERM, libc::SIGQUIT];
    let mut previous = Vec::new();
    for sig in handled {
        // SAFETY: installing a handler that only calls write(2).
        previous.push(unsafe { libc::signal(sig, on_signal as *const () as libc::sighandler_t) });
    }

    let guard = TerminalGuard::enter(stdin_fd)?;
    let done_write = done_fds[1];
    let output = std::thread::Builder::new()
        .name("attach-output".into())
        .spawn(move || {
            let end = pump_output(from_host);
            // SAFETY: wake the main loop; one byte.
            unsafe { libc::write(done_write, b"x".as_ptr().cast(), 1) };
            end
        })
        .map_err(|e| SessionError::io("spawning the output thread", e))?;

    let end = input_loop(stdin_fd, sig_fds[0], done_fds[0], prefix, &mut to_host);
    let end = match end {
        Some(end) => {
            let _ = proto::write_frame(&mut to_host, FrameKind::Detach, b"");
            let _ = to_host.shutdown(std::net::Shutdown::Both);
            let _ = output.join();
            end
        }
        None => output.join().unwrap_or(AttachEnd::HostGone),
    };
    drop(guard);
    for (sig, prev) in handled.iter().zip(previous) {
        // SAFETY: restoring the previous disposition.
        unsafe { libc::signal(*sig, prev) };
    }
    SIGNAL_PIPE.store(-1, Ordering::Relaxed);
    for fd in sig_fds.into_iter().chain(done_fds) {
        // SAFETY: closing the pipes created above.
        unsafe { libc::close(fd) };
    }
    Ok(end)
}

/// Copies the host's output and redraws to the terminal until the stream
/// ends or the agent exits.
fn pump_output(from_host: UnixStream) -> AttachEnd {
    // Buffered: a small frame (an echoed key) costs one read, not two.
    let mut from_host = std::io::BufReader::with_capacity(64 * 1024, from_host);
    let mut out = stdout_file();
    loop {
        match proto::read_frame(&mut from_host) {
            Ok(Some(frame)) => match frame.kind {
                FrameKind::Output if out.write_all(&frame.payload).is_err() => {
                    return AttachEnd::HostGone;
                }
                FrameKind::Output => {}
                FrameKind::Redraw => {
                    // A redraw repaints from scratch: reset what the client
                    // terminal may hold from the dropped bytes.
                    let _ = out.write_all(b"\x1b[0m\x1b[H\x1b[2J");
                    let _ = out.write_all(&frame.payload);
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
    stdin_fd: RawFd,
    sig_fd: RawFd,
    done_fd: RawFd,
    prefix: u8,
    to_host: &mut UnixStream,
) -> Option<AttachEnd> {
    let mut keys = DetachKeys::new(prefix);
    let mut buf = [0u8; 4096];
    loop {
        let mut fds = [
            libc::pollfd {
                fd: stdin_fd,
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: sig_fd,
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: done_fd,
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // SAFETY: three valid pollfds.
        let rc = unsafe { libc::poll(fds.as_mut_ptr(), 3, -1) };
        if rc < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Some(AttachEnd::HostGone);
        }
        if fds[2].revents != 0 {
            return None;
        }
        if fds[1].revents != 0 {
            let mut sigs = [0u8; 16];
            // SAFETY: reading into a local buffer.
            let n = unsafe { libc::read(sig_fd, sigs.as_mut_ptr().cast(), sigs.len()) };
            for &s in sigs.iter().take(n.max(0) as usize) {
                if i32::from(s) == libc::SIGWINCH {
                    if let Some((rows, cols)) = terminal_size(stdin_fd) {
                        let _ =
                            proto::write_json(to_host, FrameKind::Resize, &Resize { rows, cols });
                    }
                } else {
                    return Some(AttachEnd::Detached);
                }
            }
        }
        if fds[0].revents != 0 {
            let mut stdin = ManuallyDrop::new(
                // SAFETY: borrowing fd 0 without closing it.
                unsafe { File::from_raw_fd(stdin_fd) },
            );
            let n = match stdin.read(&mut buf) {
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
