//! What `owt lsp` watches of the machine on its tick: memory pressure (a
//! warning in the editor before the kernel's OOM killer picks an agent)
//! and room for queued sessions (an `owt __admit` when something freed
//! room). The owner thread calls [`MachineMonitor::poll`] on every tick.

use std::time::{Duration, Instant};

use owt_protocol::{SessionView, Status};

use owt_core::ops::queue;
use owt_core::ops::Context;
use owt_core::session::memory;

/// How often memory is looked at.
const SAMPLE_EVERY: Duration = Duration::from_secs(2);
/// While memory stays short, the warning is repeated this often at most.
const WARN_AGAIN: Duration = Duration::from_secs(120);
/// While sessions wait and nothing seems to change, room is looked for
/// this often all the same.
const ADMIT_ANYWAY: Duration = Duration::from_secs(30);

#[derive(Debug, Default)]
pub struct MachineMonitor {
    next_sample: Option<Instant>,
    warned_at: Option<Instant>,
    /// When an admitter was last started, with the running agents and
    /// available memory seen then.
    admitted: Option<(Instant, usize, u64)>,
}

impl MachineMonitor {
    /// Samples when due; returns a warning to show, if one is due.
    pub fn poll(&mut self, ctx: &Context, sessions: &[SessionView]) -> Option<String> {
        let now = Instant::now();
        if self.next_sample.is_some_and(|at| now < at) {
            return None;
        }
        self.next_sample = Some(now + SAMPLE_EVERY);
        let machine = memory::machine_memory();
        self.admit_when_room(ctx, sessions, machine);
        let limits = queue::Limits::of(&ctx.config.config, machine.map_or(0, |m| m.total));
        let agents: Vec<(String, u64)> = sessions
            .iter()
            .filter_map(|s| Some((s.name.clone(), s.rss_bytes?)))
            .collect();
        let warning =
            memory::pressure_warning(machine, memory::memory_pressure(), limits.min_free, &agents);
        match warning {
            None => {
                self.warned_at = None;
                None
            }
            Some(_) if self.warned_at.is_some_and(|at| now < at + WARN_AGAIN) => None,
            Some(text) => {
                tracing::warn!("{text}");
                self.warned_at = Some(now);
                Some(format!("owt: {text}"))
            }
        }
    }

    /// Starts `owt __admit` when sessions wait and an agent ended, memory
    /// grew, or a while passed since the last try.
    fn admit_when_room(
        &mut self,
        ctx: &Context,
        sessions: &[SessionView],
        machine: Option<memory::MachineMemory>,
    ) {
        if !ctx.store.any_queued().unwrap_or(false) {
            self.admitted = None;
            return;
        }
        let running = sessions
            .iter()
            .filter(|s| !matches!(s.status, Status::Exited | Status::Queued))
            .count();
        let available = machine.map_or(0, |m| m.available);
        let due = match self.admitted {
            None => true,
            Some((at, was_running, was_available)) => {
                running < was_running
                    || available >= was_available + memory::FREED_ENOUGH
                    || at.elapsed() >= ADMIT_ANYWAY
            }
        };
        if !due {
            return;
        }
        self.admitted = Some((Instant::now(), running, available));
        if let Err(e) = owt_core::session::spawn_admitter(&ctx.home) {
            tracing::warn!("starting queued sessions: {e}");
        }
    }
}
