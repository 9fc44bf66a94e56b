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

// The /proc readers below serve Linux-only calls; elsewhere they are
// compiled (and unit-tested here) but unused.
#![cfg_attr(not(target_os = "linux"), allow(dead_code))]

use std::time::{Duration, Instant};

/// How long the server must be quiet before freed heap is returned.
const QUIET: Duration = Duration::from_millis(200);
/// The least time between two trims (a trim walks every arena).
const MIN_INTERVAL: Duration = Duration::from_secs(1);
/// How long the server must be quiet before the binary's clean pages are
/// dropped (longer than [`QUIET`]: between the writes of a busy agent the
/// next event would map most of them again).
const CODE_QUIET: Duration = Duration::from_secs(1);
/// The least time between two drops.
const CODE_MIN_INTERVAL: Duration = Duration::from_secs(5);

/// Allocator settings for a long-lived, mostly idle process. Call before
/// any thread is started.
pub fn configure_allocator() {
    // Two arenas instead of up to 8 per core: threads that allocate at the
    // same time rarely contend here (the owner thread does nearly all of
    // the work), and each extra arena keeps its own free memory.
    mallopt(Param::ArenaMax, 2);
    pin_trim_threshold();
}

/// Allocator settings for a session host. Call before any thread is
/// started.
///
/// One arena: an idle host has nine threads, and glibc gave each one that
/// allocates an arena of its own (up to 8 per core), each keeping ~84 KiB
/// of free top that `malloc_trim` never returns (it only trims the main
/// arena's top): 840 KiB of an idle host's ~2 MiB of private memory. A
/// host's threads rarely allocate at the same time (the PTY reader, the
/// parser and the monitor take turns on one lock already), and small
/// allocations are served from each thread's cache without the arena's
/// lock.
pub fn configure_host_allocator() {
    mallopt(Param::ArenaMax, 1);
    pin_trim_threshold();
}

/// Keeps freed memory at the top of an arena returnable (what a process
/// that now and then allocates a lot and then idles needs; a session host
/// walking its checkout for the journal is one). Call before any thread
/// is started.
pub fn pin_trim_threshold() {
    // glibc raises its trim threshold (up to 64 MB) each time a large
    // buffer is freed, and `malloc_trim` never shrinks the top of a
    // thread's arena: after the buffers of a guard burst (git output,
    // tree diffs of 50,000 files) megabytes stayed resident at the top
    // of an arena. Setting the threshold pins it (and the mmap
    // threshold) at glibc's defaults, so freed tops are returned.
    mallopt(Param::TrimThreshold, 128 * 1024);
    remember_startup_mappings();
}

/// Trims the heap when work happened and the server has since been quiet,
/// and once it has been quiet for longer lets go of the binary's pages
/// the work mapped ([`drop_clean_code_pages`], less often: its pages come
/// back as minor faults on the next piece of work): call
/// [`Trimmer::activity`] after each piece of work and [`Trimmer::poll`]
/// whenever the loop wakes.
#[derive(Debug, Default)]
pub struct Trimmer {
    /// When the last work ended, if the heap was not trimmed since.
    dirty_since: Option<Instant>,
    last_trim: Option<Instant>,
    /// When the last work ended, if the code pages were not dropped since.
    code_dirty_since: Option<Instant>,
    last_drop: Option<Instant>,
}

impl Trimmer {
    pub fn new() -> Trimmer {
        Trimmer::default()
    }

    /// Some work just ended.
    pub fn activity(&mut self) {
        let now = Instant::now();
        self.dirty_since = Some(now);
        self.code_dirty_since = Some(now);
    }

    /// When [`Trimmer::poll`] should next run, if a trim or a drop is
    /// pending.
    pub fn due(&self) -> Option<Instant> {
        let trim = due(self.dirty_since, QUIET, self.last_trim, MIN_INTERVAL);
        let drop = due(
            self.code_dirty_since,
            CODE_QUIET,
            self.last_drop,
            CODE_MIN_INTERVAL,
        );
        trim.into_iter().chain(drop).min()
    }

    /// Trims (and drops the code pages) if pending and due.
    pub fn poll(&mut self) {
        self.poll_at(Instant::now());
    }

    fn poll_at(&mut self, now: Instant) {
        if due(self.dirty_since, QUIET, self.last_trim, MIN_INTERVAL).is_some_and(|d| now >= d) {
            trim();
            self.dirty_since = None;
            self.last_trim = Some(now);
        }
        if due(
            self.code_dirty_since,
            CODE_QUIET,
            self.last_drop,
            CODE_MIN_INTERVAL,
        )
        .is_some_and(|d| now >= d)
        {
            drop_clean_code_pages();
            self.code_dirty_since = None;
            self.last_drop = Some(now);
        }
    }
}

/// When a release is due: `quiet` after the work that dirtied it, and at
/// least `interval` after the previous one.
fn due(
    dirty_since: Option<Instant>,
    quiet: Duration,
    last: Option<Instant>,
    interval: Duration,
) -> Option<Instant> {
    let quiet_until = dirty_since? + quiet;
    Some(match last {
        Some(last) => quiet_until.max(last + interval),
        None => quiet_until,
    })
}

/// After a burst of work in a long-lived process: returns free heap (see
/// [`trim`]) and lets go of the owt binary's pages this process mapped but
/// has not written (see [`drop_clean_code_pages`]).
pub fn release_after_burst() {
    trim();
    drop_clean_code_pages();
}

/// Unmaps this process's clean pages of its own executable and of the
/// shared libraries it started with (libc's code is most of them) — code
/// and read-only data, which the kernel maps 64 KiB at a time around every
/// page the process touches (fault-around), and which a session host
/// touched once to start (argument parsing, configuration, spawning) and
/// no longer uses. They stay in the page cache, shared; what is used again
/// is mapped again on its next touch (a minor fault, from memory). A
/// session host's resident memory after 100 MB of output was 2.8 MiB of
/// heap and stacks (tmux's server: 3.0) and 9.4 MiB of mapped files, 7.5
/// of them the owt binary: this is what it is made of.
///
/// Only mappings that are not writable and hold no anonymous
/// (copied-on-write) page are touched: those are exactly the file's bytes,
/// so dropping them changes nothing the process reads. Relocated read-only
/// data (RELRO) holds copied pages and is left alone. And only mappings the
/// process had when it started ([`remember_startup_mappings`]; before that
/// was called, those of the executable): the loader never unmaps them, so
/// their address ranges can never hold anything else — unlike a file
/// mapped later (a pack of libgit2's, a backtrace's symbols), whose range
/// another thread could unmap and reuse for anonymous memory between the
/// read of `smaps` and the `madvise`.
pub fn drop_clean_code_pages() {
    #[cfg(target_os = "linux")]
    {
        let Ok(exe) = std::fs::read_link("/proc/self/exe") else {
            return;
        };
        let Ok(smaps) = std::fs::read_to_string("/proc/self/smaps") else {
            return;
        };
        let exe = exe.to_string_lossy();
        let startup = STARTUP_MAPPINGS.get();
        let wanted = |start: usize, end: usize, path: &str| match startup {
            Some(ranges) => ranges.binary_search(&(start, end)).is_ok(),
            None => path == exe,
        };
        for (start, end) in clean_mappings_of(&smaps, wanted) {
            // SAFETY: the range is a whole mapping the process had when it
            // started (or of its executable), never unmapped since, that is
            // not writable and holds no anonymous page; MADV_DONTNEED on a
            // file mapping only unmaps its pages, which the next access
            // maps again from the same file.
            unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_DONTNEED);
            }
        }
    }
}

/// The read-only mappings of the executable and of the shared libraries
/// the process started with, sorted (see [`remember_startup_mappings`]).
static STARTUP_MAPPINGS: std::sync::OnceLock<Vec<(usize, usize)>> = std::sync::OnceLock::new();

/// Remembers the address ranges of the executable's and the shared
/// libraries' read-only mappings, for [`drop_clean_code_pages`]. Call at
/// start, before any thread (nothing but the loader has mapped a file
/// yet); later calls change nothing.
pub fn remember_startup_mappings() {
    #[cfg(target_os = "linux")]
    {
        let Ok(exe) = std::fs::read_link("/proc/self/exe") else {
            return;
        };
        let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
            return;
        };
        STARTUP_MAPPINGS.get_or_init(|| startup_mappings_of(&maps, &exe.to_string_lossy()));
    }
}

/// The ranges in `maps` (the text of `/proc/self/maps` at start) of the
/// mappings of `exe` or of a shared library (`*.so`, `*.so.N`) that are not
/// writable, sorted.
fn startup_mappings_of(maps: &str, exe: &str) -> Vec<(usize, usize)> {
    let mut out: Vec<(usize, usize)> = maps
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let (start, end) = fields.next()?.split_once('-')?;
            let perms = fields.next()?;
            let path = fields.nth(3)?;
            let library = path.starts_with('/') && is_library_name(path);
            let wanted = (path == exe || library) && !perms.contains('w');
            let range = (
                usize::from_str_radix(start, 16).ok()?,
                usize::from_str_radix(end, 16).ok()?,
            );
            wanted.then_some(range)
        })
        .collect();
    out.sort_unstable();
    out
}

/// Whether the file at `path` is named as a shared library is: `*.so`, or
/// `*.so.` and a version (`libc.so.6`, `libz.so.1.2.13`).
fn is_library_name(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or("");
    name.rfind(".so").is_some_and(|at| {
        let version = &name[at + 3..];
        version.is_empty()
            || version
                .strip_prefix('.')
                .is_some_and(|v| !v.is_empty() && v.chars().all(|c| c.is_ascii_digit() || c == '.'))
    })
}

/// The address ranges in `smaps` (the text of `/proc/self/smaps`) of the
/// mappings `wanted` (by range and path) that are neither writable nor
/// hold an anonymous page.
fn clean_mappings_of(
    smaps: &str,
    wanted: impl Fn(usize, usize, &str) -> bool,
) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    // The mapping being read: its range, and whether it qualifies so far.
    let mut current: Option<(usize, usize, bool)> = None;
    let mut flush = |current: &mut Option<(usize, usize, bool)>| {
        if let Some((start, end, true)) = current.take() {
            out.push((start, end));
        }
    };
    for line in smaps.lines() {
        let mut fields = line.split_whitespace();
        let Some(first) = fields.next() else { continue };
        if let Some((start, end)) = first.split_once('-').filter(|_| !first.ends_with(':')) {
            flush(&mut current);
            let perms = fields.next().unwrap_or("");
            let path = fields.nth(3).unwrap_or("");
            let (Ok(start), Ok(end)) = (
                usize::from_str_radix(start, 16),
                usize::from_str_radix(end, 16),
            ) else {
                continue;
            };
            let clean = wanted(start, end, path) && perms.starts_with('r') && !perms.contains('w');
            current = Some((start, end, clean));
        } else if first == "Anonymous:" {
            if let Some((_, _, clean)) = current.as_mut() {
                *clean &= fields.next() == Some("0");
            }
        }
    }
    flush(&mut current);
    out
}

/// What stays resident below the caller's frame when its thread gives its
/// stack back: the frames of the calls that do it, and a signal handler's.
const STACK_KEEP: usize = 8 * 1024;

/// Gives back the pages of the calling thread's stack deeper than its
/// current frame (less [`STACK_KEEP`]). A thread's deepest call so far (a
/// journal walk through libgit2, argument parsing at start) leaves its
/// pages resident for as long as the thread lives, though an idle thread
/// waits a few frames deep: call this from a thread's loop after such work,
/// before it waits again. The pages are zero-filled again if the thread
/// goes that deep once more (minor faults).
#[inline(never)]
pub fn release_stack() {
    #[cfg(target_os = "linux")]
    {
        let marker = 0u8;
        let here = std::hint::black_box(&marker) as *const u8 as usize;
        let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
            return;
        };
        let Some((start, end)) = unused_stack(&maps, here, page_size()) else {
            return;
        };
        // SAFETY: [start, end) lies in this thread's own stack mapping,
        // below its current frame by more than what the calls from here to
        // the system call use: no live data is there. MADV_DONTNEED on
        // private anonymous memory only drops the pages (zero-filled on the
        // next touch).
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_DONTNEED);
        }
    }
}

/// The page-aligned range of the writable mapping in `maps` (the text of
/// `/proc/self/maps`) that holds the address `here`, from its start to
/// [`STACK_KEEP`] below `here`; `None` when that is empty or no such
/// mapping exists.
fn unused_stack(maps: &str, here: usize, page: usize) -> Option<(usize, usize)> {
    let (start, _) = maps.lines().find_map(|line| {
        let mut fields = line.split_whitespace();
        let (start, end) = fields.next()?.split_once('-')?;
        let (start, end) = (
            usize::from_str_radix(start, 16).ok()?,
            usize::from_str_radix(end, 16).ok()?,
        );
        let writable = fields.next()?.starts_with("rw");
        (writable && start <= here && here < end).then_some((start, end))
    })?;
    let end = here.checked_sub(STACK_KEEP)? / page * page;
    (end > start).then_some((start, end))
}

/// The size of a memory page, in bytes.
pub fn page_size() -> usize {
    rustix::param::page_size()
}

/// The glibc allocator settings owt changes.
#[cfg_attr(not(all(target_os = "linux", target_env = "gnu")), allow(dead_code))]
#[derive(Clone, Copy)]
enum Param {
    /// `M_ARENA_MAX`: how many arenas threads share.
    ArenaMax,
    /// `M_TRIM_THRESHOLD`: free memory at an arena's top kept, in bytes.
    TrimThreshold,
}

/// Sets one of glibc's allocator parameters (a no-op elsewhere).
#[cfg_attr(
    not(all(target_os = "linux", target_env = "gnu")),
    allow(unused_variables)
)]
fn mallopt(param: Param, value: i32) {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let param = match param {
            Param::ArenaMax => libc::M_ARENA_MAX,
            Param::TrimThreshold => libc::M_TRIM_THRESHOLD,
        };
        // SAFETY: mallopt only changes allocator parameters, taking the
        // allocator's own locks; both parameters take any int.
        unsafe {
            libc::mallopt(param, value);
        }
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

#[cfg(test)]
mod tests {
    use super::{clean_mappings_of, startup_mappings_of};

    #[test]
    fn only_unwritten_read_only_mappings_of_the_executable_are_dropped() {
        let smaps = "\
5587808d7000-558780b7a000 r--p 00000000 fd:00 123 /usr/bin/owt
Rss:                1124 kB
Anonymous:             0 kB
558780b7a000-5587817f7000 r-xp 002a3000 fd:00 123 /usr/bin/owt
Rss:                6172 kB
Anonymous:             0 kB
5587817f7000-55878182a000 r--p 00f20000 fd:00 123 /usr/bin/owt
Rss:                 204 kB
Anonymous:           204 kB
55878182a000-55878182e000 rw-p 00f53000 fd:00 123 /usr/bin/owt
Rss:                  16 kB
Anonymous:            16 kB
7f55a5e60000-7f55a5fb6000 r-xp 00026000 fd:00 456 /usr/lib/x86_64-linux-gnu/libc.so.6
Rss:                1216 kB
Anonymous:             0 kB
7f5598000000-7f5598527000 rw-p 00000000 00:00 0 
Rss:                 816 kB
Anonymous:           816 kB
";
        assert_eq!(
            clean_mappings_of(smaps, |_, _, path| path == "/usr/bin/owt"),
            vec![
                (0x5587808d7000, 0x558780b7a000),
                (0x558780b7a000, 0x5587817f7000)
            ]
        );
        // By the ranges remembered at start: libc's code too; RELRO and
        // the writable data never, whatever was remembered.
        let startup = [
            (0x558780b7a000, 0x5587817f7000),
            (0x5587817f7000, 0x55878182a000),
            (0x55878182a000, 0x55878182e000),
            (0x7f55a5e60000, 0x7f55a5fb6000),
        ];
        assert_eq!(
            clean_mappings_of(smaps, |start, end, _| startup.contains(&(start, end))),
            vec![
                (0x558780b7a000, 0x5587817f7000),
                (0x7f55a5e60000, 0x7f55a5fb6000)
            ]
        );
    }

    #[test]
    fn the_mappings_remembered_at_start_are_the_read_only_ones_of_the_executable_and_libraries() {
        let maps = "\
5587808d7000-558780b7a000 r--p 00000000 fd:00 123 /usr/bin/owt
558780b7a000-5587817f7000 r-xp 002a3000 fd:00 123 /usr/bin/owt
55878182a000-55878182e000 rw-p 00f53000 fd:00 123 /usr/bin/owt
558790000000-558790100000 rw-p 00000000 00:00 0                          [heap]
7f55a5e60000-7f55a5fb6000 r-xp 00026000 fd:00 456 /usr/lib/x86_64-linux-gnu/libc.so.6
7f55a6000000-7f55a6010000 r--p 00000000 fd:00 457 /usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2
7f55a6100000-7f55a6200000 r--s 00000000 fd:00 789 /repo/.git/objects/pack/pack-1.idx
7f55a6300000-7f55a6301000 r--p 00000000 fd:00 790 /data/notes.so.txt
7f55a6400000-7f55a6401000 r-xp 00000000 00:00 0                          [vdso]
7f54a5e60000-7f54a5fb6000 r-xp 00000000 fd:00 458 /usr/lib/libz.so
";
        assert_eq!(
            startup_mappings_of(maps, "/usr/bin/owt"),
            vec![
                (0x5587808d7000, 0x558780b7a000),
                (0x558780b7a000, 0x5587817f7000),
                (0x7f54a5e60000, 0x7f54a5fb6000),
                (0x7f55a5e60000, 0x7f55a5fb6000),
                (0x7f55a6000000, 0x7f55a6010000),
            ],
            "sorted; no writable data, heap, pack, vdso, or a file whose name only contains .so"
        );
    }

    #[test]
    fn the_trimmer_drops_code_pages_after_a_longer_quiet_and_less_often() {
        use super::{Trimmer, CODE_MIN_INTERVAL, CODE_QUIET, MIN_INTERVAL, QUIET};
        let mut t = Trimmer::new();
        assert_eq!(t.due(), None, "nothing to release before any work");
        t.activity();
        let worked = t.dirty_since.unwrap();
        assert_eq!(t.due(), Some(worked + QUIET), "the heap first");
        t.poll_at(worked + QUIET);
        assert_eq!(t.dirty_since, None, "trimmed");
        assert_eq!(t.due(), Some(worked + CODE_QUIET), "then the code pages");
        t.poll_at(worked + CODE_QUIET);
        assert_eq!((t.due(), t.last_drop), (None, Some(worked + CODE_QUIET)));
        // Work right after: the heap after MIN_INTERVAL, the pages only
        // CODE_MIN_INTERVAL after the last drop.
        t.activity();
        let trim_due = (worked + QUIET + MIN_INTERVAL).max(t.dirty_since.unwrap() + QUIET);
        assert_eq!(t.due(), Some(trim_due));
        t.poll_at(trim_due);
        assert_eq!(t.due(), Some(worked + CODE_QUIET + CODE_MIN_INTERVAL));
    }

    #[test]
    fn only_the_stack_below_the_current_frame_is_given_back() {
        use super::{unused_stack, STACK_KEEP};
        let maps = "\
55d0c0000000-55d0c0100000 r--p 00000000 fd:00 123 /usr/bin/owt
7f0000000000-7f0000001000 ---p 00000000 00:00 0 
7f0000001000-7f0000201000 rw-p 00000000 00:00 0 
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]
";
        let here = 0x7f0000200800;
        assert_eq!(
            unused_stack(maps, here, 4096),
            Some((0x7f0000001000, (here - STACK_KEEP) / 4096 * 4096)),
            "from the mapping's start to a page boundary STACK_KEEP below"
        );
        assert_eq!(
            unused_stack(maps, 0x7ffd00001000, 4096),
            None,
            "nothing when the frame is near the start"
        );
        assert_eq!(
            unused_stack(maps, 0x55d0c0000800, 4096),
            None,
            "not writable"
        );
        assert_eq!(unused_stack(maps, 0x1000, 4096), None, "not mapped");
    }

    /// The resident KiB of the mapping holding `addr` (`/proc/self/smaps`).
    fn resident_kib_of_mapping_at(addr: usize) -> u64 {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let mut inside = false;
        for line in smaps.lines() {
            let first = line.split_whitespace().next().unwrap_or("");
            if let Some((start, end)) = first.split_once('-').filter(|_| !first.ends_with(':')) {
                let start = usize::from_str_radix(start, 16).unwrap_or(usize::MAX);
                let end = usize::from_str_radix(end, 16).unwrap_or(0);
                inside = start <= addr && addr < end;
            } else if inside && first == "Rss:" {
                return line.split_whitespace().nth(1).unwrap().parse().unwrap();
            }
        }
        panic!("no mapping holds {addr:#x}")
    }

    #[test]
    fn giving_back_the_stack_keeps_the_frames_in_use_and_drops_the_rest() {
        fn deep(n: u32) -> u64 {
            let buf = std::hint::black_box([n as u8; 512]);
            if n == 0 {
                super::release_stack();
                return u64::from(buf[0]);
            }
            deep(n - 1) + u64::from(buf[7])
        }
        let (sum, before, after) = std::thread::spawn(|| {
            let marker = 0u8;
            let here = std::hint::black_box(&marker) as *const u8 as usize;
            // ~250 KiB of stack touched, given back from the deepest frame
            // (every frame above it in use), then from here.
            let first = deep(400);
            let before = resident_kib_of_mapping_at(here);
            super::release_stack();
            let after = resident_kib_of_mapping_at(here);
            (first + deep(50), before, after)
        })
        .join()
        .unwrap();
        assert_eq!(
            sum,
            (1..=400).map(|n| n % 256).sum::<u64>() + (1..=50).sum::<u64>()
        );
        assert!(
            after + 128 <= before,
            "the deep pages are given back: {before} KiB resident before, {after} after"
        );
    }

    #[test]
    fn dropping_the_code_pages_of_this_process_leaves_it_running() {
        super::drop_clean_code_pages();
        // With the libraries' too (libc's code, used below).
        super::remember_startup_mappings();
        assert!(
            super::STARTUP_MAPPINGS.get().is_some_and(|m| m.len() > 2),
            "the executable's and libc's mappings are remembered"
        );
        super::drop_clean_code_pages();
        // Code and constants are mapped again on use.
        let v: Vec<String> = (0..1000).map(|i| format!("{i}")).collect();
        assert_eq!(v.iter().map(String::len).sum::<usize>(), 2890);
    }
}
