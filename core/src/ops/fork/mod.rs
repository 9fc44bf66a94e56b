//! `owt fork NAME --name NEW [TASK]`: a new session whose branch and
//! worktree start from NAME's current working state (its commits, its
//! uncommitted changes and its untracked files, not its ignored files),
//! with NAME's conversation forked where the agent can (Claude Code
//! `--resume ID --fork-session`); another agent's first prompt says what
//! NAME was doing and what it changed.
//!
//! Invariant: NAME is never modified. Its working state is read into a
//! commit through a temporary index ([`snapshot`]): NAME's index,
//! worktree, branch and transcript stay byte-for-byte the same. Bad input
//! (an unknown or remote NAME, a NEW already taken) is refused before
//! anything is created.

mod snapshot;

use anyhow::bail;

use super::launch::{ForkFrom, ForkStart, NewRequest};
use super::new::{new_session, NewResult};
use super::Context;
use crate::names;
use crate::store::SessionRow;

/// The most of NAME's diff a first prompt carries (the rest is named by
/// `git diff`).
const DIFF_BUDGET: usize = 8000;

/// What the user asked for.
#[derive(Debug, Clone, Default)]
pub struct ForkRequest {
    /// The session to fork.
    pub name: String,
    /// The new session's name.
    pub new_name: String,
    /// The new session's task (default: NAME's).
    pub task: Option<String>,
    /// The agent (default: NAME's).
    pub ai_tool: Option<String>,
    /// Terminal size for the agent (rows, cols).
    pub size: (u16, u16),
    /// Start the agent now even beyond `[agent] max_running`.
    pub now: bool,
}

/// Forks `req.name` into a new session `req.new_name`.
pub fn fork(
    ctx: &mut Context,
    req: &ForkRequest,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<NewResult> {
    let source = ctx.session(&req.name)?;
    check_source(&source)?;
    let new_name = check_new_name(ctx, &req.new_name)?;
    progress(&format!(
        "Reading {}'s working state (its uncommitted and untracked files included)",
        source.name
    ));
    let start_point = snapshot::working_state(&source.worktree_path, &source.name)?;
    let from = ForkFrom {
        session: source.name.clone(),
        transcript: super::launch::fork::transcript(ctx, &source),
        context: context(&source, &start_point),
    };
    let task = req
        .task
        .clone()
        .filter(|t| !t.trim().is_empty())
        .unwrap_or_else(|| source.task.clone());
    let new_req = NewRequest {
        task,
        name: Some(new_name),
        base: Some(source.base_branch.clone()),
        ai_tool: Some(
            req.ai_tool
                .clone()
                .unwrap_or_else(|| source.provider.clone()),
        ),
        size: req.size,
        now: req.now,
        fork: Some(ForkStart { start_point, from }),
        ..NewRequest::default()
    };
    new_session(ctx, &new_req, progress)
}

/// NAME can be forked here: it runs on this machine and its checkout is there.
fn check_source(source: &SessionRow) -> anyhow::Result<()> {
    if let Some((remote, _)) = source.remote() {
        bail!(
            "{} runs on the remote {remote}: owt cannot read its working state from here; fork it on that machine",
            source.name
        );
    }
    if !source.worktree_path.is_dir() {
        bail!(
            "{}'s worktree {} is gone: there is no working state to fork",
            source.name,
            source.worktree_path.display()
        );
    }
    Ok(())
}

/// NEW, made safe, when no session, worktree or branch has it.
fn check_new_name(ctx: &Context, wanted: &str) -> anyhow::Result<String> {
    let name = names::slugify(wanted);
    if !wanted.chars().any(char::is_alphanumeric) {
        bail!("--name must contain a letter or digit: owt fork NAME --name NEW");
    }
    if ctx.store.session_by_name(ctx.repo_row.id, &name)?.is_some() {
        bail!("a session named `{name}` already exists; pick another --name");
    }
    let branch = names::default_branch(&name);
    if ctx.repo.branch_exists(&branch) {
        bail!("branch `{branch}` already exists; pick another --name");
    }
    let worktree = names::worktree_path(&super::new::worktrees_folder(ctx)?, &name);
    if worktree.exists() || ctx.repo.worktree_admin_exists(&name) {
        bail!("{} already exists; pick another --name", worktree.display());
    }
    Ok(name)
}

/// What an agent that cannot fork the conversation is told of NAME: its
/// task and its diff against its base (cut at [`DIFF_BUDGET`]).
fn context(source: &SessionRow, start_point: &str) -> String {
    let git = crate::ship::git_cli::GitCli::new(&source.worktree_path);
    let range = format!("{}...{start_point}", source.base_branch);
    let stat = git.run(["diff", "--stat", &range]).unwrap_or_default();
    let mut diff = git.run(["diff", &range]).unwrap_or_default();
    if diff.len() > DIFF_BUDGET {
        let cut = (0..=DIFF_BUDGET)
            .rev()
            .find(|i| diff.is_char_boundary(*i))
            .unwrap_or(0);
        diff.truncate(cut);
        diff.push_str("\n… (cut; run `git diff` for the rest)\n");
    }
    format!(
        "## Forked from session {name}\n\
         This session is a fork of `{name}`: this worktree starts with its work \
         (its commits, and its uncommitted and untracked files as one commit). \
         {name}'s task was:\n\n{task}\n\n\
         What {name} changed against {base}:\n\n```\n{stat}```\n\n```diff\n{diff}```\n",
        name = source.name,
        task = source.task.trim(),
        base = source.base_branch,
    )
}
