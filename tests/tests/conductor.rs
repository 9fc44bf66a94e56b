//! A conductor session: the real Claude Code, started with
//! `owt new --conductor`, calls owt's MCP tools as the scripted model
//! tells it (`spawn_session` twice, then `wait_session`), and the two
//! children it spawned (the fake agent, and Claude Code itself, which
//! runs and asks the model) are on the board, nested under it.

use std::time::Duration;

use owt_e2e::agents::{setup_offline, Agent, Model};
use owt_e2e::TestEnv;
use owt_protocol::NewOutput;
use serde_json::json;

/// Deadline for anything the agent does (start, a model round trip).
const AGENT: Duration = Duration::from_secs(120);

#[test]
fn a_claude_code_conductor_spawns_two_children_shown_under_it() {
    let mut env = TestEnv::new();
    let repo = env.repo("app");
    let worktrees = env.path().join("app.worktrees");
    let spawn = |name: &str, agent: &str| {
        json!({"tool": {"name": "spawn_session",
            "args": {"task": format!("the {name} part"), "name": name, "agent": agent}}})
    };
    let model = Model::start_logging_bodies(
        &env.path().join("model"),
        &json!({"turns": [{"steps": [
            spawn("left", "fake"),
            spawn("right", "claude"),
            {"tool": {"name": "wait_session", "args": {"name": "left", "timeout_secs": 60}}},
            {"text": "Both parts are started; left waits for input."}]}]}),
    );
    let trusted = [
        repo.clone(),
        worktrees.join("boss"),
        worktrees.join("right"),
    ];
    setup_offline(&mut env, Agent::Claude, &model, &trusted, false);
    // Claude Code defers MCP tools behind its ToolSearch by default; the
    // scripted model calls them directly, as a model may once loaded.
    env.extra_env
        .push(("ENABLE_TOOL_SEARCH".into(), "false".into()));
    // The person lets this agent use owt's MCP tools without asking.
    std::fs::write(
        env.home.join(".claude/settings.json"),
        json!({"permissions": {"defaultMode": "acceptEdits", "allow": ["mcp__owt"]}}).to_string(),
    )
    .unwrap();
    let boss: NewOutput = env.owt_json(
        &repo,
        [
            "new",
            "--conductor",
            "Split the work in two",
            "--name",
            "boss",
            "--ai-tool",
            "claude",
        ],
    );
    assert_eq!(boss.session.parent, None);
    let last = model.wait_step_answered(3, AGENT);
    // Each tool call was answered by owt, not refused: wait_session's
    // answer is in the request after it.
    let body = last.body.clone().map(|b| b.to_string()).unwrap_or_default();
    assert!(body.contains("needs-you"), "wait_session's result: {body}");
    assert!(!body.contains("is not a conductor"), "{body}");
    // The server told the agent it conducts, and how.
    assert!(body.contains("You are a conductor"), "{body}");
    let list = env.sessions(&repo);
    let parent = |name: &str| {
        list.sessions
            .iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("no {name} in {list:?}"))
            .parent
            .clone()
    };
    assert_eq!(parent("left").as_deref(), Some("boss"));
    assert_eq!(parent("right").as_deref(), Some("boss"));
    assert_eq!(parent("boss"), None);
    // A Claude Code child of a Claude Code conductor runs: its own first
    // request reaches the model (it is told its task, in its worktree).
    model.wait_for("the claude child's first request", AGENT, |rs| {
        rs.iter()
            .any(|r| r.is_main() && r.user_messages.iter().any(|m| m.contains("the right part")))
    });
    // The board nests them under their conductor.
    let table = env.owt_ok(&repo, ["list", "--wide"]);
    let names: Vec<&str> = table
        .lines()
        .skip(1)
        .map(|l| l.split("  ").next().unwrap_or_default())
        .collect();
    assert_eq!(names, ["boss", "↳ left", "↳ right"], "{table}");
    // The board says whose child each is, whatever its lane.
    let board = env.owt_ok(&repo, ["--print"]);
    for child in ["left", "right"] {
        let line = board
            .lines()
            .find(|l| l.trim_start().starts_with(child))
            .unwrap_or_else(|| panic!("no {child} on the board:\n{board}"));
        assert!(line.contains("↳ child of boss"), "{board}");
    }
}
