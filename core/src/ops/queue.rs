//! Admission: how many agents this machine runs at once, and the queue of
//! sessions waiting for room.
//!
//! `owt new` creates the session (worktree, branch, setup) and then asks
//! [`admit`] to start agents, oldest queued first. A session may start
//! when both hold:
//! - fewer agents run (or are being started) than `[agent] max_running`;
//!   unset, the limit is what memory holds: the memory available now,
//!   less `min_free_memory`, less what the running agents are still
//!   expected to grow (each provider's estimate, see [`estimate`], beyond
//!   what the agent holds now), must fit one more agent of this provider;
//! - the machine has at least `min_free_memory` available.
//!
//! There is no daemon. Whatever owt process notices room runs [`admit`]:
//! the session host whose agent ended or gave back a lot of memory
//! (through `owt __admit`), `owt lsp` while sessions wait, and the CLI
//! verbs that list or change sessions (`list`, the board, `new`, `delete`,
//! `ship`, `wait`). A lease in the store (`start_leases`, taken in one
//! transaction with the count of running agents) makes sure two of them
//! never start the same session, nor start more than the limit together;
//! a starter that dies mid-way loses its lease after [`LEASE_MS`]. Queued
//! sessions are facts in the store, so they outlive every owt process and
//! start later.
//!
//! Invariant: the decision ([`room_for`]) is pure; everything it looks at
//! is gathered first ([`Machine`], the running agents' `memory` facts,
//! the providers' learned peaks).

use std::path::Path;

use super::launch::LaunchOptions;
use super::Context;
use crate::config::human_bytes;
use crate::session::memory::{self, MachineMemory};
use crate::status::{self, MemoryFact};
use crate::store::{SessionRow, Store};

/// How long a start lease holds (longer than a host takes to start).
pub const LEASE_MS: i64 = 60_000;

/// The most memory kept free by default.
const MIN_FREE_CAP: u64 = 2 * 1024 * 1024 * 1024;

const MIB: u64 = 1024 * 1024;

/// Peaks of this many past agents of a provider make its estimate.
const PEAKS_KEPT: u32 = 10;
/// Until this many agents of a provider were seen, its estimate is at
/// least the built-in guess.
const PEAKS_TRUSTED: usize = 3;

/// What one agent of `provider` is expected to need at most, before owt
/// has seen any: from what users of each CLI report.
pub fn prior_estimate(provider: &str) -> u64 {
    match provider {
        "claude" => 1536 * MIB,
        "gemini" | "opencode" | "droid" | "amp" | "cursor-agent" => 1024 * MIB,
        "codex" | "pi" | "goose" => 512 * MIB,
        "aider" => 384 * MIB,
        // A custom agent: until seen, a modest guess.
        _ => 256 * MIB,
    }
}

/// The memory one agent of `provider` is expected to need: the largest
/// peak of its last [`PEAKS_KEPT`] agents (recorded by their hosts), and
/// no less than [`prior_estimate`] until [`PEAKS_TRUSTED`] were seen.
pub fn estimate(store: &Store, provider: &str) -> u64 {
    let peaks = store.agent_peaks(provider, PEAKS_KEPT).unwrap_or_default();
    let seen = peaks.iter().copied().max().unwrap_or(0);
    if peaks.len() >= PEAKS_TRUSTED {
        seen.max(16 * MIB)
    } else {
        seen.max(prior_estimate(provider))
    }
}

/// The limits that apply to a repository's sessions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// `[agent] max_running`; `None`: what memory holds.
    pub max_running: Option<u32>,
    /// `[agent] min_free_memory` (or its default).
    pub min_free: u64,
}

impl Limits {
    /// From a repository's configuration, on a machine with `total` bytes.
    pub fn of(config: &crate::config::Config, total: u64) -> Limits {
        Limits {
            max_running: config.agent.max_running,
            min_free: config
                .agent
                .min_free_memory
                .map_or_else(|| default_min_free(total), |b| b.0),
        }
    }
}

/// A tenth of the machine's memory, at most 2 GiB.
pub fn default_min_free(total: u64) -> u64 {
    (total / 10).min(MIN_FREE_CAP)
}

/// An agent that runs (or is being started), as admission sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Running {
    /// What its provider's agents are expected to need.
    pub estimate: u64,
    /// What it holds now (its host's last sample; 0 before the first).
    pub rss: u64,
}

/// Everything [`room_for`] looks at.
#[derive(Debug, Clone, PartialEq)]
pub struct Machine {
    pub memory: Option<MachineMemory>,
    pub running: Vec<Running>,
}

/// Why a session cannot start now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wait {
    /// `[agent] max_running` agents run.
    Limit { running: u32, max: u32 },
    /// Less than `min_free_memory` is available.
    LowMemory { available: u64, min_free: u64 },
    /// Another agent of this provider would not fit in memory.
    NoRoom {
        available: u64,
        reserved: u64,
        min_free: u64,
        estimate: u64,
    },
}

impl std::fmt::Display for Wait {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Wait::Limit { running, max } => write!(
                f,
                "{running} agent{} run{} and [agent] max_running is {max}",
                if *running == 1 { "" } else { "s" },
                if *running == 1 { "s" } else { "" },
            ),
            Wait::LowMemory {
                available,
                min_free,
            } => write!(
                f,
                "{} of memory is available, less than [agent] min_free_memory ({})",
                human_bytes(*available),
                human_bytes(*min_free)
            ),
            Wait::NoRoom {
                available,
                reserved,
                min_free,
                estimate,
            } => write!(
                f,
                "another agent (about {} each) does not fit: {} available, {} kept for the running agents to grow into, {} kept free ([agent] min_free_memory); set [agent] max_running to decide yourself",
                human_bytes(*estimate),
                human_bytes(*available),
                human_bytes(*reserved),
                human_bytes(*min_free)
            ),
        }
    }
}

/// How many more agents needing `estimate` each may start now, beside
/// the `machine`'s running ones (pure). `Err` says why none may.
pub fn room_for(limits: &Limits, machine: &Machine, estimate: u64) -> Result<u32, Wait> {
    let running = machine.running.len() as u32;
    let by_count = match limits.max_running {
        Some(max) if running >= max => return Err(Wait::Limit { running, max }),
        Some(max) => max - running,
        None => u32::MAX,
    };
    let Some(mem) = machine.memory else {
        // No /proc/meminfo: only the count applies.
        return Ok(by_count);
    };
    if mem.available < limits.min_free {
        return Err(Wait::LowMemory {
            available: mem.available,
            min_free: limits.min_free,
        });
    }
    if limits.max_running.is_some() {
        return Ok(by_count);
    }
    let reserved: u64 = machine
        .running
        .iter()
        .map(|r| r.estimate.saturating_sub(r.rss))
        .sum();
    let headroom = mem
        .available
        .saturating_sub(limits.min_free)
        .saturating_sub(reserved);
    let fit = (headroom / estimate.max(1)).min(u64::from(u32::MAX)) as u32;
    match fit {
        // With nothing running, one agent may always start (the memory
        // floor above still holds): nothing owt runs could free any.
        0 if running == 0 => Ok(1),
        0 => Err(Wait::NoRoom {
            available: mem.available,
            reserved,
            min_free: limits.min_free,
            estimate,
        }),
        n => Ok(n.min(by_count)),
    }
}

/// The agents that run now, as [`room_for`] sees them (their hosts
/// reconciled first: a host that is gone frees its place).
pub fn running_now(store: &Store, home: &Path) -> Vec<Running> {
    let rows = store.running_sessions().unwrap_or_default();
    let mut out = Vec::new();
    for row in rows {
        if let Err(e) = crate::session::reconcile(store, home, &row) {
            tracing::warn!(session = %row.name, "reconciling: {e}");
        }
        let ended = store
            .facts(row.id)
            .map(|facts| {
                facts
                    .iter()
                    .any(|f| f.kind == status::kind::EXIT || f.kind == status::kind::HOST_LOST)
            })
            .unwrap_or(false);
        if ended {
            continue;
        }
        let rss = store
            .fact::<MemoryFact>(row.id, status::kind::MEMORY)
            .ok()
            .flatten()
            .map_or(0, |(m, _)| m.rss_bytes);
        out.push(Running {
            estimate: estimate(store, &row.provider),
            rss,
        });
    }
    out
}

/// The queued fact's value: how to launch the agent.
pub type QueuedLaunch = LaunchOptions;

/// What [`admit`] did with one queued session.
#[derive(Debug)]
pub struct Admitted {
    pub session_id: i64,
    pub name: String,
    /// `Err`: it could not start (recorded as its exit).
    pub outcome: anyhow::Result<()>,
}

/// This process's name on a lease.
fn lease_owner() -> String {
    format!("pid {} at {}", std::process::id(), crate::store::now_ms())
}

/// Starts the queued sessions (of every repository of the store at
/// `home`) there is room for, oldest first; stops at the first that must
/// wait. Returns what it started (or failed to start). Never fails: what
/// goes wrong is logged and reported per session.
pub fn admit(home: &Path, progress: &mut dyn FnMut(&str)) -> Vec<Admitted> {
    match Store::open(home) {
        Ok(mut store) => admit_in(&mut store, home, progress),
        Err(e) => {
            tracing::warn!("admission: opening the store: {e}");
            Vec::new()
        }
    }
}

/// [`admit`] with the store at `home` already open (`owt list`, the board:
/// one listing opens the store once).
pub fn admit_in(store: &mut Store, home: &Path, progress: &mut dyn FnMut(&str)) -> Vec<Admitted> {
    let mut out = Vec::new();
    if !store.any_queued().unwrap_or(false) {
        return out;
    }
    let owner = lease_owner();
    let queued = store.queued_sessions().unwrap_or_default();
    for session in queued {
        let mut ctx = match context_of(store, &session) {
            Ok(ctx) => ctx,
            Err(e) => {
                tracing::warn!(session = %session.name, "admission: {e:#}");
                continue;
            }
        };
        let machine = Machine {
            memory: memory::machine_memory(),
            running: running_now(store, home),
        };
        let limits = Limits::of(&ctx.config.config, machine.memory.map_or(0, |m| m.total));
        let need = estimate(store, &session.provider);
        let room = match room_for(&limits, &machine, need) {
            Ok(room) => room,
            Err(why) => {
                tracing::info!(session = %session.name, "stays queued: {why}");
                break;
            }
        };
        match take_lease(store, &session, &owner, limits.max_running, room) {
            Lease::Taken => {}
            Lease::Skip => continue,
            Lease::Stop => break,
        }
        progress(&format!(
            "Starting {} in {}",
            session.provider, session.name
        ));
        out.push(start_admitted(&mut ctx, store, &session, &owner));
    }
    out
}

/// What [`take_lease`] says to do with a queued session.
enum Lease {
    /// This process holds its start lease: start it.
    Taken,
    /// Being started by someone else, or the room went to others.
    Skip,
    /// The store failed: stop admitting for now.
    Stop,
}

/// Takes `session`'s start lease for `owner` when the running and
/// starting agents leave room for it (`max` running, `room` more now).
fn take_lease(
    store: &mut Store,
    session: &SessionRow,
    owner: &str,
    max: Option<u32>,
    room: u32,
) -> Lease {
    let taken = store.take_start_lease(session.id, owner, LEASE_MS, |running, starting| {
        let by_count = max.is_none_or(|max| running + starting < max);
        // Agents being started elsewhere take room too.
        by_count && starting < room
    });
    match taken {
        // Another process may have started it (and given its lease
        // back) since the queue was read: only a session still queued
        // is started.
        Ok(true) if !is_queued(store, session) => {
            let _ = store.release_start_lease(session.id, owner);
            Lease::Skip
        }
        Ok(true) => Lease::Taken,
        Ok(false) => Lease::Skip,
        Err(e) => {
            tracing::warn!(session = %session.name, "admission: taking the lease: {e}");
            Lease::Stop
        }
    }
}

/// Starts the queued `session` whose lease `owner` holds; a failure is
/// its exit fact. The session is not queued after, and the lease is given
/// back.
fn start_admitted(ctx: &mut Context, store: &Store, session: &SessionRow, owner: &str) -> Admitted {
    let outcome = start_queued(ctx, session);
    if let Err(e) = &outcome {
        tracing::warn!(session = %session.name, "the queued agent did not start: {e:#}");
        let fact = status::ExitFact {
            code: None,
            signal: Some(format!("not started: {e:#}")),
        };
        let _ = ctx.store.record_fact(session.id, status::kind::EXIT, &fact);
    }
    let _ = ctx.store.clear_fact(session.id, status::kind::QUEUED);
    let _ = store.release_start_lease(session.id, owner);
    Admitted {
        session_id: session.id,
        name: session.name.clone(),
        outcome,
    }
}

/// The context of the repository `session` belongs to.
fn context_of(store: &Store, session: &SessionRow) -> anyhow::Result<Context> {
    let repo = store
        .repo_by_id(session.repo_id)?
        .ok_or_else(|| anyhow::anyhow!("its repository is not in the store"))?;
    Context::open(Some(&repo.main_worktree))
}

/// Starts a queued session's agent now (its lease held by the caller).
fn start_queued(ctx: &mut Context, session: &SessionRow) -> anyhow::Result<()> {
    let options = ctx
        .store
        .fact::<QueuedLaunch>(session.id, status::kind::QUEUED)?
        .map(|(o, _)| o)
        .unwrap_or_default();
    start_agent(ctx, session, &options)
}

/// Builds `session`'s host spec and starts its host.
pub fn start_agent(
    ctx: &mut Context,
    session: &SessionRow,
    options: &LaunchOptions,
) -> anyhow::Result<()> {
    if !session.worktree_path.is_dir() {
        anyhow::bail!("its worktree {} is gone", session.worktree_path.display());
    }
    let resolved = crate::provider::resolve(&ctx.config.config, Some(&session.provider))?;
    let (spec, warnings) = super::launch::host_spec(ctx, session, &resolved, options)?;
    for warning in warnings {
        tracing::warn!(session = %session.name, "{warning}");
    }
    crate::session::start_host(&spec)?;
    Ok(())
}

/// `owt start NAME`: starts a queued session's agent now, whatever the
/// limits (as `owt new --now` would have).
pub fn start_now(ctx: &mut Context, name: &str) -> anyhow::Result<SessionRow> {
    let session = ctx.session(name)?;
    let options = ctx
        .store
        .fact::<QueuedLaunch>(session.id, status::kind::QUEUED)?
        .map(|(o, _)| o);
    let Some(options) = options.filter(|_| is_queued(&ctx.store, &session)) else {
        anyhow::bail!("{name} is not queued: its agent was started already (see `owt list`)");
    };
    let owner = lease_owner();
    if !ctx
        .store
        .take_start_lease(session.id, &owner, LEASE_MS, |_, _| true)?
    {
        anyhow::bail!("{name} is being started right now by another owt process");
    }
    let outcome = start_agent(ctx, &session, &options);
    if outcome.is_ok() {
        let _ = ctx.store.clear_fact(session.id, status::kind::QUEUED);
    }
    let _ = ctx.store.release_start_lease(session.id, &owner);
    outcome.map(|()| session)
}

/// Whether `session` waits in the queue (queued, never started).
pub fn is_queued(store: &Store, session: &SessionRow) -> bool {
    store
        .queued_sessions()
        .is_ok_and(|q| q.iter().any(|s| s.id == session.id))
}

/// Holds `session` out of the queue while it is deleted: takes its lease
/// (waiting out a start under way elsewhere, up to [`LEASE_MS`]). Returns
/// whether it was still queued.
pub fn hold_for_delete(ctx: &mut Context, session: &SessionRow) -> anyhow::Result<bool> {
    if !is_queued(&ctx.store, session) {
        return Ok(false);
    }
    let owner = lease_owner();
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(LEASE_MS as u64);
    loop {
        if ctx
            .store
            .take_start_lease(session.id, &owner, LEASE_MS, |_, _| true)?
        {
            // Started meanwhile? Then it is a running session to stop.
            return Ok(is_queued(&ctx.store, session));
        }
        if std::time::Instant::now() >= deadline {
            anyhow::bail!(
                "{} is being started by another owt process that does not finish; try again in a minute",
                session.name
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// Why `session` waits, for people ("2 queued before it; 4 agents run and
/// [agent] max_running is 4").
pub fn why_waiting(home: &Path, session: &SessionRow) -> String {
    let Ok(store) = Store::open(home) else {
        return "waiting for room".into();
    };
    let queued = store.queued_sessions().unwrap_or_default();
    let ahead = queued.iter().take_while(|s| s.id != session.id).count();
    let reason = context_of(&store, session)
        .map(|ctx| {
            let machine = Machine {
                memory: memory::machine_memory(),
                running: running_now(&store, home),
            };
            let limits = Limits::of(&ctx.config.config, machine.memory.map_or(0, |m| m.total));
            match room_for(&limits, &machine, estimate(&store, &session.provider)) {
                Err(why) => why.to_string(),
                Ok(_) => "room is being taken by agents starting now".to_string(),
            }
        })
        .unwrap_or_else(|e| format!("{e:#}"));
    match ahead {
        0 => reason,
        1 => format!("1 session is queued before it; {reason}"),
        n => format!("{n} sessions are queued before it; {reason}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1024 * MIB;

    fn machine(available: u64, running: &[(u64, u64)]) -> Machine {
        Machine {
            memory: Some(MachineMemory {
                total: 24 * GIB,
                available,
            }),
            running: running
                .iter()
                .map(|&(estimate, rss)| Running { estimate, rss })
                .collect(),
        }
    }

    #[test]
    fn an_explicit_limit_counts_agents() {
        let limits = Limits {
            max_running: Some(2),
            min_free: GIB,
        };
        assert_eq!(
            room_for(&limits, &machine(8 * GIB, &[(GIB, GIB)]), GIB),
            Ok(1)
        );
        assert_eq!(
            room_for(&limits, &machine(8 * GIB, &[(GIB, 0), (GIB, 0)]), GIB),
            Err(Wait::Limit { running: 2, max: 2 })
        );
        assert_eq!(
            room_for(&limits, &machine(GIB / 2, &[]), GIB),
            Err(Wait::LowMemory {
                available: GIB / 2,
                min_free: GIB
            }),
            "the memory floor holds whatever the limit"
        );
    }

    #[test]
    fn by_default_the_limit_is_what_memory_holds() {
        let limits = Limits {
            max_running: None,
            min_free: 2 * GIB,
        };
        // 10 GiB available, 2 kept free: four agents of 2 GiB fit.
        assert_eq!(room_for(&limits, &machine(10 * GIB, &[]), 2 * GIB), Ok(4));
        // A running agent at 0.5 of its 2 GiB estimate may still grow by
        // 1.5 GiB: 6.5 GiB left, three fit.
        assert_eq!(
            room_for(&limits, &machine(10 * GIB, &[(2 * GIB, GIB / 2)]), 2 * GIB),
            Ok(3)
        );
        let full = room_for(&limits, &machine(3 * GIB, &[(2 * GIB, 0)]), 2 * GIB);
        assert!(matches!(full, Err(Wait::NoRoom { .. })), "{full:?}");
        assert_eq!(
            room_for(&limits, &machine(3 * GIB, &[]), 2 * GIB),
            Ok(1),
            "with nothing running one may always start above the floor"
        );
    }

    #[test]
    fn the_default_floor_is_a_tenth_capped_at_two_gib() {
        assert_eq!(default_min_free(8 * GIB), 8 * GIB / 10);
        assert_eq!(default_min_free(64 * GIB), 2 * GIB);
    }

    #[test]
    fn estimates_are_learned_from_peaks() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(estimate(&store, "claude"), prior_estimate("claude"));
        store.record_agent_peak("a", "claude", 2 * GIB).unwrap();
        assert_eq!(
            estimate(&store, "claude"),
            2 * GIB,
            "a larger peak raises it"
        );
        store.record_agent_peak("b", "tool", 40 * MIB).unwrap();
        store.record_agent_peak("c", "tool", 50 * MIB).unwrap();
        assert_eq!(estimate(&store, "tool"), prior_estimate("tool"));
        store.record_agent_peak("d", "tool", 30 * MIB).unwrap();
        assert_eq!(estimate(&store, "tool"), 50 * MIB, "three seen: trusted");
    }
}
