//! Bounded, printable excerpts of a command's output: what owt types into
//! an agent and shows in `owt checks`.
//!
//! Invariant: pure; an excerpt never holds more than [`MAX_LINES`] lines of
//! at most [`MAX_LINE_CHARS`] characters, nor any control character but
//! newlines and tabs (terminal escapes are dropped, so nothing typed into
//! an agent can drive its terminal).

/// Hard caps, whatever the configuration asks.
pub const MAX_LINES: usize = 400;
pub const MAX_LINE_CHARS: usize = 400;

/// The last `lines` lines of `output` (cleaned, each cut to
/// [`MAX_LINE_CHARS`]), with a first line saying how many came before when
/// some did. Blank lines at the end are dropped.
pub fn tail(output: &[u8], lines: usize) -> String {
    let lines = lines.clamp(1, MAX_LINES);
    let text = clean(&String::from_utf8_lossy(output));
    let all: Vec<&str> = text.trim_end().lines().collect();
    let skip = all.len().saturating_sub(lines);
    let mut out = Vec::with_capacity(lines + 1);
    if skip > 0 {
        out.push(format!("[… {skip} earlier lines in the log]"));
    }
    out.extend(all[skip..].iter().map(|l| cut(l)));
    out.join("\n")
}

/// One line at most [`MAX_LINE_CHARS`] characters long.
fn cut(line: &str) -> String {
    if line.chars().count() <= MAX_LINE_CHARS {
        return line.to_string();
    }
    let kept: String = line.chars().take(MAX_LINE_CHARS).collect();
    format!("{kept} [… line cut]")
}

/// Drops terminal escape sequences and control characters (but newlines
/// and tabs); a carriage return starts the line over, as on a terminal
/// (progress bars keep only their last state).
pub fn clean(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut line = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\n' => {
                out.push_str(line.trim_end());
                out.push('\n');
                line.clear();
            }
            '\r' => {
                if chars.peek() != Some(&'\n') {
                    line.clear();
                }
            }
            '\t' => line.push('\t'),
            '\u{1b}' => skip_escape(&mut chars),
            c if c.is_control() => {}
            // Bidi overrides and isolates could make a line read other
            // than it is.
            '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => {}
            c => line.push(c),
        }
    }
    out.push_str(line.trim_end());
    out
}

/// Skips the rest of an escape sequence (CSI, OSC, or a two-byte one).
fn skip_escape(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    match chars.next() {
        Some('[') => {
            // CSI: parameters, then one final byte in @..~.
            for c in chars.by_ref() {
                if ('@'..='~').contains(&c) {
                    break;
                }
            }
        }
        Some(']') | Some('P') | Some('_') | Some('^') => {
            // OSC / DCS / APC / PM: up to BEL or ESC \.
            while let Some(c) = chars.next() {
                if c == '\u{7}' {
                    break;
                }
                if c == '\u{1b}' {
                    chars.next();
                    break;
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_last_lines_and_says_how_many_came_before() {
        let output: String = (1..=100).map(|i| format!("line {i}\n")).collect();
        let got = tail(output.as_bytes(), 3);
        assert_eq!(
            got,
            "[… 97 earlier lines in the log]\nline 98\nline 99\nline 100"
        );
        assert_eq!(tail(b"only\n\n\n", 60), "only");
    }

    #[test]
    fn escapes_and_controls_never_get_through() {
        let got = tail(
            b"\x1b[31mred\x1b[0m ok\n\x1b]0;title\x07bell\x07 \x08x\nbar 10%\rbar 100%\n\xe2\x80\xaeevil\n",
            10,
        );
        assert_eq!(got, "red ok\nbell x\nbar 100%\nevil");
        assert!(!got.chars().any(|c| c.is_control() && c != '\n'));
    }

    #[test]
    fn long_lines_and_line_counts_are_bounded() {
        let long = "x".repeat(10_000);
        let got = tail(long.as_bytes(), 10);
        assert!(got.ends_with("[… line cut]"));
        assert!(got.chars().count() < MAX_LINE_CHARS + 20);
        let many: String = (0..5000).map(|i| format!("{i}\n")).collect();
        assert_eq!(
            tail(many.as_bytes(), 100_000).lines().count(),
            MAX_LINES + 1
        );
    }
}
