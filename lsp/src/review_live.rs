//! Review in the editor: the `owt.comment` command (comments stored at
//! once, typed into the agent as one message per session once the human
//! has stopped commenting for [`BATCH_DELAY`]), the comments shown as
//! Hint diagnostics (source `owt-review`) on the agent's files until the
//! agent changes those lines or they are resolved, `owt.showBase` (a
//! read-only copy of the base version, shown with `window/showDocument`)
//! and `owt.markReviewed`.
//!
//! Invariants: the comment diagnostics of a document are published
//! together with the guard's (one `publishDiagnostics` holds both); they
//! are recomputed for a session the guard saw change, one just commented
//! on, and every [`RECHECK`] while a session has comments shown (a file
//! open in the editor hides its agent's writes from the guard, which
//! reads the buffer's text instead), never for sessions without any.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use anyhow::anyhow;
use owt_protocol::lsp::{commands, CommandArgs};
use owt_protocol::review::COMMENT_SOURCE;
use serde_json::{json, Value};
use tower_lsp_server::ls_types::*;

use super::commands::{session_arg, CommandError, CommandResult};
use super::convert::{line_range, path_to_uri, uri_to_path};
use super::outbox::Outgoing;
use super::state::State;
use owt_core::ops;

/// How long after the last comment on a session its batch is typed.
pub const BATCH_DELAY: Duration = Duration::from_millis(2000);
/// How often the shown comments are checked against the agents' files.
pub const RECHECK: Duration = Duration::from_millis(2000);

#[derive(Default)]
pub struct ReviewLive {
    /// Comments stored but not typed yet: session → (ids, when due).
    pending: BTreeMap<String, (Vec<u32>, Instant)>,
    /// The last selection code actions were asked for in an agent's file
    /// (session, path, first and last line): where `owt.comment` with only
    /// a text goes (Helix's `:lsp-workspace-command owt.comment "text"`).
    pub last_selection: Option<(String, String, u32, u32)>,
    next_recheck: Option<Instant>,
}

/// The session and path (relative to its worktree) of `args`: `session`
/// and `path`, or a `uri` inside a session's worktree.
fn session_and_path(state: &State, args: &CommandArgs) -> Result<(String, String), CommandError> {
    if let (Some(session), Some(path)) = (&args.session, &args.path) {
        return Ok((session.clone(), path.clone()));
    }
    let uri: Option<Uri> = args.uri.as_deref().and_then(|u| u.parse().ok());
    let path = uri.as_ref().and_then(uri_to_path);
    if let Some(path) = path {
        if let Some(session) = state.session_of_path(&path) {
            let rel = path
                .strip_prefix(&session.worktree)
                .map_err(|_| CommandError::Invalid("not in a worktree".into()))?;
            return Ok((session.name.clone(), rel.to_string_lossy().into_owned()));
        }
        return Err(CommandError::Failed(anyhow!(
            "{} is not in an agent's worktree (comments go on an agent's copy of a file)",
            path.display()
        )));
    }
    Err(CommandError::Invalid(
        "needs {\"session\", \"path\"} or the \"uri\" of a file in an agent's worktree".into(),
    ))
}

impl ReviewLive {
    /// When the next batch is due.
    pub fn due(&self) -> Option<Instant> {
        self.pending.values().map(|(_, due)| *due).min()
    }

    /// `owt.comment`: stores the comment and queues it for its agent. With
    /// no `text`, nothing is stored: the client is told how to give one.
    pub fn comment(&mut self, state: &mut State, args: &CommandArgs) -> CommandResult {
        let text = args.text.clone().or(args.task.clone()).unwrap_or_default();
        let located = args.uri.is_some() || args.path.is_some();
        let (session, path, start, end) = if located {
            let (session, path) = session_and_path(state, args)?;
            let start = args.start_line.ok_or_else(|| {
                CommandError::Invalid("owt.comment needs \"start_line\" (1-based)".into())
            })?;
            (session, path, start, args.end_line.unwrap_or(start))
        } else {
            self.last_selection.clone().ok_or_else(|| {
                CommandError::Failed(anyhow!(
                    "select the lines in an agent's file and ask for code actions first, then give the comment"
                ))
            })?
        };
        if text.trim().is_empty() {
            self.last_selection = Some((session.clone(), path.clone(), start, end));
            state.outbox.show_message(
                MessageType::INFO,
                format!(
                    "owt: to ask {session} to change {path}:{start}-{end}, give the comment: `:lsp-workspace-command owt.comment \"your comment\"` (Helix), or the owt command of your editor"
                ),
            );
            return Ok(json!({"needs_text": true}));
        }
        let ctx = state.ctx()?;
        let (start, end, text) = match args.side.as_deref() {
            None | Some("agent") => (start, end, text),
            Some("base") => {
                let on = ops::review::base_selection(ctx, &session, &path, start, end)?;
                let note = ops::review::base_note(start, end, &on.base_text, &text);
                (on.start_line, on.end_line, note)
            }
            Some(other) => {
                return Err(CommandError::Invalid(format!(
                    "owt.comment: \"side\" is \"base\" or \"agent\", not {other:?}"
                )))
            }
        };
        let new = ops::review::NewComment {
            path,
            start_line: start,
            end_line: end,
            text,
        };
        let made = ops::review::record_comments(ctx, &session, &[new])?;
        let entry = self
            .pending
            .entry(session.clone())
            .or_insert_with(|| (Vec::new(), Instant::now()));
        entry.0.extend(made.iter().map(|c| c.id));
        entry.1 = Instant::now() + BATCH_DELAY;
        refresh(state, &session);
        Ok(serde_json::to_value(&made).map_err(anyhow::Error::from)?)
    }

    /// Types every batch that is due.
    pub fn deliver_due(&mut self, state: &State) {
        let now = Instant::now();
        let due: Vec<String> = self
            .pending
            .iter()
            .filter(|(_, (_, at))| *at <= now)
            .map(|(name, _)| name.clone())
            .collect();
        for name in due {
            let Some((ids, _)) = self.pending.remove(&name) else {
                continue;
            };
            let Ok(ctx) = state.ctx() else { continue };
            if let Err(e) = ops::review::deliver(ctx, &name, &ids) {
                state.outbox.show_message(
                    MessageType::WARNING,
                    format!("owt: {e:#}; the comments are kept (`owt comments {name}`)"),
                );
            }
        }
    }

    /// Every [`RECHECK`]: the sessions whose comments are shown, again.
    pub fn recheck(&mut self, state: &mut State) {
        let now = Instant::now();
        if self.next_recheck.is_some_and(|at| now < at) {
            return;
        }
        self.next_recheck = Some(now + RECHECK);
        let mut shown: Vec<String> = state
            .published
            .comments
            .values()
            .flatten()
            .filter_map(|d| diagnostic_session(d).map(str::to_string))
            .collect();
        shown.sort();
        shown.dedup();
        for name in shown {
            refresh(state, &name);
        }
    }

    /// A code action's selection in an agent's file: remembered for
    /// `owt.comment "text"`; the actions offered there (and "resolve" on the
    /// review comments among `diagnostics`).
    pub fn code_actions(
        &mut self,
        state: &State,
        uri: &Uri,
        lines: Option<(u32, u32)>,
        diagnostics: &[Diagnostic],
        actions: &mut Vec<CodeActionOrCommand>,
    ) {
        let Some(path) = uri_to_path(uri) else {
            return;
        };
        let Some(session) = state.session_of_path(&path) else {
            return;
        };
        let name = session.name.clone();
        let Ok(rel) = path.strip_prefix(&session.worktree) else {
            return;
        };
        let rel = rel.to_string_lossy().into_owned();
        let command = |title: String, id: &str, arg: Value| {
            CodeActionOrCommand::CodeAction(CodeAction {
                title: title.clone(),
                kind: Some(CodeActionKind::new("source.owt.review")),
                command: Some(Command {
                    title,
                    command: id.to_string(),
                    arguments: Some(vec![arg]),
                }),
                ..CodeAction::default()
            })
        };
        if let Some((start, end)) = lines {
            self.last_selection = Some((name.clone(), rel.clone(), start, end));
            actions.push(command(
                format!("owt: ask {name} to change this…"),
                commands::COMMENT,
                json!({"session": name, "path": rel, "uri": uri.as_str(), "start_line": start, "end_line": end}),
            ));
        }
        actions.push(command(
            format!("owt: show the base version of {rel}"),
            commands::SHOW_BASE,
            json!({"session": name, "path": rel, "start_line": lines.map(|l| l.0)}),
        ));
        for d in diagnostics {
            let id = d.data.as_ref().and_then(|v| v.get("comment")?.as_u64());
            if let (Some(id), Some(session)) = (id, diagnostic_session(d)) {
                actions.push(command(
                    format!("owt: resolve review comment {id}"),
                    commands::RESOLVE_COMMENT,
                    json!({"session": session, "comment": id}),
                ));
            }
        }
    }
}

/// `owt.showBase`: a read-only copy of the base version of a file of an
/// agent, shown in the editor.
pub fn show_base(state: &State, args: &CommandArgs) -> CommandResult {
    let (session, path) = session_and_path(state, args)?;
    let ctx = state.ctx()?;
    let copy = ops::review::base_copy(ctx, &session, &path)?;
    let uri = path_to_uri(&copy).ok_or_else(|| anyhow!("{} is not a path", copy.display()))?;
    let selection = args
        .start_line
        .map(|l| line_range(l.saturating_sub(1), l.saturating_sub(1)));
    let client = state.client.clone();
    state.rt.spawn(async move {
        let params = ShowDocumentParams {
            uri,
            external: Some(false),
            take_focus: Some(true),
            selection,
        };
        if let Err(e) = client.show_document(params).await {
            tracing::warn!("window/showDocument failed: {e}");
        }
    });
    Ok(json!({"opened": true, "path": copy.to_string_lossy()}))
}

/// `owt.markReviewed`: marks `path` (every changed file without one)
/// reviewed as it was in the diff shown (`snapshot`), else as it is now.
pub fn mark_reviewed(state: &State, args: &CommandArgs) -> CommandResult {
    let name = session_arg(commands::MARK_REVIEWED, args)?;
    let ctx = state.ctx()?;
    let paths: Vec<String> = args.path.iter().cloned().collect();
    let out = ops::review::mark_reviewed(ctx, name, &paths, args.snapshot.as_deref())?;
    Ok(serde_json::to_value(out).map_err(anyhow::Error::from)?)
}

/// `owt.resolveComment`: the comment is resolved; its diagnostic goes.
pub fn resolve(state: &mut State, args: &CommandArgs) -> CommandResult {
    let name = session_arg(commands::RESOLVE_COMMENT, args)?.to_string();
    let id = args.comment.ok_or_else(|| {
        CommandError::Invalid("owt.resolveComment needs \"comment\" (its id)".into())
    })?;
    let ctx = state.ctx()?;
    let out = ops::review::resolve(ctx, &name, &[id])?;
    refresh(state, &name);
    Ok(serde_json::to_value(out).map_err(anyhow::Error::from)?)
}

/// The guard saw these sessions' checkouts change: their comments may be
/// addressed now.
pub fn sessions_changed(state: &mut State, names: &[String]) {
    for name in names {
        let has = state
            .ctx
            .as_ref()
            .is_some_and(|ctx| ops::review::has_open_comments(ctx, name));
        let shown = state
            .published
            .comments
            .values()
            .flatten()
            .any(|d| diagnostic_session(d) == Some(name.as_str()));
        if has || shown {
            refresh(state, name);
        }
    }
}

fn diagnostic_session(d: &Diagnostic) -> Option<&str> {
    d.data.as_ref()?.get("session")?.as_str()
}

/// Recomputes `name`'s open comments and publishes them (with the guard's
/// diagnostics of the same documents).
pub fn refresh(state: &mut State, name: &str) {
    let Some(ctx) = state.ctx.as_ref() else {
        return;
    };
    let (Ok(row), Ok(open)) = (ctx.session(name), ops::review::comments(ctx, name, false)) else {
        return;
    };
    let mut next: HashMap<Uri, Vec<Diagnostic>> = HashMap::new();
    for c in &open.comments {
        let Some(uri) = path_to_uri(&row.worktree_path.join(&c.path)) else {
            continue;
        };
        next.entry(uri).or_default().push(Diagnostic {
            range: line_range(c.start_line.saturating_sub(1), c.end_line.saturating_sub(1)),
            severity: Some(DiagnosticSeverity::HINT),
            code: Some(NumberOrString::String("comment".into())),
            source: Some(COMMENT_SOURCE.into()),
            message: format!("review comment {} to {name}: {}", c.id, c.text),
            data: Some(json!({"session": name, "comment": c.id})),
            ..Diagnostic::default()
        });
    }
    let before: Vec<Uri> = state
        .published
        .comments
        .iter()
        .filter(|(_, diags)| diags.iter().any(|d| diagnostic_session(d) == Some(name)))
        .map(|(uri, _)| uri.clone())
        .collect();
    let mut touched: Vec<Uri> = before;
    for uri in next.keys() {
        if !touched.contains(uri) {
            touched.push(uri.clone());
        }
    }
    for uri in touched {
        let mut diags: Vec<Diagnostic> = state
            .published
            .comments
            .remove(&uri)
            .unwrap_or_default()
            .into_iter()
            .filter(|d| diagnostic_session(d) != Some(name))
            .collect();
        diags.extend(next.remove(&uri).unwrap_or_default());
        if !diags.is_empty() {
            state.published.comments.insert(uri.clone(), diags);
        }
        send(state, uri);
    }
}

/// Publishes `uri`'s diagnostics: the guard's and the comments'.
fn send(state: &State, uri: Uri) {
    let mut all = state
        .published
        .guard
        .get(&uri)
        .map(|(_, d)| d.clone())
        .unwrap_or_default();
    all.extend(
        state
            .published
            .comments
            .get(&uri)
            .cloned()
            .unwrap_or_default(),
    );
    let version = state.docs.get(&uri).map(|d| d.version);
    state.outbox.send(Outgoing::Diagnostics(uri, all, version));
}
