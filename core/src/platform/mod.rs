//! The platform layer: the only module of owt-core that knows which
//! operating system it runs on, for the calls that differ between Linux
//! and macOS — pipes made close-on-exec, a unix socket's peer, sending
//! without `SIGPIPE`, receiving descriptors close-on-exec, and watching
//! folders for changes. A leaf: it names no other core module. Each
//! function's behaviour on each system is in docs/platforms.md.

pub mod pipe;
pub mod socket;
pub mod watch;
