//! `textDocument/codeAction`: what owt offers on its own diagnostics, on a
//! selection, and in a document that belongs to a session's worktree. A
//! session's attach, peek, merge and ship are offered only when its
//! [`SessionView::actions`](owt_protocol::SessionView) allow them; the
//! answers to an ACP session's pending permission request in every
//! document.

use owt_protocol::lsp::{commands, DiagnosticData};
use owt_protocol::{SessionAction, SessionView};
use serde_json::json;
use tower_lsp_server::ls_types::*;

use super::super::convert::uri_to_path;
use super::super::event::Reply;
use super::super::owner::Owner;
use super::super::state::State;

pub fn handle(
    owner: &mut Owner,
    params: &CodeActionParams,
    reply: Reply<Option<CodeActionResponse>>,
) {
    let mut actions = code_actions(&owner.state, params).unwrap_or_default();
    owner.review.code_actions(
        &owner.state,
        &params.text_document.uri,
        selection_lines(params.range),
        &params.context.diagnostics,
        &mut actions,
    );
    if let Some(only) = &params.context.only {
        actions.retain(|a| wanted(a, only));
    }
    let _ = reply.send(Ok(Some(actions)));
}

/// Whether the session `name` (as last read) allows `action` now.
fn allows(state: &State, name: &str, action: SessionAction) -> bool {
    state
        .session_named(name)
        .is_some_and(|session| session.can(action))
}

fn action(
    title: String,
    command: &str,
    arg: serde_json::Value,
    kind: CodeActionKind,
    diagnostics: Option<Vec<Diagnostic>>,
) -> CodeActionOrCommand {
    CodeActionOrCommand::CodeAction(CodeAction {
        title: title.clone(),
        kind: Some(kind),
        diagnostics,
        command: Some(Command {
            title,
            command: command.to_string(),
            arguments: Some(vec![arg]),
        }),
        ..CodeAction::default()
    })
}

/// The 1-based first and last lines of a non-empty selection (one that ends
/// at the start of a line leaves that line out). Saturating: a client may
/// send any `u32` line.
pub(crate) fn selection_lines(range: Range) -> Option<(u32, u32)> {
    if range.start == range.end {
        return None;
    }
    let start = range.start.line.saturating_add(1);
    let end = if range.end.character == 0 && range.end.line > range.start.line {
        range.end.line
    } else {
        range.end.line.saturating_add(1)
    };
    Some((start, end))
}

pub(in super::super) fn code_actions(
    state: &State,
    params: &CodeActionParams,
) -> Option<CodeActionResponse> {
    let uri = &params.text_document.uri;
    let path = uri_to_path(uri);
    let relative = path.as_ref().and_then(|p| state.relative_to_checkout(p));
    let mut actions = Vec::new();
    for diagnostic in &params.context.diagnostics {
        on_diagnostic(state, diagnostic, relative.as_deref(), &mut actions);
    }
    // On a selection.
    if let Some((start, end)) = selection_lines(params.range) {
        actions.push(action(
            "owt: spawn an agent on this selection".into(),
            commands::SPAWN,
            json!({"uri": uri.as_str(), "start_line": start, "end_line": end}),
            CodeActionKind::new("source.owt.spawn"),
            None,
        ));
    }
    // In a session's worktree.
    if let Some(session) = path.as_ref().and_then(|p| state.session_of_path(p)) {
        in_worktree(session, &mut actions);
    }
    // The answers to every pending ACP permission request.
    for offer in super::super::permission::code_action_offers(state) {
        actions.push(action(
            offer.title,
            offer.command,
            offer.arg,
            CodeActionKind::new("source.owt.permission"),
            None,
        ));
    }
    if let Some(only) = &params.context.only {
        actions.retain(|a| wanted(a, only));
    }
    Some(actions)
}

/// Whether a client that asked for `only` these kinds wants `action`: its
/// kind is one of them or below one (`source.owt.spawn` is under `source`).
/// VS Code asks for `quickfix` alone on its Quick Fix menu and drops (with
/// a warning in its log) whatever else comes back.
fn wanted(action: &CodeActionOrCommand, only: &[CodeActionKind]) -> bool {
    let CodeActionOrCommand::CodeAction(CodeAction {
        kind: Some(kind), ..
    }) = action
    else {
        return true;
    };
    only.iter().any(|o| {
        kind.as_str() == o.as_str()
            || kind
                .as_str()
                .strip_prefix(o.as_str())
                .is_some_and(|rest| rest.starts_with('.'))
    })
}

/// What owt offers on one of its diagnostics.
fn on_diagnostic(
    state: &State,
    diagnostic: &Diagnostic,
    relative: Option<&str>,
    actions: &mut Vec<CodeActionOrCommand>,
) {
    if diagnostic.source.as_deref() != Some("owt") {
        return;
    }
    let Some(data) = diagnostic
        .data
        .clone()
        .and_then(|d| serde_json::from_value::<DiagnosticData>(d).ok())
    else {
        return;
    };
    let name = &data.session;
    let first = diagnostic.range.start.line.saturating_add(1);
    let last = diagnostic.range.end.line.max(first);
    let linked = Some(vec![diagnostic.clone()]);
    let quickfix = CodeActionKind::QUICKFIX;
    if let Some(rel) = relative {
        actions.push(action(
            format!("owt: open {name}'s copy of {rel}"),
            commands::OPEN_AGENT_FILE,
            json!({"session": name, "path": rel, "start_line": first, "end_line": last}),
            quickfix.clone(),
            linked.clone(),
        ));
        if allows(state, name, SessionAction::Send) {
            actions.push(action(
                format!("owt: tell {name} about this overlap"),
                commands::SEND,
                json!({"session": name, "text": format!(
                    "Heads-up from owt: someone else is also changing {rel} around lines {first}-{last} ({}). Coordinate before changing those lines further.",
                    data.level
                )}),
                quickfix.clone(),
                linked.clone(),
            ));
        }
    }
    for (title, command, allowed) in [
        (
            format!("owt: attach to {name}"),
            commands::ATTACH,
            SessionAction::Attach,
        ),
        (
            format!("owt: merge {name}"),
            commands::MERGE,
            SessionAction::Merge,
        ),
        (
            format!("owt: ship {name}"),
            commands::SHIP,
            SessionAction::Ship,
        ),
        (
            format!("owt: resume {name}"),
            commands::RESUME,
            SessionAction::Resume,
        ),
    ] {
        if allows(state, name, allowed) {
            actions.push(action(
                title,
                command,
                json!({"session": name}),
                quickfix.clone(),
                linked.clone(),
            ));
        }
    }
}

/// What owt offers in a document of `session`'s worktree.
fn in_worktree(session: &SessionView, actions: &mut Vec<CodeActionOrCommand>) {
    let name = &session.name;
    for (title, command, allowed) in [
        (
            format!("owt: ship {name} (this worktree)"),
            commands::SHIP,
            SessionAction::Ship,
        ),
        (
            format!("owt: merge {name} (this worktree)"),
            commands::MERGE,
            SessionAction::Merge,
        ),
        (
            format!("owt: attach to {name}"),
            commands::ATTACH,
            SessionAction::Attach,
        ),
        (
            format!("owt: peek at {name}"),
            commands::PEEK,
            SessionAction::Peek,
        ),
        (
            format!("owt: resume {name}"),
            commands::RESUME,
            SessionAction::Resume,
        ),
    ] {
        if session.can(allowed) {
            actions.push(action(
                title,
                command,
                json!({"session": name}),
                CodeActionKind::new("source.owt.session"),
                None,
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(start: (u32, u32), end: (u32, u32)) -> Range {
        Range {
            start: Position {
                line: start.0,
                character: start.1,
            },
            end: Position {
                line: end.0,
                character: end.1,
            },
        }
    }

    #[test]
    fn only_the_kinds_the_client_asked_for() {
        let spawn = action(
            "spawn".into(),
            commands::SPAWN,
            json!({}),
            CodeActionKind::new("source.owt.spawn"),
            None,
        );
        let fix = action(
            "fix".into(),
            commands::ATTACH,
            json!({}),
            CodeActionKind::QUICKFIX,
            None,
        );
        let quickfix = [CodeActionKind::QUICKFIX];
        assert!(wanted(&fix, &quickfix));
        assert!(!wanted(&spawn, &quickfix));
        assert!(wanted(&spawn, &[CodeActionKind::SOURCE]));
        assert!(wanted(&spawn, &[CodeActionKind::new("source.owt.spawn")]));
        assert!(
            !wanted(&spawn, &[CodeActionKind::new("source.ow")]),
            "a kind is below another only at a dot"
        );
    }

    #[test]
    fn selections_cover_the_lines_they_touch() {
        assert_eq!(selection_lines(range((2, 4), (2, 4))), None);
        assert_eq!(selection_lines(range((2, 0), (4, 3))), Some((3, 5)));
        assert_eq!(
            selection_lines(range((2, 0), (4, 0))),
            Some((3, 4)),
            "a selection ending at a line start leaves that line out"
        );
    }

    /// Found while writing the `lsp_framing` fuzz target's code-action
    /// check: a selection or an owt diagnostic on line `u32::MAX` overflowed
    /// `line + 1`, which panicked in debug builds (the client got an
    /// internal error).
    #[test]
    fn regression_a_selection_on_the_last_u32_line_overflowed() {
        let last = u32::MAX;
        assert_eq!(selection_lines(range((0, 0), (last, 5))), Some((1, last)));
        assert_eq!(
            selection_lines(range((last, 0), (last, 5))),
            Some((last, last))
        );
    }
}
