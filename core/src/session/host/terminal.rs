//! Direct attach: the terminal an `owt attach` passed with its hello. The
//! PTY reader reads the keys from it (and scans them for the detach keys)
//! on the thread that reads the agent's output, as tmux's server does, and
//! writes the agent's output to it (or the client's writer does), so no
//! client process, and no second host thread, sits in the path of a
//! keystroke and its echo.
//!
//! The passed descriptor shares its open file description (and its
//! `O_NONBLOCK`) with the client's terminal, so the host reopens the
//! terminal through `/proc/self/fd` (`platform::terminal`) for a
//! description of its own, non-blocking: a slow terminal never blocks the
//! PTY reader (the lag handling of [`Client::push_output`] applies as to
//! a socket). Every read and write happens under one lock that
//! [`Term::shut`] takes to close the descriptor: after it returns, the
//! host writes to that terminal no more.
//! The host runs in its own session, so the terminal is not its
//! controlling terminal: reading it raises no `SIGTTIN`.

use std::io::IsTerminal;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use super::*;
use crate::platform::poll::{Interest, PollSet};

pub(super) struct Term {
    fd: Mutex<Option<OwnedFd>>,
    /// The descriptor's number, for `poll` only (a poll after a shut may
    /// name a reused number, but `wake` is readable from then on).
    raw: RawFd,
    /// Readable once the terminal is shut: wakes its pollers.
    wake: UnixStream,
    wake_tx: UnixStream,
}

impl Term {
    /// The host's own description of the terminal `passed`; `None` when
    /// `passed` is not a terminal or cannot be reopened (the client then
    /// stays relayed).
    pub(super) fn open(passed: OwnedFd) -> Option<Arc<Term>> {
        if !passed.is_terminal() {
            tracing::info!("a direct attach passed something that is not a terminal");
            return None;
        }
        let fd = match crate::platform::terminal::reopen_nonblocking(&passed) {
            Ok(Some(fd)) => fd,
            Ok(None) => return None,
            Err(e) => {
                tracing::info!("reopening an attached terminal: {e}; relaying instead");
                return None;
            }
        };
        drop(passed);
        let (wake, wake_tx) = UnixStream::pair().ok()?;
        Some(Arc::new(Term {
            raw: fd.as_raw_fd(),
            fd: Mutex::new(Some(fd)),
            wake,
            wake_tx,
        }))
    }

    pub(super) fn is_open(&self) -> bool {
        lock(&self.fd).is_some()
    }

    /// Closes the host's descriptor and wakes its pollers; whether it was
    /// open until now.
    pub(super) fn shut(&self) -> bool {
        let was_open = lock(&self.fd).take().is_some();
        if was_open {
            let _ = (&self.wake_tx).write_all(b"x");
        }
        was_open
    }

    /// Writes what the terminal takes right now (never blocks); how much.
    /// An error once the terminal is shut or gone.
    pub(super) fn write_now(&self, bytes: &[u8]) -> std::io::Result<usize> {
        let fd = lock(&self.fd);
        let Some(fd) = fd.as_ref() else {
            return Err(std::io::ErrorKind::BrokenPipe.into());
        };
        crate::platform::fd::write_nonblocking(fd, bytes)
    }

    /// Writes all of `bytes`, waiting for the terminal to take them; an
    /// error once the terminal is shut or gone.
    pub(super) fn write_all(&self, mut bytes: &[u8]) -> std::io::Result<()> {
        while !bytes.is_empty() {
            let n = self.write_now(bytes)?;
            bytes = &bytes[n..];
            if n == 0 {
                self.wait(Interest::Write);
            }
        }
        Ok(())
    }

    /// Reads the keys typed so far: `Ok(None)` when none are waiting, an
    /// error (or `Ok(Some(0))`, end of file) once the terminal is shut or
    /// hung up.
    fn read_now(&self, buf: &mut [u8]) -> std::io::Result<Option<usize>> {
        let fd = lock(&self.fd);
        let Some(fd) = fd.as_ref() else {
            return Err(std::io::ErrorKind::BrokenPipe.into());
        };
        crate::platform::fd::read_nonblocking(fd, buf)
    }

    /// Waits until the terminal is ready for `flags` or shut.
    fn wait(&self, interest: Interest) {
        // By number: a shut in between lets `raw` name another file at
        // worst, and then `wake` is readable and the wait ends at once.
        let mut fds = PollSet::new();
        fds.push(self.raw, interest);
        fds.push(self.wake.as_raw_fd(), Interest::Read);
        let _ = fds.wait(None);
    }
}

impl Client {
    /// Ends a direct attach from the host's side: the terminal is closed
    /// at once, then the client hears `Detached` (once).
    pub(super) fn end_direct(&self) {
        if self.term.as_ref().is_some_and(|term| term.shut()) {
            self.push(proto::encode(FrameKind::Detached, b""));
        }
    }
}

/// A direct client's terminal, its keys read by the PTY reader.
pub(super) struct Direct {
    client: Arc<Client>,
    term: Arc<Term>,
    keys: crate::session::attach::DetachKeys,
}

impl Direct {
    pub(super) fn new(client: Arc<Client>, term: Arc<Term>, prefix: u8) -> Direct {
        Direct {
            client,
            term,
            keys: crate::session::attach::DetachKeys::new(prefix),
        }
    }

    /// What to poll: the terminal, and its `wake`.
    pub(super) fn poll_fds(&self) -> [RawFd; 2] {
        [self.term.raw, self.term.wake.as_raw_fd()]
    }

    /// Reads the keys typed so far and forwards them to the PTY.
    pub(super) fn serve_keys(&mut self, shared: &Shared) -> Served {
        let mut buf = [0u8; 4096];
        let n = match self.term.read_now(&mut buf) {
            Ok(None) if self.term.is_open() => return Served::Open { keystroke: false },
            Ok(None) => return Served::Ended,
            Ok(Some(0)) => {
                tracing::debug!("the attached terminal hung up");
                self.client.end_direct();
                return Served::Ended;
            }
            Ok(Some(n)) => n,
            Err(e) => {
                if self.term.is_open() {
                    tracing::debug!("reading the attached terminal: {e}");
                }
                self.client.end_direct();
                return Served::Ended;
            }
        };
        let scan = self.keys.feed(&buf[..n]);
        let mut keystroke = false;
        if !scan.forward.is_empty() {
            shared.state.lock().last_input_at = Some(now_ms());
            let whole = forward_keys(shared, &scan.forward);
            keystroke = whole && scan.forward.len() <= KEYSTROKE_MAX;
        }
        if scan.detach {
            self.client.end_direct();
            return Served::Ended;
        }
        Served::Open { keystroke }
    }
}

/// Keys read at once up to this many bytes are a keystroke (a key, an
/// arrow's or a function key's escape sequence), not a paste.
const KEYSTROKE_MAX: usize = 16;

/// What [`Direct::serve_keys`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Served {
    /// The attach goes on; `keystroke`: a keystroke just went to the PTY,
    /// whole (its echo may be on its way: see `EchoWatch`).
    Open { keystroke: bool },
    /// The attach ended (detach keys, a hang-up, a shut terminal).
    Ended,
}
