//! Limits on screen: a usage or rate limit the agent shows (HTTP 429,
//! `rate_limit_error`, "usage limit reached, resets at …") as its latest
//! word, and when it resets when the screen says.
//!
//! Only the latest word counts: for Claude Code the last message bullet
//! (`●`) or input line (`❯`) above its input box, so that a limit the agent
//! got past (the human typed "continue", it answered) is history; for
//! other agents the last [`TAIL_LINES`] lines of the screen.

use super::ScreenText;

/// How many of the last non-blank lines are read for an agent without
/// its own rule.
pub const TAIL_LINES: usize = 8;

/// A limit the screen shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitSeen {
    /// The line that says so (trimmed).
    pub line: String,
    /// When it resets, as the screen says it ("3pm", "in 20s").
    pub resets: Option<String>,
    /// Seconds until it resets, when the screen says it relatively ("try
    /// again in 20s").
    pub resets_in_secs: Option<u64>,
}

/// The limit the screen of `provider` shows as its latest word, if any.
pub fn limit_on_screen(provider: &str, screen: &ScreenText) -> Option<LimitSeen> {
    let lines: Vec<&str> = screen
        .lines
        .iter()
        .map(|l| l.trim())
        .filter(|l| !l.is_empty())
        .collect();
    if provider != "claude" {
        return seen(&tail(&lines));
    }
    // Its own errors and limit notices, never its prose about limits.
    claude_latest_message(&lines)
        .filter(|m| {
            let lower = m.to_lowercase();
            lower.starts_with("● api error") || lower.contains("limit reached")
        })
        .and_then(|m| seen(&m))
}

/// The last [`TAIL_LINES`] lines with text, joined: boxes' and panels'
/// borders (Gemini CLI's dialogs, OpenCode's panels) and rules dropped,
/// and the glyphs of OpenCode's spinner, drawn over the spaces of its
/// retry notice ("⬝Rate■limit reached"), read as spaces.
fn tail(lines: &[&str]) -> String {
    let border = |c: char| c.is_whitespace() || matches!(c, '│' | '┃' | '╭' | '╮' | '╰' | '╯');
    let rule = |c: char| matches!(c, '─' | '━' | '▀' | '▄' | '╹' | '╻');
    let text: Vec<String> = lines
        .iter()
        .map(|l| l.trim_matches(border))
        .filter(|l| !l.is_empty() && !l.chars().all(rule))
        .map(|l| l.replace(['⬝', '■'], " ").trim().to_string())
        .filter(|l| !l.is_empty())
        .collect();
    text[text.len().saturating_sub(TAIL_LINES)..].join(" ")
}

/// Claude Code's latest message or input above its input box or dialog
/// (a wrapped message joined with its continuation lines).
fn claude_latest_message(lines: &[&str]) -> Option<String> {
    let above = &lines[..claude_bottom(lines)];
    let start = above
        .iter()
        .rposition(|l| l.starts_with('●') || (l.starts_with('❯') && l.len() > '❯'.len_utf8()))?;
    let mut text = above[start].to_string();
    for l in &above[start + 1..] {
        if l.starts_with('●') || l.starts_with('❯') {
            break;
        }
        text.push(' ');
        text.push_str(l);
    }
    Some(text)
}

/// Where Claude Code's bottom block starts: its input box between two
/// rules, or a dialog below one (nothing above it is a message).
fn claude_bottom(lines: &[&str]) -> usize {
    let rule = |l: &&str| l.starts_with('─');
    let Some(last) = lines.iter().rposition(rule) else {
        return lines.len();
    };
    // The input box: a rule above the last one with no message between.
    match lines[..last].iter().rposition(rule) {
        Some(prev) if lines[prev + 1..last].iter().all(|l| !l.starts_with('●')) => prev,
        _ => last,
    }
}

/// The limit one line (or message) says, if it says one.
fn seen(text: &str) -> Option<LimitSeen> {
    // (ASCII only: the same byte offsets as `text`.)
    let lower = text.to_ascii_lowercase();
    let limit = lower.contains("rate_limit_error")
        || lower.contains("rate_limit_exceeded")
        || lower.contains("rate limit")
        || lower.contains("usage limit")
        || lower.contains("resource_exhausted")
        || lower.contains("(429)")
        || lower.contains(" 429 ")
        || lower.contains("status 429");
    if !limit {
        return None;
    }
    let relative = ["try again in ", "retrying in "]
        .iter()
        .find_map(|marker| after(&lower, marker));
    let resets = ["resets at ", "reset at ", "resets ", "try again at "]
        .iter()
        .find_map(|marker| clock_after(text, &lower, marker))
        .or_else(|| relative.as_ref().map(|t| format!("in {t}")));
    let resets_in_secs = relative.and_then(|t| duration_secs(&t));
    Some(LimitSeen {
        line: text.chars().take(300).collect(),
        resets,
        resets_in_secs,
    })
}

/// The word after `marker` in `text` (up to a space or sentence end).
fn after(text: &str, marker: &str) -> Option<String> {
    let rest = &text[text.find(marker)? + marker.len()..];
    let word: String = rest
        .chars()
        .take_while(|c| !c.is_whitespace() && !matches!(c, '·' | ',' | ')' | '('))
        .collect();
    let word = word.trim_end_matches('.').to_string();
    (!word.is_empty()).then_some(word)
}

/// The time after `marker` (found in `lower`, `text` lowercased) as
/// `text` says it, with its "PM" and time zone ("2:58 PM UTC").
fn clock_after(text: &str, lower: &str, marker: &str) -> Option<String> {
    let at = lower.find(marker)? + marker.len();
    let mut words = text[at..].split_whitespace();
    let first = after(&text[at..], "")?;
    let mut clock = vec![first.clone()];
    if first.len() == words.next()?.len() {
        for word in words {
            let word = word.trim_end_matches(['.', ',']);
            let zone =
                (2..=4).contains(&word.len()) && word.chars().all(|c| c.is_ascii_uppercase());
            if !(word.eq_ignore_ascii_case("am") || word.eq_ignore_ascii_case("pm") || zone) {
                break;
            }
            clock.push(word.to_string());
        }
    }
    Some(clock.join(" "))
}

/// `20s`, `5m`, `1h`, `1m30s`, `2.5s` → seconds (rounded up).
fn duration_secs(text: &str) -> Option<u64> {
    let mut total = 0.0_f64;
    let mut number = String::new();
    let mut any = false;
    for c in text.chars() {
        if c.is_ascii_digit() || c == '.' {
            number.push(c);
            continue;
        }
        let n: f64 = number.parse().ok()?;
        number.clear();
        total += n * match c {
            'h' => 3600.0,
            'm' => 60.0,
            's' => 1.0,
            _ => return None,
        };
        any = true;
    }
    (any && number.is_empty()).then(|| total.ceil() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn screen(text: &str) -> ScreenText {
        ScreenText::from_text(text)
    }

    /// The real screen of Claude Code 2.1 answered with Anthropic's 429
    /// (`rate_limit_error`) by the scripted model, as `owt peek` showed it
    /// (blank lines dropped); its auto-mode question below the input rule.
    const CLAUDE_429: &str = include_str!("../../../tests/data/screens/claude-rate-limited.txt");

    #[test]
    fn claude_code_showing_anthropics_429_is_limited() {
        let seen = limit_on_screen("claude", &screen(CLAUDE_429)).expect("a limit");
        assert!(
            seen.line.starts_with("● API Error: Request rejected (429)"),
            "{seen:?}"
        );
        assert_eq!(seen.resets, None);
    }

    #[test]
    fn claude_code_past_the_limit_is_not_limited() {
        // The human typed "continue" after the error: the latest word is
        // theirs; then the agent answered.
        let continued = CLAUDE_429.replacen("────", "❯ continue\n● Sure, continuing.\n────", 1);
        assert_eq!(limit_on_screen("claude", &screen(&continued)), None);
        let typed = CLAUDE_429.replacen("────", "❯ continue\n────", 1);
        assert_eq!(limit_on_screen("claude", &screen(&typed)), None);
        // An idle input box alone is no message.
        assert_eq!(
            limit_on_screen("claude", &screen("● Hello.\n────\n❯\n────")),
            None
        );
    }

    #[test]
    fn usage_limits_and_their_reset_time() {
        let s = screen("● Claude usage limit reached. Your limit will reset at 3pm (Europe/Paris).\n────\n❯\n────\n");
        let seen = limit_on_screen("claude", &s).expect("a limit");
        assert_eq!(seen.resets.as_deref(), Some("3pm"));
        let s =
            screen("■ stream error: exceeded retry limit, last status: 429 Too Many Requests\n› ");
        assert!(limit_on_screen("codex", &s).is_some());
        let s = screen("Error: Rate limit reached for mock-model on requests per min (RPM): Limit 3. Please try again in 20s.\n> ");
        let seen = limit_on_screen("opencode", &s).expect("a limit");
        assert_eq!(seen.resets.as_deref(), Some("in 20s"));
        assert_eq!(seen.resets_in_secs, Some(20));
        let s =
            screen("■ You've hit your usage limit. Upgrade to Pro or try again at 4:05 PM.\n› ");
        assert_eq!(
            limit_on_screen("codex", &s)
                .and_then(|s| s.resets)
                .as_deref(),
            Some("4:05 PM")
        );
    }

    /// The real screens (tmux, 120×40, trailing blanks dropped) of Codex
    /// 0.171 (no retries), Gemini CLI 0.61, OpenCode 1.18 and Aider 0.86
    /// answered 429 by the scripted model with OpenAI's and Gemini's real
    /// 429s.
    const CODEX_429: &str = include_str!("../../../tests/data/screens/codex-rate-limited.txt");
    const GEMINI_429: &str = include_str!("../../../tests/data/screens/gemini-rate-limited.txt");
    const OPENCODE_429: &str =
        include_str!("../../../tests/data/screens/opencode-rate-limited.txt");
    const AIDER_429: &str = include_str!("../../../tests/data/screens/aider-rate-limited.txt");

    #[test]
    fn codex_gemini_and_opencode_showing_a_429_are_limited() {
        let codex = limit_on_screen("codex", &screen(CODEX_429)).expect("codex");
        assert!(codex.line.contains("last status: 429"), "{codex:?}");
        assert_eq!(codex.resets, None);
        // Gemini CLI's dialog, in its box.
        let gemini = limit_on_screen("gemini", &screen(GEMINI_429)).expect("gemini");
        assert!(
            gemini.line.contains("Usage limit reached for"),
            "{gemini:?}"
        );
        assert_eq!(gemini.resets.as_deref(), Some("2:58 PM UTC"));
        // OpenCode retrying by itself, its spinner over the spaces.
        let opencode = limit_on_screen("opencode", &screen(OPENCODE_429)).expect("opencode");
        assert!(opencode.line.contains("Rate limit reached"), "{opencode:?}");
        assert_eq!(opencode.resets.as_deref(), Some("in 58m"));
        assert_eq!(opencode.resets_in_secs, Some(58 * 60));
        // Aider retrying by itself, the provider's message on screen.
        let aider = limit_on_screen("aider", &screen(AIDER_429)).expect("aider");
        assert!(aider.line.contains("rate limited you"), "{aider:?}");
        assert_eq!(aider.resets_in_secs, Some(3600));
    }

    #[test]
    fn ordinary_work_is_no_limit() {
        // Claude Code's own prose about rate limits is no limit.
        let s = screen("● I fixed the rate limit (429) handling in src/limit.rs.\n────\n❯\n");
        assert_eq!(limit_on_screen("claude", &s), None);
        assert_eq!(
            limit_on_screen("generic", &screen("$ cargo test\nok\n")),
            None
        );
        assert_eq!(duration_secs("1m30s"), Some(90));
        assert_eq!(duration_secs("2.5s"), Some(3));
        assert_eq!(duration_secs("soon"), None);
    }
}
