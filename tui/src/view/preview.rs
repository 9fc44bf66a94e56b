//! The preview pane: the focused session's tabs (Screen, Diff, Guard,
//! Activity) and the current tab's lines, the Diff tab with a cursor line.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};
use ratatui::Frame;

use super::{focus_style, scroll_for, style};
use crate::app::{App, Tab, Tone};

pub fn render(app: &App, frame: &mut Frame, area: Rect) {
    let tabs = Line::from(tabs(app));
    // The session's name on the right, where the tabs leave room for it.
    let title = match app.focused() {
        Some(view) if tabs.width() + view.name.chars().count() + 4 <= area.width as usize => {
            format!(" {} ", view.name)
        }
        _ => String::new(),
    };
    let block = Block::default()
        .borders(Borders::TOP)
        .title(tabs)
        .title(Line::from(title).right_aligned());
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let Some(view) = app.focused() else {
        frame.render_widget(Paragraph::new("No session is focused."), inner);
        return;
    };
    let lines = app.preview_lines();
    if lines.is_empty() {
        let text = match app.tab {
            Tab::Screen => format!("Reading the screen of {}…", view.name),
            _ => format!("Reading the {} of {}…", app.tab.title(), view.name),
        };
        frame.render_widget(Paragraph::new(text), inner);
        return;
    }
    let height = inner.height as usize;
    let cursor_line = (app.tab == Tab::Diff).then_some(app.cursor);
    let top = match (app.tab, cursor_line) {
        // A screen shows its bottom (where the agent writes).
        (Tab::Screen, _) => lines.len().saturating_sub(height),
        (_, Some(cursor)) => scroll_for(cursor, height),
        (_, None) => app.cursor.min(lines.len().saturating_sub(1)),
    };
    let shown: Vec<Line<'static>> = lines
        .iter()
        .enumerate()
        .skip(top)
        .take(height)
        .map(|(i, pieces)| {
            let spans: Vec<Span<'static>> = pieces
                .iter()
                .map(|(tone, text)| Span::styled(text.clone(), style(app, *tone)))
                .collect();
            let line = Line::from(spans);
            if cursor_line == Some(i) {
                line.style(focus_style())
            } else {
                line
            }
        })
        .collect();
    frame.render_widget(Paragraph::new(shown), inner);
}

/// ` Screen │ Diff │ Guard │ Activity `, the current one marked.
fn tabs(app: &App) -> Vec<Span<'static>> {
    let mut spans = vec![Span::raw(" ")];
    for (i, tab) in Tab::ALL.iter().enumerate() {
        if i > 0 {
            spans.push(Span::raw(" │ "));
        }
        if *tab == app.tab {
            spans.push(Span::styled(
                format!("[{}]", tab.title()),
                style(app, Tone::Heading),
            ));
        } else {
            spans.push(Span::styled(tab.title().to_string(), style(app, Tone::Dim)));
        }
    }
    spans.push(Span::raw(" "));
    spans
}
