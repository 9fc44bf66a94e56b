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

/// Recordings of the real CLIs (`tests/fixtures/screens/*.bin`) must run
/// through the screen model and the rules without trouble; their expected
/// signals are pinned where the recordings are described.
#[test]
fn recorded_fixtures_are_judged_without_panicking() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/screens");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "bin") {
            let bytes = std::fs::read(&path).unwrap();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let provider = name
                .split(['-', '.', '_'])
                .next()
                .unwrap_or("generic")
                .to_string();
            let _ = check(&provider, &bytes);
        }
    }
}
