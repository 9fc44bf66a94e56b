//! `owt __host spawn|stop` (hidden): a session for an arbitrary argv in
//! the current checkout, with its host — what `owt new` does minus the
//! worktree and the agent integration (for end-to-end tests and the
//! benchmarks) — and stopping one.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::Context as _;
use owt_protocol::SessionKind;

use super::Context;
use crate::session::{self, HostSpec, Started};
use crate::store::{NewSession, SessionRow};

/// What a session host's feedback loop asks of the use cases: the
/// configuration of a worktree, and the pull request's part once the work
/// passes its checks ([`super::pr::after_turn`]).
pub fn turn_hooks() -> crate::feedback::turn::TurnHooks {
    crate::feedback::turn::TurnHooks {
        config: |worktree| Ok(Context::open(Some(worktree))?.config.config),
        after_turn: super::pr::after_turn,
    }
}

/// A session to register and start.
#[derive(Debug, Clone)]
pub struct RawSession {
    pub name: String,
    /// Whose screen rules apply.
    pub provider: String,
    pub typed_prompt: Option<String>,
    /// The argv carries the agent's first prompt.
    pub prompt_in_argv: bool,
    /// Run as a `--headless` session.
    pub headless: bool,
    /// The argv is an ACP agent (the host is its client).
    pub acp: bool,
    pub rows: u16,
    pub cols: u16,
    /// Lines of scrollback the host keeps.
    pub scrollback: usize,
    pub env: BTreeMap<String, String>,
    pub argv: Vec<String>,
    /// The checkout it runs in.
    pub cwd: PathBuf,
}

/// Registers `raw` in the store (a branch session in `cwd`) and starts its
/// host.
pub fn spawn(ctx: &mut Context, raw: RawSession) -> anyhow::Result<(SessionRow, Started)> {
    let cwd_text = raw.cwd.to_string_lossy().into_owned();
    let repo_id = ctx.repo_row.id;
    let row = ctx.store.insert_session(
        &NewSession {
            repo_id,
            name: &raw.name,
            task: "",
            branch_template: "{name}",
            base_branch: "main",
            worktree_template: &cwd_text,
            provider: &raw.provider,
            kind: SessionKind::Branch,
        },
        |_| false,
    )?;
    let spec = HostSpec {
        transport: if raw.acp {
            owt_protocol::host::Transport::Acp
        } else {
            owt_protocol::host::Transport::Pty
        },
        acp_load: None,
        acp_mcp_servers: Vec::new(),
        session_id: row.id,
        session_name: row.name.clone(),
        short_id: row.short_id.clone(),
        provider: raw.provider,
        argv: raw.argv,
        cwd: raw.cwd,
        env: raw.env,
        typed_prompt: raw.typed_prompt,
        prompt_in_argv: raw.prompt_in_argv,
        headless: raw.headless,
        home: ctx.home.clone(),
        rows: raw.rows,
        cols: raw.cols,
        scrollback: raw.scrollback,
        on_limit_wait: ctx.config.config.agent.on_limit == crate::config::OnLimit::Wait,
    };
    let started = session::start_host(&spec).with_context(|| format!("starting {}", row.name))?;
    Ok((row, started))
}

/// Stops a session's agent and host (what `owt delete` does first).
pub fn stop(ctx: &Context, name: &str) -> anyhow::Result<String> {
    let row = ctx.session(name)?;
    session::stop(&ctx.home, &row).with_context(|| format!("stopping {name}"))?;
    Ok(row.name)
}
