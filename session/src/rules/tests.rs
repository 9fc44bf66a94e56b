//! Screen rules from terminal bytes: each fixture is run through the vt100
//! screen model, then judged.

use super::{prompt_readiness, screen_signal, screen_verdict, Readiness, ScreenText, Verdict};
use crate::AgentSignal::{self, *};

/// The screen `bytes` draw on a 30×100 terminal.
fn screen(bytes: &[u8]) -> ScreenText {
    let mut parser = vt100::Parser::new(30, 100, 0);
    parser.process(bytes);
    ScreenText::from_screen(parser.screen())
}

/// The signal `provider`'s rules give for the screen `bytes` draw.
fn check(provider: &str, bytes: &[u8]) -> AgentSignal {
    screen_signal(provider, &screen(bytes))
}

macro_rules! fixture {
    ($name:literal) => {
        include_bytes!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/data/screens/",
            $name
        ))
    };
}

#[test]
fn claude() {
    assert_eq!(check("claude", fixture!("claude-idle.bin")), Waiting);
    assert_eq!(check("claude", fixture!("claude-working.bin")), Working);
    assert_eq!(check("claude", fixture!("claude-permission.bin")), Blocked);
}

#[test]
fn codex() {
    assert_eq!(check("codex", fixture!("codex-signin.bin")), Waiting);
    assert_eq!(check("codex", fixture!("codex-approval.bin")), Blocked);
    assert_eq!(check("codex", fixture!("codex-working.bin")), Working);
}

#[test]
fn opencode() {
    assert_eq!(check("opencode", fixture!("opencode-idle.bin")), Waiting);
}

#[test]
fn gemini() {
    assert_eq!(check("gemini", fixture!("gemini-permission.bin")), Blocked);
}

#[test]
fn generic() {
    assert_eq!(check("generic", fixture!("generic-spinner.bin")), Working);
    assert_eq!(check("generic", fixture!("generic-yes-no.bin")), Blocked);
    assert_eq!(check("generic", fixture!("generic-log.bin")), Idle);
    // A custom tool falls back to the generic rules.
    assert_eq!(check("my-tool", fixture!("generic-yes-no.bin")), Blocked);
}

#[test]
fn a_dialog_beats_a_spinner_and_a_spinner_beats_an_input_box() {
    let mixed = "✶ Pondering… (esc to interrupt)\n│ > \nDo you want to proceed?\n";
    assert_eq!(
        screen_signal("claude", &ScreenText::from_text(mixed)),
        Blocked
    );
    let working = "✶ Pondering… (esc to interrupt)\n│ > \n";
    assert_eq!(
        screen_signal("claude", &ScreenText::from_text(working)),
        Working
    );
}

/// Recordings of the real CLIs (`tests/fixtures/screens/*.bin`, described
/// in `tests/fixtures/README-screens.md`), run through the screen model: the
/// state a supervisor must derive from each real screen is pinned here.
/// Dialogs that stop the agent until a person answers (trust this folder,
/// sign in, yes/no questions) must read as waiting or blocked: both put the
/// session in NEEDS YOU.
#[test]
fn real_recordings_give_the_right_signal() {
    let needs_you = [Waiting, Blocked];
    let cases: &[(&str, &str, &[AgentSignal])] = &[
        ("claude", "claude-trust-dialog", &needs_you),
        ("claude", "claude-api-key-dialog", &needs_you),
        ("claude", "claude-idle", &[Waiting]),
        ("claude", "claude-prompt-plan-retrying", &[Working]),
        ("codex", "codex-signin", &needs_you),
        ("codex", "codex-trust-dialog", &needs_you),
        ("codex", "codex-idle", &[Waiting]),
        ("codex", "codex-working", &[Working]),
        ("opencode", "opencode-idle", &[Waiting]),
        ("opencode", "opencode-prompt-plan-retrying", &[Working]),
        ("gemini", "gemini-trust-dialog", &needs_you),
        ("gemini", "gemini-auth-menu", &needs_you),
        ("gemini", "gemini-idle-plan", &[Waiting]),
        ("gemini", "gemini-prompt-api-error", &[Waiting]),
        ("droid", "droid-login", &needs_you),
        ("amp", "amp-login-prompt", &needs_you),
        ("aider", "aider-gitignore-prompt", &needs_you),
        // Recorded mid-turn against the scripted model (tools/scripted.py).
        ("codex", "codex-working-first-request", &[Working]),
        ("codex", "codex-approval-real", &[Blocked]),
        ("aider", "aider-prompt", &[Waiting]),
        ("aider", "aider-waiting-for-model", &[Working]),
        ("aider", "aider-create-file-dialog", &[Blocked]),
        ("aider", "aider-env-question", &[Blocked]),
        ("opencode", "opencode-working", &[Working]),
        ("opencode", "opencode-permission-real", &[Blocked]),
    ];
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/screens");
    let mut wrong = Vec::new();
    for (provider, name, allowed) in cases {
        let bytes = std::fs::read(dir.join(format!("{name}.bin")))
            .unwrap_or_else(|e| panic!("{name}.bin: {e}"));
        let got = check(provider, &bytes);
        if !allowed.contains(&got) {
            wrong.push(format!("{name}: got {got:?}, expected one of {allowed:?}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Regression (issue 16): a line-mode agent that printed "Do you want to
/// proceed? (y/n)", got `y` and went on working still read as blocked
/// seconds later: the rules matched the question anywhere on the screen.
#[test]
fn regression_an_answered_question_stops_counting() {
    let mut bytes =
        b"\x1b[1mBash command\x1b[0m\r\n  rm -rf build\r\nDo you want to proceed? (y/n)".to_vec();
    assert_eq!(check("generic", &bytes), Blocked);
    bytes.extend_from_slice(b" y\r\nremoving build/\r\n\xe2\xa0\x8b cleaning 1/3");
    assert_eq!(
        check("generic", &bytes),
        Working,
        "working, the question answered"
    );
    bytes.extend_from_slice(b"\r\ndone\r\n> ");
    assert_eq!(check("generic", &bytes), Waiting);
}

/// Regression (issue 16): Aider's "(Y)es/(N)o [Yes]:" read as needs-input,
/// not blocked (the rules knew only "(y/n)" and "[y/n]").
#[test]
fn regression_aider_yes_no_questions_are_blocked() {
    let dialog = b"hello.txt\r\nCreate new file? (Y)es/(N)o [Yes]: ";
    assert_eq!(check("aider", dialog), Blocked);
    assert_eq!(check("my-tool", dialog), Blocked);
    // Answered, applied, back at its prompt: waiting for the human.
    let after = b"hello.txt\r\nCreate new file? (Y)es/(N)o [Yes]: y\r\nApplied edit to hello.txt\r\nCommit 1b54463 Add hello\r\n\x1b[2m\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\x1b[0m\r\nhello.txt\r\n> ";
    assert_eq!(check("aider", after), Waiting);
    let waiting_for_model =
        b"> Create hello.txt\r\n\r\nWaiting for openai/mock-model \xe2\x96\x91\xe2\x96\x88";
    assert_eq!(check("aider", waiting_for_model), Working);
}

/// The first prompt is typed into Aider only at its input line, with
/// bracketed paste on — never into a question that came first, and not
/// while it is still starting.
#[test]
fn aider_is_ready_for_its_prompt_only_at_its_input_line() {
    let starting = screen(b"Aider v0.86.2\r\nModel: openai/mock-model with whole edit format\r\n");
    assert_eq!(
        prompt_readiness("aider", &starting, false),
        Readiness::NotYet
    );
    let question =
        screen(b"Aider v0.86.2\r\nAdd .aider* to .gitignore (recommended)? (Y)es/(N)o [Yes]: ");
    assert_eq!(
        prompt_readiness("aider", &question, true),
        Readiness::Question
    );
    let prompt =
        screen(b"Aider v0.86.2\r\nRepo-map: using 4096 tokens\r\n\xe2\x94\x80\xe2\x94\x80\r\n> ");
    assert_eq!(prompt_readiness("aider", &prompt, true), Readiness::Ready);
    assert_eq!(
        prompt_readiness("aider", &prompt, false),
        Readiness::NotYet,
        "its line editor is not reading yet"
    );
    let ask_mode = screen(b"\r\nask> ");
    assert_eq!(prompt_readiness("aider", &ask_mode, true), Readiness::Ready);
    // Other typed agents: their input box.
    let generic = screen(b"welcome\r\n$ ");
    assert_eq!(
        prompt_readiness("my-tool", &generic, false),
        Readiness::Ready
    );
    let asking = screen(b"Overwrite config.toml? [y/N] ");
    assert_eq!(
        prompt_readiness("my-tool", &asking, false),
        Readiness::Question
    );
}

/// Full-screen TUIs are read at the bottom, where they draw dialogs and
/// their input box: text higher up (the conversation) has no say.
#[test]
fn a_tuis_history_above_its_bottom_has_no_say() {
    let mut text = String::from("> Please delete the build folder\n");
    text.push_str("● Earlier: Do you want to proceed? (the model quoted it)\n");
    for i in 0..30 {
        text.push_str(&format!("  line {i} of the reply\n"));
    }
    text.push_str("────\n❯ \n────\n  ? for shortcuts\n");
    let s = ScreenText::from_text(&text);
    assert_eq!(screen_verdict("claude", &s), Verdict::InputBox);
}

/// Regression (#34.3): Claude Code's overwrite dialog (as it showed on a
/// follow-up turn) read as its input box — `❯ 1. Yes` — so the session was
/// `needs-input` until Claude's own notification came, ~5 s later.
#[test]
fn regression_claude_overwrite_dialog_is_blocked() {
    let dialog = "● Write(README.md)\n────\n Overwrite file\n README.md\n╌╌╌╌\n  1  # test repository\n  2 +\n╌╌╌╌\n Do you want to overwrite README.md?\n ❯ 1. Yes\n   2. Yes, and switch to accept edits (auto-approve file edits and common file commands) for this session (shift+tab)\n   3. No\n Esc to cancel · Tab to amend\n";
    let s = ScreenText::from_text(dialog);
    assert_eq!(screen_verdict("claude", &s), Verdict::Blocked);
    // A prompt the human typed that looks like a choice is not a dialog.
    let typed = "● Do you want to go on?\n────\n❯ 1. fix the tests\n────\n  ? for shortcuts\n";
    assert_eq!(
        screen_verdict("claude", &ScreenText::from_text(typed)),
        Verdict::InputBox
    );
}

#[test]
fn codex_notifications_say_blocked_or_waiting() {
    use super::notification_signal;
    assert_eq!(
        notification_signal("codex", "Approval requested: printf 'hi"),
        Some(Blocked)
    );
    assert_eq!(
        notification_signal("codex", "Codex wants to edit hello.txt"),
        Some(Blocked)
    );
    assert_eq!(
        notification_signal("codex", "I wrote hello.txt."),
        Some(Waiting)
    );
    assert_eq!(notification_signal("claude", "Approval requested: x"), None);
}

/// A recording of the real CLI, through the screen model: its screen and
/// whether it turned bracketed paste on.
fn recording(name: &str) -> (ScreenText, bool) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/screens")
        .join(format!("{name}.bin"));
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut parser = vt100::Parser::new(30, 100, 0);
    parser.process(&bytes);
    (
        ScreenText::from_screen(parser.screen()),
        parser.screen().bracketed_paste(),
    )
}

/// Aider's prompt is typed at its real input line only, never into its
/// real start-up question (recorded from aider 0.86.2).
#[test]
fn aider_recordings_say_when_its_prompt_may_be_typed() {
    let (prompt, paste) = recording("aider-prompt");
    assert!(paste, "Aider's line editor turns bracketed paste on");
    assert_eq!(prompt_readiness("aider", &prompt, paste), Readiness::Ready);
    let (question, paste) = recording("aider-env-question");
    assert_eq!(
        prompt_readiness("aider", &question, paste),
        Readiness::Question
    );
    let (working, paste) = recording("aider-waiting-for-model");
    assert_eq!(
        prompt_readiness("aider", &working, paste),
        Readiness::NotYet
    );
}

/// While Codex streams its answer its screen shows its input box and no
/// spinner (recorded from codex 0.171.0): the screen alone cannot tell
/// this from the end of the turn. The host counts an input box only once
/// the output is quiet, and Codex's own notification ends the turn.
#[test]
fn codex_streaming_looks_like_its_input_box() {
    let (screen, _) = recording("codex-streaming-answer");
    assert_eq!(screen_verdict("codex", &screen), Verdict::InputBox);
}
