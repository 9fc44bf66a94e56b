//! The screen model as clients see it: text views and redraws.

use super::*;

/// The screen as text; with `scrollback`, the lines above it too.
pub fn screen_view(parser: &mut vt100::Parser, scrollback: bool) -> ScreenView {
    let screen = parser.screen();
    let (rows, cols) = screen.size();
    let cursor = screen.cursor_position();
    let alternate_screen = screen.alternate_screen();
    let lines: Vec<String> = screen
        .rows(0, cols)
        .map(|l| l.trim_end().to_string())
        .collect();
    let mut above = Vec::new();
    if scrollback && !alternate_screen {
        let screen = parser.screen_mut();
        screen.set_scrollback(usize::MAX);
        let total = screen.scrollback();
        // Walk the scrollback a screenful at a time, oldest first.
        let mut offset = total;
        while offset > 0 {
            screen.set_scrollback(offset);
            let take = offset.min(rows as usize);
            above.extend(
                screen
                    .rows(0, cols)
                    .take(take)
                    .map(|l| l.trim_end().to_string()),
            );
            offset -= take;
        }
        screen.set_scrollback(0);
    }
    ScreenView {
        rows,
        cols,
        cursor,
        alternate_screen,
        lines,
        scrollback: above,
    }
}

/// Bytes that repaint a client's terminal with the current screen.
pub(super) fn redraw(screen: &vt100::Screen) -> Vec<u8> {
    let mut out = screen.state_formatted();
    let (row, col) = screen.cursor_position();
    out.extend_from_slice(format!("\x1b[{};{}H", row + 1, col + 1).as_bytes());
    out
}
