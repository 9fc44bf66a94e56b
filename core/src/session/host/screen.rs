//! The screen model as clients see it: text views and redraws; and the
//! model itself, parked while nobody needs it.

use super::*;

/// The agent's screen model (`vt100`). Parked — its rows kept compact,
/// about a byte a printed character instead of 32 bytes a cell (150 KiB
/// at 40×120, more once the alternate screen was used) — once its output
/// has been quiet for a while (the monitor's release after a burst), and
/// unparked, cell for cell as it was, by the next output or read. Every
/// read of the rows goes through [`ScreenModel::live`]; what parking
/// leaves in place (size, modes) reads without unparking.
pub(super) struct ScreenModel {
    parser: vt100::Parser,
}

impl ScreenModel {
    pub(super) fn new(rows: u16, cols: u16, scrollback: usize) -> ScreenModel {
        ScreenModel {
            parser: vt100::Parser::new(rows, cols, scrollback),
        }
    }

    /// The model with its rows in place (unparked if it was parked).
    pub(super) fn live(&mut self) -> &mut vt100::Parser {
        self.parser.unpark();
        &mut self.parser
    }

    /// Keeps the rows compact until the next [`ScreenModel::live`].
    pub(super) fn park(&mut self) {
        self.parser.park();
    }

    pub(super) fn is_parked(&self) -> bool {
        self.parser.is_parked()
    }

    /// The screen's size (rows, cols), parked or not.
    pub(super) fn size(&self) -> (u16, u16) {
        self.parser.parked_screen().size()
    }

    /// Whether the agent asked for bracketed paste, parked or not.
    pub(super) fn bracketed_paste(&self) -> bool {
        self.parser.parked_screen().bracketed_paste()
    }
}

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
        formatted: None,
    }
}

/// Bytes that repaint a client's terminal with the current screen.
pub(super) fn redraw(screen: &vt100::Screen) -> Vec<u8> {
    let mut out = screen.state_formatted();
    let (row, col) = screen.cursor_position();
    out.extend_from_slice(format!("\x1b[{};{}H", row + 1, col + 1).as_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Colours, wide characters, a scrollback, bracketed paste.
    fn output() -> Vec<u8> {
        let mut out = b"\x1b[?2004h".to_vec();
        for i in 0..60 {
            out.extend_from_slice(
                format!("\x1b[3{}mline {i} 你好 \x1b[1;7mé😀\x1b[m end\r\n", i % 8).as_bytes(),
            );
        }
        out
    }

    fn views(model: &mut ScreenModel) -> (ScreenView, ScreenView, Vec<u8>) {
        let parser = model.live();
        let redraw_bytes = redraw(parser.screen());
        (
            screen_view(parser, false),
            screen_view(parser, true),
            redraw_bytes,
        )
    }

    #[test]
    fn a_parked_screen_reads_as_it_was() {
        let mut model = ScreenModel::new(12, 40, 2000);
        model.live().process(&output());
        let before = views(&mut model);
        model.park();
        assert!(model.is_parked());
        assert_eq!(model.size(), (12, 40));
        assert!(model.bracketed_paste());
        assert_eq!(views(&mut model), before);
        assert!(!model.is_parked(), "reading unparks");
    }

    #[test]
    fn output_and_resizes_after_parking_land_as_without() {
        let mut parked = ScreenModel::new(12, 40, 2000);
        let mut never = ScreenModel::new(12, 40, 2000);
        for model in [&mut parked, &mut never] {
            model.live().process(&output());
        }
        parked.park();
        for model in [&mut parked, &mut never] {
            model.live().process(b"\x1b[5;3Hover\x1b[2Kwritten\r\nmore");
        }
        assert_eq!(views(&mut parked), views(&mut never));
        parked.park();
        for model in [&mut parked, &mut never] {
            model.live().screen_mut().set_size(20, 30);
        }
        assert_eq!(views(&mut parked), views(&mut never));
    }
}
