//! Keeping long-lived, mostly idle processes small (`owt lsp`, session
//! hosts): glibc allocator settings, and handing freed heap back to the
//! kernel once a burst of work is over.
//!
//! `owt lsp` runs for as long as the editor does, mostly idle. Its work
//! comes in bursts (a guard recompute, a batch of file events), spread over
//! several threads (owner, watcher, git refresher, tokio workers). glibc
//! gives each thread that allocates its own arena (up to 8 per core) and
//! keeps what was freed in it for reuse, so after a burst the process keeps
//! megabytes of free heap resident in several arenas. Capping the arenas,
//! pinning the trim threshold and calling `malloc_trim` when the server goes
//! quiet returns it. A session host has the same shape on a smaller scale:
//! its work journal walks the checkout now and then (see
//! [`pin_trim_threshold`]).
//!
//! Invariants: only glibc-specific calls live here (no-ops elsewhere); they
//! change how much memory stays resident, never what the server computes.

use std::time::{Duration, Instant};

/// How long the server must be quiet before freed heap is returned.
const QUIET: Duration = Duration::from_millis(200);
/// The least time between two trims (a trim walks every arena).
const MIN_INTERVAL: Duration = Duration::from_secs(1);

/// Allocator settings for a long-lived, mostly idle process. Call before
/// any thread is started.
pub fn configure_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes allocator parameters; it is called
    // before any other thread exists.
    unsafe {
        // Two arenas instead of up to 8 per core: threads that allocate at
        // the same time rarely contend here (the owner thread does nearly
        // all of the work), and each extra arena keeps its own free memory.
        libc::mallopt(libc::M_ARENA_MAX, 2);
    }
    pin_trim_threshold();
}

/// Keeps freed memory at the top of an arena returnable (what a process
/// that now and then allocates a lot and then idles needs; a session host
/// walking its checkout for the journal is one). Call before any thread
/// is started.
pub fn pin_trim_threshold() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes allocator parameters; it is called
    // before any other thread exists.
    unsafe {
        // glibc raises its trim threshold (up to 64 MB) each time a large
        // buffer is freed, and `malloc_trim` never shrinks the top of a
        // thread's arena: after the buffers of a guard burst (git output,
        // tree diffs of 50,000 files) megabytes stayed resident at the top
        // of an arena. Setting the threshold pins it (and the mmap
        // threshold) at glibc's defaults, so freed tops are returned.
        libc::mallopt(libc::M_TRIM_THRESHOLD, 128 * 1024);
    }
}

/// Trims the heap when work happened and the server has since been quiet:
/// call [`Trimmer::activity`] after each piece of work and
/// [`Trimmer::poll`] whenever the loop wakes.
#[derive(Debug, Default)]
pub struct Trimmer {
    /// When the last work ended, if the heap was not trimmed since.
    dirty_since: Option<Instant>,
    last_trim: Option<Instant>,
}

impl Trimmer {
    pub fn new() -> Trimmer {
        Trimmer::default()
    }

    /// Some work just ended.
    pub fn activity(&mut self) {
        self.dirty_since = Some(Instant::now());
    }

    /// When [`Trimmer::poll`] should next run, if a trim is pending.
    pub fn due(&self) -> Option<Instant> {
        let quiet_until = self.dirty_since? + QUIET;
        Some(match self.last_trim {
            Some(last) => quiet_until.max(last + MIN_INTERVAL),
            None => quiet_until,
        })
    }

    /// Trims if a trim is pending and due.
    pub fn poll(&mut self) {
        let Some(due) = self.due() else { return };
        let now = Instant::now();
        if now < due {
            return;
        }
        trim();
        self.dirty_since = None;
        self.last_trim = Some(now);
    }
}

/// Returns free heap memory of every arena to the kernel.
pub fn trim() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim is thread-safe (it locks each arena in turn).
    unsafe {
        libc::malloc_trim(0);
    }
}
