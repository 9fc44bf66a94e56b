//! Talking to running agents: `owt send`, `owt peek`, `owt wait` and
//! `owt attach`, over their session hosts.

use std::time::Duration;

use anyhow::Context as _;
use owt_protocol::host::PeekView;
use owt_protocol::{SessionAction, Status};

use super::Context;
use crate::session::{self, attach::AttachEnd, WaitOutcome};
use crate::store::SessionRow;

/// Whom `owt send` types into.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SendTo {
    /// One session, by name.
    Session(String),
    /// Every session whose agent has not exited.
    All,
    /// Every session that is working now.
    Working,
}

/// What `owt send` reached.
#[derive(Debug, Default)]
pub struct Sent {
    /// Sessions the text was typed into.
    pub sent: Vec<String>,
    /// Sessions it could not reach, with why.
    pub failed: Vec<(String, anyhow::Error)>,
}

/// Types `text` (then Enter, when `enter`) into the agents `to` names.
pub fn send(ctx: &Context, to: &SendTo, text: &str, enter: bool) -> anyhow::Result<Sent> {
    let targets: Vec<SessionRow> = match to {
        SendTo::Session(name) => vec![ctx.session(name)?],
        SendTo::All | SendTo::Working => {
            let mut out = Vec::new();
            for row in ctx.store.all_sessions(ctx.repo_row.id)? {
                let derived = session::derived_status(&ctx.store, &ctx.home, &row)?;
                let wanted = if *to == SendTo::Working {
                    derived.status == Status::Working
                } else {
                    derived.status != Status::Exited && derived.exit_code.is_none()
                };
                if wanted {
                    out.push(row);
                }
            }
            out
        }
    };
    let mut sent = Sent::default();
    for row in targets {
        // A new prompt carries the notes its agent has not had yet.
        let text = if enter {
            super::notes::with_pending_notes(ctx, &row, text)
        } else {
            text.to_string()
        };
        // The board's check: a session waiting for room, or whose agent or
        // host is gone, is not typed into (its reason says why).
        if let Err(e) = super::allowed::check(ctx, &row, SessionAction::Send, false) {
            sent.failed.push((row.name, e));
            continue;
        }
        match session::send(&ctx.home, &row, &text, enter) {
            Ok(()) => sent.sent.push(row.name),
            Err(e) => sent.failed.push((row.name, e.into())),
        }
    }
    Ok(sent)
}

/// The agent's screen (its last one, saved, once it exited).
pub fn peek(ctx: &Context, name: &str, scrollback: bool) -> anyhow::Result<PeekView> {
    let row = ctx.session(name)?;
    super::allowed::check(ctx, &row, SessionAction::Peek, false)?;
    Ok(session::peek(&ctx.home, &row, scrollback)?)
}

/// The name of this repository's one session (`owt attach` without a
/// name); with none or several, an error saying which there are.
pub fn only_session(ctx: &Context) -> anyhow::Result<String> {
    let mut names: Vec<String> = ctx
        .store
        .all_sessions(ctx.repo_row.id)?
        .into_iter()
        .map(|s| s.name)
        .collect();
    match names.len() {
        0 => anyhow::bail!("this repository has no sessions (start one with `owt new \"task\"`)"),
        1 => Ok(names.remove(0)),
        _ => anyhow::bail!(
            "this repository has {} sessions: {}; name one: owt attach NAME",
            names.len(),
            names.join(", ")
        ),
    }
}

/// The agent's screen with its colours (`ScreenView::formatted`, from a
/// live host that can send it), as the control plane's Screen tab shows it.
pub fn peek_coloured(ctx: &Context, name: &str) -> anyhow::Result<PeekView> {
    let row = ctx.session(name)?;
    let request = owt_protocol::host::PeekRequest {
        scrollback: false,
        scrollback_from: 0,
        formatted: true,
    };
    Ok(session::peek_with(&ctx.home, &row, request)?)
}

/// Blocks until the agent is done, needs the human, or exited (or
/// `timeout` passes); the session's name and how it ended.
pub fn wait(
    ctx: &Context,
    name: &str,
    timeout: Option<Duration>,
) -> anyhow::Result<(String, WaitOutcome)> {
    let row = ctx.session(name)?;
    let outcome = session::wait(&ctx.store, &ctx.home, &row, timeout)?;
    Ok((row.name, outcome))
}

/// Attaches this terminal to the agent until the person detaches, the
/// agent exits or its host goes away; the session's name and which.
/// An ACP session's name and socket (`owt attach` shows its transcript
/// instead of a terminal); `None` for a terminal session.
pub fn acp_socket(
    ctx: &Context,
    name: &str,
) -> anyhow::Result<Option<(String, std::path::PathBuf)>> {
    let row = ctx.session(name)?;
    session::reconcile(&ctx.store, &ctx.home, &row)?;
    if session::transport(&ctx.store, &row)? != owt_protocol::host::Transport::Acp {
        return Ok(None);
    }
    super::allowed::check(ctx, &row, SessionAction::Attach, false)?;
    let socket = session::socket_path(&ctx.home, &row.short_id);
    Ok(Some((row.name, socket)))
}

/// Attaches this terminal to session `name`; `direct`: hand the terminal
/// to the session host when it can take it (see [`session::attach`]).
pub fn attach(ctx: &Context, name: &str, direct: bool) -> anyhow::Result<(String, AttachEnd)> {
    let row = ctx.session(name)?;
    let prefix = ctx
        .config
        .config
        .detach_byte()
        .map_err(anyhow::Error::msg)
        .context("reading [attach] detach_key")?;
    // Reconciles it with its host, as the board does.
    super::allowed::check(ctx, &row, SessionAction::Attach, false)?;
    let socket = session::socket_path(&ctx.home, &row.short_id);
    // Told meanwhile when another session needs you (`[notify] terminal`).
    let notices = super::attached::notices(ctx, &row.name);
    let end = session::attach::attach(&socket, prefix, direct, notices)
        .with_context(|| format!("attaching to {}", row.name))?;
    Ok((row.name, end))
}
