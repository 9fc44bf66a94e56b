//! `owt list` and the board: every session with its derived status.

use owt_protocol::{Board, SessionView};

use super::Context;
use crate::guard::counts::{self, WorkCounts};
use crate::guard::snapshot::ScanSource;
use crate::session;
use crate::ship;
use crate::status::{self, derive_status, ConflictFact, GitFact, HostGitFact, SessionFacts};
use crate::store::{now_ms, SessionRow, Store};

/// Every session of the repository, reconciled with its host and git,
/// oldest first.
///
/// Overlap counts are read from the Conflict Guard's stored facts (kept
/// current by `owt lsp`'s watcher, and by every `owt guard` / `owt queue`),
/// never recomputed here: a guard computation costs about a `git status` of
/// every checkout.
pub fn session_views(ctx: &Context) -> anyhow::Result<Vec<SessionView>> {
    session_views_with(ctx, true)
}

/// Reconciles every local session of the repository with its host (a host
/// that died without a word is recorded lost). `owt list` and the board
/// call it before admitting queued sessions: after every owt process died,
/// the dead hosts must stop counting as running before the queue is asked
/// for room, or the first listing starts nothing.
pub fn reconcile_all(ctx: &Context) {
    let Ok(rows) = ctx.store.all_sessions(ctx.repo_row.id) else {
        return;
    };
    for row in rows.iter().filter(|r| r.remote().is_none()) {
        if let Err(e) = session::reconcile(&ctx.store, &ctx.home, row) {
            tracing::warn!(session = %row.name, "reconciling the session host failed: {e}");
        }
    }
}

/// Every session, reconciled with its host; git facts re-read only when
/// `refresh_git` (from the live hosts' journals: see `read_git_fact`).
/// Overlap counts are read as stored (the LSP's live guard keeps them current). Sessions on
/// remotes are included (their facts come through their bridge, started
/// here when it does not run).
pub fn session_views_with(ctx: &Context, refresh_git: bool) -> anyhow::Result<Vec<SessionView>> {
    let rows = all_rows(ctx)?;
    for row in &rows {
        if let Err(e) = session::reconcile(&ctx.store, &ctx.home, row) {
            tracing::warn!(session = %row.name, "reconciling the session host failed: {e}");
        }
    }
    if refresh_git {
        refresh_git_facts_of(ctx, &rows);
    }
    rows.iter()
        .map(|row| view_of_looking(ctx, row, false, None, false, refresh_git))
        .collect()
}

/// Every session, local and remote, with the local ones' token records
/// read on (an agent's records are on its own machine) and the bridges of
/// the remotes they run on started when they do not run.
fn all_rows(ctx: &Context) -> anyhow::Result<Vec<SessionRow>> {
    let rows = ctx.store.all_sessions(ctx.repo_row.id)?;
    if rows.iter().any(|row| row.remote().is_some()) {
        crate::remote::keeper::ensure_all(ctx);
    }
    let local: Vec<SessionRow> = rows
        .iter()
        .filter(|r| r.remote().is_none())
        .cloned()
        .collect();
    crate::usage::refresh(&ctx.store, &ctx.usage_places(), &local);
    Ok(rows)
}

/// Every session as [`session_views_with`] (no git re-read), with the git
/// facts in `newer` — fresher than the stored ones, e.g. what the live
/// guard's snapshots show before their one writer recorded them — by name.
/// Token usage is read on from the agents' records first.
pub fn session_views_newer_git(
    ctx: &Context,
    newer: &std::collections::HashMap<String, GitFact>,
) -> anyhow::Result<Vec<SessionView>> {
    let rows = all_rows(ctx)?;
    rows.iter()
        .map(|row| view_of(ctx, row, false, newer.get(&row.name), true))
        .collect()
}

/// The session `name`, reconciled, with the git fact `git` in place of the
/// stored one (see [`session_views_newer_git`]).
pub fn session_view_newer_git(
    ctx: &Context,
    name: &str,
    git: &GitFact,
) -> anyhow::Result<SessionView> {
    view_of(ctx, &ctx.session(name)?, false, Some(git), true)
}

/// Whether the store holds `git` as `name`'s git fact already.
pub fn git_fact_recorded(ctx: &Context, name: &str, git: &GitFact) -> bool {
    let Ok(row) = ctx.session(name) else {
        return true;
    };
    ctx.store
        .fact::<GitFact>(row.id, status::kind::GIT)
        .ok()
        .flatten()
        .is_some_and(|(stored, _)| &stored == git)
}

/// Re-reads and records the git facts (commits ahead, changed files) of
/// every session.
pub fn refresh_git_facts(ctx: &Context) -> anyhow::Result<()> {
    refresh_git_facts_of(ctx, &ctx.store.sessions(ctx.repo_row.id)?);
    Ok(())
}

/// One session, reconciled.
pub fn session_view(ctx: &Context, row: &SessionRow) -> anyhow::Result<SessionView> {
    crate::usage::refresh(&ctx.store, &ctx.usage_places(), std::slice::from_ref(row));
    session_view_with(ctx, row, true)
}

fn session_view_with(
    ctx: &Context,
    row: &SessionRow,
    refresh_git: bool,
) -> anyhow::Result<SessionView> {
    view_of(ctx, row, refresh_git, None, true)
}

/// Every session as [`session_views`] does, for a caller that reconciled
/// them all with [`reconcile_all`] just before (`owt list`, the board):
/// each host is not asked twice whether it lives.
pub fn session_views_reconciled(ctx: &Context) -> anyhow::Result<Vec<SessionView>> {
    let rows = all_rows(ctx)?;
    refresh_git_facts_of(ctx, &rows);
    rows.iter()
        .map(|row| view_of_looking(ctx, row, false, None, false, true))
        .collect()
}

fn view_of(
    ctx: &Context,
    row: &SessionRow,
    refresh_git: bool,
    newer_git: Option<&GitFact>,
    reconcile: bool,
) -> anyhow::Result<SessionView> {
    view_of_looking(ctx, row, refresh_git, newer_git, reconcile, refresh_git)
}

/// [`view_of`]; with `look_again`, a session whose every file was reviewed
/// has its working state read again (its git facts may have been
/// refreshed by the caller already).
fn view_of_looking(
    ctx: &Context,
    row: &SessionRow,
    refresh_git: bool,
    newer_git: Option<&GitFact>,
    reconcile: bool,
    look_again: bool,
) -> anyhow::Result<SessionView> {
    if reconcile {
        if let Err(e) = session::reconcile(&ctx.store, &ctx.home, row) {
            tracing::warn!(session = %row.name, "reconciling the session host failed: {e}");
        }
    }
    if refresh_git {
        refresh_git_facts_of(ctx, std::slice::from_ref(row));
    }
    let mut facts = SessionFacts::from_rows(row.created_at, &ctx.store.facts(row.id)?);
    if let Some(git) = newer_git {
        facts.git = git.clone();
    }
    if look_again && facts.reviewed_snapshot.is_some() && row.remote().is_none() {
        // The guard's snapshot may be older than the agent's last change
        // when no `owt lsp` watches: look again (only for sessions whose
        // every file was reviewed, the one case the answer can be yes).
        match super::review::current_snapshot(ctx, row) {
            Ok(snapshot) => facts.snapshot = Some(snapshot),
            Err(e) => {
                tracing::warn!(session = %row.name, "reading the working state failed: {e:#}");
                facts.snapshot = None;
            }
        }
    }
    let mut view = view(row, &facts, now_ms());
    view.ports = super::ports::of(&ctx.store, row.id);
    view.usage = ctx.store.session_usage(&row.short_id)?;
    Ok(view)
}

/// Records the commits ahead and changed files of `rows` (local sessions
/// with a checkout here) when they changed.
///
/// A session whose host is live and recorded a `host-git` fact since it
/// started, for the HEAD and base tip seen now, has that fact taken as it
/// is: no host is asked and no checkout walked (see `session::host`'s
/// git-facts thread for how fresh it is). The others are read on a few
/// threads at once ([`read_git_fact`]): reading one mostly waits for its
/// host to answer.
fn refresh_git_facts_of(ctx: &Context, rows: &[SessionRow]) {
    // A remote session's git facts come from its machine.
    let rows: Vec<&SessionRow> = rows
        .iter()
        .filter(|row| row.remote().is_none() && row.worktree_path.exists())
        .collect();
    let mut to_read: Vec<(&SessionRow, GitJob)> = Vec::new();
    for row in rows {
        // Read once: a listing of 64 sessions makes every query 64 times.
        let facts = ctx.store.facts(row.id).unwrap_or_default();
        let git_dir = git_dir_of(&row.worktree_path);
        refresh_conflict_fact(ctx, row, git_dir.as_deref(), &facts);
        let live = live_in(&facts);
        let mut host_fact_at = None;
        if live {
            match host_git_fact(ctx, row, git_dir.as_deref(), &facts) {
                HostGit::Holds(fact) => {
                    tracing::debug!(session = %row.name, "git facts from the host's record");
                    if fact_of::<GitFact>(&facts, status::kind::GIT).map(|(f, _)| f)
                        != Some(fact.clone())
                    {
                        if let Err(e) = ctx.store.record_fact(row.id, status::kind::GIT, &fact) {
                            tracing::warn!(session = %row.name, "recording git facts failed: {e}");
                        }
                    }
                    continue;
                }
                HostGit::Stale(at) => host_fact_at = at,
            }
        }
        to_read.push((
            row,
            GitJob {
                worktree: row.worktree_path.clone(),
                base_branch: row.base_branch.clone(),
                journal: live.then(|| session::socket_path(&ctx.home, &row.short_id)),
                host_fact_at,
            },
        ));
    }
    if to_read.is_empty() {
        return;
    }
    let threads = to_read.len().clamp(1, GIT_THREADS);
    let chunk = to_read.len().div_ceil(threads).max(1);
    let facts: Vec<anyhow::Result<WorkCounts>> = std::thread::scope(|scope| {
        let handles: Vec<_> = to_read
            .chunks(chunk)
            .map(|jobs| {
                scope.spawn(move || {
                    jobs.iter()
                        .map(|(_, job)| read_git_fact(job))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| {
                h.join()
                    .unwrap_or_else(|_| vec![Err(anyhow::anyhow!("a reading thread panicked"))])
            })
            .collect()
    });
    for ((row, job), read) in to_read.iter().zip(facts) {
        let read = match read {
            Ok(read) => read,
            Err(e) => {
                tracing::warn!(session = %row.name, "reading the git facts failed: {e:#}");
                continue;
            }
        };
        tracing::debug!(session = %row.name, "git facts from {}", read.source);
        if job.journal.is_some()
            && job.host_fact_at.is_some()
            && read.source == ScanSource::Journal.name()
        {
            // Read from the host's journal for the HEAD and base tip of
            // now: as good as the host's own record (which waits for the
            // next change in the checkout, and never sees the base move),
            // so the next listing need not ask. Only for a host that
            // records them itself, and not over a record it made
            // meanwhile (it may be newer than this reading).
            record_host_git(ctx, row, job.host_fact_at, &read);
        }
        let fact = GitFact {
            ahead: read.ahead,
            changed_files: read.changed_files,
        };
        if let Err(e) = record_git_fact(&ctx.store, row.id, &fact) {
            tracing::warn!(session = %row.name, "recording git facts failed: {e}");
        }
    }
}

/// What the store holds of a live host's own reading of its checkout.
enum HostGit {
    /// A `host-git` fact that holds: recorded since the host started, for
    /// the HEAD and base branch tip read now.
    Holds(GitFact),
    /// None that holds (a commit, a base that moved, a host just started):
    /// the host is asked. With when the one there is was recorded, when
    /// it was in this host's life: such a host keeps its record current,
    /// so what the listing reads may be recorded for it (a host that never
    /// recorded one — an ACP host, an older owt's — would not update it).
    Stale(Option<i64>),
}

/// The fact `kind` among `facts` (a session's), decoded, with when it was
/// observed.
fn fact_of<T: serde::de::DeserializeOwned>(
    facts: &[crate::store::FactRow],
    kind: &str,
) -> Option<(T, i64)> {
    let row = facts.iter().find(|f| f.kind == kind)?;
    let value = serde_json::from_value(row.value.clone()).ok()?;
    Some((value, row.observed_at))
}

/// The `host-git` fact of `row` among its `facts` (see [`HostGit`]).
fn host_git_fact(
    ctx: &Context,
    row: &SessionRow,
    git_dir: Option<&std::path::Path>,
    facts: &[crate::store::FactRow],
) -> HostGit {
    let Some((fact, at)) = fact_of::<HostGitFact>(facts, status::kind::HOST_GIT) else {
        return HostGit::Stale(None);
    };
    let host_at = facts
        .iter()
        .find(|f| f.kind == status::kind::HOST)
        .map(|f| f.observed_at);
    if host_at.is_none_or(|host_at| at < host_at) {
        return HostGit::Stale(None);
    }
    let repo = ctx.repo.git2();
    let head = git_dir.and_then(|git_dir| head_commit(repo, git_dir));
    let base_tip = repo
        .find_branch(&row.base_branch, git2::BranchType::Local)
        .ok()
        .and_then(|b| b.get().target())
        .map(|t| t.to_string());
    if head.is_some() && fact.head == head && fact.base_tip == base_tip {
        HostGit::Holds(GitFact {
            ahead: fact.ahead,
            changed_files: fact.changed_files,
        })
    } else {
        HostGit::Stale(Some(at))
    }
}

/// Records `read` (from the host's journal) as `row`'s `host-git` fact,
/// unless the one the store holds is not the one seen before the reading
/// (`seen_at`: the host recorded one meanwhile).
fn record_host_git(ctx: &Context, row: &SessionRow, seen_at: Option<i64>, read: &WorkCounts) {
    if seen_at.is_none() {
        return;
    }
    let now_at = ctx
        .store
        .fact::<HostGitFact>(row.id, status::kind::HOST_GIT)
        .ok()
        .flatten()
        .map(|(_, at)| at);
    if now_at != seen_at {
        return;
    }
    let fact = HostGitFact {
        ahead: read.ahead,
        changed_files: read.changed_files,
        head: read.head.clone(),
        base_tip: read.base_tip.clone(),
    };
    if let Err(e) = ctx.store.record_fact(row.id, status::kind::HOST_GIT, &fact) {
        tracing::warn!(session = %row.name, "recording the host's git facts failed: {e}");
    }
}

/// The git dir of the checkout at `worktree`, read from its `.git` file
/// (a linked worktree) or folder, without opening the repository.
fn git_dir_of(worktree: &std::path::Path) -> Option<std::path::PathBuf> {
    let dot_git = worktree.join(".git");
    let meta = std::fs::symlink_metadata(&dot_git).ok()?;
    if meta.is_dir() {
        return Some(dot_git);
    }
    let text = std::fs::read_to_string(&dot_git).ok()?;
    let dir = std::path::Path::new(text.strip_prefix("gitdir:")?.trim());
    Some(if dir.is_absolute() {
        dir.to_path_buf()
    } else {
        worktree.join(dir)
    })
}

/// HEAD's commit in the checkout whose git dir is `git_dir` (its `HEAD`
/// file read, a symbolic ref resolved in `repo`, the repository they
/// share); `None` while unborn or unreadable.
fn head_commit(repo: &git2::Repository, git_dir: &std::path::Path) -> Option<String> {
    let text = std::fs::read_to_string(git_dir.join("HEAD")).ok()?;
    let text = text.trim();
    match text.strip_prefix("ref:") {
        Some(name) => repo
            .refname_to_id(name.trim())
            .ok()
            .map(|id| id.to_string()),
        None => git2::Oid::from_str(text).ok().map(|id| id.to_string()),
    }
}

/// Threads reading git facts at once.
const GIT_THREADS: usize = 8;

/// What [`read_git_fact`] needs of a session.
struct GitJob {
    worktree: std::path::PathBuf,
    base_branch: String,
    /// The socket of its session host, when the host is live.
    journal: Option<std::path::PathBuf>,
    /// When the `host-git` fact the store held before was recorded.
    host_fact_at: Option<i64>,
}

/// A session's commits ahead and changed files (HEAD against the merge
/// base with its base branch, as the Conflict Guard counts them: a rename
/// is one change), read without walking its checkout when its session host
/// is live: the host's work journal names the few paths that may differ
/// from HEAD, and only those are looked at (plus HEAD's tree diff against
/// the merge base, which skips every folder that did not change).
///
/// Fallback: a session whose host is not live (ended, lost, or an older
/// host without a journal), or whose journal is not ready (a walk under way
/// after a commit) or does not hold for the index and HEAD seen here, has
/// its checkout walked ([`WorkState::scan_full`] does that itself).
///
/// [`WorkState::scan_full`]: crate::guard::snapshot::WorkState::scan_full
fn read_git_fact(job: &GitJob) -> anyhow::Result<WorkCounts> {
    let journal = job.journal.as_ref().map(|socket| {
        std::sync::Arc::new(session::HostJournal::new(socket.clone()))
            as std::sync::Arc<dyn crate::guard::journal::JournalSource>
    });
    Ok(counts::counts(&job.worktree, &job.base_branch, journal)?)
}

/// Whether the session's host is running (as the store knows it after
/// [`session::reconcile`]): it has a host fact and neither an exit nor a
/// lost host.
fn live_in(facts: &[crate::store::FactRow]) -> bool {
    let has = |kind: &str| facts.iter().any(|f| f.kind == kind);
    has(status::kind::HOST) && !has(status::kind::EXIT) && !has(status::kind::HOST_LOST)
}

/// Records a session's git fact (commits ahead, changed files) when it
/// changed; whether it did. The one writer of that fact: read from git by
/// [`refresh_git_facts`], or from the guard's snapshot
/// ([`super::guard::record_facts`]).
pub fn record_git_fact(store: &Store, session_id: i64, fact: &GitFact) -> anyhow::Result<bool> {
    let stored = store
        .fact::<GitFact>(session_id, status::kind::GIT)
        .ok()
        .flatten()
        .map(|(f, _)| f);
    if stored.as_ref() == Some(fact) {
        return Ok(false);
    }
    store.record_fact(session_id, status::kind::GIT, fact)?;
    Ok(true)
}

/// Records (or clears) the files of a merge or rebase stopped on conflicts
/// in the worktree (seen through the worktree's own git dir, `git_dir`
/// when the caller read it), against the session's stored `facts`.
fn refresh_conflict_fact(
    ctx: &Context,
    row: &SessionRow,
    git_dir: Option<&std::path::Path>,
    facts: &[crate::store::FactRow],
) {
    let in_progress = match git_dir {
        Some(git_dir) => ship::in_progress_in(git_dir),
        None => ship::in_progress(&row.worktree_path),
    };
    let files = match in_progress {
        Some(_) => ship::conflicted_files(&row.worktree_path).unwrap_or_default(),
        None => Vec::new(),
    };
    let stored = fact_of::<ConflictFact>(facts, status::kind::CONFLICT).map(|(f, _)| f.files);
    let result = match (files.is_empty(), stored) {
        (true, None) => Ok(()),
        (true, Some(_)) => ctx.store.clear_fact(row.id, status::kind::CONFLICT),
        (false, Some(old)) if old == files => Ok(()),
        (false, _) => {
            ctx.store
                .record_fact(row.id, status::kind::CONFLICT, &ConflictFact { files })
        }
    };
    if let Err(e) = result {
        tracing::warn!(session = %row.name, "recording conflict facts failed: {e}");
    }
}

/// The protocol view of a session (pure; its token `usage` is filled in
/// from the store by the caller).
pub fn view(row: &SessionRow, facts: &SessionFacts, now: i64) -> SessionView {
    let derived = derive_status(facts, now);
    let remote = row.remote();
    let local = remote.is_none();
    let mut view = SessionView {
        name: row.name.clone(),
        id: row.short_id.clone(),
        task: row.task.clone(),
        branch: row.branch.clone(),
        base: row.base_branch.clone(),
        worktree: match &remote {
            Some((remote, path)) => format!("{remote}:{path}"),
            None => row.worktree_path.to_string_lossy().into_owned(),
        },
        provider: row.provider.clone(),
        kind: row.kind,
        status: derived.status,
        status_text: derived.text,
        lane: derived.lane,
        created_at: row.created_at,
        exit_code: derived.exit_code,
        host_lost: derived.host_lost,
        ahead: facts.git.ahead,
        changed_files: facts.git.changed_files,
        overlaps: facts.overlaps,
        base_conflicts: facts.base_conflicts.clone(),
        conflicted_files: facts
            .conflict
            .as_ref()
            .map(|c| c.files.clone())
            .unwrap_or_default(),
        // A pid on another machine means nothing here.
        agent_pid: facts
            .host
            .as_ref()
            .and_then(|(h, _)| h.agent_pid)
            .filter(|_| remote.is_none()),
        remote: remote.map(|(remote, _)| remote.to_string()),
        transport: match &facts.host {
            Some((h, _)) => h.transport,
            None if facts.queued_acp => owt_protocol::host::Transport::Acp,
            None => Default::default(),
        },
        permission: facts
            .acp_permission
            .clone()
            .filter(|_| derived.status == owt_protocol::Status::Blocked),
        acp: facts.acp_usage.clone(),
        checks: facts
            .feedback
            .checks
            .as_ref()
            .map(|c| c.view(facts.last_input_at)),
        pr: facts.feedback.pr.as_ref().map(|p| p.view()),
        rss_bytes: facts
            .memory
            .filter(|_| facts.exit.is_none() && facts.host_lost_at.is_none() && local)
            .map(|m| m.rss_bytes),
        ports: Vec::new(),
        actions: Vec::new(),
        usage: None,
        review: status::derive_review(facts, derived.lane, !local),
    };
    view.actions = crate::actions::session_actions(&view);
    view
}

/// Groups sessions into the board's lanes (non-empty lanes, in priority
/// order) with every lane's count and the status line's counts.
pub fn board(repository: String, sessions: Vec<SessionView>) -> Board {
    let (lanes, all_lanes, counts) = crate::actions::lanes(sessions);
    Board {
        repository,
        lanes,
        all_lanes,
        counts,
    }
}
