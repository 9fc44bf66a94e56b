//! `owt resume NAME`: restarts a session whose agent is gone (it exited,
//! or its host was lost: a reboot, an OOM kill, `kill -9`) in the same
//! worktree, continuing its conversation through the agent's own resume:
//! Claude Code `--resume <id>`, Codex `codex resume <id>`, OpenCode
//! `--session <id>`, Gemini CLI `--resume <id>` (each id is the newest
//! conversation of the worktree in the agent's records, where `owt usage`
//! reads them) and Aider `--restore-chat-history` (the chat history in the
//! checkout). An agent owt cannot resume that way (or whose records hold
//! no conversation of the worktree) is restarted with a first prompt that
//! says what happened and where its work is.
//!
//! Invariants: nothing in the worktree is touched; a session whose agent
//! may still run (no exit, no lost host) is refused; the old exit and
//! host-lost facts are cleared only once the new host started.

mod auto;

use anyhow::Context as _;
use owt_protocol::SessionAction;

use super::launch::LaunchOptions;
use super::Context;
use crate::status::{kind, SessionFacts};
use crate::store::SessionRow;

pub use auto::{auto_resume, AutoResumed};

/// Whether `facts` say the session's agent is gone (it can be resumed).
pub fn resumable(facts: &SessionFacts) -> bool {
    let headless = facts.host.as_ref().is_some_and(|(h, _)| h.headless);
    !headless && (facts.exit.is_some() || facts.host_lost_at.is_some())
}

/// Restarts `name`'s agent, its conversation resumed where the agent
/// supports it. Returns the session and how it was resumed.
pub fn resume(ctx: &mut Context, name: &str) -> anyhow::Result<(SessionRow, String)> {
    let session = ctx.session(name)?;
    // What the board's `Resume` action says (an agent that runs, a
    // session of another machine: refused with its reason).
    super::allowed::check(ctx, &session, SessionAction::Resume, false)?;
    let facts = SessionFacts::from_rows(session.created_at, &ctx.store.facts(session.id)?);
    if !resumable(&facts) {
        anyhow::bail!(
            "{name} was a headless run: start it again with `owt new --headless` (its conversation is not resumed)"
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
    let (mut spec, warnings) = super::launch::host_spec(ctx, &session, &resolved, &options)?;
    for warning in warnings {
        tracing::warn!(session = %session.name, "{warning}");
    }
    let how = match conversation(ctx, &session) {
        Some(conversation) => {
            conversation.apply(&mut spec);
            conversation.describe()
        }
        None => {
            spec.typed_prompt = Some(restart_prompt(&session));
            spec.prompt_in_argv = false;
            drop_argv_prompt(&mut spec);
            "restarted with a note of what happened".to_string()
        }
    };
    // The old host may still serve the exited agent's last screen, and
    // the agent may have left a daemon (Codex's app server): both end
    // before the new host takes the socket.
    crate::session::stop(&ctx.home, &session).context("stopping the old session host")?;
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

/// How an agent continues a conversation of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Conversation {
    /// `claude --resume <id>`.
    Claude(String),
    /// `codex resume <id>`.
    Codex(String),
    /// `opencode --session <id>`.
    OpenCode(String),
    /// `gemini --resume <id>`.
    Gemini(String),
    /// `aider --restore-chat-history` (the history of the checkout).
    Aider,
}

impl Conversation {
    /// `spec`'s argv continuing this conversation instead of starting
    /// with the first prompt.
    pub fn apply(&self, spec: &mut crate::session::HostSpec) {
        drop_argv_prompt(spec);
        spec.typed_prompt = None;
        spec.prompt_in_argv = false;
        let (at_start, args): (bool, Vec<&str>) = match self {
            Conversation::Claude(id) => (true, vec!["--resume", id]),
            Conversation::Codex(id) => (true, vec!["resume", id]),
            Conversation::OpenCode(id) => (false, vec!["--session", id]),
            Conversation::Gemini(id) => (false, vec!["--resume", id]),
            Conversation::Aider => (false, vec!["--restore-chat-history"]),
        };
        let args = args.into_iter().map(str::to_string);
        if at_start {
            // A subcommand (Codex) comes right after the binary.
            spec.argv.splice(1..1, args);
        } else {
            spec.argv.extend(args);
        }
    }

    /// How the session was resumed, for a person.
    pub fn describe(&self) -> String {
        match self {
            Conversation::Claude(id)
            | Conversation::Codex(id)
            | Conversation::OpenCode(id)
            | Conversation::Gemini(id) => format!("its conversation {id} resumed"),
            Conversation::Aider => "its chat history restored".to_string(),
        }
    }
}

/// The conversation the session's agent can continue, where owt can read
/// it from the agent's records (where `owt usage` reads them): the newest
/// one of the worktree since the session was created.
pub fn conversation(ctx: &Context, session: &SessionRow) -> Option<Conversation> {
    let places = ctx.usage_places();
    let worktree = &session.worktree_path;
    let since = session.created_at - 1000;
    match session.provider.as_str() {
        "claude" => {
            let config = places.claude_config?;
            crate::usage::claude::newest_transcript(&config, worktree)
                .and_then(|path| Some(path.file_stem()?.to_string_lossy().into_owned()))
                .map(Conversation::Claude)
        }
        "codex" => crate::usage::codex::latest_conversation(&places.codex_home?, worktree, since)
            .map(Conversation::Codex),
        "opencode" => {
            crate::usage::opencode::latest_conversation(&places.opencode_db?, worktree, since)
                .map(Conversation::OpenCode)
        }
        "gemini" => crate::usage::gemini::latest_conversation(&places.gemini_dir?, worktree, since)
            .map(Conversation::Gemini),
        "aider" => worktree
            .join(crate::usage::aider::CHAT_HISTORY)
            .is_file()
            .then_some(Conversation::Aider),
        _ => None,
    }
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
