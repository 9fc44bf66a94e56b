//! `owt list` and the board: every session with its derived status.

use owt_protocol::{Board, SessionView};

use super::Context;
use crate::git;
use crate::session;
use crate::ship;
use crate::status::{self, derive_status, ConflictFact, GitFact, SessionFacts};
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

/// Every session, reconciled with its host; git facts re-read only when
/// `refresh_git` (they cost a `git status` per worktree). Overlap counts are
/// read as stored (the LSP's live guard keeps them current). Sessions on
/// remotes are included (their facts come through their bridge, started
/// here when it does not run).
pub fn session_views_with(ctx: &Context, refresh_git: bool) -> anyhow::Result<Vec<SessionView>> {
    let rows = all_rows(ctx)?;
    rows.iter()
        .map(|row| session_view_with(ctx, row, refresh_git))
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
        .map(|row| view_of(ctx, row, false, newer.get(&row.name)))
        .collect()
}

/// The session `name`, reconciled, with the git fact `git` in place of the
/// stored one (see [`session_views_newer_git`]).
pub fn session_view_newer_git(
    ctx: &Context,
    name: &str,
    git: &GitFact,
) -> anyhow::Result<SessionView> {
    view_of(ctx, &ctx.session(name)?, false, Some(git))
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
    for row in ctx.store.sessions(ctx.repo_row.id)? {
        refresh_git_fact(ctx, &row);
    }
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
    view_of(ctx, row, refresh_git, None)
}

fn view_of(
    ctx: &Context,
    row: &SessionRow,
    refresh_git: bool,
    newer_git: Option<&GitFact>,
) -> anyhow::Result<SessionView> {
    if let Err(e) = session::reconcile(&ctx.store, &ctx.home, row) {
        tracing::warn!(session = %row.name, "reconciling the session host failed: {e}");
    }
    if refresh_git {
        refresh_git_fact(ctx, row);
    }
    let mut facts = SessionFacts::from_rows(row.created_at, &ctx.store.facts(row.id)?);
    if let Some(git) = newer_git {
        facts.git = git.clone();
    }
    if refresh_git && facts.reviewed_snapshot.is_some() && row.remote().is_none() {
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

/// Records commits ahead and changed paths when they changed.
fn refresh_git_fact(ctx: &Context, row: &SessionRow) {
    // A remote session's git facts come from its machine.
    if row.remote().is_some() || !row.worktree_path.exists() {
        return;
    }
    let ahead = ctx
        .repo
        .commits_ahead(&row.branch, &row.base_branch)
        .unwrap_or(0);
    let changed = git::changed_paths(&ctx.repo, &row.worktree_path, &row.base_branch)
        .map(|paths| paths.len() as u32)
        .unwrap_or(0);
    let fact = GitFact {
        ahead,
        changed_files: changed,
    };
    refresh_conflict_fact(ctx, row);
    if let Err(e) = record_git_fact(&ctx.store, row.id, &fact) {
        tracing::warn!(session = %row.name, "recording git facts failed: {e}");
    }
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
/// in the worktree (seen through the worktree's own git dir).
fn refresh_conflict_fact(ctx: &Context, row: &SessionRow) {
    let files = match ship::in_progress(&row.worktree_path) {
        Some(_) => ship::conflicted_files(&row.worktree_path).unwrap_or_default(),
        None => Vec::new(),
    };
    let stored = ctx
        .store
        .fact::<ConflictFact>(row.id, status::kind::CONFLICT)
        .ok()
        .flatten()
        .map(|(f, _)| f.files);
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
