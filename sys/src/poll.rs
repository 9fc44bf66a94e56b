//! Waiting for descriptors to turn ready (`poll(2)`), by descriptor
//! number: the session host polls descriptors that other crates
//! (portable-pty) or other threads own, which it only knows by number.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::time::Duration;

use rustix::event::{PollFd, PollFlags, Timespec};

/// What to wait for on a descriptor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interest {
    /// Input is waiting (`POLLIN`).
    Read,
    /// Output would not block (`POLLOUT`).
    Write,
}

impl Interest {
    fn events(self) -> libc::c_short {
        match self {
            Interest::Read => libc::POLLIN,
            Interest::Write => libc::POLLOUT,
        }
    }
}

/// A reusable set of descriptors to wait on together.
#[derive(Default)]
pub struct PollSet {
    fds: Vec<libc::pollfd>,
}

impl PollSet {
    pub fn new() -> PollSet {
        PollSet::default()
    }

    /// Empties the set (keeping its room).
    pub fn clear(&mut self) {
        self.fds.clear();
    }

    /// Adds descriptor number `fd` (a negative number is a place-holder
    /// that never turns ready, as in `poll(2)`); its index is the number
    /// of descriptors added before it.
    pub fn push(&mut self, fd: RawFd, interest: Interest) {
        self.fds.push(libc::pollfd {
            fd,
            events: interest.events(),
            revents: 0,
        });
    }

    /// Waits up to `timeout` (`None`: as long as it takes) for one of the
    /// descriptors to turn ready; how many did. A descriptor closed (or
    /// its number reused) meanwhile can only make the wait end early or
    /// report a wrong readiness, never touch memory.
    pub fn wait(&mut self, timeout: Option<Duration>) -> io::Result<usize> {
        let ms = timeout.map_or(-1, |t| t.as_millis().min(i32::MAX as u128) as libc::c_int);
        // SAFETY: `fds` is a valid, initialised array of `len` pollfds,
        // borrowed mutably for the call; poll writes only their `revents`.
        let rc = unsafe { libc::poll(self.fds.as_mut_ptr(), self.fds.len() as libc::nfds_t, ms) };
        if rc < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(rc as usize)
        }
    }

    /// Whether the `i`th descriptor reported anything after the last
    /// [`PollSet::wait`] (what it waited for, a hang-up or an error).
    pub fn any(&self, i: usize) -> bool {
        self.fds.get(i).is_some_and(|p| p.revents != 0)
    }

    /// Whether the `i`th descriptor is ready for what it was added with.
    pub fn ready(&self, i: usize) -> bool {
        self.fds.get(i).is_some_and(|p| p.revents & p.events != 0)
    }
}

/// Waits up to `timeout` (`None`: as long as it takes) for descriptor
/// number `fd` to be ready for `interest`; whether it is.
pub fn wait_raw(fd: RawFd, interest: Interest, timeout: Option<Duration>) -> bool {
    let mut set = PollSet::new();
    set.push(fd, interest);
    set.wait(timeout).is_ok_and(|n| n == 1) && set.ready(0)
}

/// Waits up to `timeout` for `fd` to have something to read, or its end
/// (input, a hang-up or an error); whether it has.
pub fn readable(fd: impl AsFd, timeout: Option<Duration>) -> bool {
    let mut set = PollSet::new();
    set.push(fd.as_fd().as_raw_fd(), Interest::Read);
    set.wait(timeout).is_ok_and(|n| n > 0) && set.any(0)
}

/// Waits up to `timeout` (`None`: as long as it takes; to the nanosecond)
/// for any of `fds` to have something to read, or its end (input, a
/// hang-up or an error); for each, whether it has. A signal ending the
/// wait is an error of kind `Interrupted`.
pub fn wait_readable<const N: usize>(
    fds: [BorrowedFd<'_>; N],
    timeout: Option<Duration>,
) -> io::Result<[bool; N]> {
    let mut polled = fds.map(|fd| PollFd::from_borrowed_fd(fd, PollFlags::IN));
    let timeout = timeout.map(|t| Timespec {
        tv_sec: i64::try_from(t.as_secs()).unwrap_or(i64::MAX),
        tv_nsec: i64::from(t.subsec_nanos()),
    });
    rustix::event::poll(&mut polled, timeout.as_ref())?;
    Ok(polled.map(|fd| !fd.revents().is_empty()))
}
