//! A real agent CLI under a session host: Claude Code (from npm, installed
//! under `$OWT_TEST_NPM_PREFIX` by CI with
//! `npm install --prefix "$OWT_TEST_NPM_PREFIX" @anthropic-ai/claude-code`)
//! draws its real TUI, and `owt peek` shows it. It cannot reach its API
//! here; its first screen is enough.

mod session_common;

use std::path::PathBuf;
use std::time::Duration;

use session_common::{with_timeout, Env};

fn claude_binary() -> Option<PathBuf> {
    let Some(prefix) = std::env::var_os("OWT_TEST_NPM_PREFIX") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must set OWT_TEST_NPM_PREFIX to a prefix where \
             `npm install --prefix \"$OWT_TEST_NPM_PREFIX\" @anthropic-ai/claude-code` ran"
        );
        eprintln!(
            "skipping the real-agent test: set OWT_TEST_NPM_PREFIX to a prefix where \
             `npm install --prefix \"$OWT_TEST_NPM_PREFIX\" @anthropic-ai/claude-code` ran"
        );
        return None;
    };
    let bin = PathBuf::from(prefix).join("node_modules/.bin/claude");
    assert!(
        bin.exists(),
        "{} is missing: install @anthropic-ai/claude-code there",
        bin.display()
    );
    Some(bin)
}

#[test]
fn claude_code_renders_its_real_tui_in_peek() {
    let Some(claude) = claude_binary() else {
        return;
    };
    with_timeout(Duration::from_secs(120), move || {
        let env = Env::new();
        let claude = claude.to_string_lossy().into_owned();
        env.spawn(&[
            "__host",
            "spawn",
            "--name",
            "claude",
            "--provider",
            "claude",
            "--rows",
            "30",
            "--cols",
            "100",
            "--",
            &claude,
        ]);
        let screen = env.wait_screen("claude", "Claude Code");
        // The welcome banner is drawn with box/block glyphs: a real TUI, not
        // a bare log line.
        assert!(
            screen.contains("Welcome to Claude Code")
                || screen.contains('╭')
                || screen.contains('█'),
            "{screen}"
        );
        let json: serde_json::Value =
            serde_json::from_str(&env.ok(&["--json", "peek", "claude"])).unwrap();
        assert_eq!(json["screen"]["cols"], 100, "{json}");
    });
}
