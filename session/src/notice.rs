//! Desktop notifications written into an attached terminal's stream
//! (`[notify] terminal`): OSC 9 or OSC 777, spliced in only where the
//! agent's own output is at the terminal parser's ground state, never
//! inside one of its escape sequences or UTF-8 characters.
//!
//! [`Ground`] follows a byte stream as a VT parser would (ESC, CSI, OSC
//! ended by BEL or ST, DCS/SOS/PM/APC strings ended by ST, CAN and SUB,
//! UTF-8 continuation bytes) just far enough to know whether the stream is
//! between two sequences; [`Splicer`] holds the notices that came while it
//! was not (a few, coalesced per session) and puts them at the next ground
//! point of the stream. The relayed attach client uses one on what it
//! copies to the terminal; a session host one per directly attached
//! terminal that asked for notices.
//!
//! Invariant: pure, no I/O; what it writes is [`encode`]d from text with
//! every control character removed and a length cap.

use std::borrow::Cow;

use owt_protocol::host::{NoticeStyle, TerminalNotice};

/// Characters of a notice's title at most.
pub const TITLE_MAX: usize = 80;
/// Characters of a notice's body at most.
pub const BODY_MAX: usize = 200;
/// Notices waiting for a ground state at most (per terminal); the oldest
/// goes when one more comes.
pub const PENDING_MAX: usize = 4;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Ground,
    /// After ESC.
    Escape,
    /// After ESC and an intermediate byte (`ESC ( B`).
    EscapeIntermediate,
    Csi,
    /// An OSC string: ends with BEL or ST (`ESC \`).
    Osc,
    /// A DCS, SOS, PM or APC string: ends with ST.
    String,
}

/// Where a terminal's parser is in the stream fed so far.
#[derive(Debug, Clone)]
pub struct Ground {
    state: State,
    /// Continuation bytes the current UTF-8 character still needs.
    utf8_left: u8,
}

impl Default for Ground {
    fn default() -> Self {
        Ground::new()
    }
}

impl Ground {
    pub fn new() -> Ground {
        Ground {
            state: State::Ground,
            utf8_left: 0,
        }
    }

    /// Whether bytes written now would be read from the ground state: no
    /// escape sequence, string or UTF-8 character begun and unfinished.
    pub fn at_ground(&self) -> bool {
        self.state == State::Ground && self.utf8_left == 0
    }

    /// Follows `bytes`.
    pub fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.step(b);
        }
    }

    /// Follows `bytes`; the first offset in them (0 to `bytes.len()`) at
    /// which the stream is at the ground state, if any.
    pub fn feed_to_ground(&mut self, bytes: &[u8]) -> Option<usize> {
        let mut found = self.at_ground().then_some(0);
        for (i, &b) in bytes.iter().enumerate() {
            self.step(b);
            if found.is_none() && self.at_ground() {
                found = Some(i + 1);
            }
        }
        found
    }

    fn step(&mut self, b: u8) {
        match b {
            // Anywhere: ESC starts a sequence (and ends a string: `ESC \`
            // is ST), CAN and SUB cancel.
            0x1b => {
                self.state = State::Escape;
                self.utf8_left = 0;
                return;
            }
            0x18 | 0x1a => {
                self.state = State::Ground;
                self.utf8_left = 0;
                return;
            }
            _ => {}
        }
        self.state = match self.state {
            State::Ground => {
                self.step_utf8(b);
                State::Ground
            }
            State::Escape => match b {
                0x20..=0x2f => State::EscapeIntermediate,
                b'[' => State::Csi,
                b']' => State::Osc,
                b'P' | b'X' | b'^' | b'_' => State::String,
                0x30..=0x7e => State::Ground,
                // C0 controls execute inside a sequence; DEL is ignored.
                0x00..=0x1f | 0x7f => State::Escape,
                _ => State::Ground,
            },
            State::EscapeIntermediate => match b {
                0x30..=0x7e | 0x80.. => State::Ground,
                _ => State::EscapeIntermediate,
            },
            // Parameters, intermediates, C0 and anything else stay until a
            // final byte.
            State::Csi => match b {
                0x40..=0x7e => State::Ground,
                _ => State::Csi,
            },
            State::Osc if b == 0x07 => State::Ground,
            State::Osc => State::Osc,
            // BEL does not end a DCS/APC string for xterm: wait for ST.
            State::String => State::String,
        };
    }

    fn step_utf8(&mut self, b: u8) {
        if self.utf8_left > 0 {
            if (0x80..=0xbf).contains(&b) {
                self.utf8_left -= 1;
                return;
            }
            // A broken character: the terminal shows a replacement and
            // reads this byte afresh.
            self.utf8_left = 0;
        }
        self.utf8_left = match b {
            0xc2..=0xdf => 1,
            0xe0..=0xef => 2,
            0xf0..=0xf4 => 3,
            _ => 0,
        };
    }
}

/// A stream's ground state and the notices waiting for it.
#[derive(Debug, Default)]
pub struct Splicer {
    ground: Ground,
    /// (key, encoded notice), oldest first; one per key.
    pending: Vec<(String, Vec<u8>)>,
}

impl Splicer {
    pub fn new() -> Splicer {
        Splicer::default()
    }

    /// A notice (`bytes`, [`encode`]d) for the stream, `key` naming what it
    /// is about (a newer one for the same key replaces a waiting one):
    /// the bytes to write right now when the stream is at the ground state
    /// (with any still waiting before them), else `None` and it waits for
    /// [`Splicer::pass`].
    pub fn offer(&mut self, key: &str, bytes: Vec<u8>) -> Option<Vec<u8>> {
        self.pending.retain(|(k, _)| k != key);
        if self.pending.len() >= PENDING_MAX {
            self.pending.remove(0);
        }
        self.pending.push((key.to_string(), bytes));
        if !self.ground.at_ground() {
            return None;
        }
        Some(self.take_pending())
    }

    /// Whether notices wait for a ground state.
    pub fn waiting(&self) -> usize {
        self.pending.len()
    }

    /// The stream's next `chunk`, followed; with notices waiting and a
    /// ground point in it, the chunk with them put in at the first one.
    pub fn pass<'a>(&mut self, chunk: &'a [u8]) -> Cow<'a, [u8]> {
        if self.pending.is_empty() {
            self.ground.feed(chunk);
            return Cow::Borrowed(chunk);
        }
        let Some(at) = self.ground.feed_to_ground(chunk) else {
            return Cow::Borrowed(chunk);
        };
        let notices = self.take_pending();
        let mut out = Vec::with_capacity(chunk.len() + notices.len());
        out.extend_from_slice(&chunk[..at]);
        out.extend_from_slice(&notices);
        out.extend_from_slice(&chunk[at..]);
        Cow::Owned(out)
    }

    fn take_pending(&mut self) -> Vec<u8> {
        self.pending
            .drain(..)
            .flat_map(|(_, bytes)| bytes)
            .collect()
    }
}

/// `text` as one line for inside an escape sequence: line breaks and tabs
/// made spaces, other control characters (and the bidirectional overrides)
/// shown escaped (`\x1b`, as [`crate::printable::line`] does), runs of white space made one
/// space, at most `max` characters (`…` marks a cut).
fn clean(text: &str, max: usize) -> String {
    let mut out = String::new();
    let mut n = 0;
    let spaced = text.replace(['\r', '\n', '\t'], " ");
    for word in crate::printable::line(&spaced).split_whitespace() {
        for c in (n > 0).then_some(' ').into_iter().chain(word.chars()) {
            if n == max {
                out.pop();
                out.push('…');
                return out;
            }
            out.push(c);
            n += 1;
        }
    }
    out
}

/// The escape sequence that shows `notice` as a desktop notification:
/// `ESC ] 9 ; title: body BEL` or `ESC ] 777 ; notify ; title ; body BEL`.
/// Title and body hold no control character (an escape shows as `\x1b`), capped at [`TITLE_MAX`] and [`BODY_MAX`] characters;
/// OSC 777's title has no `;` (it separates the fields).
pub fn encode(notice: &TerminalNotice) -> Vec<u8> {
    let title = clean(&notice.title, TITLE_MAX);
    let body = clean(&notice.body, BODY_MAX);
    let text = match notice.style {
        NoticeStyle::Osc9 => {
            let mut text = match (title.is_empty(), body.is_empty()) {
                (false, false) => format!("{title}: {body}"),
                (false, true) => title,
                _ => body,
            };
            // `9;4;…` is a progress report for some terminals (ConEmu,
            // Windows Terminal), not a notification.
            if text.starts_with(|c: char| c.is_ascii_digit()) {
                text.insert(0, ' ');
            }
            format!("\x1b]9;{text}\x07")
        }
        NoticeStyle::Osc777 => {
            format!("\x1b]777;notify;{};{body}\x07", title.replace(';', ","))
        }
    };
    text.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether the stream is at the ground state after each chunk.
    fn grounds(chunks: &[&[u8]]) -> Vec<bool> {
        let mut ground = Ground::new();
        chunks
            .iter()
            .map(|chunk| {
                ground.feed(chunk);
                ground.at_ground()
            })
            .collect()
    }

    #[test]
    fn sequences_split_across_chunks_are_followed() {
        // CSI: parameters, then the final byte in the next chunk.
        assert_eq!(
            grounds(&[b"ab\x1b[38;2;1", b"0;2m", b"x"]),
            [false, true, true]
        );
        assert_eq!(
            grounds(&[b"\x1b", b"[", b"?2026", b"h"]),
            [false, false, false, true]
        );
        // OSC ended by BEL, and by ST (`ESC \`), split inside the ST.
        assert_eq!(grounds(&[b"\x1b]0;a title", b" more\x07"]), [false, true]);
        assert_eq!(
            grounds(&[b"\x1b]8;;http://x", b"\x1b", b"\\"]),
            [false, false, true]
        );
        // A BEL inside a DCS string does not end it; ST does.
        assert_eq!(
            grounds(&[b"\x1bPq#0;2;0;0;0", b"\x07 still", b"\x1b\\"]),
            [false, false, true]
        );
        // APC, PM, SOS alike.
        assert_eq!(grounds(&[b"\x1b_Gi=1;AAAA", b"\x1b\\"]), [false, true]);
        assert_eq!(
            grounds(&[b"\x1b^pm", b"\x1b\\", b"\x1bXsos\x1b\\"]),
            [false, true, true]
        );
        // Two-byte and intermediate escapes.
        assert_eq!(grounds(&[b"\x1b7", b"\x1b(", b"B"]), [true, false, true]);
        // CAN cancels a sequence.
        assert_eq!(grounds(&[b"\x1b[12", b"\x18"]), [false, true]);
        // C0 controls inside a CSI execute and leave it going.
        assert_eq!(grounds(&[b"\x1b[1\r", b"m"]), [false, true]);
    }

    #[test]
    fn utf8_characters_split_across_chunks_are_not_ground() {
        let e_acute = "é".as_bytes();
        let snowman = "☃".as_bytes();
        let crab = "🦀".as_bytes();
        assert_eq!(grounds(&[&e_acute[..1], &e_acute[1..]]), [false, true]);
        assert_eq!(
            grounds(&[&snowman[..1], &snowman[1..2], &snowman[2..]]),
            [false, false, true]
        );
        assert_eq!(grounds(&[&crab[..3], &crab[3..]]), [false, true]);
        // A broken character does not hold the ground state back.
        assert_eq!(grounds(&[b"\xe2\x98", b"a"]), [false, true]);
    }

    #[test]
    fn the_first_ground_point_of_a_chunk() {
        let mut ground = Ground::new();
        ground.feed(b"\x1b]0;title");
        assert_eq!(ground.feed_to_ground(b" end\x07text\x1b[1"), Some(5));
        assert!(!ground.at_ground());
        assert_eq!(ground.feed_to_ground(b"2;3"), None);
        assert_eq!(ground.feed_to_ground(b"H"), Some(1));
        assert_eq!(ground.feed_to_ground(b"x"), Some(0));
    }

    fn notice(title: &str, body: &str) -> TerminalNotice {
        TerminalNotice {
            style: NoticeStyle::Osc9,
            title: title.into(),
            body: body.into(),
        }
    }

    #[test]
    fn a_notice_goes_at_once_at_ground_and_waits_inside_a_sequence() {
        let mut splicer = Splicer::new();
        assert_eq!(splicer.pass(b"plain text"), &b"plain text"[..]);
        assert_eq!(splicer.offer("b", b"<N>".to_vec()), Some(b"<N>".to_vec()));

        // Mid-OSC: it waits, through a chunk with no ground point, and
        // goes right after the BEL that ends the sequence.
        assert_eq!(splicer.pass(b"\x1b]0;long ti"), &b"\x1b]0;long ti"[..]);
        assert_eq!(splicer.offer("b", b"<N>".to_vec()), None);
        assert_eq!(splicer.pass(b"tle still"), &b"tle still"[..]);
        assert_eq!(
            splicer.pass(b"tle\x07\x1b[1mbold"),
            &b"tle\x07<N>\x1b[1mbold"[..]
        );
        assert_eq!(splicer.waiting(), 0);

        // Mid-character: after it.
        let snowman = "☃".as_bytes();
        splicer.pass(&snowman[..1]);
        assert_eq!(splicer.offer("c", b"<C>".to_vec()), None);
        let rest = splicer.pass(&snowman[1..]).into_owned();
        assert_eq!(rest, [&snowman[1..], b"<C>"].concat());
    }

    #[test]
    fn waiting_notices_are_coalesced_per_key_and_bounded() {
        let mut splicer = Splicer::new();
        splicer.pass(b"\x1b[");
        assert_eq!(splicer.offer("b", b"<b1>".to_vec()), None);
        assert_eq!(splicer.offer("b", b"<b2>".to_vec()), None);
        assert_eq!(
            splicer.waiting(),
            1,
            "a newer notice of b replaces the older"
        );
        for key in ["c", "d", "e", "f"] {
            splicer.offer(key, format!("<{key}>").into_bytes());
        }
        assert_eq!(splicer.waiting(), PENDING_MAX);
        assert_eq!(splicer.pass(b"m").into_owned(), b"m<c><d><e><f>".to_vec());
    }

    #[test]
    fn encoded_notices_carry_no_control_characters() {
        let evil = notice(
            "owt: b\x1b]0;pwned\x07 needs you",
            "blocked\x1b[2J\r\n\u{9b}31m",
        );
        let bytes = encode(&evil);
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert_eq!(
            text,
            "\x1b]9;owt: b\\x1b]0;pwned\\x07 needs you: blocked\\x1b[2J \\u{9b}31m\x07"
        );
        // One sequence: the stream is at ground after it, and nowhere
        // before its end.
        let mut ground = Ground::new();
        ground.feed(&bytes[..1]);
        assert_eq!(ground.feed_to_ground(&bytes[1..]), Some(bytes.len() - 1));
        let osc777 = encode(&TerminalNotice {
            style: NoticeStyle::Osc777,
            ..notice("owt: a;b needs you", "needs-input; why")
        });
        assert_eq!(
            osc777,
            b"\x1b]777;notify;owt: a,b needs you;needs-input; why\x07"
        );
        // Capped.
        let long = encode(&notice(&"t".repeat(500), &"b".repeat(500)));
        let text = String::from_utf8(long).unwrap();
        assert_eq!(text.chars().filter(|c| *c == 't').count(), TITLE_MAX - 1);
        assert_eq!(text.chars().filter(|c| *c == 'b').count(), BODY_MAX - 1);
        // Never a progress report.
        assert_eq!(encode(&notice("", "4;1;50")), b"\x1b]9; 4;1;50\x07");
    }
}
