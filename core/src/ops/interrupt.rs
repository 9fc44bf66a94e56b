//! An interrupted `owt new` (Ctrl-C, SIGTERM): the CLI asks to be told
//! ([`catch_interrupts`]) instead of dying mid-way; `new_session` checks
//! [`interrupted`] between its phases (and the setup script is stopped),
//! then removes what it made. While a session is being made it holds a
//! [`STARTER_FACT`](super::facts::STARTER_FACT) naming the process making
//! it, so that `owt doctor` finds a session whose maker died before
//! starting its agent.
//!
//! A leaf of `ops`: `new` and `setup` both ask it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

static INTERRUPTED: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// From now on SIGINT and SIGTERM no longer end this process: they mark it
/// interrupted, for `new_session` to stop and clean up. For the CLI only
/// (a server keeps its own signal handling).
pub fn catch_interrupts() -> std::io::Result<()> {
    crate::platform::process::flag_on_interrupt(INTERRUPTED.get_or_init(Default::default))
}

/// Whether this process was interrupted (always false unless
/// [`catch_interrupts`] was called).
pub fn interrupted() -> bool {
    INTERRUPTED
        .get()
        .is_some_and(|flag| flag.load(Ordering::SeqCst))
}
