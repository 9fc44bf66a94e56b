//! Screen rules from terminal bytes: each fixture is run through the vt100
//! screen model, then judged.

use super::screen_signal;
use crate::status::AgentSignal::{self, *};

/// The signal `provider`'s rules give for the screen `bytes` draw.
fn check(provider: &str, bytes: &[u8]) -> AgentSignal {
    let mut parser = vt100::Parser::new(30, 100, 0);
    parser.process(bytes);
    screen_signal(provider, &parser.screen().contents())
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
    assert_eq!(screen_signal("claude", mixed), Blocked);
    assert_eq!(
        screen_signal("claude", "✶ Pondering… (esc to interrupt)\n│ > \n"),
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
