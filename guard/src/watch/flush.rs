//! Asking a running watcher to apply now what is queued: the events the
//! kernel holds and the batch it is debouncing, instead of waiting out the
//! debounce. `owt guard`, answered by a running `owt lsp`, asks this so
//! that a file written just before the question is in the answer (the
//! kernel queues an event before the write returns).
//!
//! A [`Flusher`] takes a ticket and writes a byte to a pipe the watcher
//! polls; the watcher drains the pipe, takes the last ticket asked, reads
//! and applies every queued event, then marks that ticket done.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::{io_error, GuardError};

/// Tickets asked and done.
#[derive(Default)]
struct Shared {
    counts: Mutex<(u64, u64)>,
    done: Condvar,
}

/// Asks the watcher to flush; cloned freely.
#[derive(Clone)]
pub struct Flusher {
    /// The pipe's write end, non-blocking: a full pipe already wakes it.
    wake: Arc<OwnedFd>,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Flusher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Flusher").finish_non_exhaustive()
    }
}

/// The watcher's end.
pub(super) struct FlushRx {
    rx: OwnedFd,
    shared: Arc<Shared>,
}

/// A flusher and the watcher's end of it.
pub(super) fn pair() -> Result<(Flusher, FlushRx), GuardError> {
    let (rx, wake) = crate::platform::pipe::cloexec_nonblocking()
        .map_err(|e| io_error("creating the watcher's flush pipe", e))?;
    let shared = Arc::new(Shared::default());
    Ok((
        Flusher {
            wake: Arc::new(wake),
            shared: shared.clone(),
        },
        FlushRx { rx, shared },
    ))
}

impl Flusher {
    /// Waits until the watcher applied every event queued before this
    /// call; `false` when that took longer than `timeout` (or the watcher
    /// is gone).
    pub fn flush(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let Ok(mut counts) = self.shared.counts.lock() else {
            return false;
        };
        counts.0 += 1;
        let ticket = counts.0;
        // A full pipe holds wake-ups the watcher has not read yet.
        crate::platform::pipe::send_wake(&*self.wake, b'f');
        while counts.1 < ticket {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            counts = match self.shared.done.wait_timeout(counts, left) {
                Ok((counts, _)) => counts,
                Err(_) => return false,
            };
        }
        true
    }
}

impl FlushRx {
    pub(super) fn fd(&self) -> BorrowedFd<'_> {
        self.rx.as_fd()
    }

    /// Reads the wake-ups and returns the last ticket asked: every ticket
    /// up to it is done once what is queued now is applied.
    pub(super) fn take(&self) -> u64 {
        let mut buf = [0u8; 256];
        while crate::platform::pipe::take_wakes(&self.rx, &mut buf) > 0 {}
        self.shared.counts.lock().map(|c| c.0).unwrap_or(0)
    }

    pub(super) fn done(&self, ticket: u64) {
        if let Ok(mut counts) = self.shared.counts.lock() {
            counts.1 = counts.1.max(ticket);
            self.shared.done.notify_all();
        }
    }
}
