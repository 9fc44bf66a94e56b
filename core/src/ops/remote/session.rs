//! A remote session's life here: `owt new --on` records what the remote's
//! owt created, `owt delete` asks it to delete and forgets the record.

use anyhow::{bail, Context as _};
use owt_protocol::{DeleteOutput, NewOutput};

use super::remote;
use crate::ops::launch::NewRequest;
use crate::ops::Context;
use crate::remote::ssh::{Ssh, COMMAND_TIMEOUT};
use crate::remote::{keeper, Remote, RemoteError};
use crate::store::{now_ms, RemoteSessionRecord, SessionRow};

/// What `owt new --on` did.
pub struct NewOnRemote {
    pub session: SessionRow,
    pub output: NewOutput,
    pub agent_started: bool,
}

/// `owt new --on NAME "task"`: the remote's owt creates the session (its
/// worktree, setup, hooks, host); it is recorded here as a remote session
/// and its bridge is started.
pub fn new_on(
    ctx: &mut Context,
    name: &str,
    req: &NewRequest,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<NewOnRemote> {
    if req.in_place {
        bail!("--in-place works in your own checkout; it cannot be combined with --on");
    }
    if req.task.contains('\0') {
        bail!("the task contains a NUL character, which no program can receive as an argument; remove it");
    }
    let (remote, ssh) = remote(ctx, name)?;
    let mut args = vec!["new".to_string(), req.task.clone()];
    let mut flag = |name: &str, value: &Option<String>| {
        if let Some(value) = value {
            args.extend([format!("--{name}"), value.clone()]);
        }
    };
    flag("name", &req.name);
    flag("branch", &req.branch);
    flag("base", &req.base);
    flag("ai-tool", &req.ai_tool);
    flag("template", &req.template);
    for (on, word) in [
        (req.headless, "--headless"),
        (req.plan, "--plan-mode"),
        (req.raw, "--raw"),
    ] {
        if on {
            args.push(word.to_string());
        }
    }
    progress(&format!("Starting the session on {}", remote.name));
    let (doc, out) = ssh.owt_json_status::<NewOutput>(&args, COMMAND_TIMEOUT)?;
    let Some(mut output) = doc else {
        return Err(ssh.owt_failure(&out).into());
    };
    let view = &output.session;
    let local = crate::remote::local_name(&remote.name, &view.name);
    let row = ctx.store.upsert_remote_session(&RemoteSessionRecord {
        repo_id: ctx.repo_row.id,
        remote: &remote.name,
        name: &local,
        task: &view.task,
        branch: &view.branch,
        base_branch: &view.base,
        worktree: &view.worktree,
        provider: &view.provider,
        kind: owt_protocol::SessionKind::Worktree,
        created_at: now_ms(),
    })?;
    if let Err(e) = keeper::ensure(ctx, &remote.name) {
        output.warnings.push(format!(
            "the bridge to {} did not start: {e:#}",
            remote.name
        ));
    }
    output.warnings = output
        .warnings
        .into_iter()
        .map(|w| format!("on {}: {w}", remote.name))
        .collect();
    Ok(NewOnRemote {
        session: row,
        output,
        agent_started: out.status.success(),
    })
}

/// The remote and its session name of a remote session's row.
pub(crate) fn remote_of(ctx: &Context, row: &SessionRow) -> anyhow::Result<(Remote, Ssh, String)> {
    let (remote_name, _) = row
        .remote()
        .with_context(|| format!("{} is not a remote session", row.name))?;
    let (_, name) = crate::remote::split_local_name(&row.name)
        .with_context(|| format!("{} is not named REMOTE:name", row.name))?;
    let (remote, ssh) = remote(ctx, remote_name)?;
    Ok((remote, ssh, name.to_string()))
}

/// Forgets the record of a remote session and its fetched refs.
fn forget(
    ctx: &mut Context,
    row: &SessionRow,
    remote: &str,
    name: &str,
    how: &str,
) -> anyhow::Result<()> {
    ctx.store.remove_session(row, how)?;
    let snapshot = crate::remote::snapshot_ref(remote, name);
    if let Ok(mut r) = ctx.repo.git2().find_reference(&snapshot) {
        let _ = r.delete();
    }
    Ok(())
}

/// `owt delete REMOTE:name`: the remote's owt deletes it (with its own
/// rules: uncommitted work needs `--force`, its trash keeps what git does
/// not); then the record here goes.
pub fn delete(
    ctx: &mut Context,
    row: &SessionRow,
    force: bool,
    how: &str,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<DeleteOutput> {
    let (remote, ssh, name) = remote_of(ctx, row)?;
    progress(&format!("Deleting {name} on {}", remote.name));
    let mut args = vec!["delete".to_string(), name.clone()];
    if force {
        args.push("--force".into());
    }
    let output = match ssh.owt_json::<DeleteOutput>(&args, COMMAND_TIMEOUT) {
        Ok(mut output) => {
            output.name = row.name.clone();
            output.trash = output.trash.map(|t| format!("{}:{t}", remote.name));
            output
        }
        Err(RemoteError::Failed { message, .. }) if message.starts_with("no session named") => {
            DeleteOutput {
                name: row.name.clone(),
                worktree_removed: false,
                branch_deleted: false,
                backup_ref: None,
                trash: None,
                trashed: Vec::new(),
                dropped: Vec::new(),
                discarded: Vec::new(),
                warnings: vec![format!("{name} was already gone on {}", remote.name)],
            }
        }
        Err(e @ RemoteError::Unreachable { .. }) => {
            return Err(anyhow::Error::new(e).context(format!(
                "deleting {} needs {} (nothing was changed)",
                row.name, remote.name
            )))
        }
        Err(e) => return Err(e.into()),
    };
    forget(ctx, row, &remote.name, &name, how)?;
    Ok(output)
}
