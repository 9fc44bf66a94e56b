//! `owt pr NAME`: the forge path of shipping — commit what is left, pass
//! the checks, push the session's branch to its remote and open a pull
//! (merge) request through the forge's own CLI; and what a session host
//! does for the pull request when its agent's turn ends ([`after_turn`]).
//!
//! Invariants: nothing is pushed or opened before every check that can
//! fail without a side effect passed (remote, forge, CLI, checks); a push
//! is never forced; the pull request's number and URL are a `pr` fact.

use anyhow::Context as _;
use owt_protocol::PrOutput;

use super::Context;
use crate::config::{Config, ForgeKind};
use crate::feedback::checks::{self as feedback_checks, Gate, Trigger};
use crate::forge::{self, Forge, ForgeError, RepoRef};
use crate::status::feedback::{kind, PrFact, PrState};
use crate::store::{now_ms, SessionRow, Store};

/// What `owt pr` was asked.
#[derive(Debug, Clone, Default)]
pub struct PrOptions {
    /// Skip `[checks]` (said in the output).
    pub no_checks: bool,
    /// Draft or ready (default `[pr] draft`).
    pub draft: Option<bool>,
    /// Title (default: the task's first line).
    pub title: Option<String>,
    /// Commit message for uncommitted work (default: the task's first line).
    pub message: Option<String>,
}

/// The first line of the task, at most 72 characters.
fn subject(row: &SessionRow) -> String {
    let first = row.task.lines().next().unwrap_or("").trim();
    let subject = if first.is_empty() {
        row.name.as_str()
    } else {
        first
    };
    subject.chars().take(72).collect()
}

/// The pull request's body: the task, the commits, who opened it.
fn body(ctx: &Context, row: &SessionRow) -> String {
    let mut text = row.task.trim().to_string();
    let repo = ctx.repo.git2();
    let tip = ctx.repo.branch_tip(&row.branch).ok();
    let base = ctx.repo.branch_tip(&row.base_branch).ok();
    if let (Some(tip), Some(base)) = (tip, base) {
        if let Ok(mut walk) = repo.revwalk() {
            let _ = walk.push(tip);
            let _ = walk.hide(base);
            let commits: Vec<String> = walk
                .flatten()
                .take(50)
                .filter_map(|oid| repo.find_commit(oid).ok())
                .map(|c| {
                    format!(
                        "- {} ({})",
                        c.summary().unwrap_or(""),
                        &c.id().to_string()[..10]
                    )
                })
                .collect();
            if !commits.is_empty() {
                text.push_str("\n\n## Commits\n");
                text.push_str(&commits.join("\n"));
            }
        }
    }
    text.push_str(&format!(
        "\n\n---\nOpened by owt from session `{}` ({}).",
        row.name, row.provider
    ));
    text
}

/// The forge and remote of a session, checked before anything changes.
pub fn forge_of(ctx: &Context, row: &SessionRow) -> Result<(forge::Remote, Forge), ForgeError> {
    let config = &ctx.config.config.pr;
    let remote = forge::choose_remote(ctx.repo.git2(), &row.base_branch, config.remote.as_deref())?;
    let forge = Forge::for_remote(&remote, config)?;
    Ok((remote, forge))
}

/// `owt pr NAME`.
pub fn open_pr(
    ctx: &mut Context,
    name: &str,
    opts: &PrOptions,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<PrOutput> {
    let row = ctx.session(name)?;
    if !row.worktree_path.exists() {
        anyhow::bail!(
            "the worktree of `{name}` ({}) is gone; nothing to push",
            row.worktree_path.display()
        );
    }
    let (remote, forge) = forge_of(ctx, &row).map_err(anyhow::Error::new)?;
    let gate = feedback_checks::gate(
        &ctx.store,
        &ctx.home,
        &row,
        &ctx.config.config.checks,
        Trigger::Pr,
        opts.no_checks,
        progress,
    )?;
    let committed = commit_work(ctx, &row, opts, progress)?;
    let pushed = ctx.repo.branch_tip(&row.branch)?.to_string();
    progress(&format!(
        "Pushing {} to {} ({})",
        row.branch, remote.name, remote.url
    ));
    forge::push(&row.worktree_path, &remote.name, &row.branch).map_err(anyhow::Error::new)?;
    let (mut fact, created) = open_or_reuse(ctx, &row, opts, &remote, &forge, progress)?;
    // Look again soon: CI starts on the push.
    fact.next_poll_at = Some(now_ms());
    fact.interval_ms = ctx.config.config.pr.poll_interval.max(1) * 1000;
    ctx.store.record_fact(row.id, kind::PR, &fact)?;
    Ok(PrOutput {
        session: row.name.clone(),
        forge: forge.kind.as_str().into(),
        remote: remote.name,
        branch: row.branch.clone(),
        base: row.base_branch.clone(),
        pushed,
        created,
        committed: committed.map(|c| c.to_string()),
        pr: fact.view(),
        checks_skipped: gate == Gate::Skipped,
    })
}

/// Commits the session's uncommitted work (hooks run) before the push;
/// refuses, pushing nothing, when the branch then has nothing the base
/// lacks.
fn commit_work(
    ctx: &Context,
    row: &SessionRow,
    opts: &PrOptions,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<Option<git2::Oid>> {
    let name = &row.name;
    let message = opts.message.clone().unwrap_or_else(|| {
        format!(
            "{}\n\nCommitted by owt from session {} ({}) for a pull request.",
            subject(row),
            row.name,
            row.provider
        )
    });
    let never = super::owned::never_staged(ctx, row);
    let committed =
        crate::ship::commit_all(&row.worktree_path, &message, &never).with_context(|| {
            format!("committing the work of `{name}` before pushing it; nothing was pushed")
        })?;
    if let Some(oid) = committed {
        progress(&format!(
            "Committed the uncommitted work as {}",
            &oid.to_string()[..10]
        ));
    }
    if ctx.repo.commits_ahead(&row.branch, &row.base_branch)? == 0 {
        anyhow::bail!(
            "`{name}` has no commits that `{}` does not have; nothing to open a pull request for",
            row.base_branch
        );
    }
    Ok(committed)
}

/// The session's open pull request, or a new one (recorded, with an
/// event); whether it was created.
fn open_or_reuse(
    ctx: &mut Context,
    row: &SessionRow,
    opts: &PrOptions,
    remote: &forge::Remote,
    forge: &Forge,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<(PrFact, bool)> {
    let existing = ctx
        .store
        .fact::<PrFact>(row.id, kind::PR)?
        .map(|(f, _)| f)
        .filter(|f| f.state == PrState::Open);
    if let Some(fact) = existing {
        return Ok((fact, false));
    }
    let draft = opts.draft.unwrap_or(ctx.config.config.pr.draft);
    progress(&format!(
        "Opening a {}pull request of {} into {} with {}",
        if draft { "draft " } else { "" },
        row.branch,
        row.base_branch,
        forge.cli_name
    ));
    let title = opts.title.clone().unwrap_or_else(|| subject(row));
    let (number, url) = forge
        .create_pr(
            &row.branch,
            &row.base_branch,
            &title,
            &body(ctx, row),
            draft,
        )
        .map_err(anyhow::Error::new)?;
    let fact = new_fact(ctx, forge, remote, number, url, draft);
    ctx.store.record_fact(row.id, kind::PR, &fact)?;
    ctx.store.add_event(
        ctx.repo_row.id,
        &row.name,
        "pr",
        &format!("opened #{number}"),
    )?;
    Ok((fact, true))
}

fn new_fact(
    ctx: &Context,
    forge: &Forge,
    remote: &forge::Remote,
    number: u64,
    url: String,
    draft: bool,
) -> PrFact {
    PrFact {
        forge: forge.kind.as_str().into(),
        repo: forge.repo.full(),
        remote: remote.name.clone(),
        number,
        url,
        state: PrState::Open,
        draft,
        ci_max_attempts: ctx.config.config.checks.max_attempts,
        interval_ms: ctx.config.config.pr.poll_interval.max(1) * 1000,
        next_poll_at: Some(now_ms()),
        mergeable: "unknown".into(),
        ..PrFact::default()
    }
}

/// The forge a `pr` fact names (its repository as recorded).
pub fn forge_of_fact(fact: &PrFact, cli: Option<&str>) -> Result<Forge, ForgeError> {
    let kind = match fact.forge.as_str() {
        "gitlab" => ForgeKind::Gitlab,
        _ => ForgeKind::Github,
    };
    let repo = forge::parse_remote_url(&format!("https://{}", fact.repo)).unwrap_or(RepoRef {
        host: String::new(),
        owner: String::new(),
        name: String::new(),
    });
    Forge::with(kind, repo, cli)
}

/// A session host's turn ended and its checks passed (or it has none at
/// turn end): push new commits to an open pull request, or open one with
/// `[pr] auto`. Best effort: what fails is logged and recorded as the pull
/// request's error, never typed into the agent.
pub fn after_turn(home: &std::path::Path, row: &SessionRow, config: &Config) {
    let Ok(store) = Store::open(home) else {
        return;
    };
    let fact = store
        .fact::<PrFact>(row.id, kind::PR)
        .ok()
        .flatten()
        .map(|(f, _)| f);
    match fact {
        Some(mut fact) if fact.state == PrState::Open => {
            let Ok(repo) = crate::git::Repo::discover(&row.worktree_path) else {
                return;
            };
            let Ok(tip) = repo.branch_tip(&row.branch) else {
                return;
            };
            if fact.head.as_deref() == Some(tip.to_string().as_str()) {
                return;
            }
            match forge::push(&row.worktree_path, &fact.remote, &row.branch) {
                Ok(()) => {
                    tracing::info!(pr = fact.number, "pushed the agent's new commits");
                    fact.head = Some(tip.to_string());
                    fact.next_poll_at = Some(now_ms());
                    fact.interval_ms = config.pr.poll_interval.max(1) * 1000;
                    fact.error = None;
                }
                Err(e) => {
                    tracing::warn!("pushing the agent's fixes: {e}");
                    fact.error = Some(format!("push failed: {e}"));
                }
            }
            let _ = store.record_fact(row.id, kind::PR, &fact);
        }
        None if config.pr.auto => {
            let opened = Context::open(Some(&row.worktree_path)).and_then(|mut ctx| {
                let ahead = ctx.repo.commits_ahead(&row.branch, &row.base_branch)?;
                let dirty = !crate::git::dirt(&row.worktree_path)?.is_clean();
                if ahead == 0 && !dirty {
                    return Ok(None);
                }
                // Turn-end checks just passed on this very work: no second
                // run (with `when = "ship"` they run now).
                let opts = PrOptions {
                    no_checks: config.checks.when == crate::config::ChecksWhen::TurnEnd,
                    ..PrOptions::default()
                };
                open_pr(&mut ctx, &row.name, &opts, &mut |line| {
                    tracing::info!("{line}")
                })
                .map(Some)
            });
            match opened {
                Ok(Some(out)) => {
                    tracing::info!(url = %out.pr.url, "[pr] auto opened a pull request")
                }
                Ok(None) => {}
                Err(e) => tracing::warn!("[pr] auto: {e:#}"),
            }
        }
        _ => {}
    }
}
