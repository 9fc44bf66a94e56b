//! The one key map: every key of the control plane, what it does, and
//! which of the server's actions ([`owt_core::actions`]) it needs. The key
//! handling, the footer and the `?` help all read [`KEYS`]; nothing else
//! names a key.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use owt_protocol::{SessionAction, SessionView};

/// What a key asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    Down,
    Up,
    PreviewDown,
    PreviewUp,
    NextTab,
    Attach,
    Ship,
    Merge,
    Fix,
    Review,
    Comment,
    Type,
    Approve,
    Deny,
    Resume,
    Delete,
    New,
    Note,
    Filter,
    Help,
    Quit,
}

/// One binding: its keys, how the footer and help name it, and what it
/// needs of the focused session.
#[derive(Debug)]
pub struct Binding {
    pub codes: &'static [KeyCode],
    /// The keys as shown (`j/↓`).
    pub keys: &'static str,
    /// The footer's word (`ship`).
    pub label: &'static str,
    /// The help line: what it does, which verb it is.
    pub help: &'static str,
    pub command: Command,
    pub needs: Needs,
}

/// What a binding needs to apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needs {
    /// Nothing: it always applies.
    Nothing,
    /// A focused session.
    Session,
    /// A focused session whose `actions` allow this one.
    Action(SessionAction),
}

/// Every key, in footer and help order.
pub const KEYS: &[Binding] = &[
    Binding {
        codes: &[KeyCode::Char('j'), KeyCode::Down],
        keys: "j/↓",
        label: "down",
        help: "focus the next session",
        command: Command::Down,
        needs: Needs::Nothing,
    },
    Binding {
        codes: &[KeyCode::Char('k'), KeyCode::Up],
        keys: "k/↑",
        label: "up",
        help: "focus the previous session",
        command: Command::Up,
        needs: Needs::Nothing,
    },
    Binding {
        codes: &[KeyCode::Char('J'), KeyCode::PageDown],
        keys: "J/PgDn",
        label: "scroll",
        help: "scroll the preview down (the Diff tab: its cursor line)",
        command: Command::PreviewDown,
        needs: Needs::Session,
    },
    Binding {
        codes: &[KeyCode::Char('K'), KeyCode::PageUp],
        keys: "K/PgUp",
        label: "scroll up",
        help: "scroll the preview up",
        command: Command::PreviewUp,
        needs: Needs::Session,
    },
    Binding {
        codes: &[KeyCode::Tab],
        keys: "tab",
        label: "preview",
        help: "next preview tab: Screen, Diff, Guard, Activity",
        command: Command::NextTab,
        needs: Needs::Session,
    },
    Binding {
        codes: &[KeyCode::Char('a'), KeyCode::Enter],
        keys: "a/⏎",
        label: "attach",
        help: "attach full screen (owt attach); Ctrl-\\ d comes back here",
        command: Command::Attach,
        needs: Needs::Action(SessionAction::Attach),
    },
    Binding {
        codes: &[KeyCode::Char('s')],
        keys: "s",
        label: "ship",
        help: "commit, merge and delete, behind the [checks] (owt ship)",
        command: Command::Ship,
        needs: Needs::Action(SessionAction::Ship),
    },
    Binding {
        codes: &[KeyCode::Char('m')],
        keys: "m",
        label: "merge",
        help: "merge the branch into its base (owt merge)",
        command: Command::Merge,
        needs: Needs::Action(SessionAction::Merge),
    },
    Binding {
        codes: &[KeyCode::Char('f')],
        keys: "f",
        label: "fix",
        help: "send the guard's conflict notes to the agent",
        command: Command::Fix,
        needs: Needs::Action(SessionAction::Send),
    },
    Binding {
        codes: &[KeyCode::Char('r')],
        keys: "r",
        label: "reviewed",
        help: "mark every changed file reviewed (owt review --mark)",
        command: Command::Review,
        needs: Needs::Session,
    },
    Binding {
        codes: &[KeyCode::Char('c')],
        keys: "c",
        label: "comment",
        help: "comment on the diff line under the cursor (owt comment)",
        command: Command::Comment,
        needs: Needs::Session,
    },
    Binding {
        codes: &[KeyCode::Char('t')],
        keys: "t",
        label: "type",
        help: "type a message to the agent (owt send)",
        command: Command::Type,
        needs: Needs::Action(SessionAction::Send),
    },
    Binding {
        codes: &[KeyCode::Char('y')],
        keys: "y",
        label: "approve",
        help: "approve the ACP permission request (owt approve)",
        command: Command::Approve,
        needs: Needs::Action(SessionAction::Approve),
    },
    Binding {
        codes: &[KeyCode::Char('Y')],
        keys: "Y",
        label: "deny",
        help: "deny the ACP permission request (owt deny)",
        command: Command::Deny,
        needs: Needs::Action(SessionAction::Deny),
    },
    Binding {
        codes: &[KeyCode::Char('R')],
        keys: "R",
        label: "resume",
        help: "start a gone agent again, its conversation resumed (owt resume)",
        command: Command::Resume,
        needs: Needs::Action(SessionAction::Resume),
    },
    Binding {
        codes: &[KeyCode::Char('d')],
        keys: "d",
        label: "delete",
        help: "delete the session, after a confirmation (owt delete)",
        command: Command::Delete,
        needs: Needs::Action(SessionAction::Delete),
    },
    Binding {
        codes: &[KeyCode::Char('n')],
        keys: "n",
        label: "new",
        help: "start a session: task, agent, mode (owt new)",
        command: Command::New,
        needs: Needs::Nothing,
    },
    Binding {
        codes: &[KeyCode::Char('N')],
        keys: "N",
        label: "note",
        help: "share a note with every agent (owt note)",
        command: Command::Note,
        needs: Needs::Nothing,
    },
    Binding {
        codes: &[KeyCode::Char('/')],
        keys: "/",
        label: "filter",
        help: "filter by name, status or agent (Esc clears)",
        command: Command::Filter,
        needs: Needs::Nothing,
    },
    Binding {
        codes: &[KeyCode::Char('?')],
        keys: "?",
        label: "help",
        help: "show or hide this help",
        command: Command::Help,
        needs: Needs::Nothing,
    },
    Binding {
        codes: &[KeyCode::Char('q')],
        keys: "q",
        label: "quit",
        help: "quit the control plane (the agents keep running)",
        command: Command::Quit,
        needs: Needs::Nothing,
    },
];

/// The binding of a key press in the board (`None`: not a key of ours).
pub fn binding_for(key: &KeyEvent) -> Option<&'static Binding> {
    if key
        .modifiers
        .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT)
    {
        return None;
    }
    KEYS.iter().find(|b| b.codes.contains(&key.code))
}

/// Why `binding` does not apply to `focused` (`None`: it does). A
/// refused action's reason is the server's own (`merge: no commits to
/// merge`).
pub fn why_not(binding: &Binding, focused: Option<&SessionView>) -> Option<String> {
    match (binding.needs, focused) {
        (Needs::Nothing, _) => None,
        (_, None) => Some(format!("{}: no session is focused", binding.label)),
        (Needs::Session, Some(_)) => None,
        (Needs::Action(action), Some(view)) => {
            let state = view.actions.iter().find(|a| a.action == action);
            match state {
                Some(state) if state.available => None,
                Some(state) => Some(format!(
                    "{}: {}",
                    binding.label,
                    state.reason.as_deref().unwrap_or("not possible now")
                )),
                None => Some(format!("{}: not possible now", binding.label)),
            }
        }
    }
}

/// The bindings that apply to `focused` now, in footer order.
pub fn applicable(focused: Option<&SessionView>) -> Vec<&'static Binding> {
    KEYS.iter()
        .filter(|b| why_not(b, focused).is_none())
        .collect()
}
