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
            parser: vt100::Parser::new(rows, cols, scrollback.min(super::super::MAX_SCROLLBACK)),
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

/// The screen as text; with `scrollback`, the lines above it too (all of
/// them: see [`screen_page`] for what a frame holds).
pub fn screen_view(parser: &mut vt100::Parser, scrollback: bool) -> ScreenView {
    screen_page(parser, scrollback, 0, usize::MAX)
}

/// The bytes `line` takes in a JSON array of strings (at most: `"` and
/// `\` escaped, its quotes and comma).
fn json_len(line: &str) -> usize {
    line.len() + line.bytes().filter(|b| matches!(b, b'"' | b'\\')).count() + 3
}

/// [`screen_view`] with the scrollback from line `from` (oldest first) for
/// at most `max_bytes` of JSON; `scrollback_next` says where the rest
/// starts.
pub fn screen_page(
    parser: &mut vt100::Parser,
    scrollback: bool,
    from: usize,
    max_bytes: usize,
) -> ScreenView {
    let screen = parser.screen();
    let (rows, cols) = screen.size();
    let cursor = screen.cursor_position();
    let alternate_screen = screen.alternate_screen();
    let lines: Vec<String> = screen
        .rows(0, cols)
        .map(|l| l.trim_end().to_string())
        .collect();
    let mut above = Vec::new();
    let mut next = None;
    if scrollback && !alternate_screen {
        let screen = parser.screen_mut();
        screen.set_scrollback(usize::MAX);
        let total = screen.scrollback();
        // Walk the scrollback a screenful at a time, oldest first.
        let mut offset = total.saturating_sub(from);
        let mut bytes = 0;
        'walk: while offset > 0 {
            screen.set_scrollback(offset);
            let take = offset.min(rows as usize);
            for line in screen.rows(0, cols).take(take) {
                let line = line.trim_end().to_string();
                bytes += json_len(&line);
                if bytes > max_bytes && !above.is_empty() {
                    next = Some(total - offset);
                    break 'walk;
                }
                above.push(line);
                offset -= 1;
            }
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
        scrollback_next: next,
        formatted: None,
    }
}

/// The `Screen` frame that answers `req`: the screen, and a page of the
/// scrollback when asked (never a frame over the protocol's limit).
pub fn peek_reply(parser: &mut vt100::Parser, req: PeekRequest) -> Vec<u8> {
    let mut view = screen_page(
        parser,
        req.scrollback,
        req.scrollback_from,
        owt_protocol::host::SCROLLBACK_PAGE_BYTES,
    );
    if req.formatted {
        let bytes = parser.screen().contents_formatted();
        view.formatted = Some(String::from_utf8_lossy(&bytes).into_owned());
    }
    proto::encode_json(FrameKind::Screen, &view)
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

    /// Regression (issue 33, item 9): a scrollback of 50 MB made `owt peek
    /// --scrollback` fail with "frame of 53739627 bytes is larger than
    /// 16777216". A host keeps at most MAX_SCROLLBACK lines and answers a
    /// page a frame; the pages join to the whole scrollback.
    #[test]
    fn regression_a_full_scrollback_is_read_in_pages_under_the_frame_limit() {
        let cols = 250u16;
        let mut model = ScreenModel::new(24, cols, usize::MAX);
        let wanted = crate::session::MAX_SCROLLBACK + 500;
        let mut out = Vec::with_capacity(wanted * (cols as usize + 2));
        for i in 0..wanted {
            out.extend_from_slice(format!("{i:>8} {}\r\n", "\"x".repeat(120)).as_bytes());
        }
        model.live().process(&out);

        let mut from = 0;
        let mut scrollback: Vec<String> = Vec::new();
        let mut pages = 0;
        loop {
            let req = PeekRequest {
                scrollback: true,
                scrollback_from: from,
                formatted: false,
            };
            let frame_bytes = peek_reply(model.live(), req);
            assert!(
                frame_bytes.len() <= owt_protocol::host::MAX_FRAME_LEN as usize,
                "page {pages}: a frame of {} bytes",
                frame_bytes.len()
            );
            let frame = proto::read_frame(&mut frame_bytes.as_slice())
                .unwrap()
                .unwrap();
            let view: ScreenView = frame.json().unwrap();
            pages += 1;
            scrollback.extend(view.scrollback);
            match view.scrollback_next {
                Some(next) => from = next,
                None => break,
            }
        }
        assert!(pages > 1, "more than one frame's worth");
        assert_eq!(scrollback.len(), crate::session::MAX_SCROLLBACK, "bounded");
        // Consecutive, oldest first, ending above the screen.
        let first: usize = scrollback[0]
            .split_whitespace()
            .next()
            .unwrap()
            .parse()
            .unwrap();
        for (i, line) in scrollback.iter().enumerate() {
            let n: usize = line.split_whitespace().next().unwrap().parse().unwrap();
            assert_eq!(n, first + i, "line {i}");
        }
        assert_eq!(
            first + scrollback.len() + 23,
            wanted,
            "the screen holds the rest"
        );
    }
}
