//! `owt new "task"`.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context as _;

use crate::ops::{self, list, new::NewRequest};

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Examples:
  owt new \"Add JWT auth\"                 branch owt/add-jwt-auth, session add-jwt-auth
  owt new \"Fix login\" --ai-tool codex    pick the agent
  owt new \"Spike\" --branch spike/x       reuse or create a branch of your choice
  owt new --on devbox \"Fix login\"       on the remote devbox ([remotes.devbox]): session devbox:fix-login
  owt new --conductor \"Split the API rewrite into parallel tasks\"
                                        an agent that spawns and supervises child sessions (MCP tools)
The task is passed to the agent as one argument (or typed into it); it never goes through a shell.
Beyond [agent] max_running agents (default: what memory holds) the session is queued: its
worktree is made now and its agent starts when a running one ends or frees memory (--now: start anyway).")]
pub struct Args {
    #[command(flatten)]
    pub session: SessionArgs,
    /// Run the agent's non-interactive form to completion (e.g. `claude -p`); the
    /// session is working until it exits, and done when it exits with code 0.
    #[arg(long)]
    pub headless: bool,
    /// Start the agent in plan mode (Claude Code: --permission-mode plan).
    #[arg(long, visible_alias = "workflow")]
    pub plan_mode: bool,
    /// Work on a branch in the current checkout instead of a new worktree.
    #[arg(long)]
    pub in_place: bool,
    /// Protocol for the agent: feature, bugfix, hotfix, refactor, test, docs, or a [templates.NAME] (default: guessed when the task says its kind plainly, else a general protocol; owt new says which).
    #[arg(long)]
    pub template: Option<String>,
    /// Send the task verbatim, without the protocol, notes and context owt adds.
    #[arg(long)]
    pub raw: bool,
    /// Run the agent's Agent Client Protocol server instead of its terminal UI
    /// (claude, codex, opencode, gemini, or a [tools.NAME] with `acp`): status
    /// comes from the protocol; `owt attach` shows the transcript, `owt send`
    /// prompts, `owt approve` / `owt deny` answer its permission requests.
    #[arg(long, conflicts_with_all = ["headless", "plan_mode", "in_place", "on"])]
    pub acp: bool,
    /// Run the agent on the remote NAME ([remotes.NAME]): its owt creates the session there.
    #[arg(long, value_name = "NAME")]
    pub on: Option<String>,
    /// Make the session a conductor: its agent gets owt's MCP tools to spawn, wait for,
    /// read, message and (with [mcp] conductor_can_ship) ship child sessions, shown
    /// under it on the board.
    #[arg(long, conflicts_with_all = ["on", "acp"])]
    pub conductor: bool,
}

/// What every new session is asked, by `owt new` and `owt branch` alike.
#[derive(Debug, clap::Args)]
pub struct SessionArgs {
    /// What the agent should do; becomes its first prompt.
    pub task: String,
    /// Session name (default: derived from the task). Made safe: lowercase letters, digits, dashes.
    #[arg(long)]
    pub name: Option<String>,
    /// Branch to work on (created from the base if it does not exist; default owt/<name>).
    #[arg(long)]
    pub branch: Option<String>,
    /// Base branch (default: the branch checked out in the main checkout).
    #[arg(long)]
    pub base: Option<String>,
    /// Agent to run (claude, codex, opencode, pi, droid, aider, gemini, cursor-agent, amp, goose, or a [tools.NAME]).
    #[arg(long, value_name = "TOOL")]
    pub ai_tool: Option<String>,
    /// Start the agent now, even beyond [agent] max_running or min_free_memory
    /// (by default a session beyond them is queued and starts when there is room).
    #[arg(long)]
    pub now: bool,
}

pub fn run(dir: Option<&Path>, out: &super::Out, args: Args) -> anyhow::Result<ExitCode> {
    let mut ctx = ops::Context::open(dir)?;
    let SessionArgs {
        task,
        name,
        branch,
        base,
        ai_tool,
        now,
    } = args.session;
    let req = NewRequest {
        task,
        name,
        branch,
        base,
        ai_tool,
        headless: args.headless,
        plan: args.plan_mode,
        in_place: args.in_place,
        template: args.template,
        raw: args.raw,
        size: terminal_size(),
        acp: args.acp,
        no_prompt: false,
        acp_mcp_servers: Vec::new(),
        now,
        fork: None,
        parent: None,
        conductor: args.conductor,
    };
    if let Some(remote) = &args.on {
        return run_on(&mut ctx, out, remote, &req);
    }
    // Ctrl-C while the worktree is made or set up removes what was made,
    // instead of leaving a session that never starts.
    ops::new::catch_interrupts().context("catching Ctrl-C")?;
    let result = ops::new::new_session(&mut ctx, &req, &mut |line| out.progress(line))?;
    for warning in &result.warnings {
        out.warn(warning);
    }
    if let Some(note) = &result.template_note {
        out.progress(note);
    }
    let view = list::session_view(&ctx, &result.session)?;
    let doc = owt_protocol::NewOutput {
        session: view.clone(),
        warnings: result.warnings.clone(),
    };
    if let Some(why) = &result.queued {
        out.emit(&doc, || {
            format!(
                "Queued session {} ({}) on branch {} in {}: {why}.\nIts agent starts when a running one ends or frees memory; start it now with: owt start {}",
                view.name, view.provider, view.branch, view.worktree, view.name
            )
        })?;
        return Ok(ExitCode::SUCCESS);
    }
    if !result.agent_started {
        out.emit(&doc, || {
            format!(
                "Created session {} on branch {} in {}, but its agent did not start (see the warning above).",
                view.name, view.branch, view.worktree
            )
        })?;
        return Ok(ExitCode::FAILURE);
    }
    out.emit(&doc, || {
        format!(
            "Started session {} ({}) on branch {} in {}.\nAttach with: owt attach {}",
            view.name, view.provider, view.branch, view.worktree, view.name
        )
    })?;
    Ok(ExitCode::SUCCESS)
}

/// `owt new --on REMOTE`: the remote's owt creates the session.
fn run_on(
    ctx: &mut ops::Context,
    out: &super::Out,
    remote: &str,
    req: &NewRequest,
) -> anyhow::Result<ExitCode> {
    let made = ops::remote::new_on(ctx, remote, req, &mut |line| out.progress(line))?;
    for warning in &made.output.warnings {
        out.warn(warning);
    }
    let view = list::session_view(ctx, &made.session)?;
    let doc = owt_protocol::NewOutput {
        session: view.clone(),
        warnings: made.output.warnings.clone(),
    };
    out.emit(&doc, || {
        if made.agent_started {
            format!(
                "Started session {} ({}) on branch {} in {}.\nAttach with: owt attach {}",
                view.name, view.provider, view.branch, view.worktree, view.name
            )
        } else {
            format!(
                "Created session {} in {}, but its agent did not start (see the warning above).",
                view.name, view.worktree
            )
        }
    })?;
    Ok(if made.agent_started {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The size of the terminal owt runs in, or 40×120 when there is none.
pub(super) fn terminal_size() -> (u16, u16) {
    use crate::session::attach::terminal_size;
    terminal_size(std::io::stdin())
        .or_else(|| terminal_size(std::io::stdout()))
        .or_else(|| terminal_size(std::io::stderr()))
        .unwrap_or((40, 120))
}
