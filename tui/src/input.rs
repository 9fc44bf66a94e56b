//! Keys, by what the keyboard edits now ([`Mode`]): on the board a key is
//! looked up in the key map ([`crate::keys`]) and refused with the
//! server's reason when it does not apply; in a prompt, the filter or the
//! new-session form keys edit text. Actions go to [`crate::commands`].

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use crate::app::{App, Mode, Prompt};
use crate::commands;
use crate::form::{Field, NewForm};
use crate::keys::{self, Command};
use crate::live::Live;

/// What the event loop must do after a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum After {
    Draw,
    Quit,
    /// Hand the terminal to this session's host (`owt attach`).
    Attach(String),
    /// Draw, then do this confirmed command to this session.
    Run(Command, String),
    /// Draw, then start the session this form describes.
    Start(NewForm),
}

pub fn on_key(app: &mut App, live: &mut Live, key: KeyEvent) -> After {
    if key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL) {
        return After::Quit;
    }
    match app.mode.clone() {
        Mode::Board => on_board_key(app, live, &key),
        Mode::Help => {
            app.mode = Mode::Board;
            After::Draw
        }
        Mode::Filter => {
            on_filter_key(app, &key);
            After::Draw
        }
        Mode::Prompt { prompt, text } => on_prompt_key(app, live, prompt, text, &key),
        Mode::Confirm {
            command, session, ..
        } => {
            app.mode = Mode::Board;
            if key.code == KeyCode::Char('y') {
                // Said on the screen before the verb runs (a ship's checks
                // may take minutes).
                app.say(commands::doing(command, &session));
                return After::Run(command, session);
            }
            app.say("Cancelled.");
            After::Draw
        }
        Mode::New(form) => on_form_key(app, form, &key),
    }
}

fn on_board_key(app: &mut App, live: &mut Live, key: &KeyEvent) -> After {
    if key.code == KeyCode::Esc && !app.filter.is_empty() {
        app.set_filter(String::new());
        return After::Draw;
    }
    let Some(binding) = keys::binding_for(key) else {
        return After::Draw;
    };
    if let Some(why) = keys::why_not(binding, app.focused()) {
        app.fail(why);
        return After::Draw;
    }
    let name = app.focus.clone().unwrap_or_default();
    match binding.command {
        Command::Quit => return After::Quit,
        Command::Down => app.move_focus(1),
        Command::Up => app.move_focus(-1),
        Command::PreviewDown => app.move_cursor(1),
        Command::PreviewUp => app.move_cursor(-1),
        Command::NextTab => {
            app.tab = app.tab.next();
            app.cursor = 0;
        }
        Command::Help => app.mode = Mode::Help,
        Command::Filter => app.mode = Mode::Filter,
        Command::Attach => return After::Attach(name),
        Command::Type => open_prompt(app, Prompt::Send),
        Command::Note => open_prompt(app, Prompt::Note),
        Command::Comment => match app.diff_anchor() {
            Some(_) => open_prompt(app, Prompt::Comment),
            None => {
                app.fail("comment: move the cursor onto a line of the Diff tab (tab, then j/k)")
            }
        },
        Command::New => app.mode = Mode::New(commands::new_form(live)),
        Command::Delete | Command::Ship | Command::Merge => {
            commands::ask(app, binding.command, &name)
        }
        Command::Fix => commands::fix(app, live, &name),
        Command::Review => commands::review(app, live, &name),
        Command::Approve => commands::answer(app, live, &name, false),
        Command::Deny => commands::answer(app, live, &name, true),
        Command::Resume => commands::resume(app, live, &name),
    }
    After::Draw
}

fn open_prompt(app: &mut App, prompt: Prompt) {
    app.mode = Mode::Prompt {
        prompt,
        text: String::new(),
    };
}

fn on_filter_key(app: &mut App, key: &KeyEvent) {
    match key.code {
        KeyCode::Esc => {
            app.set_filter(String::new());
            app.mode = Mode::Board;
        }
        KeyCode::Enter => app.mode = Mode::Board,
        KeyCode::Backspace => {
            let mut filter = app.filter.clone();
            filter.pop();
            app.set_filter(filter);
        }
        KeyCode::Char(c) => {
            let filter = format!("{}{c}", app.filter);
            app.set_filter(filter);
        }
        _ => {}
    }
}

/// Edits `text` by `key`; whether the key was an edit.
fn edit(text: &mut String, key: &KeyEvent, multi_line: bool) -> bool {
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    match key.code {
        KeyCode::Char('j') if ctrl && multi_line => text.push('\n'),
        KeyCode::Enter if multi_line && key.modifiers.contains(KeyModifiers::ALT) => {
            text.push('\n')
        }
        KeyCode::Char('u') if ctrl => text.clear(),
        KeyCode::Char(c) if !ctrl => text.push(c),
        KeyCode::Backspace => {
            text.pop();
        }
        _ => return false,
    }
    true
}

fn on_prompt_key(
    app: &mut App,
    live: &mut Live,
    prompt: Prompt,
    mut text: String,
    key: &KeyEvent,
) -> After {
    match key.code {
        KeyCode::Esc => {
            app.mode = Mode::Board;
            app.say("Cancelled.");
        }
        KeyCode::Enter => {
            app.mode = Mode::Board;
            commands::prompted(app, live, prompt, &text);
        }
        _ => {
            edit(&mut text, key, false);
            app.mode = Mode::Prompt { prompt, text };
        }
    }
    After::Draw
}

fn on_form_key(app: &mut App, mut form: NewForm, key: &KeyEvent) -> After {
    if form.field == Field::Task && edit(&mut form.task, key, true) {
        app.mode = Mode::New(form);
        return After::Draw;
    }
    match key.code {
        KeyCode::Esc => {
            app.mode = Mode::Board;
            app.say("Cancelled.");
            return After::Draw;
        }
        KeyCode::Enter => {
            app.mode = Mode::Board;
            app.say(format!("Starting: {}", form.command_line()));
            return After::Start(form);
        }
        KeyCode::Tab => form.next_field(),
        KeyCode::Left | KeyCode::Up => form.cycle(false),
        KeyCode::Right | KeyCode::Down | KeyCode::Char(' ') => form.cycle(true),
        _ => {}
    }
    app.mode = Mode::New(form);
    After::Draw
}

/// Pasted text goes into what is being edited (a newline kept only in the
/// task of the new-session form).
pub fn on_paste(app: &mut App, text: &str) {
    match &mut app.mode {
        Mode::Prompt { text: edited, .. } => edited.push_str(&text.replace(['\r', '\n'], " ")),
        Mode::New(form) if form.field == Field::Task => form.task.push_str(&text.replace('\r', "")),
        Mode::Filter => {
            let filter = format!("{}{}", app.filter, text.replace(['\r', '\n'], ""));
            app.set_filter(filter);
        }
        _ => {}
    }
}
