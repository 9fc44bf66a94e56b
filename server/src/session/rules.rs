//! Screen rules: what an agent is doing, read from its screen text.
//!
//! One pure function per provider family over the text of the `vt100`
//! screen, evaluated by the host after output has been quiet for
//! [`SETTLE_MS`]. Precedence everywhere: a permission dialog (`blocked`)
//! beats a spinner (`working`), which beats an idle input box (`waiting`);
//! anything else is `idle`. Tested from recorded terminal bytes in
//! `tests/fixtures/screens/` run through the screen model.

use crate::status::AgentSignal;

/// Quiet time before the screen is judged.
pub const SETTLE_MS: u64 = 300;

/// The signal the screen of `provider` shows.
pub fn screen_signal(provider: &str, screen: &str) -> AgentSignal {
    let lower = screen.to_lowercase();
    let rules = match provider {
        "claude" => claude as fn(&str, &str) -> Option<AgentSignal>,
        "codex" => codex,
        "opencode" => opencode,
        "gemini" => gemini,
        _ => generic,
    };
    rules(screen, &lower)
        .or_else(|| generic(screen, &lower))
        .unwrap_or(AgentSignal::Idle)
}

/// Phrases of permission dialogs shared by most agents.
fn common_blocked(lower: &str) -> bool {
    const PHRASES: &[&str] = &[
        "do you want to proceed?",
        "do you want to make this edit",
        "do you want to create",
        "do you want to allow",
        "allow this command",
        "allow once",
        "permission required",
        "requires approval",
        "approve this",
    ];
    PHRASES.iter().any(|p| lower.contains(p))
}

fn claude(screen: &str, lower: &str) -> Option<AgentSignal> {
    if common_blocked(lower) || lower.contains("no, and tell claude") {
        return Some(AgentSignal::Blocked);
    }
    if lower.contains("esc to interrupt") || claude_spinner(screen) {
        return Some(AgentSignal::Working);
    }
    // The input box (`│ > ` or `> ` between rules), the shortcut hint, or a
    // first-run question (theme, login method, trust the folder).
    if lower.contains("? for shortcuts")
        || screen.lines().any(|l| {
            let t = l.trim_start_matches(['│', ' ']);
            t.starts_with("> ") || t == ">" || t.starts_with("❯ ")
        })
        || lower.contains("choose the text style")
        || lower.contains("select login method")
        || lower.contains("do you trust the files")
        || lower.contains("press enter to continue")
    {
        return Some(AgentSignal::Waiting);
    }
    None
}

/// Claude's spinner line: a star glyph, a verb, an ellipsis.
fn claude_spinner(screen: &str) -> bool {
    screen.lines().any(|l| {
        let t = l.trim_start();
        t.starts_with(['✻', '✽', '✶', '✳', '✢', '·', '*']) && t.contains('…')
    })
}

fn codex(screen: &str, lower: &str) -> Option<AgentSignal> {
    if common_blocked(lower)
        || lower.contains("would you like to run the following command")
        || lower.contains("would you like to make the following edits")
        || lower.contains("allow command?")
    {
        return Some(AgentSignal::Blocked);
    }
    if lower.contains("esc to interrupt") || lower.contains("working (") {
        return Some(AgentSignal::Working);
    }
    if lower.contains("sign in with chatgpt")
        || lower.contains("provide your own api key")
        || lower.contains("send a message")
        || lower.contains("ctrl+j newline")
        || screen
            .lines()
            .any(|l| l.trim_start().starts_with('▌') || l.trim_start().starts_with("› "))
    {
        return Some(AgentSignal::Waiting);
    }
    None
}

fn opencode(_screen: &str, lower: &str) -> Option<AgentSignal> {
    if common_blocked(lower) || lower.contains("allow always") {
        return Some(AgentSignal::Blocked);
    }
    // Its busy bar (`⬝■■■■⬝`), also while it retries the API.
    if lower.contains("esc interrupt")
        || lower.contains("esc to interrupt")
        || lower.contains("working...")
        || lower.contains("[retrying in")
        || lower.contains("■⬝")
        || lower.contains("⬝■")
    {
        return Some(AgentSignal::Working);
    }
    if lower.contains("enter send")
        || lower.contains("ctrl+p commands")
        || lower.contains("ask anything")
    {
        return Some(AgentSignal::Waiting);
    }
    None
}

fn gemini(_screen: &str, lower: &str) -> Option<AgentSignal> {
    if common_blocked(lower)
        || lower.contains("allow execution")
        || lower.contains("apply this change?")
        || lower.contains("yes, allow")
    {
        return Some(AgentSignal::Blocked);
    }
    if lower.contains("esc to cancel") {
        return Some(AgentSignal::Working);
    }
    if lower.contains("type your message")
        || lower.contains("do you trust the files")
        || lower.contains("how would you like to authenticate")
    {
        return Some(AgentSignal::Waiting);
    }
    None
}

/// Any terminal program: yes/no questions, braille spinners, a prompt at
/// the end of the last line.
fn generic(screen: &str, lower: &str) -> Option<AgentSignal> {
    if common_blocked(lower)
        || lower.contains("(y/n)")
        || lower.contains("[y/n]")
        || lower.contains("[y/n]?")
    {
        return Some(AgentSignal::Blocked);
    }
    const SPINNER: &[char] = &['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
    if lower.contains("esc to interrupt") || screen.contains(SPINNER) {
        return Some(AgentSignal::Working);
    }
    // Menus and sign-in screens that wait for a person to pick.
    if lower.contains("(use enter to select)")
        || lower.contains("please login")
        || lower.contains("please log in")
        || lower.contains("would you like to log in")
        || lower.contains("do you trust")
    {
        return Some(AgentSignal::Waiting);
    }
    let last = screen.lines().rev().find(|l| !l.trim().is_empty())?;
    let last = last.trim_end();
    if last.ends_with(['>', '?', '❯', ':', '$', '#']) {
        return Some(AgentSignal::Waiting);
    }
    None
}

#[cfg(test)]
mod tests;
