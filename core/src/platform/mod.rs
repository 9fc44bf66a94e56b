//! The platform layer: the only module of owt-core that knows which
//! operating system it runs on and the only one with `unsafe` code (the
//! crate denies it everywhere else): pipes made close-on-exec, a unix
//! socket's peer, sending without `SIGPIPE`, receiving descriptors
//! close-on-exec, watching folders for changes, signalling processes and
//! process groups, daemonising, ignoring signals, `poll`, descriptors
//! taken over or made non-blocking, file locks, stderr diverted, the
//! local calendar, glibc's allocator and page hand-back, and SQLite's
//! process-wide settings. A leaf: it names no other core module. Each
//! function's behaviour on each system is in docs/platforms.md.
//!
//! Every `unsafe` block here has a `// SAFETY:` comment; the functions
//! around them are safe. `scripts/check-layers` fails on `unsafe` outside
//! this folder, on more than 15 blocks in all, and on `libc::` outside it.

pub mod fd;
pub mod memory;
pub mod pipe;
pub mod poll;
pub mod process;
pub mod socket;
pub mod sqlite;
pub mod time;
pub mod watch;
