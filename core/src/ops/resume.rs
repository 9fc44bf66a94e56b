//! `owt resume NAME`: restarts a session whose agent is gone (it exited,
//! or its host was lost: a reboot, an OOM kill, `kill -9`) in the same
//! worktree, continuing its conversation through the agent's own resume:
//! Claude Code `--resume <session id>` (the id is the newest transcript of
//! the worktree in its records, where `owt usage` reads them). An agent
//! owt cannot resume that way is restarted with a first prompt that says
//! what happened and where its work is.
//!
//! Invariants: nothing in the worktree is touched; a session whose agent
//! may still run (no exit, no lost host) is refused; the old exit and
//! host-lost facts are cleared only once the new host started.

use std::path::{Path, PathBuf};

use anyhow::Context as _;

use super::new::LaunchOptions;
use super::Context;
use crate::status::{kind, SessionFacts};
use crate::store::SessionRow;

/// Whether `facts` say the session's agent is gone (it can be resumed).
pub fn resumable(facts: &SessionFacts) -> bool {
    let headless = facts.host.as_ref().is_some_and(|(h, _)| h.headless);
    !headless && (facts.exit.is_some() || facts.host_lost_at.is_some())
}

/// Restarts `name`'s agent, its conversation resumed where the agent
/// supports it. Returns the session and how it was resumed.
pub fn resume(ctx: &mut Context, name: &str) -> anyhow::Result<(SessionRow, String)> {
    let session = ctx.session(name)?;
    if session.remote().is_some() {
        anyhow::bail!(
            "{name} runs on another machine: resume it there (`owt resume` on that machine)"
        );
    }
    let facts = SessionFacts::from_rows(session.created_at, &ctx.store.facts(session.id)?);
    if !resumable(&facts) {
        anyhow::bail!(
            "{name}'s agent has not exited (see `owt list`): attach to it with `owt attach {name}`"
        );
    }
    if !session.worktree_path.is_dir() {
        anyhow::bail!(
            "{name}'s worktree {} is gone",
            session.worktree_path.display()
        );
    }
    let resolved = crate::provider::resolve(&ctx.config.config, Some(&session.provider))?;
    let options = LaunchOptions {
        rows: 40,
        cols: 120,
        ..LaunchOptions::default()
    };
    let (mut spec, warnings) = super::new::host_spec(ctx, &session, &resolved, &options)?;
    for warning in warnings {
        tracing::warn!(session = %session.name, "{warning}");
    }
    let how = match conversation_id(ctx, &session) {
        Some(id) => {
            resume_argv(&mut spec, &id);
            format!("its conversation {id} resumed")
        }
        None => {
            spec.typed_prompt = Some(restart_prompt(&session));
            spec.prompt_in_argv = false;
            drop_argv_prompt(&mut spec);
            "restarted with a note of what happened".to_string()
        }
    };
    // What the old agent's screen and hooks said is history: the new one
    // is `starting` until it shows something.
    for old in [kind::SCREEN, kind::HOOK, kind::REPORT] {
        ctx.store.clear_fact(session.id, old)?;
    }
    crate::session::start_host(&spec).context("starting the session's host")?;
    ctx.store.clear_fact(session.id, kind::EXIT)?;
    ctx.store.clear_fact(session.id, kind::HOST_LOST)?;
    Ok((session, how))
}

/// The agent's own id of the session's conversation, where owt can read
/// it: Claude Code's newest transcript of the worktree.
fn conversation_id(ctx: &Context, session: &SessionRow) -> Option<String> {
    if session.provider != "claude" {
        return None;
    }
    let config = ctx.usage_places().claude_config?;
    crate::usage::claude::project_dirs(&config, &session.worktree_path)
        .iter()
        .filter_map(|dir| newest_transcript(dir))
        .max_by_key(|(_, modified)| *modified)
        .and_then(|(path, _)| Some(path.file_stem()?.to_string_lossy().into_owned()))
}

/// The newest `*.jsonl` in `dir`, and when it changed.
fn newest_transcript(dir: &Path) -> Option<(PathBuf, std::time::SystemTime)> {
    std::fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
        .filter_map(|e| Some((e.path(), e.metadata().ok()?.modified().ok()?)))
        .max_by_key(|(_, modified)| *modified)
}

/// Claude Code's argv resumed: `--resume ID` instead of the first prompt.
fn resume_argv(spec: &mut crate::session::HostSpec, id: &str) {
    drop_argv_prompt(spec);
    spec.argv
        .splice(1..1, ["--resume".to_string(), id.to_string()]);
    spec.typed_prompt = None;
    spec.prompt_in_argv = false;
}

/// Takes the first prompt off the command line (the last argument, and a
/// `--` before it).
fn drop_argv_prompt(spec: &mut crate::session::HostSpec) {
    if spec.prompt_in_argv && spec.argv.len() > 1 {
        spec.argv.pop();
        if spec.argv.last().is_some_and(|a| a == "--") {
            spec.argv.pop();
        }
    }
}

/// What an agent restarted without its conversation is told first.
fn restart_prompt(session: &SessionRow) -> String {
    format!(
        "owt: your previous run on this task ended (the process was stopped or the machine \
         restarted) and its conversation could not be restored. Your task was: {}\n\
         Your work so far is in this worktree ({}) on branch {}: look at `git status`, \
         `git log` and `git diff` to see where you were, then carry on.",
        session.task,
        session.worktree_path.display(),
        session.branch
    )
}
