//! An interrupted `owt new` (Ctrl-C, SIGTERM): the CLI asks to be told
//! ([`catch_interrupts`]) instead of dying mid-way; `new_session` checks
//! [`interrupted`] between its phases (and the setup script is stopped),
//! then removes what it made. While a session is being made it holds a
//! [`STARTER_FACT`] naming the process making it, so that `owt doctor`
//! finds a session whose maker died before starting its agent.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Serialize};

use crate::ops::Context;
use crate::store::SessionRow;

/// Fact: the process making the session (`owt new`), until its agent is
/// started or queued.
pub const STARTER_FACT: &str = crate::status::kind::STARTER;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StarterFact {
    pub pid: u32,
}

static INTERRUPTED: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// From now on SIGINT and SIGTERM no longer end this process: they mark it
/// interrupted, for `new_session` to stop and clean up. For the CLI only
/// (a server keeps its own signal handling).
pub fn catch_interrupts() -> std::io::Result<()> {
    let flag = INTERRUPTED.get_or_init(Default::default);
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, Arc::clone(flag))?;
    }
    Ok(())
}

/// Whether this process was interrupted (always false unless
/// [`catch_interrupts`] was called).
pub fn interrupted() -> bool {
    INTERRUPTED
        .get()
        .is_some_and(|flag| flag.load(Ordering::SeqCst))
}

/// Undoes an interrupted `owt new` once its worktree exists: the session is
/// deleted as `owt delete --force` would (what git does not keep goes to
/// the trash). The error to return either way.
pub(super) fn abandon(
    ctx: &mut Context,
    session: &SessionRow,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Error {
    let name = &session.name;
    progress(&format!("Interrupted: removing {name}"));
    match crate::ops::delete::delete_session(ctx, name, true, "interrupted", progress) {
        Ok(_) => anyhow::anyhow!(
            "interrupted: session `{name}` was not created (its worktree and branch are removed)"
        ),
        Err(e) => anyhow::anyhow!(
            "interrupted: session `{name}` is left half made ({e:#}); remove it with `owt delete {name} --force`, or let `owt doctor --fix` do it"
        ),
    }
}
