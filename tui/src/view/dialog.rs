//! What floats over the board: the help (every key of the key map), a
//! confirmation, a one-line prompt, the filter line and the new-session
//! form with its equivalent `owt new …` command.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};
use ratatui::Frame;

use super::style;
use crate::app::{App, Mode, Prompt, Tone};
use crate::form::{Field, NewForm};
use crate::keys::KEYS;

pub fn render(app: &App, frame: &mut Frame, area: Rect) {
    let (title, lines) = match &app.mode {
        Mode::Board => return,
        Mode::Help => ("Keys".to_string(), help_lines()),
        Mode::Filter => (
            "Filter".to_string(),
            vec![Line::from(format!("/{}▏", app.filter))],
        ),
        Mode::Prompt { prompt, text } => (prompt_title(app, *prompt), edit_lines(text)),
        Mode::Confirm { question, .. } => (
            "Confirm".to_string(),
            question.iter().map(|l| Line::from(l.clone())).collect(),
        ),
        Mode::New(form) => ("New session".to_string(), form_lines(app, form)),
    };
    let width = area.width.saturating_sub(4).min(96);
    let height = (wrapped_height(&lines, width.saturating_sub(2)) + 2).min(area.height);
    let popup = Rect {
        x: area.x + (area.width - width) / 2,
        y: area.y + area.height.saturating_sub(height) / 2,
        width,
        height,
    };
    frame.render_widget(Clear, popup);
    let block = Block::default().borders(Borders::ALL).title(Span::styled(
        format!(" {title} "),
        style(app, Tone::Heading),
    ));
    frame.render_widget(
        Paragraph::new(lines)
            .block(block)
            .wrap(Wrap { trim: false }),
        popup,
    );
}

/// Rows `lines` take once wrapped at `width` (a word wrap may take a row
/// more than the characters alone: one more per wrapped line, to be safe).
fn wrapped_height(lines: &[Line], width: u16) -> u16 {
    let width = width.max(1) as usize;
    lines
        .iter()
        .map(|line| {
            let n = line.width();
            if n <= width {
                1
            } else {
                n.div_ceil(width) + 1
            }
        })
        .sum::<usize>() as u16
}

fn help_lines() -> Vec<Line<'static>> {
    KEYS.iter()
        .map(|b| Line::from(format!("{:<6} {}", b.keys, b.help)))
        .collect()
}

fn prompt_title(app: &App, prompt: Prompt) -> String {
    let name = app.focus.clone().unwrap_or_default();
    match prompt {
        Prompt::Send => format!("Type to {name}"),
        Prompt::Note => "Note to every agent".to_string(),
        Prompt::Comment => match app.diff_anchor() {
            Some((path, line)) => format!("Comment on {path}:{line}"),
            None => "Comment".to_string(),
        },
    }
}

/// Text being edited, a bar where the next character goes.
fn edit_lines(text: &str) -> Vec<Line<'static>> {
    let mut lines: Vec<Line<'static>> = text
        .split('\n')
        .map(|l| Line::from(l.to_string()))
        .collect();
    if let Some(last) = lines.last_mut() {
        last.push_span(Span::raw("▏"));
    }
    lines
}

fn form_lines(app: &App, form: &NewForm) -> Vec<Line<'static>> {
    let marker = |field: Field| if form.field == field { "›" } else { " " };
    let mut lines = vec![Line::from(format!("{} Task:", marker(Field::Task)))];
    for line in edit_lines(&form.task) {
        let mut indented = vec![Span::raw("    ")];
        indented.extend(line.spans);
        lines.push(Line::from(indented));
    }
    lines.push(Line::from(format!(
        "{} Agent: {}",
        marker(Field::Agent),
        choices(form.agent_name(), &form.agents, "default")
    )));
    lines.push(Line::from(format!(
        "{} Mode:  ‹ {} ›",
        marker(Field::Mode),
        form.mode.label()
    )));
    if !form.hosts.is_empty() {
        lines.push(Line::from(format!(
            "{} Host:  {}",
            marker(Field::Host),
            choices(form.host_name(), &form.hosts, "this machine")
        )));
    }
    lines.push(Line::from(""));
    lines.push(Line::from(Span::styled(
        form.command_line(),
        style(app, Tone::Dim),
    )));
    lines
}

/// `‹ codex › of claude, codex`.
fn choices(current: Option<&str>, all: &[String], default: &str) -> String {
    let current = current.unwrap_or(default);
    if all.is_empty() {
        return format!("‹ {current} ›");
    }
    format!("‹ {current} › of {}", all.join(", "))
}
