//! A real agent CLI under a session host: Claude Code (pinned, installed by
//! `scripts/install-agents`) draws its real TUI, and `owt peek` shows it.
//! No model answers here; its first screen is enough (`real_agents.rs`
//! runs whole turns against the scripted model).

use std::path::PathBuf;
use std::time::Duration;

use crate::session_common::{with_timeout, Env};

fn claude_binary() -> PathBuf {
    owt_e2e::agents::agents_dir().join("bin/claude")
}

#[test]
fn claude_code_renders_its_real_tui_in_peek() {
    let claude = claude_binary();
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

/// `owt new --ai-tool claude` with the real CLI: hooks and the MCP server
/// are registered in the worktree, yet the worktree stays clean for git
/// (owt's own files are excluded), and the real TUI is live.
#[test]
fn owt_new_with_real_claude_registers_hooks_and_mcp_without_dirtying_the_worktree() {
    let claude = claude_binary();
    let env = owt_e2e::TestEnv::new();
    let repo = env.repo("app");
    std::fs::write(repo.join(".owt.toml"), "").unwrap();
    env.git(&repo, ["commit", "-qam", "no fake agent"]);
    let mut cmd = env.owt_cmd(&repo, ["--json", "new", "Say hello", "--ai-tool", "claude"]);
    let path = format!(
        "{}:{}",
        claude.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    cmd.env("PATH", path);
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let created: owt_protocol::NewOutput = serde_json::from_slice(&out.stdout).unwrap();
    let wt = PathBuf::from(&created.session.worktree);
    let hooks = std::fs::read_to_string(wt.join(".claude/settings.local.json")).unwrap();
    assert!(
        hooks.contains("UserPromptSubmit") && hooks.contains("hook"),
        "{hooks}"
    );
    let mcp = std::fs::read_to_string(wt.join(".mcp.json")).unwrap();
    assert!(mcp.contains("\"owt\"") && mcp.contains("\"mcp\""), "{mcp}");
    assert_eq!(
        env.git(&wt, ["status", "--porcelain"]),
        "",
        "owt's files do not dirty the worktree"
    );
    owt_e2e::wait_until("claude's screen", Duration::from_secs(60), || {
        let peek = env.owt(&repo, ["peek", &created.session.name]);
        let text = String::from_utf8_lossy(&peek.stdout).to_string();
        text.contains("Claude") || text.contains('╭')
    });
}
