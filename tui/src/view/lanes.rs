//! The lanes pane: one heading per non-empty section (NEEDS YOU, READY TO
//! SHIP, IN FLIGHT, READY TO CLEAN, QUEUED) and one row per session —
//! name, status and how long, agent, commits and changed files, overlaps,
//! checks and PR, tokens.

use owt_core::printable;
use owt_protocol::{Lane, SessionView};
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};
use ratatui::Frame;

use super::{focus_style, plural, scroll_for, style};
use crate::app::{App, Section, Tone};

pub fn render(app: &App, frame: &mut Frame, area: Rect) {
    let block = Block::default().borders(Borders::RIGHT);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let (lines, focus_line) = lines(app, inner.width as usize);
    let top = scroll_for(focus_line.unwrap_or(0), inner.height as usize);
    frame.render_widget(Paragraph::new(lines).scroll((top as u16, 0)), inner);
}

/// The pane's lines, and which one is the focused session's.
fn lines(app: &App, width: usize) -> (Vec<Line<'static>>, Option<usize>) {
    let visible = app.visible();
    if visible.is_empty() {
        let text = if app.sessions.is_empty() {
            "No sessions. Press n to start one."
        } else {
            "No session matches the filter (/ to change it, Esc to clear)."
        };
        return (vec![Line::from(text)], None);
    }
    let name_width = visible
        .iter()
        .map(|s| s.name.chars().count())
        .max()
        .unwrap_or(0)
        .min(24);
    let mut out = Vec::new();
    let mut focus_line = None;
    for section in Section::ALL {
        let in_section: Vec<&&SessionView> = visible
            .iter()
            .filter(|s| Section::of(s) == section)
            .collect();
        if in_section.is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.push(Line::from(""));
        }
        out.push(Line::from(Span::styled(
            format!("{} ({})", section.title(), in_section.len()),
            style(app, Tone::Heading).patch(lane_colour(app, section)),
        )));
        for view in in_section {
            let focused = app.focus.as_deref() == Some(view.name.as_str());
            if focused {
                focus_line = Some(out.len());
            }
            out.push(row(app, view, name_width, width, focused));
        }
    }
    (out, focus_line)
}

fn lane_colour(app: &App, section: Section) -> Style {
    if !app.colour {
        return Style::default();
    }
    match section {
        Section::Lane(Lane::NeedsYou) => Style::default().fg(Color::Yellow),
        Section::Lane(Lane::ReadyToShip) => Style::default().fg(Color::Green),
        Section::Lane(Lane::InFlight) => Style::default().fg(Color::Cyan),
        Section::Lane(Lane::ReadyToClean) | Section::Queued => Style::default().fg(Color::DarkGray),
    }
}

/// One session's row, cut to `width`.
fn row(
    app: &App,
    view: &SessionView,
    name_width: usize,
    width: usize,
    focused: bool,
) -> Line<'static> {
    let name: String = printable::line(&view.name)
        .chars()
        .take(name_width)
        .collect();
    let text = format!(
        "{} {name:<name_width$}  {}",
        if focused { "›" } else { " " },
        row_details(view, app.now)
    );
    let text: String = text.chars().take(width).collect();
    let padded = format!("{text:<width$}");
    if focused {
        Line::from(Span::styled(padded, focus_style()))
    } else {
        Line::from(padded)
    }
}

/// `working 3m · claude · +2 · 4 files · 1 overlap · checks passed · 12k tok`.
pub fn row_details(view: &SessionView, now: i64) -> String {
    // How long it has been in its status, once recorded.
    let status = match view.status_since {
        Some(since) => format!(
            "{} {}",
            printable::line(&view.status_text),
            printable::age(since, now)
        ),
        None => printable::line(&view.status_text).into_owned(),
    };
    let mut parts = vec![status, printable::line(&view.provider).into_owned()];
    if let Some(parent) = &view.parent {
        parts.push(format!("↳ child of {}", printable::line(parent)));
    }
    if view.ahead > 0 {
        parts.push(format!("+{}", view.ahead));
    }
    if view.changed_files > 0 {
        let n = view.changed_files as usize;
        parts.push(format!("{n} file{}", plural(n)));
    }
    if !view.base_conflicts.is_empty() {
        parts.push(format!("conflicts with {}", printable::line(&view.base)));
    }
    if view.overlaps > 0 {
        let n = view.overlaps as usize;
        parts.push(format!("{n} overlap{}", plural(n)));
    }
    if let Some(checks) = &view.checks {
        parts.push(format!("checks {}", checks.state));
    }
    if let Some(pr) = &view.pr {
        parts.push(format!("PR #{}", pr.number));
    }
    if let Some(usage) = &view.usage {
        parts.push(format!("{} tok", compact(usage.total_tokens())));
    }
    parts.join(" · ")
}

/// `950`, `12k`, `1.2M`.
fn compact(n: u64) -> String {
    match n {
        0..=999 => n.to_string(),
        1_000..=999_999 => format!("{}k", n / 1000),
        _ => format!("{:.1}M", n as f64 / 1e6),
    }
}
