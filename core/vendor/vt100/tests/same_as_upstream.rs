//! This crate against upstream vt100 0.16.2: the same bytes, cut into the
//! same chunks, must leave the same screen — contents, attributes, wide
//! characters, cursor, modes, scrollback and the redraw bytes — after every
//! chunk. owt's changes are speed only; any difference here is a bug.

/// A small deterministic generator (xorshift64*), so a failure names its seed.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

/// Everything observable about a screen, as comparable text.
fn observe_ours(screen: &mut vt100::Screen) -> String {
    let (rows, cols) = screen.size();
    let mut out = format!(
        "size {rows}x{cols} cursor {:?} alt {} keypad {} appcursor {} hide {} paste {} mouse {:?} {:?} \
         fg {:?} bg {:?} bold {} dim {} italic {} underline {} inverse {}\n",
        screen.cursor_position(),
        screen.alternate_screen(),
        screen.application_keypad(),
        screen.application_cursor(),
        screen.hide_cursor(),
        screen.bracketed_paste(),
        screen.mouse_protocol_mode(),
        screen.mouse_protocol_encoding(),
        screen.fgcolor(),
        screen.bgcolor(),
        screen.bold(),
        screen.dim(),
        screen.italic(),
        screen.underline(),
        screen.inverse(),
    );
    out += &format!("contents {:?}\n", screen.contents());
    out += &format!("formatted {:?}\n", screen.contents_formatted());
    out += &format!("state {:?}\n", screen.state_formatted());
    for row in 0..rows {
        out += &format!("wrapped {row} {}\n", screen.row_wrapped(row));
        for col in 0..cols {
            if let Some(c) = screen.cell(row, col) {
                out += &format!(
                    "{row},{col} {:?} w{} c{} {:?} {:?} {}{}{}{}{}\n",
                    c.contents(),
                    c.is_wide(),
                    c.is_wide_continuation(),
                    c.fgcolor(),
                    c.bgcolor(),
                    c.bold(),
                    c.dim(),
                    c.italic(),
                    c.underline(),
                    c.inverse()
                );
            }
        }
    }
    // Every row of the scrollback, cell by cell, then back to where the
    // step left the view (a step may hold it scrolled back).
    let kept = screen.scrollback();
    screen.set_scrollback(usize::MAX);
    let total = screen.scrollback();
    out += &format!("scrollback {total} (in view {kept})\n");
    for offset in (1..=total).rev() {
        screen.set_scrollback(offset);
        out += &format!(
            "{offset}: {:?} {:?} wrapped {}\n",
            screen.rows(0, cols).next(),
            screen.rows_formatted(0, cols).next(),
            screen.row_wrapped(0),
        );
        for col in 0..cols {
            if let Some(c) = screen.cell(0, col) {
                out += &format!(
                    "{offset},{col} {:?} w{} c{} {:?} {:?} {}{}{}{}{}\n",
                    c.contents(),
                    c.is_wide(),
                    c.is_wide_continuation(),
                    c.fgcolor(),
                    c.bgcolor(),
                    c.bold(),
                    c.dim(),
                    c.italic(),
                    c.underline(),
                    c.inverse()
                );
            }
        }
    }
    screen.set_scrollback(kept);
    out
}

/// The same observation of an upstream screen (the types differ, so the
/// body is the same text over the other crate).
fn observe_upstream(screen: &mut upstream::Screen) -> String {
    let (rows, cols) = screen.size();
    let mut out = format!(
        "size {rows}x{cols} cursor {:?} alt {} keypad {} appcursor {} hide {} paste {} mouse {:?} {:?} \
         fg {:?} bg {:?} bold {} dim {} italic {} underline {} inverse {}\n",
        screen.cursor_position(),
        screen.alternate_screen(),
        screen.application_keypad(),
        screen.application_cursor(),
        screen.hide_cursor(),
        screen.bracketed_paste(),
        screen.mouse_protocol_mode(),
        screen.mouse_protocol_encoding(),
        screen.fgcolor(),
        screen.bgcolor(),
        screen.bold(),
        screen.dim(),
        screen.italic(),
        screen.underline(),
        screen.inverse(),
    );
    out += &format!("contents {:?}\n", screen.contents());
    out += &format!("formatted {:?}\n", screen.contents_formatted());
    out += &format!("state {:?}\n", screen.state_formatted());
    for row in 0..rows {
        out += &format!("wrapped {row} {}\n", screen.row_wrapped(row));
        for col in 0..cols {
            if let Some(c) = screen.cell(row, col) {
                out += &format!(
                    "{row},{col} {:?} w{} c{} {:?} {:?} {}{}{}{}{}\n",
                    c.contents(),
                    c.is_wide(),
                    c.is_wide_continuation(),
                    c.fgcolor(),
                    c.bgcolor(),
                    c.bold(),
                    c.dim(),
                    c.italic(),
                    c.underline(),
                    c.inverse()
                );
            }
        }
    }
    // Every row of the scrollback, cell by cell, then back to where the
    // step left the view (a step may hold it scrolled back).
    let kept = screen.scrollback();
    screen.set_scrollback(usize::MAX);
    let total = screen.scrollback();
    out += &format!("scrollback {total} (in view {kept})\n");
    for offset in (1..=total).rev() {
        screen.set_scrollback(offset);
        out += &format!(
            "{offset}: {:?} {:?} wrapped {}\n",
            screen.rows(0, cols).next(),
            screen.rows_formatted(0, cols).next(),
            screen.row_wrapped(0),
        );
        for col in 0..cols {
            if let Some(c) = screen.cell(0, col) {
                out += &format!(
                    "{offset},{col} {:?} w{} c{} {:?} {:?} {}{}{}{}{}\n",
                    c.contents(),
                    c.is_wide(),
                    c.is_wide_continuation(),
                    c.fgcolor(),
                    c.bgcolor(),
                    c.bold(),
                    c.dim(),
                    c.italic(),
                    c.underline(),
                    c.inverse()
                );
            }
        }
    }
    screen.set_scrollback(kept);
    out
}

/// What happens to both parsers between two observations.
enum Step<'a> {
    Bytes(&'a [u8]),
    Resize(u16, u16),
    /// Scroll the view back this many rows (and keep it there while the
    /// next steps print).
    Scrollback(usize),
    /// owt: park our parser (upstream has no such thing); the next step
    /// (output, a resize, scrolling back, or the observation) unparks it.
    Park,
}

/// Runs `steps` through both crates, comparing after each step. Upstream
/// has arithmetic that overflows on degenerate screens (a wide character
/// on a one-column screen) and panics in debug builds; both crates must then
/// panic at the same step, and the comparison ends there.
fn check(
    name: &str,
    rows: u16,
    cols: u16,
    scrollback: usize,
    steps: &[Step],
) {
    use std::panic::{catch_unwind, AssertUnwindSafe};
    let mut ours = vt100::Parser::new(rows, cols, scrollback);
    let mut theirs = upstream::Parser::new(rows, cols, scrollback);
    for (i, step) in steps.iter().enumerate() {
        if let Step::Park = step {
            ours.park();
            assert!(ours.is_parked(), "{name}: step {i} did not park");
            // What parking leaves in place reads the same.
            let (p, t) = (ours.parked_screen(), theirs.screen());
            assert_eq!(p.size(), t.size(), "{name}: parked size");
            assert_eq!(
                (p.bracketed_paste(), p.alternate_screen(), p.hide_cursor()),
                (t.bracketed_paste(), t.alternate_screen(), t.hide_cursor()),
                "{name}: parked modes"
            );
            if i + 1 < steps.len() {
                continue;
            }
        }
        let (a, b) = match step {
            Step::Park => (Ok(()), Ok(())),
            Step::Bytes(bytes) => (
                catch_unwind(AssertUnwindSafe(|| ours.process(bytes))),
                catch_unwind(AssertUnwindSafe(|| theirs.process(bytes))),
            ),
            Step::Resize(rows, cols) => (
                catch_unwind(AssertUnwindSafe(|| {
                    ours.screen_mut().set_size(*rows, *cols)
                })),
                catch_unwind(AssertUnwindSafe(|| {
                    theirs.screen_mut().set_size(*rows, *cols)
                })),
            ),
            Step::Scrollback(offset) => (
                catch_unwind(AssertUnwindSafe(|| {
                    ours.screen_mut().set_scrollback(*offset)
                })),
                catch_unwind(AssertUnwindSafe(|| {
                    theirs.screen_mut().set_scrollback(*offset)
                })),
            ),
        };
        match (a.is_ok(), b.is_ok()) {
            (true, true) => {}
            (false, false) => return,
            (ours_ok, _) => panic!(
                "{name}: at step {i} only {} panicked",
                if ours_ok { "upstream" } else { "ours" }
            ),
        }
        let observed = catch_unwind(AssertUnwindSafe(|| {
            (
                observe_ours(ours.screen_mut()),
                observe_upstream(theirs.screen_mut()),
            )
        }));
        let Ok((a, b)) = observed else {
            panic!("{name}: observing the screens panicked after step {i}");
        };
        if a != b {
            let line = a
                .lines()
                .zip(b.lines())
                .find(|(x, y)| x != y)
                .map(|(x, y)| format!("ours:     {x}\nupstream: {y}"))
                .unwrap_or_else(|| "(one observation is longer)".into());
            panic!("{name}: screens differ after step {i}\n{line}");
        }
    }
}

/// `bytes` in chunks of random sizes (cuts land inside escape sequences
/// and UTF-8 characters too).
fn chunked(bytes: &[u8], rng: &mut Rng) -> Vec<Step<'static>> {
    let mut steps = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let n = (1 + rng.below(300) as usize).min(bytes.len() - at);
        steps.push(Step::Bytes(bytes[at..at + n].to_vec().leak()));
        at += n;
    }
    steps
}

/// A random terminal stream: text of every width, controls and the escape
/// sequences agents use, in proportions that make wrapping, scrolling and
/// overwriting wide characters common.
fn stream(rng: &mut Rng, tokens: usize) -> Vec<u8> {
    const TEXT: &[&str] = &[
        "a",
        "hello",
        "the quick brown fox ",
        "0123456789",
        " ",
        "~!@#",
        "é",
        "你好",
        "世",
        "😀",
        "e\u{301}",
        "\u{301}",
        "\u{200b}",
        "\u{fffd}",
        "ab\u{85}c",
        "\u{ff41}",
    ];
    const CONTROLS: &[&str] = &[
        "\r\n", "\n", "\r", "\t", "\x08", "\x07", "\x0b", "\x0c", "\x0e",
        "\x0f", "\x00",
    ];
    const ESCAPES: &[&str] = &[
        "\x1b[m",
        "\x1b[1m",
        "\x1b[2;3;4;7m",
        "\x1b[22;23;24;27m",
        "\x1b[31m",
        "\x1b[42m",
        "\x1b[38;5;200m",
        "\x1b[48;2;1;2;3m",
        "\x1b[39;49m",
        "\x1b[K",
        "\x1b[1K",
        "\x1b[2K",
        "\x1b[J",
        "\x1b[1J",
        "\x1b[2J",
        "\x1b[H",
        "\x1b[3@",
        "\x1b[2P",
        "\x1b[2X",
        "\x1b[L",
        "\x1b[2M",
        "\x1b[S",
        "\x1b[2T",
        "\x1b7",
        "\x1b8",
        "\x1bM",
        "\x1bD",
        "\x1bc",
        "\x1b[?1049h",
        "\x1b[?1049l",
        "\x1b[?47h",
        "\x1b[?47l",
        "\x1b[?6h",
        "\x1b[?6l",
        "\x1b[?25l",
        "\x1b[?25h",
        "\x1b[?2004h",
        "\x1b[?1h",
        "\x1b=",
        "\x1b>",
        "\x1b[?1000h",
        "\x1b[?1006h",
        "\x1b[r",
        "\x1b]0;title\x07",
        "\x1b]8;;http://x\x1b\\",
        "\x1bP1$r\x1b\\",
        "\x1b[?u",
        "\x1b[6n",
        "\x1b[s",
        "\x1b[u",
        "\x1b[4h",
        "\x1b[4l",
        "\x1b(0",
        "\x1b(B",
        "\x1b[",
        "\x1b",
        "\u{9b}2J",
        "\x1b[99999999C",
        "\x1b[?7l",
        "\x1b[?7h",
    ];
    let mut out = Vec::new();
    for _ in 0..tokens {
        match rng.below(20) {
            0..=8 => {
                let text = rng.pick(TEXT);
                for _ in 0..=rng.below(4) {
                    out.extend_from_slice(text.as_bytes());
                }
            }
            9 => {
                // A long line: wraps, often more than once; sometimes
                // longer than the ASCII the parser holds back at once
                // (256 bytes), sometimes ending in a wide character.
                let len = if rng.below(4) == 0 { 700 } else { 200 };
                for _ in 0..rng.below(len) {
                    out.push(b' ' + rng.below(95) as u8);
                }
                if rng.below(3) == 0 {
                    out.extend_from_slice(
                        rng.pick(&["你", "😀", "é", "\u{301}"]).as_bytes(),
                    );
                }
            }
            10..=12 => out.extend_from_slice(rng.pick(CONTROLS).as_bytes()),
            13..=16 => out.extend_from_slice(rng.pick(ESCAPES).as_bytes()),
            17 => out.extend_from_slice(
                format!("\x1b[{};{}H", rng.below(30), rng.below(90))
                    .as_bytes(),
            ),
            18 => out.extend_from_slice(
                format!(
                    "\x1b[{}{}",
                    rng.below(12),
                    *rng.pick(&['A', 'B', 'C', 'D', 'G', 'd', 'E', 'F'])
                )
                .as_bytes(),
            ),
            _ => out.extend_from_slice(
                format!("\x1b[{};{}r", rng.below(12), rng.below(30))
                    .as_bytes(),
            ),
        }
        if rng.below(50) == 0 {
            // Invalid UTF-8 and a cut character.
            let bad: &[&[u8]] = &[b"\xff", b"\xe4\xbd", b"\xc3"];
            let cut: &&[u8] = rng.pick(bad);
            out.extend_from_slice(cut);
        }
    }
    out
}

#[test]
fn plain_text_lines_scroll_into_the_scrollback() {
    let line = "the quick brown fox jumps over the lazy dog 0123456789\r\n";
    let bytes = line.repeat(300).into_bytes();
    let mut rng = Rng::new(1);
    check("plain text", 10, 40, 100, &chunked(&bytes, &mut rng));
}

#[test]
fn text_at_the_last_column_wraps_like_upstream() {
    let steps = [
        Step::Bytes(b"0123456789abcdefghij"),
        Step::Bytes(b"k"),
        Step::Bytes(b"\x1b[1;20Hxy"),
        Step::Bytes(b"\x1b[2;19H\xe4\xbd\xa0z"),
        Step::Bytes(b"\x1b[3;20H\xe4\xbd\xa0"),
    ];
    check("last column", 5, 20, 10, &steps);
}

#[test]
fn ascii_over_wide_characters_clears_both_halves() {
    let steps = [
        Step::Bytes("你好世界".as_bytes()),
        Step::Bytes(b"\x1b[1;2Ha"),
        Step::Bytes(b"\x1b[1;5Hb"),
        Step::Bytes(b"\x1b[1;1H\x1b[31mcdef"),
        Step::Bytes("\x1b[2;1H😀😀\x1b[2;2Hx\x1b[2;3Hy".as_bytes()),
    ];
    check("wide", 4, 10, 0, &steps);
}

#[test]
fn scroll_regions_and_the_alternate_screen() {
    let mut bytes = Vec::new();
    bytes.extend_from_slice(b"\x1b[2;4r");
    for i in 0..20 {
        bytes.extend_from_slice(format!("line {i}\r\n").as_bytes());
    }
    bytes.extend_from_slice(b"\x1b[r\x1b[?1049h");
    for i in 0..20 {
        bytes.extend_from_slice(format!("alt {i}\r\n").as_bytes());
    }
    bytes.extend_from_slice(b"\x1b[?1049l");
    for i in 0..20 {
        bytes.extend_from_slice(format!("main {i}\r\n").as_bytes());
    }
    let mut rng = Rng::new(2);
    check("regions", 6, 12, 8, &chunked(&bytes, &mut rng));
}

#[test]
fn output_while_the_view_is_scrolled_back() {
    let mut bytes = Vec::new();
    for i in 0..40 {
        bytes.extend_from_slice(
            format!("\x1b[3{}mline {i} 你好 \x1b[7mé\x1b[m\r\n", i % 8)
                .as_bytes(),
        );
    }
    let mut steps = vec![Step::Bytes(&bytes[..bytes.len() / 2])];
    steps.push(Step::Scrollback(3));
    steps.extend(chunked(&bytes[bytes.len() / 2..], &mut Rng::new(3)));
    steps.push(Step::Resize(7, 15));
    steps.push(Step::Scrollback(9));
    steps.push(Step::Bytes(b"more\r\nand more\r\n"));
    steps.push(Step::Resize(2, 30));
    steps.push(Step::Scrollback(0));
    check("scrolled back", 5, 20, 12, &steps);
}

/// owt: a parked screen comes back as it was: scrolled back, on the
/// alternate screen (both grids parked), resized or printed to while
/// parked.
#[test]
fn parked_screens_come_back_as_they_were() {
    let mut bytes = Vec::new();
    for i in 0..30 {
        bytes.extend_from_slice(
            format!(
                "\x1b[3{}mrow {i} 你好 \x1b[1;7mé😀\x1b[m tail\r\n",
                i % 8
            )
            .as_bytes(),
        );
    }
    let steps = [
        Step::Bytes(&bytes),
        Step::Park,
        Step::Scrollback(4),
        Step::Park,
        Step::Bytes(b"printed while scrolled back\r\n"),
        Step::Park,
        Step::Park,
        Step::Scrollback(0),
        Step::Bytes(
            b"\x1b[?1049h\x1b[2;3Halternate \x1b[4mscreen\x1b[?2004h",
        ),
        Step::Park,
        Step::Resize(6, 18),
        Step::Park,
        Step::Bytes(b"\x1b[?1049lback on the main screen"),
        Step::Park,
    ];
    check("parked", 8, 24, 50, &steps);
}

/// owt: runs of printable ASCII go to the screen a stretch of a row at a
/// time (`Screen::text_ascii`): runs crossing the right margin (several
/// times, with autowrap switched off too, which vt100 ignores), longer
/// than the 256 bytes held back at once, landing on wide characters or
/// followed by them, with attributes changing mid-run, in scroll regions
/// and on the alternate screen, each cut at every chunk boundary the rng
/// picks.
#[test]
fn ascii_runs_across_margins_wide_characters_and_regions() {
    let run: String = (0..1000)
        .map(|i| char::from(b' ' + (i * 7 % 95) as u8))
        .collect();
    let mut bytes = Vec::new();
    for (i, extra) in [
        "",
        "\x1b[?7l",
        "\x1b[?7h",
        "\x1b[3;5r",
        "\x1b[?1049h",
        "\x1b[r\x1b[?1049l",
    ]
    .iter()
    .enumerate()
    {
        bytes.extend_from_slice(extra.as_bytes());
        bytes.extend_from_slice(&run.as_bytes()[..100 + 150 * i]);
        bytes.extend_from_slice("你好".as_bytes());
        bytes.extend_from_slice(&run.as_bytes()[..37]);
        bytes.extend_from_slice("😀\r\n".as_bytes());
        // wide characters, then ASCII over them from mid-row
        bytes.extend_from_slice("世界世界世界世界\x1b[3G".as_bytes());
        bytes.extend_from_slice(&run.as_bytes()[..9]);
        bytes.extend_from_slice("\x1b[4Ge\u{301}x\x1b[31m".as_bytes());
        bytes.extend_from_slice(&run.as_bytes()[..60]);
        bytes.extend_from_slice(b"\x1b[1;4mbold\x1b[m plain \x1b[7minverse");
        bytes.extend_from_slice(&run.as_bytes()[300..650]);
        bytes.extend_from_slice(b"\x1b[m\r\n\n");
    }
    for seed in 0..20 {
        let mut rng = Rng::new(100 + seed);
        let size = (1 + rng.below(12) as u16, 1 + rng.below(45) as u16);
        check(
            &format!("ascii runs {seed}"),
            size.0,
            size.1,
            *rng.pick(&[0, 5, 100]),
            &chunked(&bytes, &mut rng),
        );
    }
    // the whole stream in one chunk, so the runs are as long as they come
    check("ascii runs, one chunk", 6, 40, 20, &[Step::Bytes(&bytes)]);
}

/// owt: a UTF-8 character cut at the end of a chunk waits in vte, and what
/// comes next (its continuation, ASCII that makes it invalid, an escape)
/// goes through vte too, never around it.
#[test]
fn characters_cut_between_chunks() {
    let steps = [
        Step::Bytes(b"ab\xe4\xbd"),
        Step::Bytes(b"cd"),
        Step::Bytes(b"\x1b[31mx\xe4"),
        Step::Bytes(b"\xbd\xa0y"),
        Step::Bytes(b"z\xf0\x9f"),
        Step::Bytes(b"\x1b[mw"),
        Step::Bytes(b"\xc3"),
        Step::Bytes(b"\r\n\xc3"),
        Step::Bytes(b"\xa9t\xc2"),
        Step::Bytes(b"\x85u\xc2\x9b2Jv"),
        // vte in the middle of a sequence, then text and a cut character
        Step::Bytes(b"\x1b[3"),
        Step::Bytes(b"2mx\xe4"),
        Step::Bytes(b"yz"),
        Step::Bytes(b"\x1b]0;t"),
        Step::Bytes(b"itle\x07ab\xf0\x9f\x98"),
        Step::Bytes(b"\x80c"),
    ];
    check("cut characters", 4, 12, 5, &steps);
}

#[test]
fn resizes_between_output() {
    let text = "wrap me around the edge of a small screen ".repeat(8);
    let wide = "你好 wide 😀 ".repeat(6);
    let steps = [
        Step::Bytes(text.as_bytes()),
        Step::Resize(4, 7),
        Step::Bytes(text.as_bytes()),
        Step::Resize(9, 31),
        Step::Bytes(wide.as_bytes()),
        Step::Resize(3, 2),
        Step::Bytes(text.as_bytes()),
        Step::Resize(1, 1),
        Step::Bytes(b"x\xe4\xbd\xa0y\r\nz"),
    ];
    check("resizes", 5, 20, 20, &steps);
}

#[test]
fn random_streams() {
    for seed in 0..400 {
        let mut rng = Rng::new(seed);
        let rows = 1 + rng.below(30) as u16;
        let cols = 1 + rng.below(90) as u16;
        let scrollback = *rng.pick(&[0, 3, 50, 1000]);
        let bytes = stream(&mut rng, 200);
        let mut steps = chunked(&bytes, &mut rng);
        if seed % 4 == 0 {
            let at = rng.below(steps.len() as u64 + 1) as usize;
            let size = (1 + rng.below(30) as u16, 1 + rng.below(90) as u16);
            steps.insert(at, Step::Resize(size.0, size.1));
        }
        if seed % 3 == 0 {
            // The view held scrolled back while output goes on (and
            // scrolls rows into, and out of, a full scrollback).
            let at = rng.below(steps.len() as u64 + 1) as usize;
            steps.insert(at, Step::Scrollback(rng.below(40) as usize));
        }
        // Parked and unparked (by output, a resize, scrolling back or
        // reading) anywhere in the stream, twice in a row too.
        for _ in 0..1 + rng.below(4) {
            let at = rng.below(steps.len() as u64 + 1) as usize;
            steps.insert(at, Step::Park);
        }
        check(&format!("seed {seed}"), rows, cols, scrollback, &steps);
    }
}

/// What the callbacks were told, and where the cursor was then.
macro_rules! recorder {
    ($name:ident, $krate:ident) => {
        #[derive(Default)]
        struct $name(Vec<String>);

        impl $krate::Callbacks for $name {
            fn audible_bell(&mut self, screen: &mut $krate::Screen) {
                self.0.push(format!("bell {:?}", screen.cursor_position()));
            }
            fn unhandled_char(
                &mut self,
                screen: &mut $krate::Screen,
                c: char,
            ) {
                self.0.push(format!(
                    "char {c:?} {:?}",
                    screen.cursor_position()
                ));
            }
            fn unhandled_control(
                &mut self,
                screen: &mut $krate::Screen,
                b: u8,
            ) {
                self.0.push(format!(
                    "control {b} {:?}",
                    screen.cursor_position()
                ));
            }
            fn set_window_title(
                &mut self,
                screen: &mut $krate::Screen,
                title: &[u8],
            ) {
                self.0.push(format!(
                    "title {title:?} {:?}",
                    screen.cursor_position()
                ));
            }
        }
    };
}
recorder!(Ours, vt100);
recorder!(Theirs, upstream);

/// owt: the callbacks are told the same things at the same points of the
/// screen — the replacement for a character cut between chunks and made
/// invalid by what follows, controls, bells, titles — whether the bytes
/// went through vte or around it.
#[test]
fn callbacks_hear_the_same() {
    let chunks: &[&[u8]] = &[
        b"ab\x07\x01\xe4\xbd",
        b"cd",
        b"\x1b[3",
        b"2mx\xe4",
        b"yz\x1b]0;t",
        b"itle\x07ab\xf0\x9f\x98",
        b"\x80c\xff\xc2\x85\x07",
        b"\x1b[mw\xc3",
        b"\r\n\x1b]2;x\x07",
    ];
    let mut ours =
        vt100::Parser::new_with_callbacks(4, 12, 5, Ours::default());
    let mut theirs =
        upstream::Parser::new_with_callbacks(4, 12, 5, Theirs::default());
    for (i, chunk) in chunks.iter().enumerate() {
        ours.process(chunk);
        theirs.process(chunk);
        assert_eq!(
            ours.callbacks().0,
            theirs.callbacks().0,
            "after chunk {i}"
        );
    }
    assert!(ours
        .callbacks()
        .0
        .iter()
        .any(|s| s.starts_with("char '\u{fffd}'")));
}
