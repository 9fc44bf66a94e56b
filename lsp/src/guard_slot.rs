//! The live guard's engine as threads other than the owner see it: the
//! pull-request watcher's conflict pass ([`pair_source`]) and `owt guard`'s
//! queries on the server's socket ([`report_source`]).
//!
//! Invariant: the engine is locked for one copy of its pairs or one
//! report, never longer, and never while waiting for its watcher.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use owt_core::guard::{Flusher, GuardEngine};
use owt_core::ops::pr_monitor::{GuardPairs, PairSource};
use owt_core::ops::{self, Context};
use owt_protocol::guard::GuardReport;

/// How long a query waits for the watcher to apply what is queued.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(2);

/// The live engine.
pub enum Slot {
    /// Not started yet, or restarting.
    Starting,
    /// Running, with its watcher's flusher.
    Live(Arc<Mutex<GuardEngine>>, Flusher),
    /// Not live (it could not start, or watch).
    Off,
}

/// Where the pull-request watcher's conflict pass takes the guard's pairs:
/// from the live engine (its pairs over the files on disk) once it runs,
/// not from a second engine computed from scratch every pass (at 64
/// sessions of 100k files: every checkout asked or walked and 2,080 pairs
/// merged, a burst of CPU and tens of MB of heap every 30 s); computed as
/// `owt watch` does while the live guard is off.
pub fn pair_source(slot: Arc<Mutex<Slot>>) -> PairSource {
    Box::new(move || {
        let engine = match slot.lock().as_deref() {
            Ok(Slot::Live(engine, _)) => engine.clone(),
            Ok(Slot::Starting) => return GuardPairs::NotYet,
            Ok(Slot::Off) | Err(_) => return GuardPairs::Compute,
        };
        let Ok(mut engine) = engine.lock() else {
            return GuardPairs::Compute;
        };
        match engine.pairs_on_disk() {
            Ok(pairs) => GuardPairs::Live(pairs),
            Err(e) => {
                tracing::warn!("conflict guard: reading the live pairs failed: {e}");
                GuardPairs::Compute
            }
        }
    })
}

/// What answers `owt guard` on the server's socket.
pub type ReportSource = Box<dyn FnMut() -> Result<GuardReport, String> + Send>;

/// The report a cold `owt guard` would compute, from the live engine:
/// first every file event queued is applied (the watcher flushed), then
/// the participants are checked against the store's sessions (`ctx`, this
/// thread's own), and the report is taken over the files on disk (no
/// unsaved buffers). An error when the guard is not live, the watcher did
/// not flush in time, or the sessions changed since the engine started
/// (the client then computes it itself).
pub fn report_source(slot: Arc<Mutex<Slot>>, ctx: Context) -> ReportSource {
    let repository = ctx.repo.main_root().to_string_lossy().into_owned();
    Box::new(move || {
        let (engine, flusher) = match slot.lock().as_deref() {
            Ok(Slot::Live(engine, flusher)) => (engine.clone(), flusher.clone()),
            Ok(Slot::Starting) => return Err("the live guard is starting".into()),
            Ok(Slot::Off) | Err(_) => return Err("the live guard is off".into()),
        };
        if !flusher.flush(FLUSH_TIMEOUT) {
            return Err("the live guard's watcher did not catch up in time".into());
        }
        let wanted = members(&ops::guard::participants(&ctx).map_err(|e| format!("{e:#}"))?);
        let mut engine = engine
            .lock()
            .map_err(|_| "the guard engine lock is poisoned".to_string())?;
        let local = engine
            .participants()
            .filter(|p| !p.worktree.as_os_str().is_empty());
        if members(local) != wanted {
            return Err("the sessions changed since the live guard started".into());
        }
        engine
            .report_on_disk(&repository)
            .map_err(|e| e.to_string())
    })
}

/// Who takes part, from which checkout, against which base.
fn members<'a>(
    participants: impl IntoIterator<Item = &'a owt_core::guard::Participant>,
) -> BTreeSet<(String, PathBuf, String)> {
    participants
        .into_iter()
        .map(|p| (p.id.clone(), p.worktree.clone(), p.base_branch.clone()))
        .collect()
}
