//! Descriptors: taking an inherited one, making one non-blocking, an
//! advisory lock on a file, and sending stderr elsewhere for a while.

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Mutex;

/// Takes ownership of descriptor number `fd`, one this process inherited
/// from its parent for its own use (a `--ready-fd` argument); it is made
/// close-on-exec. Call it once per number, for a number nothing else in
/// this process uses (closing the file closes the descriptor).
pub fn take_inherited(fd: RawFd) -> File {
    // SAFETY: the parent passed this number for this process to own, and
    // the caller uses it nowhere else, so the File is its only owner.
    // Taking ownership of an inherited descriptor has no safe API.
    let file = unsafe { File::from_raw_fd(fd) };
    let _ = rustix::io::fcntl_setfd(&file, rustix::io::FdFlags::CLOEXEC);
    file
}

/// Sets `O_NONBLOCK` on the open file description of descriptor number
/// `fd`, which another crate owns (a PTY's master side), open for the
/// whole call.
pub fn set_nonblocking_raw(fd: RawFd) -> io::Result<()> {
    // SAFETY: the caller's `fd` is open for the whole call (the owner
    // keeps it for the process's life); the borrow does not outlive it.
    let fd = unsafe { BorrowedFd::borrow_raw(fd) };
    set_nonblocking(fd)
}

/// Sets `O_NONBLOCK` on `fd`'s open file description.
pub fn set_nonblocking(fd: impl AsFd) -> io::Result<()> {
    let flags = rustix::fs::fcntl_getfl(&fd)?;
    rustix::fs::fcntl_setfl(&fd, flags | rustix::fs::OFlags::NONBLOCK)?;
    Ok(())
}

/// Takes an exclusive advisory lock (`flock`) on `file` without waiting:
/// `Ok(false)` when another open file holds it.
pub fn try_lock_exclusive(file: &File) -> io::Result<bool> {
    match rustix::fs::flock(file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(true),
        Err(rustix::io::Errno::WOULDBLOCK) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Writes what non-blocking `fd` takes right now: how many bytes, 0 when
/// it would block (a write a signal interrupts is made again).
pub fn write_nonblocking(fd: impl AsFd, bytes: &[u8]) -> io::Result<usize> {
    loop {
        match rustix::io::write(&fd, bytes) {
            Ok(n) => return Ok(n),
            Err(rustix::io::Errno::AGAIN) => return Ok(0),
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// Reads what waits on non-blocking `fd` into `buf`: how many bytes
/// (`Some(0)`: end of file), `None` when nothing waits (a read a signal
/// interrupts is made again).
pub fn read_nonblocking(fd: impl AsFd, buf: &mut [u8]) -> io::Result<Option<usize>> {
    loop {
        match rustix::io::read(&fd, &mut *buf) {
            Ok(n) => return Ok(Some(n)),
            Err(rustix::io::Errno::AGAIN) => return Ok(None),
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// One `write(2)` of `bytes` to `fd`, unbuffered (std's `Stdout` holds
/// lines back); how many bytes it took.
pub fn write_unbuffered(fd: impl AsFd, bytes: &[u8]) -> io::Result<usize> {
    Ok(rustix::io::write(fd, bytes)?)
}

/// One `read(2)` from `fd` into `buf`, unbuffered (std's `Stdin` reads
/// ahead into a buffer that a `poll` on the descriptor does not see); how
/// many bytes (0: end of file).
pub fn read_unbuffered(fd: impl AsFd, buf: &mut [u8]) -> io::Result<usize> {
    Ok(rustix::io::read(fd, buf)?)
}

/// The copy of stderr [`divert_stderr`] keeps to put back.
static SAVED_STDERR: Mutex<Option<OwnedFd>> = Mutex::new(None);

/// Sends stderr (descriptor 2) to `to` until [`restore_stderr`]; whether
/// it was diverted.
pub fn divert_stderr(to: &File) -> bool {
    let Ok(saved) = rustix::io::dup(io::stderr().as_fd()) else {
        return false;
    };
    if rustix::stdio::dup2_stderr(to).is_err() {
        return false;
    }
    *SAVED_STDERR.lock().unwrap_or_else(|e| e.into_inner()) = Some(saved);
    true
}

/// Puts stderr back where it was before [`divert_stderr`] (once; later
/// calls do nothing).
pub fn restore_stderr() {
    let saved = SAVED_STDERR
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take();
    if let Some(saved) = saved {
        let _ = rustix::stdio::dup2_stderr(&saved);
    }
}

/// Whether `e` says two paths are on different file systems (`EXDEV`: a
/// rename cannot move a file there).
pub fn is_cross_device(e: &io::Error) -> bool {
    e.raw_os_error() == Some(rustix::io::Errno::XDEV.raw_os_error())
}

/// Whether `e` says an address family is not supported (`EAFNOSUPPORT`:
/// no IPv6 on this machine).
pub fn is_unsupported_family(e: &io::Error) -> bool {
    e.raw_os_error() == Some(rustix::io::Errno::AFNOSUPPORT.raw_os_error())
}
