//! A terminal agent's permission dialog as owt reads it from the screen:
//! what it asks (the question, with the file or command it is about) and
//! the keys that answer it, per agent. `blocked` shows the question; `owt
//! approve` / `owt deny` type the keys, and only while the dialog is on
//! screen.
//!
//! Invariant: pure — a function of the provider and the screen text.

use crate::rules::{self, ScreenText, Verdict};

/// A permission dialog on screen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dialog {
    /// What it asks, on one line (`Do you want to overwrite README.md?`,
    /// `Would you like to run the following command? printf hi`).
    pub question: String,
    /// The bytes that allow it once.
    pub approve: &'static str,
    /// The bytes that refuse it.
    pub deny: &'static str,
}

/// Esc: "No" in Claude Code's, Codex's and Gemini's dialogs.
const ESC: &str = "\x1b";

/// The dialog on `provider`'s screen, when its screen rules read it as a
/// permission dialog and owt knows that agent's keys (Claude Code, Codex,
/// OpenCode, Gemini, Aider).
pub fn dialog(provider: &str, screen: &ScreenText) -> Option<Dialog> {
    if rules::screen_verdict(provider, screen) != Verdict::Blocked {
        return None;
    }
    let region: Vec<String> = screen
        .tui_region()
        .lines()
        .map(|l| {
            l.trim_matches(|c: char| c.is_whitespace() || "│┃".contains(c))
                .to_string()
        })
        .collect();
    let asks = |starts: &[&str]| {
        region.iter().rposition(|l| {
            let lower = l.to_lowercase();
            starts.iter().any(|s| lower.starts_with(s)) && l.ends_with('?')
        })
    };
    let (question, approve, deny) = match provider {
        // "Do you want to proceed?" under "Bash command" and the command;
        // "Do you want to overwrite README.md?".
        "claude" => {
            let at = asks(&["do you want to"])?;
            let about = after_header(&region[..at], "Bash command");
            (with_detail(&region[at], about), "1", ESC)
        }
        // "Would you like to run the following command?" … "$ printf …".
        "codex" => {
            let at = asks(&["would you like to", "allow command"])?;
            let command = region[at..]
                .iter()
                .find_map(|l| l.strip_prefix("$ "))
                .map(str::to_string);
            (with_detail(&region[at], command), "y", ESC)
        }
        // "△ Permission required" then "→ Edit hello.txt"; "Allow once" is
        // selected (Enter), "Reject" two to the right.
        "opencode" => {
            let at = region
                .iter()
                .rposition(|l| l.contains("Permission required"))?;
            let about = region[at + 1..]
                .iter()
                .find_map(|l| l.strip_prefix("→ "))
                .map(str::to_string);
            let question = with_detail("Permission required:", about);
            (question, "\r", "\x1b[C\x1b[C\r")
        }
        // "? Shell rm -rf build" then "Allow execution of: 'rm'?"; "1. Yes,
        // allow once" is selected (Enter).
        "gemini" => {
            let at = region.iter().rposition(|l| l.ends_with('?'))?;
            let about = region[..at]
                .iter()
                .rev()
                .find_map(|l| l.strip_prefix("? "))
                .map(str::to_string);
            (with_detail(&region[at], about), "\r", ESC)
        }
        // On the cursor's line: "Create new file? (Y)es/(N)o [Yes]:", the
        // file on the line above.
        "aider" => {
            let line = screen.cursor_line().trim();
            let question = line.split(" (Y)es").next()?.trim();
            let row = screen.cursor.0 as usize;
            let about = row
                .checked_sub(1)
                .and_then(|r| screen.lines.get(r))
                .map(|l| l.trim().to_string())
                .filter(|l| !l.is_empty());
            (with_detail(question, about), "y\r", "n\r")
        }
        _ => return None,
    };
    Some(Dialog {
        question,
        approve,
        deny,
    })
}

/// The first line after `header` (the thing asked about), if any.
fn after_header(lines: &[String], header: &str) -> Option<String> {
    let at = lines.iter().rposition(|l| l == header)?;
    lines[at + 1..].iter().find(|l| !l.is_empty()).cloned()
}

/// `question` followed by what it is about, on one line.
fn with_detail(question: &str, about: Option<String>) -> String {
    match about {
        Some(about) if !question.contains(&about) => format!("{question} {about}"),
        _ => question.to_string(),
    }
}

#[cfg(test)]
mod tests;
