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
use std::time::Duration;

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

/// Runs until the agent exits or the session is deleted.
pub fn run(side: HostSide) {
    let store = match Store::open(&side.home) {
        Ok(store) => store,
        Err(e) => {
            tracing::warn!("feedback loop: opening the store: {e}; no checks in this session");
            return;
        }
    };
    let mut state = Loop::default();
    loop {
        if (side.exiting)() {
            state.stop(&store, "the agent exited");
            return;
        }
        match state.tick(&store, &side) {
            Ok(true) => {}
            Ok(false) => {
                state.stop(&store, "the session ended");
                return;
            }
            Err(e) => tracing::warn!("feedback loop: {e:#}"),
        }
        std::thread::sleep(TICK);
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

    /// One look; `Ok(false)` once there is nothing left to do.
    fn tick(&mut self, store: &Store, side: &HostSide) -> anyhow::Result<bool> {
        let Some(row) = store.session_by_id(side.session_id)? else {
            return Ok(false);
        };
        let facts = SessionFacts::from_rows(row.created_at, &store.facts(row.id)?);
        if facts.exit.is_some() {
            return Ok(false);
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
                return Ok(true);
            }
            if let Some(outcome) = begun.running.poll() {
                if let Some((begun, row, config)) = self.current.take() {
                    let fact = checks::end(store, &row, begun, &outcome, &config.checks, true)?;
                    self.after_run(store, side, &row, &config, &fact);
                }
            }
            return Ok(true);
        }
        if self.need_eval && turn_over(agent.status, agent.exit_code) {
            self.evaluate(store, side, &row, &facts)?;
        }
        Ok(true)
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
