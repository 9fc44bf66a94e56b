//! The pull-request watcher: run by whichever long-lived owt process there
//! is (`owt lsp`, or `owt watch` headless), it looks at each open pull
//! request of a repository through the forge CLI, records what it sees as
//! the session's `pr` fact, and routes to the agent: a failed CI run (its
//! failing log's end, up to `[checks] max_attempts` times), new review
//! comments (each once, with `path:line`), a merge conflict with the base
//! (the `owt sync` hint); a merged pull request is cleaned up per
//! `[pr] on_merged`.
//!
//! Invariants: never two watchers for one pull request (a lease in the
//! store, renewed at each look, expiring if its holder dies); looks back
//! off from `[pr] poll_interval` to `poll_max` while nothing changes, and
//! wait out a rate limit until the forge says it resets; nothing is typed
//! into an agent that is not live or shows a permission dialog (it is told
//! at a later look).

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use owt_protocol::guard::GuardPair;
use owt_protocol::WatchEvent;

use super::conflicts;
use super::Context;
use crate::config::OnMerged;
use crate::feedback::messages::{self, Comment};
use crate::forge::{ForgeError, PrSnapshot};
use crate::status::feedback::{kind, CiState, PrFact, PrState};
use crate::store::{now_ms, SessionRow};

mod held;
mod outside;
use held::Held;

/// Who holds a lease: this process, from this moment.
pub fn holder_id() -> String {
    format!("{}@{}", std::process::id(), now_ms())
}

fn event(row: &SessionRow, pr: u64, kind: &str, detail: String, told: bool) -> WatchEvent {
    WatchEvent {
        session: row.name.clone(),
        pr,
        kind: kind.into(),
        detail,
        told_agent: told,
    }
}

/// Looks at every open pull request of the repository that is due (every
/// one with `force`) and returns what happened.
pub fn poll(ctx: &mut Context, holder: &str, force: bool) -> anyhow::Result<Vec<WatchEvent>> {
    let mut events = Vec::new();
    let now = now_ms();
    for row in ctx.store.sessions(ctx.repo_row.id)? {
        let Some((fact, _)) = ctx.store.fact::<PrFact>(row.id, kind::PR)? else {
            continue;
        };
        if fact.state != PrState::Open {
            continue;
        }
        if !force && fact.next_poll_at.is_some_and(|at| at > now) {
            continue;
        }
        let poll_max = ctx.config.config.pr.poll_max.max(1) as i64 * 1000;
        let ttl = (fact.interval_ms as i64).max(poll_max) * 2 + 60_000;
        if !ctx
            .store
            .take_lease(row.id, kind::PR_LEASE, holder, now, ttl)?
        {
            if force {
                events.push(event(
                    &row,
                    fact.number,
                    "leased-elsewhere",
                    "another owt process watches this pull request".into(),
                    false,
                ));
            }
            continue;
        }
        poll_one(ctx, &row, fact, &mut events)?;
    }
    Ok(events)
}

/// Gives up every lease `holder` has in the repository.
pub fn release_all(ctx: &Context, holder: &str) {
    if let Ok(rows) = ctx.store.sessions(ctx.repo_row.id) {
        for row in rows {
            let _ = ctx.store.release_lease(row.id, kind::PR_LEASE, holder);
        }
    }
}

fn poll_one(
    ctx: &mut Context,
    row: &SessionRow,
    mut fact: PrFact,
    events: &mut Vec<WatchEvent>,
) -> anyhow::Result<()> {
    let config = ctx.config.config.pr.clone();
    let now = now_ms();
    let min_ms = config.poll_interval.max(1) * 1000;
    let max_ms = (config.poll_max.max(1) * 1000).max(min_ms);
    let backoff = |interval: u64| (interval.max(min_ms) * 2).min(max_ms);
    let snapshot = crate::ops::pr::forge_of_fact(&fact, config.cli.as_deref())
        .and_then(|forge| forge.view_pr(fact.number).map(|s| (forge, s)));
    fact.polled_at = Some(now);
    let (forge, snapshot) = match snapshot {
        Ok(found) => found,
        Err(e) => {
            let (next, kind) = match &e {
                ForgeError::RateLimited { reset_at, .. } => (
                    reset_at
                        .map(|s| s * 1000 + 1000)
                        .filter(|at| *at > now)
                        .unwrap_or(now + max_ms as i64),
                    "rate-limited",
                ),
                ForgeError::Unauthenticated { .. } | ForgeError::NoCli(_) => {
                    (now + max_ms as i64, "error")
                }
                _ => {
                    fact.interval_ms = backoff(fact.interval_ms);
                    (now + fact.interval_ms as i64, "error")
                }
            };
            fact.next_poll_at = Some(next);
            fact.error = Some(e.to_string());
            ctx.store.record_fact(row.id, kind::PR, &fact)?;
            events.push(event(row, fact.number, kind, e.to_string(), false));
            return Ok(());
        }
    };
    let before = fact.clone();
    let changed = apply(ctx, row, &mut fact, &snapshot, &forge, events)?;
    if fact.state == PrState::Merged || fact.state == PrState::Closed {
        return Ok(());
    }
    let changed = changed
        || (before.ci, before.review, &before.mergeable, &before.head)
            != (fact.ci, fact.review, &fact.mergeable, &fact.head);
    fact.interval_ms = if changed || fact.ci == CiState::Pending {
        min_ms
    } else {
        backoff(fact.interval_ms)
    };
    fact.next_poll_at = Some(now + fact.interval_ms as i64);
    ctx.store.record_fact(row.id, kind::PR, &fact)?;
    if events.iter().all(|e| e.session != row.name) {
        events.push(event(
            row,
            fact.number,
            "polled",
            format!(
                "ci {}, review {}, {}",
                kebab(&fact.ci),
                kebab(&fact.review),
                fact.mergeable
            ),
            false,
        ));
    }
    Ok(())
}

fn kebab<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// Folds a snapshot into the fact and routes what is new; returns whether
/// something new was told or seen.
fn apply(
    ctx: &mut Context,
    row: &SessionRow,
    fact: &mut PrFact,
    pr: &PrSnapshot,
    forge: &crate::forge::Forge,
    events: &mut Vec<WatchEvent>,
) -> anyhow::Result<bool> {
    take_snapshot(fact, pr);
    if pr.state != PrState::Open {
        ctx.store.record_fact(row.id, kind::PR, &*fact)?;
        ended(ctx, row, fact.number, pr.state, events);
        return Ok(true);
    }
    let tellable = conflicts::can_be_told(&ctx.store, row);
    let mut news = tell_ci(ctx, row, fact, pr, forge, tellable, events);
    news |= tell_comments(ctx, row, fact, pr, tellable, events);
    news |= tell_conflict(ctx, row, fact, pr, tellable, events);
    Ok(news)
}

/// What the forge says of the pull request now, into its fact.
fn take_snapshot(fact: &mut PrFact, pr: &PrSnapshot) {
    fact.state = pr.state;
    fact.draft = pr.draft;
    fact.ci = pr.ci;
    fact.review = pr.review;
    fact.mergeable = pr.mergeable.clone();
    fact.head = pr.head.clone().or(fact.head.take());
    if !pr.url.is_empty() {
        fact.url = pr.url.clone();
    }
    fact.error = None;
}

/// Pull request `n` was merged or closed: said, and a merged one's session
/// deleted under `[pr] on_merged = "delete"`.
fn ended(
    ctx: &mut Context,
    row: &SessionRow,
    n: u64,
    state: PrState,
    events: &mut Vec<WatchEvent>,
) {
    if state == PrState::Closed {
        events.push(event(
            row,
            n,
            "closed",
            format!("#{n} was closed without merging"),
            false,
        ));
        return;
    }
    let _ = ctx
        .store
        .add_event(ctx.repo_row.id, &row.name, "pr", &format!("merged #{n}"));
    events.push(event(row, n, "merged", format!("#{n} was merged"), false));
    if ctx.config.config.pr.on_merged == OnMerged::Delete {
        let deleted =
            crate::ops::delete::delete_session(ctx, &row.name, false, "merged", &mut |line| {
                tracing::info!("{line}")
            });
        events.push(match deleted {
            Ok(_) => event(
                row,
                n,
                "deleted",
                "deleted ([pr] on_merged = \"delete\")".into(),
                false,
            ),
            Err(e) => event(row, n, "error", format!("kept: {e:#}"), false),
        });
    }
}

/// CI: each failing head told once (with the failed checks' logs), up to
/// the attempts; then the session needs the user. Whether there is news.
fn tell_ci(
    ctx: &Context,
    row: &SessionRow,
    fact: &mut PrFact,
    pr: &PrSnapshot,
    forge: &crate::forge::Forge,
    tellable: bool,
    events: &mut Vec<WatchEvent>,
) -> bool {
    let n = fact.number;
    match pr.ci {
        CiState::Failing if fact.ci_told_for != pr.head => {
            let names: Vec<String> = pr.failing.iter().map(|c| c.name.clone()).collect();
            if fact.ci_max_attempts > 0 && fact.ci_attempt >= fact.ci_max_attempts {
                fact.ci_gave_up = true;
                fact.ci_told_for = pr.head.clone();
                events.push(event(
                    row,
                    n,
                    "ci-failed",
                    format!(
                        "{} failed again; {} fixes tried, the session needs you",
                        names.join(", "),
                        fact.ci_attempt
                    ),
                    false,
                ));
                return true;
            }
            if !tellable {
                return false;
            }
            let text = messages::ci_failed(
                n,
                &names,
                &failed_logs(forge, pr),
                fact.ci_attempt + 1,
                fact.ci_max_attempts,
            );
            let told = crate::session::send(&ctx.home, row, &text, true).is_ok();
            if told {
                fact.ci_attempt += 1;
                fact.ci_told_for = pr.head.clone();
            }
            events.push(event(row, n, "ci-failed", names.join(", "), told));
            true
        }
        CiState::Passing => {
            fact.ci_attempt = 0;
            fact.ci_gave_up = false;
            false
        }
        _ => false,
    }
}

/// The logs of the first three failed checks (or where to find them).
fn failed_logs(forge: &crate::forge::Forge, pr: &PrSnapshot) -> String {
    let mut logs = Vec::new();
    for check in pr.failing.iter().take(3) {
        match forge.failed_log(check) {
            Ok(log) if !log.is_empty() => {
                logs.push(format!("[{}] {}\n{log}", check.name, check.url))
            }
            Ok(_) => logs.push(format!("[{}] {}", check.name, check.url)),
            Err(e) => logs.push(format!(
                "[{}] {} (log not available: {e})",
                check.name, check.url
            )),
        }
    }
    logs.join("\n")
}

/// Review comments: each told once. Whether there is news.
fn tell_comments(
    ctx: &Context,
    row: &SessionRow,
    fact: &mut PrFact,
    pr: &PrSnapshot,
    tellable: bool,
    events: &mut Vec<WatchEvent>,
) -> bool {
    let n = fact.number;
    let authors = &ctx.config.config.feedback.comment_authors;
    let news = outside::note_outside_comments(authors, row, fact, pr, events);
    let fresh: Vec<&crate::forge::ForgeComment> = pr
        .comments
        .iter()
        .filter(|c| !fact.told_comments.contains(&c.id))
        .filter(|c| authors.routes(&c.author, c.collaborator))
        .collect();
    if fresh.is_empty() || !tellable {
        return news;
    }
    let comments: Vec<Comment> = fresh
        .iter()
        .map(|c| Comment {
            author: c.author.clone(),
            place: c.place.clone(),
            body: c.body.clone(),
        })
        .collect();
    let told = crate::session::send(
        &ctx.home,
        row,
        &messages::review_comments(n, &comments),
        true,
    )
    .is_ok();
    if told {
        fact.told_comments
            .extend(fresh.iter().map(|c| c.id.clone()));
    }
    events.push(event(
        row,
        n,
        "review-comment",
        fresh
            .iter()
            .map(|c| match &c.place {
                Some(place) => format!("@{} on {place}", c.author),
                None => format!("@{}", c.author),
            })
            .collect::<Vec<_>>()
            .join(", "),
        told,
    ));
    true
}

/// A conflict with the base: the `owt sync` hint, once per head. Whether
/// there is news.
fn tell_conflict(
    ctx: &Context,
    row: &SessionRow,
    fact: &mut PrFact,
    pr: &PrSnapshot,
    tellable: bool,
    events: &mut Vec<WatchEvent>,
) -> bool {
    if pr.mergeable != "conflicting" || fact.conflict_told_for == pr.head || !tellable {
        return false;
    }
    let n = fact.number;
    let text = messages::pr_conflict(n, &row.name, &row.base_branch);
    let told = crate::session::send(&ctx.home, row, &text, true).is_ok();
    if told {
        fact.conflict_told_for = pr.head.clone();
    }
    events.push(event(
        row,
        n,
        "conflict",
        format!("#{n} conflicts with {}", row.base_branch),
        told,
    ));
    true
}

/// Where a watcher's Conflict Guard pass takes the guard's pairs from.
pub enum GuardPairs {
    /// Not now (a live guard is starting): asked again at the next look.
    NotYet,
    /// Computed by the pass itself, which records the guard's facts too
    /// (`owt watch`, or `owt lsp` while its live guard is off).
    Compute,
    /// The pairs of a live engine of the same repository over the files
    /// on disk (unsaved buffers left out), whose owner records the guard's
    /// facts: `owt lsp`, so that a second engine is not built from scratch
    /// (every checkout asked or walked, every pair merged) every pass.
    Live(Vec<GuardPair>),
}

/// What a watcher asks for the guard's pairs at each pass.
pub type PairSource = Box<dyn Fn() -> GuardPairs + Send>;

/// Runs until `stop`: a look at every due pull request each second, and
/// (with `guard`) a Conflict Guard pass routing new conflicts every
/// `[pr] poll_interval` (at least 30 s). `on_event` sees what happened.
pub fn run(
    dir: &Path,
    guard: bool,
    stop: &AtomicBool,
    on_event: &mut dyn FnMut(&WatchEvent),
) -> anyhow::Result<()> {
    let source: Option<PairSource> = guard.then(|| Box::new(|| GuardPairs::Compute) as PairSource);
    run_with(dir, source.as_ref(), stop, on_event)
}

/// [`run`], the guard's pairs taken from `source` (no guard pass without).
pub fn run_with(
    dir: &Path,
    source: Option<&PairSource>,
    stop: &AtomicBool,
    on_event: &mut dyn FnMut(&WatchEvent),
) -> anyhow::Result<()> {
    let holder = holder_id();
    let mut last_guard: Option<std::time::Instant> = None;
    let mut result = Ok(());
    let mut held: Option<Held> = None;
    while !stop.load(Ordering::SeqCst) {
        let reopen = held.as_ref().is_none_or(Held::stale);
        if reopen {
            // The old context (its store connection) goes before the new
            // one opens.
            held = None;
            match Held::open(dir) {
                Ok(h) => held = Some(h),
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        let Some(Held { ctx, .. }) = held.as_mut() else {
            break;
        };
        match poll(ctx, &holder, false) {
            Ok(events) => events
                .iter()
                .filter(|e| e.kind != "polled")
                .for_each(&mut *on_event),
            Err(e) => tracing::warn!("watching pull requests: {e:#}"),
        }
        let guard_every = Duration::from_secs(ctx.config.config.pr.poll_interval.max(30));
        let tell = ctx.config.config.feedback.conflicts == crate::config::ConflictFeedback::Tell;
        let due = last_guard.is_none_or(|t| t.elapsed() >= guard_every);
        let pairs = source.filter(|_| tell && due).map(|source| source());
        if let Some(pairs) = pairs.filter(|p| !matches!(p, GuardPairs::NotYet)) {
            last_guard = Some(std::time::Instant::now());
            let told = match pairs {
                GuardPairs::Live(pairs) => tell_pairs(ctx, &pairs),
                _ => guard_pass(ctx),
            };
            for (session, text) in told {
                on_event(&WatchEvent {
                    session,
                    pr: 0,
                    kind: "guard-conflict".into(),
                    detail: text.lines().next().unwrap_or("").to_string(),
                    told_agent: true,
                });
            }
        }
        release_if_stopping(ctx, &holder, stop);
        for _ in 0..10 {
            if stop.load(Ordering::SeqCst) {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    match &held {
        Some(h) => release_all(&h.ctx, &holder),
        None => {
            if let Ok(ctx) = Context::open(Some(dir)) {
                release_all(&ctx, &holder);
            }
        }
    }
    result
}

fn release_if_stopping(ctx: &Context, holder: &str, stop: &AtomicBool) {
    if stop.load(Ordering::SeqCst) {
        release_all(ctx, holder);
    }
}

/// Computes the guard and types each new conflict into its agents.
pub fn guard_pass(ctx: &Context) -> Vec<(String, String)> {
    match crate::ops::guard::compute(ctx) {
        Ok(engine) => {
            let _ = crate::ops::guard::record_all_facts(&ctx.store, &engine);
            let pairs: Vec<_> = engine.pairs().into_iter().cloned().collect();
            tell_pairs(ctx, &pairs)
        }
        Err(e) => {
            tracing::warn!("conflict guard pass: {e:#}");
            Vec::new()
        }
    }
}

/// Types each new conflict of `pairs` into its agents (see
/// [`guard_pass`]).
fn tell_pairs(ctx: &Context, pairs: &[GuardPair]) -> Vec<(String, String)> {
    let notices = conflicts::notices(pairs);
    conflicts::tell_new(&ctx.store, &ctx.home, ctx.repo_row.id, &notices)
}

/// The watcher on a thread of a long-lived process (`owt lsp`); stops
/// (giving its leases up) when the handle is dropped.
pub struct Background {
    stop: std::sync::Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Background {
    pub fn start(dir: &Path, guard: bool) -> Option<Background> {
        let source: Option<PairSource> =
            guard.then(|| Box::new(|| GuardPairs::Compute) as PairSource);
        Background::start_with(dir, source)
    }

    /// [`Background::start`], the guard's pairs taken from `source` (no
    /// guard pass without).
    pub fn start_with(dir: &Path, source: Option<PairSource>) -> Option<Background> {
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let dir = dir.to_path_buf();
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("pr-watcher".into())
            .spawn(move || {
                let mut log = |e: &WatchEvent| {
                    tracing::info!(session = %e.session, pr = e.pr, kind = %e.kind, told = e.told_agent, "{}", e.detail)
                };
                if let Err(e) = run_with(&dir, source.as_ref(), &flag, &mut log) {
                    tracing::warn!("the pull-request watcher stopped: {e:#}");
                }
            })
            .ok()?;
        Some(Background {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::held::config_stamps;

    #[test]
    fn a_config_file_written_created_or_removed_changes_the_stamps() {
        let root = tempfile::tempdir().unwrap();
        let before = config_stamps(root.path());
        assert_eq!(before, config_stamps(root.path()), "nothing changed");
        let owt = root.path().join(".owt.toml");
        std::fs::write(&owt, "[pr]\npoll_interval = 60\n").unwrap();
        let written = config_stamps(root.path());
        assert_ne!(written, before, "created");
        // Same length, new content: told apart by its mtime (set here, not
        // waited for: file systems keep coarse timestamps).
        std::fs::write(&owt, "[pr]\npoll_interval = 90\n").unwrap();
        std::fs::File::options()
            .write(true)
            .open(&owt)
            .unwrap()
            .set_modified(std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1000))
            .unwrap();
        assert_ne!(config_stamps(root.path()), written, "rewritten");
        std::fs::remove_file(&owt).unwrap();
        std::fs::write(root.path().join(".worktreerc"), "x").unwrap();
        assert_ne!(config_stamps(root.path()), before, "a seed file counts");
    }
}
