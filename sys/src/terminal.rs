//! Terminals: their size, their mode (raw while `owt attach` relays keys,
//! put back after), whether two descriptors are one terminal, and a
//! passed terminal reopened for an open file description of one's own.

use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};

use rustix::termios::{self, OptionalActions, Termios};

/// The size of the terminal on `fd` (rows, columns), if it is one and
/// says a size.
pub fn size(fd: impl AsFd) -> Option<(u16, u16)> {
    let ws = termios::tcgetwinsize(fd).ok()?;
    (ws.ws_row > 0 && ws.ws_col > 0).then_some((ws.ws_row, ws.ws_col))
}

/// A terminal's mode (its termios settings), saved to be put back.
pub struct SavedMode(Termios);

/// The mode of the terminal on `fd`, to put back later.
pub fn save_mode(fd: impl AsFd) -> io::Result<SavedMode> {
    Ok(SavedMode(termios::tcgetattr(fd)?))
}

/// Switches the terminal on `fd` to raw mode (no echo, no line editing,
/// no signals from keys), starting from its `saved` mode, at once.
pub fn switch_to_raw(fd: impl AsFd, saved: &SavedMode) -> io::Result<()> {
    let mut raw = saved.0.clone();
    raw.make_raw();
    Ok(termios::tcsetattr(fd, OptionalActions::Now, &raw)?)
}

/// Puts the `saved` mode back on the terminal on `fd`, at once.
pub fn restore_mode(fd: impl AsFd, saved: &SavedMode) -> io::Result<()> {
    Ok(termios::tcsetattr(fd, OptionalActions::Now, &saved.0)?)
}

/// Whether `a` and `b` are both terminals, and the same one (device).
pub fn same_terminal(a: impl AsFd, b: impl AsFd) -> bool {
    if !termios::isatty(&a) || !termios::isatty(&b) {
        return false;
    }
    match (rustix::fs::fstat(&a), rustix::fs::fstat(&b)) {
        (Ok(a), Ok(b)) => a.st_rdev == b.st_rdev,
        _ => false,
    }
}

/// The terminal on `fd` opened again, through `/proc/self/fd` (Linux: an
/// open file description of its own, not shared with whoever passed
/// `fd`), read-write, non-blocking, close-on-exec and not as a controlling
/// terminal; `Ok(None)` when what opens is not a terminal. Fails where
/// there is no `/proc` (macOS).
pub fn reopen_nonblocking(fd: impl AsFd) -> io::Result<Option<OwnedFd>> {
    use rustix::fs::{Mode, OFlags};
    let path = format!("/proc/self/fd/{}", fd.as_fd().as_raw_fd());
    let flags = OFlags::RDWR | OFlags::NOCTTY | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let reopened = rustix::fs::open(&path, flags, Mode::empty())?;
    Ok(termios::isatty(&reopened).then_some(reopened))
}
