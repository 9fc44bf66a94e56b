//! Drawing the state: `render(&App, &mut Frame)`, pure, one component per
//! pane — the lanes ([`lanes`]), the preview ([`preview`]), the status
//! line and footer ([`footer`]), and what floats over them ([`dialog`]).
//!
//! Invariant: reads the [`App`] only; colour only when `App::colour`
//! (`NO_COLOR` unset), the focus shown by reverse video either way.

mod dialog;
pub(crate) mod footer;
mod lanes;
mod preview;

use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use crate::app::{App, TermColour, TermStyle, Tone};

pub use footer::footer_keys;

/// Draws the whole control plane.
pub fn render(app: &App, frame: &mut Frame) {
    let area = frame.area();
    let rows = Layout::default()
        .direction(Direction::Vertical)
        .constraints([
            Constraint::Length(1),
            Constraint::Min(3),
            Constraint::Length(footer::status_height(app, area.width)),
            Constraint::Length(1),
        ])
        .split(area);
    frame.render_widget(Paragraph::new(header(app)), rows[0]);
    let (left, right) = split_body(rows[1]);
    lanes::render(app, frame, left);
    if let Some(right) = right {
        preview::render(app, frame, right);
    }
    footer::render_status(app, frame, rows[2]);
    footer::render_keys(app, frame, rows[3]);
    dialog::render(app, frame, area);
}

/// The lanes on the left, the preview on the right (none when the
/// terminal is too narrow for both).
fn split_body(area: Rect) -> (Rect, Option<Rect>) {
    if area.width < 60 {
        return (area, None);
    }
    let left = (area.width / 2).clamp(36, 72);
    let parts = Layout::default()
        .direction(Direction::Horizontal)
        .constraints([Constraint::Length(left), Constraint::Min(20)])
        .split(area);
    (parts[0], Some(parts[1]))
}

/// `owt · repo · 3 sessions · 1 working · 1 needs you`.
fn header(app: &App) -> Line<'static> {
    let n = app.sessions.len();
    let mut text = format!("owt · {} · {n} session{}", app.repo_name, plural(n));
    let needs = app.needs_you();
    if needs > 0 {
        text.push_str(&format!(
            " · {needs} need{} you",
            if needs == 1 { "s" } else { "" }
        ));
    }
    if !app.filter.is_empty() {
        text.push_str(&format!(" · filter: {}", app.filter));
    }
    Line::from(Span::styled(text, style(app, Tone::Heading)))
}

pub(crate) fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// The style of a tone (plain without colour, but for bold headings).
pub(crate) fn style(app: &App, tone: Tone) -> Style {
    if let Tone::Term(term) = tone {
        return term_style(term, app.colour);
    }
    if !app.colour {
        return match tone {
            Tone::Heading => Style::default().add_modifier(Modifier::BOLD),
            _ => Style::default(),
        };
    }
    match tone {
        Tone::Plain => Style::default(),
        Tone::Dim => Style::default().fg(Color::DarkGray),
        Tone::Heading => Style::default().add_modifier(Modifier::BOLD),
        Tone::Added => Style::default().fg(Color::Green),
        Tone::Removed => Style::default().fg(Color::Red),
        Tone::Hunk => Style::default().fg(Color::Cyan),
        Tone::Warn => Style::default().fg(Color::Yellow),
        Tone::Term(term) => term_style(term, true),
    }
}

/// An agent's cell style; without colour, its attributes only.
fn term_style(term: TermStyle, colour: bool) -> Style {
    let mut style = Style::default();
    if colour {
        let to_colour = |c: TermColour| match c {
            TermColour::Default => Color::Reset,
            TermColour::Indexed(i) => Color::Indexed(i),
            TermColour::Rgb(r, g, b) => Color::Rgb(r, g, b),
        };
        if term.fg != TermColour::Default {
            style = style.fg(to_colour(term.fg));
        }
        if term.bg != TermColour::Default {
            style = style.bg(to_colour(term.bg));
        }
    }
    for (on, modifier) in [
        (term.bold, Modifier::BOLD),
        (term.italic, Modifier::ITALIC),
        (term.underline, Modifier::UNDERLINED),
        (term.inverse, Modifier::REVERSED),
    ] {
        if on {
            style = style.add_modifier(modifier);
        }
    }
    style
}

/// The focused row's style.
pub(crate) fn focus_style() -> Style {
    Style::default().add_modifier(Modifier::REVERSED)
}

/// The first row to show so that `cursor` is in a window of `height`.
pub(crate) fn scroll_for(cursor: usize, height: usize) -> usize {
    if height == 0 {
        return 0;
    }
    cursor.saturating_sub(height - 1)
}
