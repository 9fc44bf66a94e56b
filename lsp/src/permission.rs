//! ACP permission requests in the editor: `owt.approve` / `owt.deny` (the
//! same host request as `owt approve` / `owt deny`), the question asked
//! with its options as `window/showMessageRequest` when a session blocks
//! on one, and the answers offered as code actions.
//!
//! A client that does not announce `window.showMessage` (Helix 25.07) gets
//! the question as a `window/showMessage` saying how to answer (the code
//! actions, `:lsp-workspace-command owt.approve`). Every answer names the
//! request it answers (`permission_id`), so an old question left open in
//! the editor can never answer a later request.

use std::collections::HashMap;

use owt_protocol::host::{PendingPermission, PermissionAnswer};
use owt_protocol::lsp::{commands, CommandArgs};
use owt_protocol::{SessionAction, SessionView, Status};
use serde_json::{json, Value};
use tower_lsp_server::ls_types::*;

use super::commands::{session_arg, CommandResult};
use super::event::Event;
use super::state::State;
use owt_core::printable::line as printable;
use owt_core::session;

/// The title of the action that refuses.
const DENY_TITLE: &str = "Deny";

/// `owt.approve`: answers `session`'s pending permission request with
/// `option` (default: the first "allow once").
pub fn approve(state: &State, args: &CommandArgs) -> CommandResult {
    let name = session_arg(commands::APPROVE, args)?;
    answer(
        state,
        name,
        PermissionAnswer {
            option: args.option.clone(),
            deny: false,
            id: args.permission_id,
        },
    )
}

/// `owt.deny`: refuses `session`'s pending permission request.
pub fn deny(state: &State, args: &CommandArgs) -> CommandResult {
    let name = session_arg(commands::DENY, args)?;
    if args.option.is_some() {
        return Err(super::commands::CommandError::Invalid(
            "owt.deny takes no \"option\" (it picks the request's reject option); to pick one, use owt.approve with that option".into(),
        ));
    }
    answer(
        state,
        name,
        PermissionAnswer {
            option: None,
            deny: true,
            id: args.permission_id,
        },
    )
}

fn answer(state: &State, name: &str, answer: PermissionAnswer) -> CommandResult {
    let ctx = state.ctx()?;
    let row = ctx.session(name)?;
    let done = session::answer_permission(&ctx.store, &ctx.home, &row, &answer)?;
    Ok(serde_json::to_value(done).map_err(anyhow::Error::from)?)
}

/// One answer to offer: a title, the command and its argument.
pub struct Offer {
    pub title: String,
    pub command: &'static str,
    pub arg: Value,
}

/// The answers to `session`'s pending request: one per option, then Deny.
fn offers(session: &SessionView, pending: &PendingPermission) -> Vec<Offer> {
    let name = &session.name;
    let mut out: Vec<Offer> = pending
        .options
        .iter()
        .map(|o| Offer {
            title: format!(
                "owt: {name}: {} — {}",
                printable(&o.name),
                printable(&pending.question)
            ),
            command: commands::APPROVE,
            arg: json!({"session": name, "option": o.id, "permission_id": pending.id}),
        })
        .collect();
    out.push(Offer {
        title: format!("owt: {name}: deny — {}", printable(&pending.question)),
        command: commands::DENY,
        arg: json!({"session": name, "permission_id": pending.id}),
    });
    out
}

/// Every answer to every pending request, for the code-action menu of any
/// document (a permission blocks an agent wherever you are).
pub fn code_action_offers(state: &State) -> Vec<Offer> {
    state
        .sessions
        .iter()
        .filter(|s| s.can(SessionAction::Approve))
        .filter_map(|s| Some(offers(s, s.permission.as_ref()?)))
        .flatten()
        .collect()
}

/// The permission requests already put to the user, per session.
#[derive(Default)]
pub struct Asked(HashMap<String, u64>);

impl Asked {
    /// Forgets sessions no longer listed.
    pub fn retain(&mut self, views: &[SessionView]) {
        self.0
            .retain(|name, _| views.iter().any(|v| &v.name == name));
    }
}

/// Puts `view`'s pending permission request to the user once (not at the
/// first read, like every transition message). Returns whether `view` has
/// one, so no other "blocked" message is sent for it.
pub fn notify(state: &State, asked: &mut Asked, view: &SessionView, first_read: bool) -> bool {
    let Some(pending) = view
        .permission
        .as_ref()
        .filter(|_| view.status == Status::Blocked)
    else {
        asked.0.remove(&view.name);
        return false;
    };
    if asked.0.insert(view.name.clone(), pending.id) == Some(pending.id) || first_read {
        return true;
    }
    let question = question_text(view, pending);
    if !state.message_actions_supported {
        state.outbox.show_message(
            MessageType::WARNING,
            format!(
                "{question}; answer with a code action (owt: {}: …), or :lsp-workspace-command owt.approve {{\"session\": \"{}\", \"option\": \"N\"}} / owt.deny {{\"session\": \"{}\"}}",
                view.name, view.name, view.name
            ),
        );
        return true;
    }
    ask(state, view, pending, question);
    true
}

/// `owt: NAME is blocked: QUESTION (PATHS)`.
fn question_text(view: &SessionView, pending: &PendingPermission) -> String {
    let paths = if pending.paths.is_empty() {
        String::new()
    } else {
        format!(" ({})", printable(&pending.paths.join(", ")))
    };
    format!(
        "owt: {} is blocked: {}{paths}",
        view.name,
        printable(&pending.question)
    )
}

/// The titles of the message's actions: each option's name (made unique),
/// then Deny.
fn action_titles(pending: &PendingPermission) -> Vec<String> {
    let mut titles: Vec<String> = Vec::new();
    for o in &pending.options {
        let mut title = printable(&o.name).into_owned();
        if title == DENY_TITLE || titles.contains(&title) {
            title = format!("{title} ({})", printable(&o.id));
        }
        titles.push(title);
    }
    titles.push(DENY_TITLE.to_string());
    titles
}

/// Sends `window/showMessageRequest` (never awaited on the owner thread);
/// the chosen action runs as `owt.approve` / `owt.deny` through the owner's
/// queue, like a command from the editor.
fn ask(state: &State, view: &SessionView, pending: &PendingPermission, question: String) {
    let titles = action_titles(pending);
    let items: Vec<MessageActionItem> = titles
        .iter()
        .map(|title| MessageActionItem {
            title: title.clone(),
            properties: HashMap::new(),
        })
        .collect();
    let offers = offers(view, pending);
    let client = state.client.clone();
    let tx = state.tx.clone();
    let outbox = state.outbox.clone();
    let name = view.name.clone();
    state.rt.spawn(async move {
        let chosen = match client
            .show_message_request(MessageType::WARNING, question, Some(items))
            .await
        {
            Ok(Some(item)) => item,
            Ok(None) => return,
            Err(e) => {
                tracing::warn!("window/showMessageRequest failed: {e}");
                return;
            }
        };
        let Some(i) = titles.iter().position(|t| *t == chosen.title) else {
            tracing::warn!(
                "the editor chose `{}`, which owt did not offer",
                chosen.title
            );
            return;
        };
        let Some(offer) = offers.get(i) else { return };
        let params = ExecuteCommandParams {
            command: offer.command.to_string(),
            arguments: vec![offer.arg.clone()],
            work_done_progress_params: WorkDoneProgressParams::default(),
        };
        let (reply, answered) = tokio::sync::oneshot::channel();
        if tx.send(Event::ExecuteCommand(params, reply)).is_err() {
            return;
        }
        let text = match answered.await {
            Ok(Ok(Some(value))) => {
                let answered: Option<owt_protocol::host::PermissionAnswered> =
                    serde_json::from_value(value).ok();
                let picked = answered.map_or_else(|| chosen.title.clone(), |a| a.name);
                (MessageType::INFO, format!("owt: {name}: answered {picked}"))
            }
            Ok(Ok(None)) => return,
            Ok(Err(e)) => (MessageType::ERROR, format!("owt: {}", e.message)),
            Err(_) => return,
        };
        outbox.show_message(text.0, text.1);
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use owt_protocol::host::PermissionOption;

    /// A permission request offering these options (id, name).
    fn asking(names: &[(&str, &str)]) -> PendingPermission {
        PendingPermission {
            id: 3,
            question: "Write a.txt".into(),
            tool_kind: None,
            paths: vec!["a.txt".into()],
            options: names
                .iter()
                .map(|(id, name)| PermissionOption {
                    id: id.to_string(),
                    name: name.to_string(),
                    kind: "allow_once".into(),
                })
                .collect(),
        }
    }

    /// The question and the options come from the agent: what would act
    /// on a terminal (Helix and Neovim show messages in one) is escaped.
    #[test]
    fn an_agents_question_cannot_drive_the_editors_terminal() {
        let mut p = asking(&[("yes", "Allow\x1b[2J")]);
        p.question = "Write\na.txt\x1b]0;pwned\x07".into();
        let view: SessionView = serde_json::from_value(serde_json::json!({
            "name": "s", "id": "i", "task": "", "branch": "", "base": "", "worktree": "",
            "provider": "", "kind": "worktree", "status": "blocked", "status_text": "",
            "lane": "needs-you", "created_at": 0, "exit_code": null, "host_lost": false,
            "ahead": 0, "changed_files": 0, "overlaps": 0, "conflicted_files": [],
            "agent_pid": null
        }))
        .unwrap();
        assert_eq!(
            question_text(&view, &p),
            "owt: s is blocked: Write\\x0aa.txt\\x1b]0;pwned\\x07 (a.txt)"
        );
        assert_eq!(action_titles(&p), ["Allow\\x1b[2J", "Deny"]);
        assert_eq!(
            offers(&view, &p)[0].title,
            "owt: s: Allow\\x1b[2J — Write\\x0aa.txt\\x1b]0;pwned\\x07"
        );
    }

    #[test]
    fn each_option_then_deny_with_unique_titles() {
        let p = asking(&[("yes", "Allow"), ("no", "Deny"), ("again", "Allow")]);
        assert_eq!(
            action_titles(&p),
            ["Allow", "Deny (no)", "Allow (again)", "Deny"]
        );
    }
}
