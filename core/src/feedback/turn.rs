//! The feedback loop a session host runs beside its agent: when the
//! agent's turn ends with new work, run `[checks]` (turn-end); on failure
//! type it back (`auto_fix`, up to `max_attempts`); a new turn cancels an
//! outdated run; once the work passes, the pull request's part
//! (`ops::pr::after_turn`: push the fixes to an open one, or open one with
//! `[pr] auto`), asked through [`TurnHooks`], since the use cases are
//! above the session host that runs this loop.
//!
//! Invariants: one run at a time (the checks lock, see
//! [`super::checks`]); text is typed only while the agent's turn is over
//! (never into a permission dialog); everything it learns goes to the
//! store as facts, so every surface (and `derive_status`) sees it.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use owt_protocol::Status;

use super::checks::{self, Begun, Trigger};
use super::messages;
use crate::config::{ChecksConfig, ChecksWhen, Config};
use crate::status::feedback::{kind, turn_over, ChecksFact, ChecksSetup, ChecksState};
use crate::status::{derive_status, Derived, SessionFacts};
use crate::store::{now_ms, SessionRow, Store};

/// How often the loop looks at the session's facts.
const TICK: Duration = Duration::from_millis(250);

/// What the loop asks of the use cases (`crate::ops`, a layer above the
/// session host): given by the process that runs the host
/// (`ops::host::turn_hooks`).
#[derive(Clone, Copy)]
pub struct TurnHooks {
    /// The configuration that applies in a session's worktree.
    pub config: fn(&Path) -> anyhow::Result<Config>,
    /// The work passed its checks: the pull request's part.
    pub after_turn: fn(&Path, &SessionRow, &Config),
}

/// What the loop needs from its session host.
pub struct HostSide {
    pub session_id: i64,
    pub home: PathBuf,
    /// Types text into the agent as one input, then Enter.
    pub type_text: Box<dyn Fn(&str) + Send>,
    /// The agent is gone (the host is about to exit).
    pub exiting: Box<dyn Fn() -> bool + Send>,
    pub hooks: TurnHooks,
}

/// The feedback loop as its session host drives it: the host's monitor
/// looks every [`TICK`] on its own store connection ([`Feedback::poll`]);
/// when a turn ends with work to look at, a thread of the loop's own
/// (`feedback`) runs what may block — the configuration, the work tree, the
/// checks run, the pull request's part — on a connection of its own, and
/// ends once no run is going on, handing the loop back. An idle session
/// has no such thread and no second connection.
pub struct Feedback {
    slot: Slot,
    next: Instant,
}

enum Slot {
    /// Nothing running: the monitor looks.
    Idle(Box<(Loop, HostSide)>),
    /// The `feedback` thread has it.
    Busy(std::thread::JoinHandle<Option<(Loop, HostSide)>>),
    /// The session or the agent ended (or the thread could not start).
    Done,
}

/// What one look found.
enum Step {
    Nothing,
    /// The turn is over with work to look at.
    Evaluate(Box<(SessionRow, SessionFacts)>),
    /// The session is gone, or its agent exited.
    Ended,
}

impl Feedback {
    pub fn new(side: HostSide) -> Feedback {
        Feedback {
            slot: Slot::Idle(Box::new((Loop::default(), side))),
            next: Instant::now(),
        }
    }

    /// One look at the session's facts on `store`, at most every [`TICK`]
    /// (call it more often); starts the `feedback` thread when there is
    /// work, and takes the loop back once that thread ended.
    pub fn poll(&mut self, store: &Store) {
        let now = Instant::now();
        if now < self.next {
            return;
        }
        self.next = now + TICK;
        self.slot = match std::mem::replace(&mut self.slot, Slot::Done) {
            Slot::Busy(thread) if !thread.is_finished() => Slot::Busy(thread),
            Slot::Busy(thread) => match thread.join() {
                Ok(Some(back)) => Slot::Idle(Box::new(back)),
                Ok(None) => Slot::Done,
                Err(_) => {
                    tracing::error!("the feedback loop's thread panicked; no more checks");
                    Slot::Done
                }
            },
            Slot::Idle(back) => look(*back, store),
            Slot::Done => Slot::Done,
        };
    }

    /// Whether the `feedback` thread is running.
    pub fn busy(&self) -> bool {
        matches!(self.slot, Slot::Busy(_))
    }
}

/// The monitor's look: the cheap part (read the facts, derive the status)
/// here, the rest on the `feedback` thread.
fn look((mut state, side): (Loop, HostSide), store: &Store) -> Slot {
    if (side.exiting)() {
        // Nothing runs while idle: nothing to cancel.
        return Slot::Done;
    }
    match state.look(store, &side) {
        Ok(Step::Nothing) => Slot::Idle(Box::new((state, side))),
        Ok(Step::Ended) => Slot::Done,
        Ok(Step::Evaluate(turn)) => {
            let spawned = std::thread::Builder::new()
                .name("feedback".into())
                .spawn(move || work(state, side, turn));
            match spawned {
                Ok(thread) => Slot::Busy(thread),
                Err(e) => {
                    tracing::warn!("feedback loop: starting its thread: {e}; no more checks");
                    Slot::Done
                }
            }
        }
        Err(e) => {
            tracing::warn!("feedback loop: {e:#}");
            Slot::Idle(Box::new((state, side)))
        }
    }
}

/// The `feedback` thread: evaluates the turn that ended, follows the
/// checks run it began, and hands the loop back once none is going on
/// (`None`: the session or its agent ended).
fn work(
    mut state: Loop,
    side: HostSide,
    turn: Box<(SessionRow, SessionFacts)>,
) -> Option<(Loop, HostSide)> {
    let store = match Store::open(&side.home) {
        Ok(store) => store,
        Err(e) => {
            tracing::warn!("feedback loop: opening the store: {e}");
            return Some((state, side));
        }
    };
    let mut step = Step::Evaluate(turn);
    loop {
        match step {
            Step::Ended => {
                state.stop(&store, "the session ended");
                return None;
            }
            Step::Evaluate(turn) => {
                let (row, facts) = *turn;
                if let Err(e) = state.evaluate(&store, &side, &row, &facts) {
                    tracing::warn!("feedback loop: {e:#}");
                }
            }
            Step::Nothing if state.current.is_none() => return Some((state, side)),
            Step::Nothing => {}
        }
        std::thread::sleep(TICK);
        if (side.exiting)() {
            state.stop(&store, "the agent exited");
            return None;
        }
        step = state.look(&store, &side).unwrap_or_else(|e| {
            tracing::warn!("feedback loop: {e:#}");
            Step::Nothing
        });
    }
}

#[derive(Default)]
struct Loop {
    /// The agent may have new work to check once its turn is over.
    need_eval: bool,
    seen_input: Option<i64>,
    started: bool,
    current: Option<(Begun, SessionRow, Config)>,
}

/// The agent's own status: the facts without the feedback loops'.
fn agent_status(facts: &SessionFacts) -> Derived {
    let mut own = facts.clone();
    own.feedback = Default::default();
    derive_status(&own, now_ms())
}

impl Loop {
    fn stop(&mut self, store: &Store, why: &str) {
        if let Some((begun, row, _)) = self.current.take() {
            if let Err(e) = checks::cancel(store, &row, begun, why) {
                tracing::warn!("recording the cancelled checks: {e:#}");
            }
        }
    }

    /// One look: follows a checks run going on; says when the turn is
    /// over with work to evaluate, or the session ended.
    fn look(&mut self, store: &Store, side: &HostSide) -> anyhow::Result<Step> {
        let Some(row) = store.session_by_id(side.session_id)? else {
            return Ok(Step::Ended);
        };
        let facts = SessionFacts::from_rows(row.created_at, &store.facts(row.id)?);
        if facts.exit.is_some() {
            return Ok(Step::Ended);
        }
        let agent = agent_status(&facts);
        if !self.started || facts.last_input_at != self.seen_input {
            self.started = true;
            self.seen_input = facts.last_input_at;
            self.need_eval = true;
        }
        if agent.status == Status::Working {
            self.need_eval = true;
        }
        if let Some((begun, _, _)) = self.current.as_mut() {
            let new_input = facts
                .last_input_at
                .is_some_and(|at| at > begun.fact.started_at);
            if new_input || agent.status == Status::Working {
                tracing::info!("a new turn began: cancelling the outdated checks run");
                self.stop(store, "a new turn began");
                return Ok(Step::Nothing);
            }
            if let Some(outcome) = begun.running.poll() {
                if let Some((begun, row, config)) = self.current.take() {
                    let fact = checks::end(store, &row, begun, &outcome, &config.checks, true)?;
                    self.after_run(store, side, &row, &config, &fact);
                }
            }
            return Ok(Step::Nothing);
        }
        if self.need_eval && turn_over(agent.status, agent.exit_code) {
            return Ok(Step::Evaluate(Box::new((row, facts))));
        }
        Ok(Step::Nothing)
    }

    /// The turn is over: run the checks if the work changed since they
    /// last ran on it (or record why not).
    fn evaluate(
        &mut self,
        store: &Store,
        side: &HostSide,
        row: &SessionRow,
        facts: &SessionFacts,
    ) -> anyhow::Result<()> {
        let config = match (side.hooks.config)(&row.worktree_path) {
            Ok(config) => config,
            Err(e) => {
                self.need_eval = false;
                anyhow::bail!("reading the configuration for the checks: {e:#}");
            }
        };
        let checks_config = &config.checks;
        record_setup(store, row, facts, checks_config)?;
        if checks_config.command.is_none() || checks_config.when != ChecksWhen::TurnEnd {
            self.need_eval = false;
            (side.hooks.after_turn)(&side.home, row, &config);
            return Ok(());
        }
        let Some(lock) = checks::try_lock(&side.home, &row.short_id)? else {
            // `owt checks --run` or `owt ship` is running them: look again
            // once it is done.
            return Ok(());
        };
        self.need_eval = false;
        let tree = checks::work_tree(row);
        if !needs_a_run(store, side, row, facts, &config, tree.as_ref())? {
            return Ok(());
        }
        tracing::info!("the agent's turn is over: running the checks");
        match checks::begin(
            store,
            &side.home,
            row,
            checks_config,
            Trigger::TurnEnd,
            tree.map(|(t, _)| t),
            lock,
        )? {
            Ok(begun) => self.current = Some((begun, row.clone(), config)),
            Err(failed) => tracing::warn!("the checks could not start: {:?}", failed.reason),
        }
        Ok(())
    }

    fn after_run(
        &mut self,
        store: &Store,
        side: &HostSide,
        row: &SessionRow,
        config: &Config,
        fact: &ChecksFact,
    ) {
        tracing::info!(summary = %fact.summary(), "checks finished");
        match fact.state {
            ChecksState::Failed if fact.fixing => {
                // Only into an agent whose turn is still over.
                let facts = store
                    .facts(row.id)
                    .map(|rows| SessionFacts::from_rows(row.created_at, &rows));
                let ready = facts.is_ok_and(|f| {
                    let agent = agent_status(&f);
                    turn_over(agent.status, agent.exit_code) && agent.status != Status::Exited
                });
                if ready {
                    (side.type_text)(&messages::checks_failed(fact));
                } else {
                    let mut told = fact.clone();
                    told.fixing = false;
                    let _ = store.record_fact(row.id, kind::CHECKS, &told);
                }
            }
            ChecksState::Passed => (side.hooks.after_turn)(&side.home, row, config),
            _ => {}
        }
    }
}

/// Records when the checks run for this worktree (`none` without a
/// command), when that changed.
fn record_setup(
    store: &Store,
    row: &SessionRow,
    facts: &SessionFacts,
    checks_config: &ChecksConfig,
) -> anyhow::Result<()> {
    let setup = ChecksSetup {
        when: match checks_config.command {
            Some(_) => checks_config.when.as_str().to_string(),
            None => "none".to_string(),
        },
    };
    if facts.feedback.setup.as_ref() != Some(&setup) {
        store.record_fact(row.id, kind::CHECKS_SETUP, &setup)?;
    }
    Ok(())
}

/// Whether the work tree `tree` (its id, and whether it differs from the
/// base) needs a run of the checks. Not when it has no changes (recorded
/// as skipped), when the last result on the same tree passed or was
/// skipped (it holds, recorded again), or failed and was told since the
/// agent's last input.
fn needs_a_run(
    store: &Store,
    side: &HostSide,
    row: &SessionRow,
    facts: &SessionFacts,
    config: &Config,
    tree: Option<&(String, bool)>,
) -> anyhow::Result<bool> {
    let checks_config = &config.checks;
    let last = facts.feedback.checks.as_ref();
    let same_tree = |t: &str| last.is_some_and(|l| l.tree.as_deref() == Some(t));
    let now = now_ms();
    match tree {
        Some((t, false)) => {
            let fact = ChecksFact {
                state: ChecksState::Skipped,
                command: checks_config.command.clone().unwrap_or_default(),
                trigger: Trigger::TurnEnd.as_str().into(),
                started_at: now,
                checked_at: now,
                duration_ms: None,
                exit_code: None,
                timed_out: false,
                reason: Some("no changes against the base".into()),
                log: None,
                excerpt: None,
                attempt: 0,
                max_attempts: checks_config.max_attempts,
                fixing: false,
                tree: Some(t.clone()),
            };
            store.record_fact(row.id, kind::CHECKS, &fact)?;
            Ok(false)
        }
        Some((t, true))
            if same_tree(t)
                && last.is_some_and(|l| {
                    matches!(l.state, ChecksState::Passed | ChecksState::Skipped)
                }) =>
        {
            // The turn changed nothing the checks saw: the result holds.
            if let Some(last) = last {
                let mut again = last.clone();
                again.checked_at = now;
                store.record_fact(row.id, kind::CHECKS, &again)?;
                if again.state == ChecksState::Passed {
                    (side.hooks.after_turn)(&side.home, row, config);
                }
            }
            Ok(false)
        }
        Some((t, true))
            if same_tree(t)
                && last.is_some_and(|l| {
                    l.state == ChecksState::Failed && l.current(facts.last_input_at)
                }) =>
        {
            Ok(false)
        }
        _ => Ok(true),
    }
}
