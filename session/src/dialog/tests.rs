//! Each agent's permission dialog, from recorded and scripted screens:
//! the question owt shows and the keys that answer it.

use super::{dialog, Dialog};
use crate::rules::ScreenText;

/// The screen `bytes` draw on a 30×100 terminal (as the rules' tests).
fn screen(bytes: &[u8]) -> ScreenText {
    let mut parser = vt100::Parser::new(30, 100, 0);
    parser.process(bytes);
    ScreenText::from_screen(parser.screen())
}

fn file(dir: &str, name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests")
        .join(dir)
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn dialog_of(provider: &str, dir: &str, name: &str) -> Option<Dialog> {
    dialog(provider, &screen(&file(dir, name)))
}

fn asked(question: &str, approve: &'static str, deny: &'static str) -> Option<Dialog> {
    Some(Dialog {
        question: question.to_string(),
        approve,
        deny,
    })
}

#[test]
fn each_agents_dialog_says_what_it_asks_and_how_to_answer() {
    let cases = [
        (
            "claude",
            "data/screens",
            "claude-permission.bin",
            asked("Do you want to proceed? rm -rf build", "1", "\x1b"),
        ),
        (
            "codex",
            "fixtures/screens",
            "codex-approval-real.bin",
            asked(
                "Would you like to run the following command? printf 'hello\\n' > hello.txt",
                "y",
                "\x1b",
            ),
        ),
        (
            "opencode",
            "fixtures/screens",
            "opencode-permission-real.bin",
            asked(
                "Permission required: Edit hello.txt",
                "\r",
                "\x1b[C\x1b[C\r",
            ),
        ),
        (
            "gemini",
            "data/screens",
            "gemini-permission.bin",
            asked("Allow execution of: 'rm'? Shell rm -rf build", "\r", "\x1b"),
        ),
        (
            "aider",
            "fixtures/screens",
            "aider-create-file-dialog.bin",
            asked("Create new file? hello.txt", "y\r", "n\r"),
        ),
    ];
    for (provider, dir, name, want) in cases {
        assert_eq!(dialog_of(provider, dir, name), want, "{provider}: {name}");
    }
}

/// No dialog on screen: nothing to answer (`owt approve` refuses rather
/// than type a key the agent would take as a new prompt).
#[test]
fn no_dialog_no_answer() {
    for (provider, dir, name) in [
        ("claude", "data/screens", "claude-idle.bin"),
        ("claude", "data/screens", "claude-working.bin"),
        ("codex", "data/screens", "codex-working.bin"),
        ("opencode", "data/screens", "opencode-idle.bin"),
        ("aider", "fixtures/screens", "aider-prompt.bin"),
    ] {
        assert_eq!(dialog_of(provider, dir, name), None, "{provider}: {name}");
    }
}

/// Claude Code's overwrite dialog on a follow-up turn (#34.3, #34.6).
#[test]
fn claude_overwrite_dialog_names_the_file() {
    let text = " Overwrite file\n README.md\n╌╌╌╌\n  1  # test repository\n╌╌╌╌\n Do you want to overwrite README.md?\n ❯ 1. Yes\n   2. Yes, and switch to accept edits (shift+tab)\n   3. No\n Esc to cancel · Tab to amend\n";
    assert_eq!(
        dialog("claude", &ScreenText::from_text(text)),
        asked("Do you want to overwrite README.md?", "1", "\x1b")
    );
}
