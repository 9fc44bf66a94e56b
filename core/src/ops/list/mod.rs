//! `owt list` and the board: every session with its derived status.

use owt_protocol::{Board, SessionView};

mod git_facts;

use super::Context;
use crate::session;
use crate::status::{self, derive_status, GitFact, SessionFacts};
use crate::store::{now_ms, SessionRow};

pub use git_facts::record_git_fact;
use git_facts::refresh_git_facts_of;

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
    reconcile_rows(ctx, &rows);
}

/// Reconciles `rows` with their hosts: every session's facts read in one
/// read of the store, and only a session whose host is not seen running
/// ([`session::settled`]) reconciled, which may write.
fn reconcile_rows(ctx: &Context, rows: &[SessionRow]) {
    let unsettled: Vec<&SessionRow> = ctx.store.reading(|store| {
        rows.iter()
            .filter(|row| {
                store
                    .facts(row.id)
                    .map_or(true, |facts| !session::settled(row, &facts))
            })
            .collect()
    });
    for row in unsettled {
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
    reconcile_rows(ctx, &rows);
    if refresh_git {
        refresh_git_facts_of(ctx, &rows);
    }
    views_of(ctx, &rows, |_| None, refresh_git)
}

/// The sessions of the repository in NEEDS YOU (the board's lane),
/// reconciled with their hosts, from the facts the store holds: no git,
/// token-usage or remote read (what a terminal attached to one session
/// asks, often, of the others: see `ops::attached`).
pub fn needing_you(ctx: &Context) -> anyhow::Result<Vec<SessionView>> {
    let rows = ctx.store.all_sessions(ctx.repo_row.id)?;
    reconcile_rows(ctx, &rows);
    let views = views_of(ctx, &rows, |_| None, false)?;
    Ok(views
        .into_iter()
        .filter(|view| view.lane == owt_protocol::Lane::NeedsYou)
        .collect())
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
    reconcile_rows(ctx, &rows);
    views_of(ctx, &rows, |row| newer.get(&row.name), false)
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

/// One session, reconciled with its host, from the facts the store holds
/// (no git or token-usage read): what a verb that does not touch the
/// session's work checks its status against.
pub fn session_view_now(ctx: &Context, row: &SessionRow) -> anyhow::Result<SessionView> {
    view_of(ctx, row, false, None, true)
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
    views_of(ctx, &rows, |_| None, true)
}

/// The views of `rows` (reconciled, their git facts refreshed as the
/// caller wants), with the git facts `newer_git` gives in place of the
/// stored ones. What the store holds of them is read in one read of the
/// store; `look_again`: see [`finish_view`].
fn views_of<'a>(
    ctx: &Context,
    rows: &[SessionRow],
    newer_git: impl Fn(&SessionRow) -> Option<&'a GitFact>,
    look_again: bool,
) -> anyhow::Result<Vec<SessionView>> {
    let stored = ctx.store.reading(|store| {
        rows.iter()
            .map(|row| Stored::read(store, row))
            .collect::<anyhow::Result<Vec<_>>>()
    })?;
    rows.iter()
        .zip(stored)
        .map(|(row, stored)| finish_view(ctx, row, stored, newer_git(row), look_again))
        .collect()
}

/// The view of one session: reconciled with its host (`reconcile`), its
/// git facts refreshed (`refresh_git`) or replaced by `newer_git`. A
/// refreshed session whose every file was reviewed also has its working
/// state read again ([`finish_view`]'s `look_again`).
fn view_of(
    ctx: &Context,
    row: &SessionRow,
    refresh_git: bool,
    newer_git: Option<&GitFact>,
    reconcile: bool,
) -> anyhow::Result<SessionView> {
    if reconcile {
        if let Err(e) = session::reconcile(&ctx.store, &ctx.home, row) {
            tracing::warn!(session = %row.name, "reconciling the session host failed: {e}");
        }
    }
    if refresh_git {
        refresh_git_facts_of(ctx, std::slice::from_ref(row));
    }
    let stored = Stored::read(&ctx.store, row)?;
    finish_view(ctx, row, stored, newer_git, refresh_git)
}

/// What the store holds of a session for its view.
struct Stored {
    facts: Vec<crate::store::FactRow>,
    ports: Vec<u16>,
    usage: Option<owt_protocol::TokenUsage>,
}

impl Stored {
    fn read(store: &crate::store::Store, row: &SessionRow) -> anyhow::Result<Stored> {
        Ok(Stored {
            facts: store.facts(row.id)?,
            ports: super::ports::of(store, row.id),
            usage: store.session_usage(&row.short_id)?,
        })
    }
}

/// The view of `row` from what the store holds of it, with the git facts
/// `newer_git` gives in place of the stored ones; with `look_again`, a
/// session whose every file was reviewed has its working state read again
/// (its git facts may have been refreshed by the caller already).
fn finish_view(
    ctx: &Context,
    row: &SessionRow,
    stored: Stored,
    newer_git: Option<&GitFact>,
    look_again: bool,
) -> anyhow::Result<SessionView> {
    let mut facts = SessionFacts::from_rows(row.created_at, &stored.facts);
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
    let now = now_ms();
    let mut view = view(row, &facts, now);
    if view.status_since.is_none() {
        // A status no host recorded (a check or PR turned, a lost host):
        // it is this one from now.
        crate::feedback::notify::record_since(&ctx.store, row.id, &facts, view.status, now);
        view.status_since = Some(now);
    }
    view.ports = stored.ports;
    view.usage = stored.usage;
    view.parent = stored
        .facts
        .iter()
        .find(|f| f.kind == super::facts::PARENT_FACT)
        .and_then(|f| serde_json::from_value::<super::facts::ParentFact>(f.value.clone()).ok())
        .map(|p| p.parent);
    Ok(view)
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
        status_since: status::since::since_of(facts, derived.status),
        lane: derived.lane,
        created_at: row.created_at,
        exit_code: derived.exit_code,
        host_lost: derived.host_lost,
        headless: facts.host.as_ref().is_some_and(|(h, _)| h.headless),
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
        parent: None,
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
