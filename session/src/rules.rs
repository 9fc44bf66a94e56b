//! Screen rules: what an agent is doing, read from its screen — the
//! fallback where the agent gives no native signal (hooks, notifications).
//!
//! Pure functions over a [`ScreenText`] (the `vt100` screen's rows and its
//! cursor), evaluated by the host when output settles for [`SETTLE_MS`] and
//! at least every [`REJUDGE_MS`] while it never settles (animated TUIs).
//! Rules read only the region where the agent is *now*, so a question that
//! was answered stops counting once the agent moved on:
//! - full-screen TUIs (Claude Code, Codex, OpenCode, Gemini, and any
//!   program on the alternate screen) draw their dialogs, spinner and input
//!   box at the bottom: the last [`TUI_REGION_LINES`] lines of content;
//! - line-mode programs (Aider, custom tools) wait for an answer on the
//!   cursor's line: a question counts only there, a spinner only in the
//!   few lines above it.
//!
//! Precedence everywhere: a permission dialog (`blocked`) beats a spinner
//! (`working`), which beats a question or an idle input box (`waiting`);
//! anything else is `idle` ("no opinion": the output's recency decides).
//! Tested from recorded terminal bytes (`tests/fixtures/screens/`,
//! `tests/data/screens/`) run through the screen model.

use crate::AgentSignal;

/// Quiet time before the screen is judged.
pub const SETTLE_MS: u64 = 300;
/// While output never settles, the screen is judged at least this often.
pub const REJUDGE_MS: u64 = 1_000;
/// Lines of content (from the last non-empty one up) a TUI's rules read.
pub const TUI_REGION_LINES: usize = 20;
/// Lines up to the cursor (its own and the one above) a line-mode
/// program's rules read for a spinner.
const LINE_REGION_LINES: usize = 2;

/// The screen as the rules read it: its rows (trailing blanks trimmed) and
/// the cursor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScreenText {
    pub lines: Vec<String>,
    /// (row, column), 0-based.
    pub cursor: (u16, u16),
    /// The program switched to the alternate screen (a full-screen TUI).
    pub alternate: bool,
}

impl ScreenText {
    pub fn from_screen(screen: &vt100::Screen) -> ScreenText {
        let (_, cols) = screen.size();
        ScreenText {
            lines: screen
                .rows(0, cols)
                .map(|l| l.trim_end().to_string())
                .collect(),
            cursor: screen.cursor_position(),
            alternate: screen.alternate_screen(),
        }
    }

    /// A screen from plain text with the cursor at the end of its last
    /// non-empty line (tests).
    pub fn from_text(text: &str) -> ScreenText {
        let lines: Vec<String> = text.lines().map(|l| l.trim_end().to_string()).collect();
        let row = lines.iter().rposition(|l| !l.is_empty()).unwrap_or(0);
        let col = lines.get(row).map_or(0, |l| l.chars().count());
        ScreenText {
            lines,
            cursor: (row as u16, col as u16),
            alternate: false,
        }
    }

    /// The line the cursor is on.
    pub fn cursor_line(&self) -> &str {
        self.lines
            .get(self.cursor.0 as usize)
            .map_or("", String::as_str)
    }

    /// The bottom of a TUI's screen: its last [`TUI_REGION_LINES`] lines
    /// of content (blank rows do not count), down to the cursor if it is
    /// lower.
    pub fn tui_region(&self) -> String {
        let Some(last_text) = self.lines.iter().rposition(|l| !l.is_empty()) else {
            return String::new();
        };
        let last = last_text
            .max(self.cursor.0 as usize)
            .min(self.lines.len() - 1);
        let first = self.lines[..=last_text]
            .iter()
            .enumerate()
            .rev()
            .filter(|(_, l)| !l.is_empty())
            .nth(TUI_REGION_LINES - 1)
            .map_or(0, |(i, _)| i);
        self.lines[first..=last].join("\n")
    }

    /// A line-mode program's recent lines: a few up to the cursor's.
    fn line_region(&self) -> String {
        let row = (self.cursor.0 as usize).min(self.lines.len().saturating_sub(1));
        let first = (row + 1).saturating_sub(LINE_REGION_LINES);
        self.lines.get(first..=row).unwrap_or(&[]).join("\n")
    }
}

/// What a screen shows, before it is reduced to an [`AgentSignal`]: the
/// host treats an idle input box differently from a question while the
/// agent has not started on a task it was given on its command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// A permission dialog.
    Blocked,
    /// A spinner, a progress line.
    Working,
    /// A question or a menu for the human (trust this folder, sign in, y/n).
    Question,
    /// An idle input box or prompt.
    InputBox,
    /// Nothing recognised.
    Unknown,
}

impl Verdict {
    pub fn signal(self) -> AgentSignal {
        match self {
            Verdict::Blocked => AgentSignal::Blocked,
            Verdict::Working => AgentSignal::Working,
            Verdict::Question | Verdict::InputBox => AgentSignal::Waiting,
            Verdict::Unknown => AgentSignal::Idle,
        }
    }
}

/// The signal the screen of `provider` shows.
pub fn screen_signal(provider: &str, screen: &ScreenText) -> AgentSignal {
    screen_verdict(provider, screen).signal()
}

/// What the screen of `provider` shows.
pub fn screen_verdict(provider: &str, screen: &ScreenText) -> Verdict {
    let tui = |rules: fn(&str, &str) -> Option<Verdict>| {
        let region = screen.tui_region();
        let lower = region.to_lowercase();
        rules(&region, &lower).or_else(|| tui_generic(&region, &lower))
    };
    let verdict = match provider {
        "claude" => tui(claude),
        "codex" => tui(codex),
        "opencode" => tui(opencode),
        "gemini" => tui(gemini),
        "aider" => aider(screen).or_else(|| line_mode(screen)),
        // The other built-in agents are full-screen TUIs too.
        "pi" | "droid" | "amp" | "cursor-agent" => tui(|_, _| None),
        _ if screen.alternate => tui(|_, _| None),
        _ => line_mode(screen),
    };
    verdict.unwrap_or(Verdict::Unknown)
}

/// Whether a typed first prompt may be typed now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Readiness {
    /// The agent's input box is there.
    Ready,
    /// A question is on screen: type nothing (never answer it for the human).
    Question,
    /// Not yet (still starting).
    NotYet,
}

/// Whether `provider`'s screen is ready for its first prompt to be typed.
/// `bracketed_paste`: the agent enabled bracketed paste (DECSET 2004), as
/// line editors do while they read input.
pub fn prompt_readiness(provider: &str, screen: &ScreenText, bracketed_paste: bool) -> Readiness {
    match screen_verdict(provider, screen) {
        Verdict::Blocked | Verdict::Question => return Readiness::Question,
        Verdict::Working => return Readiness::NotYet,
        Verdict::InputBox | Verdict::Unknown => {}
    }
    let ready = match provider {
        // Its prompt_toolkit line: `> ` (or `ask> `, `architect> `) with
        // bracketed paste on, which it turns on only while reading input.
        "aider" => bracketed_paste && aider_prompt(screen.cursor_line()),
        _ => screen_verdict(provider, screen) == Verdict::InputBox,
    };
    if ready {
        Readiness::Ready
    } else {
        Readiness::NotYet
    }
}

/// Whether `provider`, given its task on the command line, may show its
/// idle input box before it starts on that task (Codex draws its splash
/// and input box seconds before its first model request): until its
/// screen shows work, the host reads that input box as `working`. The
/// built-in full-screen agents; not custom tools (a program that takes an
/// argument and waits at a prompt has done its work).
pub fn input_box_before_argv_task(provider: &str) -> bool {
    matches!(
        provider,
        "claude" | "codex" | "opencode" | "gemini" | "pi" | "droid" | "cursor-agent"
    )
}

/// What an agent's desktop notification (OSC 9, written to its terminal)
/// means, for agents asked to send them (see `provider::integration`).
pub fn notification_signal(provider: &str, message: &str) -> Option<AgentSignal> {
    match provider {
        // Codex's notifications: "Approval requested: <cmd>", "Approval
        // requested by <server>", "Codex wants to edit <file>", "Plan mode
        // prompt: …", "Question requested: …", else the end of a turn
        // ("Agent turn complete" or a preview of the reply).
        "codex" => {
            let blocked = ["Approval requested", "Codex wants to edit"];
            Some(if blocked.iter().any(|p| message.starts_with(p)) {
                AgentSignal::Blocked
            } else {
                AgentSignal::Waiting
            })
        }
        _ => None,
    }
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

fn claude(screen: &str, lower: &str) -> Option<Verdict> {
    if common_blocked(lower) || lower.contains("no, and tell claude") || claude_dialog(screen) {
        return Some(Verdict::Blocked);
    }
    if lower.contains("esc to interrupt") || claude_spinner(screen) {
        return Some(Verdict::Working);
    }
    // A first-run question (theme, login method, trust the folder).
    if lower.contains("choose the text style")
        || lower.contains("select login method")
        || lower.contains("do you trust the files")
        || lower.contains("quick safety check")
        || lower.contains("press enter to continue")
    {
        return Some(Verdict::Question);
    }
    // The input box (`│ > ` or `> ` between rules), the shortcut hint;
    // never a menu's selected choice (`❯ 1. Yes`).
    if lower.contains("? for shortcuts")
        || screen.lines().any(|l| {
            let t = l.trim_start_matches(['│', ' ']);
            (t.starts_with("> ") || t == ">" || t.starts_with("❯ ") || t == "❯")
                && selected_choice(t).is_none()
        })
    {
        return Some(Verdict::InputBox);
    }
    None
}

/// Claude's permission dialogs, whatever they ask ("Do you want to
/// overwrite README.md?", "… make this edit …", "… proceed?"): a question
/// `Do you want to …?` above a menu with a numbered choice selected
/// (`❯ 1. Yes`) and a second one (`2. …`). Regression (#34.3): the
/// overwrite dialog read as the input box (`needs-input`) until Claude's
/// own notification, ~5 s later.
fn claude_dialog(screen: &str) -> bool {
    let (mut asked, mut selected) = (false, false);
    for line in screen.lines() {
        let t = line.trim();
        if t.to_lowercase().starts_with("do you want to") && t.ends_with('?') {
            (asked, selected) = (true, false);
        } else if asked && selected_choice(t).is_some() {
            selected = true;
        } else if selected
            && t.split_once(". ")
                .is_some_and(|(n, _)| n.parse::<u8>().is_ok())
        {
            return true;
        }
    }
    false
}

/// A menu's selected choice, `❯ 1. Yes`: its text (`Yes`).
fn selected_choice(line: &str) -> Option<&str> {
    let rest = line.strip_prefix('❯')?.trim_start();
    let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    (digits > 0)
        .then(|| rest[digits..].strip_prefix(". "))
        .flatten()
}

/// Claude's spinner line: a star glyph, a verb, an ellipsis.
fn claude_spinner(screen: &str) -> bool {
    screen.lines().any(|l| {
        let t = l.trim_start();
        t.starts_with(['✻', '✽', '✶', '✳', '✢', '·', '*']) && t.contains('…')
    })
}

fn codex(screen: &str, lower: &str) -> Option<Verdict> {
    if common_blocked(lower)
        || lower.contains("would you like to run the following command")
        || lower.contains("would you like to make the following edits")
        || lower.contains("allow command?")
    {
        return Some(Verdict::Blocked);
    }
    if lower.contains("esc to interrupt") || lower.contains("working (") {
        return Some(Verdict::Working);
    }
    if lower.contains("sign in with chatgpt")
        || lower.contains("provide your own api key")
        || lower.contains("trust this folder?")
        || lower.contains("do you trust the contents")
        || lower.contains("press enter to continue")
    {
        return Some(Verdict::Question);
    }
    if lower.contains("send a message")
        || lower.contains("ctrl+j newline")
        || lower.contains("? for shortcuts")
        || screen
            .lines()
            .any(|l| l.trim_start().starts_with('▌') || l.trim_start().starts_with("› "))
    {
        return Some(Verdict::InputBox);
    }
    None
}

fn opencode(_screen: &str, lower: &str) -> Option<Verdict> {
    if common_blocked(lower) || lower.contains("allow always") {
        return Some(Verdict::Blocked);
    }
    // Its busy bar (`⬝■■■■⬝`), also while it retries the API.
    if lower.contains("esc interrupt")
        || lower.contains("esc to interrupt")
        || lower.contains("working...")
        || lower.contains("[retrying in")
        || lower.contains("■⬝")
        || lower.contains("⬝■")
    {
        return Some(Verdict::Working);
    }
    if lower.contains("enter send")
        || lower.contains("ctrl+p commands")
        || lower.contains("ask anything")
    {
        return Some(Verdict::InputBox);
    }
    None
}

fn gemini(_screen: &str, lower: &str) -> Option<Verdict> {
    if common_blocked(lower)
        || lower.contains("allow execution")
        || lower.contains("apply this change?")
        || lower.contains("yes, allow")
    {
        return Some(Verdict::Blocked);
    }
    if lower.contains("esc to cancel") {
        return Some(Verdict::Working);
    }
    if lower.contains("do you trust the files")
        || lower.contains("how would you like to authenticate")
    {
        return Some(Verdict::Question);
    }
    if lower.contains("type your message") {
        return Some(Verdict::InputBox);
    }
    None
}

/// Aider (a line-mode program): its yes/no questions end on the cursor's
/// line (`Create new file? (Y)es/(N)o [Yes]:`), its input line is `> `.
fn aider(screen: &ScreenText) -> Option<Verdict> {
    let line = screen.cursor_line();
    let lower = line.to_lowercase();
    if lower.contains("(y)es/(n)o") || lower.ends_with("[yes]:") || lower.ends_with("[no]:") {
        // Its file and command questions are permissions; others (add
        // .aider* to .gitignore?) are questions all the same.
        return Some(Verdict::Blocked);
    }
    if screen.line_region().contains("Waiting for ") {
        return Some(Verdict::Working);
    }
    if aider_prompt(line) {
        return Some(Verdict::InputBox);
    }
    None
}

/// Aider's input line, nothing typed yet: `>`, or a mode's `ask>`.
fn aider_prompt(line: &str) -> bool {
    let t = line.trim();
    t.strip_suffix('>')
        .is_some_and(|mode| mode.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'))
}

/// Any full-screen program: menus and sign-in screens, braille spinners.
fn tui_generic(screen: &str, lower: &str) -> Option<Verdict> {
    if common_blocked(lower) {
        return Some(Verdict::Blocked);
    }
    if lower.contains("esc to interrupt") || screen.contains(SPINNER) {
        return Some(Verdict::Working);
    }
    if asks(lower) {
        return Some(Verdict::Question);
    }
    // An input line (`> `, `❯ `) or a picker's marked entry.
    if screen.lines().any(|l| {
        let t = l.trim_start_matches(['│', ' ']);
        t.starts_with("> ") || t == ">" || t.starts_with("❯ ") || t == "❯"
    }) {
        return Some(Verdict::InputBox);
    }
    None
}

const SPINNER: &[char] = &['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/// Menus and sign-in screens that wait for a person to pick.
fn asks(lower: &str) -> bool {
    lower.contains("(use enter to select)")
        || lower.contains("please login")
        || lower.contains("please log in")
        || lower.contains("would you like to log in")
        || lower.contains("do you trust")
}

/// Any line-mode program: a yes/no question on the cursor's line, a
/// spinner just above it, a prompt at the end of the cursor's line.
fn line_mode(screen: &ScreenText) -> Option<Verdict> {
    let line = screen.cursor_line();
    let lower = line.to_lowercase();
    if common_blocked(&lower)
        || lower.contains("(y/n)")
        || lower.contains("[y/n]")
        || lower.contains("(y)es/(n)o")
    {
        return Some(Verdict::Blocked);
    }
    let region = screen.line_region();
    let region_lower = region.to_lowercase();
    if region_lower.contains("esc to interrupt") || region.contains(SPINNER) {
        return Some(Verdict::Working);
    }
    if asks(&region_lower) {
        return Some(Verdict::Question);
    }
    let last = line.trim_end();
    if last.ends_with(['?', ':']) {
        return Some(Verdict::Question);
    }
    if last.ends_with(['>', '❯', '$', '#']) {
        return Some(Verdict::InputBox);
    }
    None
}

mod limit;
pub use limit::{limit_on_screen, LimitSeen};

#[cfg(test)]
mod tests;
