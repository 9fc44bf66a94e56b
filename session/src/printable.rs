//! Text that came from users or agents (tasks, notes, messages, statuses,
//! file contents), made safe to print on a terminal: control characters
//! (C0 but line breaks where allowed, DEL, C1) and the bidirectional
//! overrides that can hide text are shown escaped (`\x1b`, `\u{202e}`)
//! instead of acting on the terminal.
//!
//! Invariant: pure; applied by the edges when they print sentences
//! (`--json` output is JSON-escaped already and keeps the raw text).

use std::borrow::Cow;

/// Whether `c` would act on a terminal (or reorder text) instead of showing.
fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

fn escape(out: &mut String, c: char) {
    if (c as u32) < 0x80 {
        out.push_str(&format!("\\x{:02x}", c as u32));
    } else {
        out.push_str(&format!("\\u{{{:x}}}", c as u32));
    }
}

/// One line: every control character escaped, line breaks and tabs too.
pub fn line(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_unsafe) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if is_unsafe(c) {
            escape(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Several lines: `\n` and `\t` kept, every other control character escaped.
pub fn text(text: &str) -> Cow<'_, str> {
    let unsafe_here = |c: char| is_unsafe(c) && c != '\n' && c != '\t';
    if !text.chars().any(unsafe_here) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if unsafe_here(c) {
            escape(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// A name that came from disk — a file path, a folder, a branch — as one
/// printable line (git quotes such names; owt escapes them, `\x1b`): the
/// one way the edges print them (`review`, `delete`, `guard`, `diff
/// --stat`, merge and ship sentences and errors).
pub fn name(name: &str) -> Cow<'_, str> {
    line(name)
}

/// [`name`] of a path (not UTF-8: lossily).
pub fn path(path: &std::path::Path) -> String {
    line(&path.to_string_lossy()).into_owned()
}

/// `3h`, `12m`, `40s` since `then_ms`.
pub fn age(then_ms: i64, now_ms: i64) -> String {
    let secs = ((now_ms - then_ms) / 1000).max(0);
    match secs {
        0..=59 => format!("{secs}s"),
        60..=3599 => format!("{}m", secs / 60),
        3600..=86_399 => format!("{}h", secs / 3600),
        _ => format!("{}d", secs / 86_400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_terminal_controls_and_bidi_overrides() {
        assert_eq!(line("plain task"), "plain task");
        assert_eq!(
            line("esc \u{1b}]0;PWNED\u{7} done"),
            "esc \\x1b]0;PWNED\\x07 done"
        );
        assert_eq!(line("a\nb\tc\u{7f}"), "a\\x0ab\\x09c\\x7f");
        assert_eq!(line("csi \u{9b}2J"), "csi \\u{9b}2J");
        assert_eq!(line("x\u{202e}txt.exe"), "x\\u{202e}txt.exe");
        assert_eq!(text("one\ntwo\t\u{1b}[2K"), "one\ntwo\t\\x1b[2K");
        assert_eq!(line("Überprüfe 日本語"), "Überprüfe 日本語");
    }
}
