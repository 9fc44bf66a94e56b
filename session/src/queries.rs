//! Terminal queries in the agent's output, and the answers a terminal gives.
//!
//! With no client attached the session host *is* the agent's terminal, so it
//! answers what full-screen TUIs ask at start (cursor position, device
//! attributes, version, colours, keyboard protocol, mode reports) from its
//! screen model. [`QueryScanner`] is a byte state machine that keeps its
//! state between reads, so a query split across two reads is still found.
//! Pure: no I/O here.

/// A query the host answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Query {
    /// `CSI 6 n`.
    CursorPosition,
    /// `CSI c`, `CSI 0 c`.
    PrimaryAttributes,
    /// `CSI > c`, `CSI > 0 c`.
    SecondaryAttributes,
    /// `CSI > q`, `CSI > 0 q` (XTVERSION).
    Version,
    /// `OSC 10 ; ?` / `OSC 11 ; ?`; `bel` says how it was terminated.
    Colour { which: u8, bel: bool },
    /// `CSI ? u` (kitty keyboard protocol flags).
    KeyboardFlags,
    /// `CSI ? Pd $ p` (DECRQM for a private mode).
    PrivateMode(u16),
    /// `CSI 18 t`: text area size in characters.
    TextAreaSize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Ground,
    Esc,
    Csi,
    Osc,
    /// `ESC` inside an OSC: `\` ends it.
    OscEsc,
}

/// Longest CSI/OSC kept; longer sequences are skipped (queries are short).
const MAX_SEQUENCE: usize = 32;

/// Finds queries in a byte stream fed in arbitrary pieces, and the
/// desktop notifications (`OSC 9 ; message`) an agent sends its terminal.
#[derive(Debug, Clone)]
pub struct QueryScanner {
    state: State,
    buf: Vec<u8>,
    overflow: bool,
    /// Notification messages found (their first bytes: enough to tell
    /// what they are about), until taken.
    notifications: Vec<String>,
}

impl Default for QueryScanner {
    fn default() -> Self {
        QueryScanner {
            state: State::Ground,
            buf: Vec::with_capacity(MAX_SEQUENCE),
            overflow: false,
            notifications: Vec::new(),
        }
    }
}

impl QueryScanner {
    pub fn new() -> QueryScanner {
        QueryScanner::default()
    }

    /// Scans `bytes`, appending `(end, query)` for each complete query,
    /// where `end` is the index in `bytes` just after the query's last byte.
    pub fn scan(&mut self, bytes: &[u8], out: &mut Vec<(usize, Query)>) {
        let mut i = 0;
        while i < bytes.len() {
            if self.state == State::Ground {
                // Fast path: skip to the next ESC.
                match bytes[i..].iter().position(|&b| b == 0x1b) {
                    Some(off) => i += off,
                    None => return,
                }
            }
            let b = bytes[i];
            i += 1;
            match self.state {
                State::Ground => self.state = State::Esc,
                State::Esc => match b {
                    b'[' => self.start(State::Csi),
                    b']' => self.start(State::Osc),
                    0x1b => {}
                    _ => self.state = State::Ground,
                },
                State::Csi => match b {
                    0x20..=0x3f => self.push(b),
                    0x40..=0x7e => {
                        if !self.overflow {
                            if let Some(q) = parse_csi(&self.buf, b) {
                                out.push((i, q));
                            }
                        }
                        self.state = State::Ground;
                    }
                    0x1b => self.state = State::Esc,
                    // C0 controls inside a CSI are executed; keep going.
                    0x00..=0x1f => {}
                    _ => self.state = State::Ground,
                },
                State::Osc => match b {
                    0x07 => {
                        self.finish_osc(true, i, out);
                    }
                    0x1b => self.state = State::OscEsc,
                    _ => self.push(b),
                },
                State::OscEsc => {
                    if b == b'\\' {
                        self.finish_osc(false, i, out);
                    } else if b == b'[' {
                        // An unterminated OSC followed by a CSI.
                        self.start(State::Csi);
                    } else if b == b']' {
                        self.start(State::Osc);
                    } else {
                        self.state = State::Ground;
                    }
                }
            }
        }
    }

    fn start(&mut self, state: State) {
        self.state = state;
        self.buf.clear();
        self.overflow = false;
    }

    fn push(&mut self, b: u8) {
        if self.buf.len() < MAX_SEQUENCE {
            self.buf.push(b);
        } else {
            self.overflow = true;
        }
    }

    /// The notifications found since the last call.
    pub fn take_notifications(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notifications)
    }

    fn finish_osc(&mut self, bel: bool, end: usize, out: &mut Vec<(usize, Query)>) {
        // `OSC 9 ; message` (iTerm2's notification; `9;4;…` is ConEmu's
        // progress bar, not a message). Only its start is kept.
        if let Some(message) = self.buf.strip_prefix(b"9;") {
            if !message.starts_with(b"4;") {
                self.notifications
                    .push(String::from_utf8_lossy(message).into_owned());
            }
        }
        if !self.overflow {
            match self.buf.as_slice() {
                b"10;?" => out.push((end, Query::Colour { which: 10, bel })),
                b"11;?" => out.push((end, Query::Colour { which: 11, bel })),
                _ => {}
            }
        }
        self.state = State::Ground;
    }
}

fn parse_csi(params: &[u8], final_byte: u8) -> Option<Query> {
    match (params, final_byte) {
        (b"6", b'n') => Some(Query::CursorPosition),
        (b"" | b"0", b'c') => Some(Query::PrimaryAttributes),
        (b">" | b">0", b'c') => Some(Query::SecondaryAttributes),
        (b">" | b">0", b'q') => Some(Query::Version),
        (b"?", b'u') => Some(Query::KeyboardFlags),
        (b"18", b't') => Some(Query::TextAreaSize),
        (_, b'p') => {
            let mode = params.strip_prefix(b"?")?.strip_suffix(b"$")?;
            let mode = std::str::from_utf8(mode).ok()?.parse().ok()?;
            Some(Query::PrivateMode(mode))
        }
        _ => None,
    }
}

/// The answer a terminal showing `screen` gives to `query`.
pub fn answer(query: Query, screen: &vt100::Screen) -> Vec<u8> {
    match query {
        Query::CursorPosition => {
            let (row, col) = screen.cursor_position();
            format!("\x1b[{};{}R", row + 1, col + 1).into_bytes()
        }
        // VT100 with advanced video option.
        Query::PrimaryAttributes => b"\x1b[?1;2c".to_vec(),
        Query::SecondaryAttributes => b"\x1b[>0;10;1c".to_vec(),
        Query::Version => format!("\x1bP>|owt({})\x1b\\", env!("CARGO_PKG_VERSION")).into_bytes(),
        Query::Colour { which, bel } => {
            // A dark terminal: light grey on black.
            let rgb = if which == 10 {
                "rgb:d0d0/d0d0/d0d0"
            } else {
                "rgb:0000/0000/0000"
            };
            let end = if bel { "\x07" } else { "\x1b\\" };
            format!("\x1b]{which};{rgb}{end}").into_bytes()
        }
        Query::KeyboardFlags => b"\x1b[?0u".to_vec(),
        Query::PrivateMode(mode) => {
            // 2026 (synchronized output): recognised, reset. Others: unknown.
            let value = if mode == 2026 { 2 } else { 0 };
            format!("\x1b[?{mode};{value}$y").into_bytes()
        }
        Query::TextAreaSize => {
            let (rows, cols) = screen.size();
            format!("\x1b[8;{rows};{cols}t").into_bytes()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_notifications_split_across_reads_but_not_progress_bars() {
        let mut scanner = QueryScanner::new();
        let mut found = Vec::new();
        scanner.scan(
            b"x\x1b]9;Approval requested: printf 'hi\\n' > hel",
            &mut found,
        );
        assert!(scanner.take_notifications().is_empty());
        scanner.scan(
            b"lo.txt\x07 \x1b]9;4;1;50\x07\x1b]9;Agent turn complete\x1b\\",
            &mut found,
        );
        assert!(found.is_empty());
        assert_eq!(
            scanner.take_notifications(),
            vec![
                // Its first bytes only.
                "Approval requested: printf 'hi".to_string(),
                "Agent turn complete".to_string()
            ]
        );
        assert!(scanner.take_notifications().is_empty());
    }

    fn scan_pieces(pieces: &[&[u8]]) -> Vec<Query> {
        let mut scanner = QueryScanner::new();
        let mut found = Vec::new();
        for piece in pieces {
            let mut out = Vec::new();
            scanner.scan(piece, &mut out);
            for (end, q) in out {
                assert!(end <= piece.len());
                found.push(q);
            }
        }
        found
    }

    #[test]
    fn finds_every_supported_query() {
        let stream = b"hello\x1b[6n\x1b[c\x1b[0c\x1b[>c\x1b[>0c\x1b[>0q\x1b]10;?\x07\x1b]11;?\x1b\\\x1b[?u\x1b[?2026$p\x1b[18t";
        assert_eq!(
            scan_pieces(&[stream]),
            vec![
                Query::CursorPosition,
                Query::PrimaryAttributes,
                Query::PrimaryAttributes,
                Query::SecondaryAttributes,
                Query::SecondaryAttributes,
                Query::Version,
                Query::Colour {
                    which: 10,
                    bel: true
                },
                Query::Colour {
                    which: 11,
                    bel: false
                },
                Query::KeyboardFlags,
                Query::PrivateMode(2026),
                Query::TextAreaSize,
            ]
        );
    }

    #[test]
    fn queries_split_across_reads_are_found() {
        let stream: &[u8] = b"ab\x1b[6nc\x1b]11;?\x1b\\d\x1b[?2026$pe\x1b[>0q";
        let expected = scan_pieces(&[stream]);
        assert_eq!(expected.len(), 4);
        // Every split point, and byte-at-a-time.
        for cut in 0..stream.len() {
            assert_eq!(
                scan_pieces(&[&stream[..cut], &stream[cut..]]),
                expected,
                "cut at {cut}"
            );
        }
        let bytes: Vec<&[u8]> = stream.chunks(1).collect();
        assert_eq!(scan_pieces(&bytes), expected);
    }

    #[test]
    fn end_offsets_point_after_the_query() {
        let mut scanner = QueryScanner::new();
        let mut out = Vec::new();
        scanner.scan(b"xx\x1b[6nyy", &mut out);
        assert_eq!(out, vec![(6, Query::CursorPosition)]);
    }

    #[test]
    fn ordinary_sequences_are_not_queries() {
        let stream = b"\x1b[1;31mred\x1b[0m\x1b[2J\x1b[H\x1b]0;title\x07\x1b[?25l\x1b[5n\x1b[?1049h\x1b]10;#fff\x07";
        assert_eq!(scan_pieces(&[stream]), vec![]);
        // A long OSC (a title) does not hide a later query.
        let mut long = b"\x1b]2;".to_vec();
        long.extend(std::iter::repeat_n(b'x', 500));
        long.extend_from_slice(b"\x07\x1b[6n");
        assert_eq!(scan_pieces(&[&long]), vec![Query::CursorPosition]);
    }

    #[test]
    fn answers_come_from_the_screen() {
        let mut parser = vt100::Parser::new(24, 80, 0);
        parser.process(b"\x1b[5;10H");
        let screen = parser.screen();
        assert_eq!(answer(Query::CursorPosition, screen), b"\x1b[5;10R");
        assert_eq!(answer(Query::PrimaryAttributes, screen), b"\x1b[?1;2c");
        assert_eq!(answer(Query::KeyboardFlags, screen), b"\x1b[?0u");
        assert_eq!(answer(Query::PrivateMode(2026), screen), b"\x1b[?2026;2$y");
        assert_eq!(
            answer(
                Query::Colour {
                    which: 11,
                    bel: true
                },
                screen
            ),
            b"\x1b]11;rgb:0000/0000/0000\x07"
        );
        assert_eq!(answer(Query::TextAreaSize, screen), b"\x1b[8;24;80t");
    }
}
