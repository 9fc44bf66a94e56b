//! owt-sys, the platform layer: the only owt crate that knows which
//! operating system it runs on and the only one with `unsafe` code (every
//! other crate forbids it; owt-core re-exports this one as `platform`):
//! pipes made close-on-exec, a unix socket's peer, sending without
//! `SIGPIPE`, receiving descriptors close-on-exec, watching folders for
//! changes, signalling processes and process groups, daemonising, ignoring
//! signals, `poll`, descriptors taken over or made non-blocking, file
//! locks, files opened without following links (`fs`) and the policy for
//! files in a checkout owt does not control (`safe_fs`), what a file system says
//! of itself, terminals (size, raw mode), what `/proc` says of processes
//! and memory, stderr diverted, the one runner of the git program, the
//! local calendar, where owt's own programs are, glibc's allocator and
//! page hand-back, and SQLite's process-wide settings. It depends on no
//! other owt crate. Each function's behaviour on each system is in
//! docs/platforms.md.
//!
//! Every `unsafe` block here has a `// SAFETY:` comment (clippy's
//! `undocumented_unsafe_blocks`, denied); the functions around them are
//! safe. `scripts/check-layers` fails on `unsafe` outside this crate
//! (`sys/`), on more than 15 blocks in all, and on `libc::`, `rustix::`
//! or a `/proc` path outside it.

#![deny(clippy::undocumented_unsafe_blocks)]

pub mod allocator;
pub mod exe;
pub mod fd;
pub mod fs;
pub mod git;
pub mod pipe;
pub mod poll;
pub mod process;
pub mod procs;
pub mod safe_fs;
pub mod socket;
pub mod sqlite;
pub mod terminal;
pub mod time;
pub mod watch;
