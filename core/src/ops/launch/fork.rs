//! The forked session's conversation: Claude Code's transcript, found
//! where `owt usage` reads it and copied to the new worktree's project
//! folder, so that `claude --resume ID --fork-session` continues it as a
//! new conversation (the original transcript is only read).

use std::path::{Path, PathBuf};

use super::{ForkFrom, LaunchOptions};
use crate::ops::Context;
use crate::provider;
use crate::store::SessionRow;

/// The newest Claude Code transcript of `session`'s worktree, if it runs
/// Claude Code and has one.
pub fn transcript(ctx: &Context, session: &SessionRow) -> Option<PathBuf> {
    if session.provider != "claude" {
        return None;
    }
    let config = ctx.usage_places().claude_config?;
    crate::usage::claude::newest_transcript(&config, &session.worktree_path)
}

/// Claude Code's arguments that fork `from`'s conversation in the new
/// session (`--resume ID --fork-session`), its transcript copied where
/// Claude Code looks for the new worktree's conversations; `None` when
/// the agent is not Claude Code in a terminal, or there is no transcript
/// to fork (the agent is then told the forked session's task and diff).
pub(crate) fn prepare(
    ctx: &Context,
    session: &SessionRow,
    resolved: &provider::Resolved,
    options: &LaunchOptions,
    from: &ForkFrom,
) -> Option<Vec<String>> {
    if resolved.provider.name != "claude" || options.acp {
        return None;
    }
    let transcript = from.transcript.as_ref().filter(|t| t.is_file())?;
    let id = transcript.file_stem()?.to_string_lossy().into_owned();
    let config = ctx.usage_places().claude_config?;
    let mut dirs = crate::usage::claude::project_dirs(&config, &session.worktree_path);
    let resolved_path = resolved_path(&session.worktree_path);
    let resolved_dir = config
        .join("projects")
        .join(crate::usage::claude::project_dir_name(
            &resolved_path.to_string_lossy(),
        ));
    if !dirs.contains(&resolved_dir) {
        dirs.push(resolved_dir);
    }
    for dir in dirs {
        let copied = std::fs::create_dir_all(&dir)
            .and_then(|()| std::fs::copy(transcript, dir.join(format!("{id}.jsonl"))));
        if let Err(e) = copied {
            tracing::warn!("copying {} to {}: {e}", transcript.display(), dir.display());
            return None;
        }
    }
    Some(vec!["--resume".into(), id, "--fork-session".into()])
}

/// `path` with its nearest existing ancestor's links resolved (the
/// worktree may not exist yet; Claude Code names projects by the real
/// path of their folder).
fn resolved_path(path: &Path) -> PathBuf {
    let mut rest = Vec::new();
    let mut at = path;
    loop {
        if let Ok(real) = at.canonicalize() {
            return rest.iter().rev().fold(real, |p, part| p.join(part));
        }
        match (at.parent(), at.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                at = parent;
            }
            _ => return path.to_path_buf(),
        }
    }
}

/// Claude Code's first message in a forked conversation: where it now
/// is, and its task.
pub(crate) fn forked_prompt(session: &SessionRow) -> String {
    format!(
        "owt: this conversation was forked into a new session, {name}, in its own worktree \
         ({worktree}) on branch {branch}; it starts with all the work so far (uncommitted \
         and untracked files committed there as one commit). The original session goes on \
         separately: work only here. Your task now: {task}",
        name = session.name,
        worktree = session.worktree_path.display(),
        branch = session.branch,
        task = session.task.trim(),
    )
}
