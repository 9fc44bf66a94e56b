//! The setup and the agent's integrations installed in the new worktree,
//! then the session host started, or queued until there is room.

use super::{LaunchOptions, NewRequest, Plan};
use crate::ops::owned::OwnedFile;
use crate::ops::{setup, Context};
use crate::provider;
use crate::session::{self, HostSpec};
use crate::store::SessionRow;

/// The setup (copied files, dependencies, script), the agent's hooks and
/// MCP registration, and owt's and the agent's own files kept out of
/// commits and the guard. Each failure is a warning. Without
/// `write_agent_files` (a branch session, an ACP session) no hooks or MCP
/// registration are written.
pub(super) fn install_integrations(
    ctx: &mut Context,
    session: &SessionRow,
    plan: &Plan,
    write_agent_files: bool,
    progress: &mut dyn FnMut(&str),
    warnings: &mut Vec<String>,
) {
    use provider::integration::{self, claude};
    let name = &plan.resolved.provider.name;
    let prepared = setup::prepare_worktree(ctx, session, progress);
    warnings.extend(prepared.warnings);
    let mut owt_files: Vec<OwnedFile> = prepared.owned;
    let hooks = if !write_agent_files {
        provider::Hooks::None
    } else {
        plan.resolved.provider.hooks
    };
    let hooks = untracked_hooks(&session.worktree_path, hooks, warnings);
    match claude::install_hooks(hooks, &session.worktree_path) {
        Ok(_) => owt_files.extend(claude::hooks_file(hooks).map(OwnedFile::written)),
        Err(e) => warnings.push(format!("could not install {name} hooks: {e}")),
    }
    let register = if !write_agent_files || mcp_files_tracked(session, name, warnings) {
        Ok(Vec::new())
    } else {
        claude::register_mcp(name, &session.worktree_path)
    };
    match register {
        Ok(written) => owt_files.extend(written.iter().filter_map(|p| {
            p.strip_prefix(&session.worktree_path)
                .ok()
                .map(|rel| OwnedFile::written(&rel.to_string_lossy()))
        })),
        Err(e) => warnings.push(format!(
            "could not register the owt MCP server for {name}: {e}"
        )),
    }
    if let Err(e) = crate::ops::owned::own(ctx, session, &owt_files) {
        warnings.push(format!(
            "could not keep owt's own files out of commits: {e}"
        ));
    }
    // The files the agent writes into its checkout on its own (Aider's
    // history and caches) are kept out of commits and the guard the same
    // way (patterns in `info/exclude`; `owt delete` treats them as any
    // ignored file).
    let agent_files: Vec<String> = integration::own_files(name)
        .iter()
        .map(|p| p.to_string())
        .collect();
    if let Err(e) = crate::git::exclude_paths(&ctx.repo, &agent_files) {
        warnings.push(format!(
            "could not keep owt's own files out of commits: {e}"
        ));
    }
}

/// Starts the session host, now (`--now`) or through the queue: started
/// here when there is room and nothing queued before it, else when a
/// running agent ends or frees memory. Whether the agent started, and why
/// it waits when queued (a failure to start is a warning: the worktree is
/// kept).
pub(super) fn launch(
    ctx: &mut Context,
    session: &SessionRow,
    req: &NewRequest,
    options: &LaunchOptions,
    spec: HostSpec,
    progress: &mut dyn FnMut(&str),
    warnings: &mut Vec<String>,
) -> anyhow::Result<(bool, Option<String>)> {
    let not_started = |e: &dyn std::fmt::Display| {
        format!(
            "the agent did not start: {e}; the worktree is kept (remove it with `owt delete {}`)",
            session.name
        )
    };
    if req.now {
        progress(&format!("Starting {} in {}", spec.provider, session.name));
        return Ok(match session::start_host(&spec) {
            Ok(_) => (true, None),
            Err(e) => {
                warnings.push(not_started(&e));
                (false, None)
            }
        });
    }
    drop(spec);
    ctx.store
        .record_fact(session.id, crate::status::kind::QUEUED, options)?;
    let admitted = crate::ops::queue::admit(&ctx.home, progress);
    let mine = admitted.iter().find(|a| a.session_id == session.id);
    Ok(match mine {
        Some(a) => match &a.outcome {
            Ok(()) => (true, None),
            Err(e) => {
                warnings.push(not_started(e));
                (false, None)
            }
        },
        // Another owt process may have started it meanwhile.
        None if !crate::ops::queue::is_queued(&ctx.store, session) => (true, None),
        None => (
            false,
            Some(crate::ops::queue::why_waiting(&ctx.home, session)),
        ),
    })
}

/// The hooks owt installs: none when their settings file is tracked in the
/// repository (owt's entries, with the absolute path of this owt, would be
/// a change in the session's work, committed and shipped with it).
fn untracked_hooks(
    worktree: &std::path::Path,
    hooks: provider::Hooks,
    warnings: &mut Vec<String>,
) -> provider::Hooks {
    use provider::integration::claude;
    let Some(file) = claude::hooks_file(hooks).filter(|f| tracked_in(worktree, f)) else {
        return hooks;
    };
    let what = match hooks {
        provider::Hooks::Gemini => "Conflict Guard's pre-edit hook",
        _ => "its status and pre-edit hooks",
    };
    warnings.push(format!(
        "{file} is tracked in this repository: owt did not add {what} to it (they would be committed with the session's work)"
    ));
    provider::Hooks::None
}

/// Whether a file owt's MCP registration for `provider` would edit is
/// tracked in the repository (then nothing is written: a warning says how
/// to register the server by hand).
fn mcp_files_tracked(session: &SessionRow, provider: &str, warnings: &mut Vec<String>) -> bool {
    use provider::integration::claude;
    if provider != "claude" {
        return false;
    }
    let tracked: Vec<&str> = [claude::MCP_JSON, claude::CLAUDE_SETTINGS]
        .into_iter()
        .filter(|f| tracked_in(&session.worktree_path, f))
        .collect();
    if tracked.is_empty() {
        return false;
    }
    let owt = crate::platform::exe::owt()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|_| "owt".into());
    warnings.push(format!(
        "{} {} tracked in this repository: owt did not register its MCP server there (it would be committed with the session's work); register it by hand with `claude mcp add owt -- {owt} mcp` (see docs/mcp.md)",
        tracked.join(" and "),
        if tracked.len() == 1 { "is" } else { "are" }
    ));
    true
}

/// Whether `rel` is in the index of the checkout at `worktree`.
fn tracked_in(worktree: &std::path::Path, rel: &str) -> bool {
    git2::Repository::open(worktree)
        .and_then(|repo| repo.index())
        .is_ok_and(|index| index.get_path(std::path::Path::new(rel), 0).is_some())
}
