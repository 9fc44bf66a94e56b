//! ACP sessions for `owt acp`: start one for an editor, list a
//! repository's, and reopen one whose agent has exited (`session/load`).

use owt_protocol::host::Transport;
use owt_protocol::{SessionView, Status};

use super::new::{new_session, NewRequest, NewResult};
use super::Context;
use crate::clock;
use crate::provider::{self, BUILTIN_ORDER};
use crate::session::{self, HostSpec};
use crate::status::kind;
use crate::store::SessionRow;

/// The agent an editor's session gets: the one asked for, else the
/// configured default, else the first installed built-in with an ACP
/// server.
pub fn pick_agent(ctx: &Context, requested: Option<&str>) -> anyhow::Result<String> {
    let wanted = requested.or(ctx.config.config.agent.default_tool.as_deref());
    if let Some(name) = wanted {
        return Ok(name.to_string());
    }
    let providers = provider::all(&ctx.config.config)?;
    for name in BUILTIN_ORDER {
        if let Some(p) = providers.iter().find(|p| p.name == *name) {
            if p.acp_argv().is_ok() {
                return Ok(p.name.clone());
            }
        }
    }
    anyhow::bail!(
        "no agent with an ACP server is installed; install one of: npm install -g @zed-industries/claude-agent-acp, npm install -g @zed-industries/codex-acp, npm install -g opencode-ai"
    )
}

/// Starts an ACP session (worktree, branch, the agent's ACP server) that
/// waits for its first prompt. `mcp_servers` are passed to the agent with
/// owt's own.
pub fn start(
    ctx: &mut Context,
    agent: &str,
    name: Option<&str>,
    task: &str,
    mcp_servers: Vec<serde_json::Value>,
) -> anyhow::Result<NewResult> {
    let req = NewRequest {
        task: task.to_string(),
        name: Some(name.unwrap_or("acp").to_string()),
        ai_tool: Some(agent.to_string()),
        raw: true,
        acp: true,
        no_prompt: true,
        acp_mcp_servers: mcp_servers,
        size: (40, 120),
        // The editor waits for this conversation: it starts now, as with
        // `owt new --now`, rather than wait in the queue.
        now: true,
        ..NewRequest::default()
    };
    new_session(ctx, &req, &mut |line| tracing::info!("{line}"))
}

/// The repository's ACP sessions, newest first, with their views.
pub fn sessions(ctx: &Context) -> anyhow::Result<Vec<(SessionRow, SessionView)>> {
    let mut out = Vec::new();
    for row in ctx.store.sessions(ctx.repo_row.id)? {
        if session::transport(&ctx.store, &row)? != Transport::Acp {
            continue;
        }
        let view = super::list::session_view(ctx, &row)?;
        out.push((row, view));
    }
    out.sort_by_key(|s| std::cmp::Reverse(s.0.created_at));
    Ok(out)
}

/// When the session's facts last changed (Unix ms).
pub fn updated_at(ctx: &Context, row: &SessionRow) -> i64 {
    ctx.store
        .facts(row.id)
        .ok()
        .and_then(|facts| facts.iter().map(|f| f.observed_at).max())
        .unwrap_or(row.created_at)
}

/// Makes sure the session's host runs: a live one is left alone; for an
/// exited one a new host starts the agent again and reopens its
/// conversation (`session/load`, when the agent supports it). Returns
/// whether a host was started.
pub fn reopen(ctx: &Context, row: &SessionRow) -> anyhow::Result<bool> {
    if session::host_answers(&ctx.home, &row.short_id) {
        return Ok(false);
    }
    if !row.worktree_path.is_dir() {
        anyhow::bail!(
            "the worktree of {} ({}) is gone",
            row.name,
            row.worktree_path.display()
        );
    }
    let provider = provider::all(&ctx.config.config)?
        .into_iter()
        .find(|p| p.name == row.provider)
        .ok_or_else(|| anyhow::anyhow!("{}'s agent `{}` is not known", row.name, row.provider))?;
    let argv = provider.acp_argv()?;
    let acp_load = ctx
        .store
        .fact::<owt_protocol::AcpView>(row.id, kind::ACP_USAGE)?
        .and_then(|(v, _)| v.session_id);
    let mut env = ctx.config.config.agent.env.clone();
    env.extend(provider.env.clone());
    // A new host: the old exit is history now.
    for k in [kind::EXIT, kind::HOST_LOST] {
        ctx.store.clear_fact(row.id, k)?;
    }
    let spec = HostSpec {
        session_id: row.id,
        session_name: row.name.clone(),
        short_id: row.short_id.clone(),
        provider: row.provider.clone(),
        argv,
        cwd: row.worktree_path.clone(),
        env,
        typed_prompt: None,
        prompt_in_argv: false,
        headless: false,
        home: ctx.home.clone(),
        rows: 40,
        cols: 120,
        scrollback: ctx.scrollback(),
        transport: Transport::Acp,
        acp_load,
        acp_mcp_servers: Vec::new(),
        // An ACP agent's limits are not read off a screen.
        on_limit_wait: false,
    };
    session::start_host(&spec)?;
    Ok(true)
}

/// Whether a session's view says it can take a prompt now.
pub fn is_live(view: &SessionView) -> bool {
    view.status != Status::Exited
}

/// Unix milliseconds as an RFC 3339 UTC timestamp (`2026-12-01T07:56:08.347Z`).
pub fn rfc3339(ms: i64) -> String {
    clock::Utc::from_ms(ms).rfc3339()
}

#[cfg(test)]
mod tests {
    #[test]
    fn timestamps_are_rfc3339() {
        assert_eq!(super::rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            super::rfc3339(1_796_111_768_347),
            "2026-12-01T07:56:08.347Z"
        );
        assert_eq!(super::rfc3339(951_782_400_000), "2000-02-29T00:00:00.000Z");
    }
}
