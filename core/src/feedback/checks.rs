//! One `[checks]` run of a session: the lock that keeps it the only one,
//! the work's snapshot it ran on, the facts recorded when it starts and
//! ends, and the gate `owt ship` / `owt pr` pass through.
//!
//! Invariants: at most one run per session at a time, across processes
//! (an exclusive lock on `$OWT_HOME/run/<id>.checks.lock` held for the
//! whole run); every run is recorded as a `checks` fact when it starts and
//! again when it ends, with its log under `$OWT_HOME/logs/checks/`.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context as _};

use super::excerpt;
use super::run::{Outcome, RunSpec, Running};
use crate::config::{ChecksConfig, ChecksWhen};
use crate::status::feedback::{kind, ChecksFact, ChecksState};
use crate::store::{now_ms, SessionRow, Store};

/// Logs kept per session (older ones are removed when a run starts).
const LOGS_KEPT: usize = 10;

/// What started a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// The agent ended a turn (the session host).
    TurnEnd,
    /// `owt ship`.
    Ship,
    /// `owt pr`.
    Pr,
    /// `owt checks NAME --run`.
    Manual,
}

impl Trigger {
    pub fn as_str(self) -> &'static str {
        match self {
            Trigger::TurnEnd => "turn-end",
            Trigger::Ship => "ship",
            Trigger::Pr => "pr",
            Trigger::Manual => "manual",
        }
    }
}

/// `$OWT_HOME/run/<short_id>.checks.lock`.
pub fn lock_path(home: &Path, short_id: &str) -> PathBuf {
    home.join("run").join(format!("{short_id}.checks.lock"))
}

/// `$OWT_HOME/logs/checks/<short_id>-<unix ms>.log`.
pub fn log_path(home: &Path, short_id: &str, started_at: i64) -> PathBuf {
    home.join("logs")
        .join("checks")
        .join(format!("{short_id}-{started_at}.log"))
}

/// The session's checks lock, if nobody holds it (`Ok(None)`: a run is
/// under way elsewhere).
pub fn try_lock(home: &Path, short_id: &str) -> anyhow::Result<Option<File>> {
    let file = open_lock(home, short_id)?;
    match file.try_lock() {
        Ok(()) => Ok(Some(file)),
        Err(std::fs::TryLockError::WouldBlock) => Ok(None),
        Err(std::fs::TryLockError::Error(e)) => Err(e).context("locking the checks of the session"),
    }
}

/// The session's checks lock, waiting for a run under way elsewhere.
pub fn lock(home: &Path, short_id: &str) -> anyhow::Result<File> {
    let file = open_lock(home, short_id)?;
    file.lock().context("locking the checks of the session")?;
    Ok(file)
}

fn open_lock(home: &Path, short_id: &str) -> anyhow::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let path = lock_path(home, short_id);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(&path)
        .with_context(|| format!("opening {}", path.display()))
}

/// The git tree of the session's whole working state (committed, staged,
/// unstaged, untracked), and whether it differs from the merge base with
/// its base branch (`false`: there is nothing to check).
pub fn work_tree(row: &SessionRow) -> Option<(String, bool)> {
    let mut state =
        crate::guard::snapshot::WorkState::open(&row.worktree_path, &row.base_branch).ok()?;
    state.scan_full().ok()?;
    let tree = state.snapshot?;
    let changed = state.merge_base_tree != Some(tree);
    Some((tree.to_string(), changed))
}

/// The command's argv (split like `command_template`, never a shell).
pub fn argv(command: &str) -> anyhow::Result<Vec<String>> {
    match shlex::split(command) {
        Some(words) if !words.is_empty() => Ok(words),
        _ => bail!("[checks] command {command:?} is not a valid command line (unbalanced quotes, or empty)"),
    }
}

/// A run under way, its lock held.
#[derive(Debug)]
pub struct Begun {
    pub running: Running,
    pub fact: ChecksFact,
    /// The last finished run before this one (for counting attempts).
    pub previous: Option<ChecksFact>,
    _lock: File,
}

/// Failed runs in a row before this one.
fn failures_before(previous: Option<&ChecksFact>) -> u32 {
    previous
        .filter(|p| matches!(p.state, ChecksState::Failed | ChecksState::Cancelled))
        .map_or(0, |p| p.attempt)
}

/// Starts a run holding `lock` and records it as running; a command that
/// cannot start is recorded (and returned) as a failed run.
pub fn begin(
    store: &Store,
    home: &Path,
    row: &SessionRow,
    config: &ChecksConfig,
    trigger: Trigger,
    tree: Option<String>,
    lock: File,
) -> anyhow::Result<Result<Begun, ChecksFact>> {
    let command = config
        .command
        .clone()
        .context("no [checks] command is configured")?;
    let previous = store
        .fact::<ChecksFact>(row.id, kind::CHECKS)?
        .map(|(f, _)| f)
        .filter(|f| f.state != ChecksState::Running);
    let started_at = now_ms();
    let log = log_path(home, &row.short_id, started_at);
    prune_logs(home, &row.short_id);
    let mut fact = ChecksFact {
        state: ChecksState::Running,
        command: command.clone(),
        trigger: trigger.as_str().into(),
        started_at,
        checked_at: started_at,
        duration_ms: None,
        exit_code: None,
        timed_out: false,
        reason: None,
        log: Some(log.to_string_lossy().into_owned()),
        excerpt: None,
        attempt: failures_before(previous.as_ref()),
        max_attempts: config.max_attempts,
        fixing: false,
        tree,
    };
    let spec = RunSpec {
        argv: argv(&command)?,
        cwd: row.worktree_path.clone(),
        timeout: Duration::from_secs(config.timeout.max(1)),
        log,
        env: vec![
            ("OWT_CHECKS".into(), "1".into()),
            ("OWT_SESSION_NAME".into(), row.name.clone()),
        ],
    };
    match Running::start(&spec) {
        Ok(running) => {
            store.record_fact(row.id, kind::CHECKS, &fact)?;
            Ok(Ok(Begun {
                running,
                fact,
                previous,
                _lock: lock,
            }))
        }
        Err(why) => {
            fact.state = ChecksState::Failed;
            fact.reason = Some(format!("could not start: {why}"));
            fact.excerpt = Some(fact.reason.clone().unwrap_or_default());
            fact.attempt += 1;
            fact.duration_ms = Some(0);
            store.record_fact(row.id, kind::CHECKS, &fact)?;
            Ok(Err(fact))
        }
    }
}

/// Records how a run ended. `fixing`: owt will type the failure into the
/// agent (the caller does, right after).
pub fn end(
    store: &Store,
    row: &SessionRow,
    begun: Begun,
    outcome: &Outcome,
    config: &ChecksConfig,
    may_fix: bool,
) -> anyhow::Result<ChecksFact> {
    let mut fact = begun.fact;
    fact.duration_ms = Some(outcome.duration.as_millis() as u64);
    fact.exit_code = outcome.exit_code;
    fact.timed_out = outcome.timed_out;
    fact.checked_at = fact.started_at;
    if outcome.cancelled {
        fact.state = ChecksState::Cancelled;
        fact.reason.get_or_insert_with(|| "a new turn began".into());
    } else if outcome.passed() {
        fact.state = ChecksState::Passed;
        fact.attempt = 0;
    } else {
        fact.state = ChecksState::Failed;
        fact.attempt += 1;
        if outcome.timed_out {
            fact.reason = Some(format!("timed out after {} s", config.timeout.max(1)));
        } else if let (None, Some(signal)) = (outcome.exit_code, outcome.signal) {
            fact.reason = Some(format!("killed by signal {signal}"));
        }
        let mut tail = excerpt::tail(&outcome.tail, config.excerpt_lines as usize);
        if outcome.timed_out {
            tail.push_str(&format!(
                "\n[owt: killed after {} s, the [checks] timeout]",
                config.timeout.max(1)
            ));
        }
        fact.excerpt = Some(tail);
        fact.fixing = may_fix && config.auto_fix && fact.attempt <= config.max_attempts;
    }
    store.record_fact(row.id, kind::CHECKS, &fact)?;
    Ok(fact)
}

/// Records that a run was cancelled before it could end normally.
pub fn cancel(
    store: &Store,
    row: &SessionRow,
    mut begun: Begun,
    reason: &str,
) -> anyhow::Result<ChecksFact> {
    begun.running.cancel();
    let outcome = begun.running.poll();
    let mut fact = begun.fact;
    fact.state = ChecksState::Cancelled;
    fact.reason = Some(reason.into());
    fact.duration_ms = outcome.map(|o| o.duration.as_millis() as u64);
    store.record_fact(row.id, kind::CHECKS, &fact)?;
    Ok(fact)
}

/// Removes all but the newest [`LOGS_KEPT`] logs of the session.
fn prune_logs(home: &Path, short_id: &str) {
    let dir = home.join("logs").join("checks");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return;
    };
    let prefix = format!("{short_id}-");
    let mut logs: Vec<(i64, PathBuf)> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let ms = name
                .strip_prefix(&prefix)?
                .strip_suffix(".log")?
                .parse::<i64>()
                .ok()?;
            Some((ms, e.path()))
        })
        .collect();
    logs.sort();
    let excess = logs.len().saturating_sub(LOGS_KEPT - 1);
    for (_, path) in logs.into_iter().take(excess) {
        let _ = std::fs::remove_file(path);
    }
}

/// Runs the checks now, in this process, waiting for a run under way
/// elsewhere first (whose result is reused when it covered the same work).
pub fn run_now(
    store: &Store,
    home: &Path,
    row: &SessionRow,
    config: &ChecksConfig,
    trigger: Trigger,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<ChecksFact> {
    let lock = match try_lock(home, &row.short_id)? {
        Some(lock) => lock,
        None => {
            progress(&format!(
                "Waiting for the checks of {} already running…",
                row.name
            ));
            lock(home, &row.short_id)?
        }
    };
    let tree = work_tree(row);
    if let Some((last, _)) = store.fact::<ChecksFact>(row.id, kind::CHECKS)? {
        let same_work = tree
            .as_ref()
            .is_some_and(|(t, _)| last.tree.as_ref() == Some(t));
        if same_work
            && last.state == ChecksState::Passed
            && last.command == config.command.clone().unwrap_or_default()
        {
            return Ok(last);
        }
    }
    progress(&format!(
        "Running the checks of {}: {}",
        row.name,
        config.command.as_deref().unwrap_or("")
    ));
    let begun = match begin(
        store,
        home,
        row,
        config,
        trigger,
        tree.map(|(t, _)| t),
        lock,
    )? {
        Ok(begun) => begun,
        Err(failed) => return Ok(failed),
    };
    let mut begun = begun;
    let outcome = loop {
        if let Some(outcome) = begun.running.poll() {
            break outcome;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    end(store, row, begun, &outcome, config, false)
}

/// What the gate before shipping found.
#[derive(Debug, Clone, PartialEq)]
pub enum Gate {
    /// No `[checks] command`.
    NotConfigured,
    /// `--no-checks`.
    Skipped,
    /// `when = "manual"` and no failed run of this work on record.
    NotRun,
    Passed(ChecksFact),
}

/// The checks before `owt ship` / `owt pr`: run them on the work as it is
/// (unless a passing run of exactly this work is on record); an error,
/// naming the log and the output's end, when they fail.
pub fn gate(
    store: &Store,
    home: &Path,
    row: &SessionRow,
    config: &ChecksConfig,
    trigger: Trigger,
    skip: bool,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<Gate> {
    if config.command.is_none() {
        return Ok(Gate::NotConfigured);
    }
    if skip {
        return Ok(Gate::Skipped);
    }
    let what = match trigger {
        Trigger::Pr => "no pull request was opened or updated",
        _ => "nothing was shipped",
    };
    if config.when == ChecksWhen::Manual {
        let last = store
            .fact::<ChecksFact>(row.id, kind::CHECKS)?
            .map(|(f, _)| f);
        let tree = work_tree(row).map(|(t, _)| t);
        return match last {
            Some(last) if last.state == ChecksState::Failed && last.tree == tree => {
                Err(refusal(row, &last, what))
            }
            _ => Ok(Gate::NotRun),
        };
    }
    let fact = run_now(store, home, row, config, trigger, progress)?;
    match fact.state {
        ChecksState::Passed => Ok(Gate::Passed(fact)),
        _ => Err(refusal(row, &fact, what)),
    }
}

fn refusal(row: &SessionRow, fact: &ChecksFact, what: &str) -> anyhow::Error {
    let mut text = format!(
        "the checks failed on the work of `{}` ({}); {what}",
        row.name,
        fact.why()
    );
    if let Some(tail) = fact.excerpt.as_deref().filter(|t| !t.is_empty()) {
        let last: Vec<&str> = tail.lines().collect();
        let last = &last[last.len().saturating_sub(10)..];
        text.push_str(&format!("\nLast lines of the output:\n{}", last.join("\n")));
    }
    if let Some(log) = &fact.log {
        text.push_str(&format!("\nFull log: {log}"));
    }
    text.push_str("\n(fix them, or pass --no-checks to go ahead anyway)");
    anyhow::anyhow!(text)
}
