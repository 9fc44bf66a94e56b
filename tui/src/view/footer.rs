//! The status line (the last action's result or error) and the footer:
//! only the keys that apply to the focused row, from the key map and the
//! server's `actions` ([`crate::keys::applicable`]).

use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};
use ratatui::Frame;

use super::style;
use crate::app::{App, Mode, Tab, Tone};
use crate::keys::{self, Binding, Command};

pub fn render_status(app: &App, frame: &mut Frame, area: Rect) {
    let Some((text, error)) = &app.status else {
        return;
    };
    let tone = if *error { Tone::Warn } else { Tone::Plain };
    let mut span_style = style(app, tone);
    if *error && app.colour {
        span_style = Style::default().fg(Color::Red);
    }
    let text = owt_core::printable::line(text).into_owned();
    frame.render_widget(
        Paragraph::new(Line::from(Span::styled(text, span_style))).wrap(Wrap { trim: false }),
        area,
    );
}

/// Rows the status line takes: one, or two for a long sentence (an error
/// with its hint).
pub fn status_height(app: &App, width: u16) -> u16 {
    match &app.status {
        Some((text, _)) if text.chars().count() > width as usize => 2,
        _ => 1,
    }
}

pub fn render_keys(app: &App, frame: &mut Frame, area: Rect) {
    let text = match &app.mode {
        Mode::Board => footer_text(&footer_keys(app), area.width as usize),
        Mode::Help => "? or Esc closes the help".to_string(),
        Mode::Filter => "type to filter · Enter keeps it · Esc clears it".to_string(),
        Mode::Prompt { .. } => "Enter sends · Esc cancels".to_string(),
        Mode::Confirm { .. } => "y confirms · any other key cancels".to_string(),
        Mode::New(_) => {
            "Enter starts · Ctrl-J new line · Tab next field · ←/→ change · Esc cancels".to_string()
        }
    };
    frame.render_widget(
        Paragraph::new(Line::from(Span::styled(text, style(app, Tone::Dim)))),
        area,
    );
}

/// The keys the footer shows for the focused row: every binding that
/// applies to it, but moving and scrolling (always there; in the help), and `c` only on
/// the Diff tab (it comments on the line under the cursor).
pub fn footer_keys(app: &App) -> Vec<&'static Binding> {
    keys::applicable(app.focused())
        .into_iter()
        .filter(|b| {
            !matches!(
                b.command,
                Command::Down | Command::Up | Command::PreviewDown | Command::PreviewUp
            )
        })
        .filter(|b| b.command != Command::Comment || app.tab == Tab::Diff)
        .collect()
}

/// `a/⏎ attach  s ship  …  ? help  q quit`; when that is wider than
/// `width`, the keys that need no session by their keys alone (`· n N / ?
/// q`); when that is still too wide, every key by its keys alone.
pub fn footer_text(bindings: &[&Binding], width: usize) -> String {
    let full = |b: &Binding| format!("{} {}", b.keys, b.label);
    let text = bindings
        .iter()
        .map(|b| full(b))
        .collect::<Vec<_>>()
        .join("  ");
    if text.chars().count() <= width {
        return text;
    }
    let (global, session): (Vec<&&Binding>, Vec<&&Binding>) = bindings
        .iter()
        .partition(|b| b.needs == keys::Needs::Nothing);
    let global: Vec<&str> = global.iter().map(|b| b.keys).collect();
    let text = format!(
        "{}  · {}",
        session
            .iter()
            .map(|b| full(b))
            .collect::<Vec<_>>()
            .join("  "),
        global.join(" ")
    );
    if text.chars().count() <= width {
        return text;
    }
    let session: Vec<&str> = session.iter().map(|b| b.keys).collect();
    format!("{} · {} (? help)", session.join(" "), global.join(" "))
}
