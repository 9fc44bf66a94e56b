//! `owt resume`: a session whose host was killed (`kill -9`, as an OOM
//! kill or a reboot would) is restarted in its worktree with the real
//! Claude Code's own `--resume <id>`: the scripted model receives the
//! earlier conversation (its first task) in the next request.

use std::time::Duration;

use owt_e2e::agents::{setup_offline, Agent, Model, StatusLog};
use owt_e2e::{cmdline, TestEnv};
use owt_protocol::{NewOutput, Status};
use serde_json::json;

/// Deadline for anything the agent does (start, a model round trip).
const AGENT: Duration = Duration::from_secs(120);

#[test]
fn claude_code_resumed_after_kill_9_continues_its_conversation() {
    let mut env = TestEnv::new();
    let repo = env.repo("app");
    let name = "claude-resumed";
    let worktree = env.path().join("app.worktrees").join(name);
    let model = Model::start(
        &env.path().join("model"),
        &json!({"turns": [
            {"steps": [{"text": "Noted: the word is PINEAPPLE."}]},
            {"steps": [{"text": "The word was PINEAPPLE."}]}]}),
    );
    setup_offline(
        &mut env,
        Agent::Claude,
        &model,
        &[repo.clone(), worktree.clone()],
        true,
    );
    let task = "Remember the word PINEAPPLE";
    let created: NewOutput =
        env.owt_json(&repo, ["new", task, "--name", name, "--ai-tool", "claude"]);
    model.wait_step_answered(0, AGENT);
    let status = StatusLog::start(&env, &repo, name, false, Duration::from_millis(200));
    status.wait_for("needs-input after the first turn", 0.0, AGENT, |o| {
        o.status == Status::NeedsInput
    });
    // kill -9 the host and the agent: nothing gets to say goodbye.
    let id = &created.session.id;
    let mut victims: Vec<i32> = env
        .our_processes()
        .into_iter()
        .filter(|pid| cmdline(*pid as u32).iter().any(|a| a == "__host"))
        .collect();
    victims.extend(env.session_processes(id));
    assert!(!victims.is_empty());
    for pid in &victims {
        sigkill(*pid);
    }
    status.wait_for("exited (host lost)", 0.0, AGENT, |o| {
        o.status == Status::Exited
    });
    // `owt list` says it can be resumed.
    let listed = env.owt_ok(&repo, ["list"]);
    assert!(listed.contains("exited (host lost), resumable"), "{listed}");
    // Resumed: the agent is back, and its next request carries the first
    // turn.
    let out = env.owt_ok(&repo, ["resume", name]);
    assert!(out.contains("resumed"), "{out}");
    let since = owt_e2e::agents::now_s();
    let resumed = StatusLog::start(&env, &repo, name, true, Duration::from_millis(200));
    resumed.wait_for("the restored conversation, waiting", since, AGENT, |o| {
        o.status == Status::NeedsInput && o.screen.as_deref().is_some_and(|s| s.contains(task))
    });
    env.owt_ok(&repo, ["send", name, "Which word was it?"]);
    let asked = |r: &owt_e2e::agents::ModelRequest| {
        r.is_main()
            && r.user_messages
                .iter()
                .any(|m| m.contains("Which word was it?"))
    };
    let log = model.wait_for("the question after the resume", AGENT, |rs| {
        rs.iter().any(asked)
    });
    let next = log.iter().find(|r| asked(r)).unwrap();
    // The earlier conversation came along: the task of the first turn, in
    // the same request as the new question (a fresh agent would have only
    // the question).
    assert!(
        next.user_messages.iter().any(|m| m.contains(task)),
        "the resumed request lacks the first turn: {:?}",
        next.user_messages
    );
}

/// SIGKILL to `pid`, through kill(1).
fn sigkill(pid: i32) {
    let _ = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status();
}

#[test]
fn a_session_whose_agent_runs_is_not_resumed() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    let agent = owt_e2e::data_file("fake_agent.py");
    env.owt_ok(
        &repo,
        [
            "__host",
            "spawn",
            "--name",
            "live",
            "--",
            "python3",
            &agent.to_string_lossy(),
        ],
    );
    let before = env.owt_ok(&repo, ["--json", "list"]);
    let err = env.owt_err(&repo, ["resume", "live"]);
    assert!(err.contains("live's agent has not exited"), "{err}");
    assert!(err.contains("owt attach live"), "{err}");
    let err = env.owt_err(&repo, ["resume", "nosuch"]);
    assert!(err.contains("nosuch"), "{err}");
    // Nothing changed: the same host, the same agent.
    let after = env.owt_ok(&repo, ["--json", "list"]);
    let pids = |list: &str| {
        let v: serde_json::Value = serde_json::from_str(list).unwrap();
        v["sessions"][0]["agent_pid"].clone()
    };
    assert_eq!(pids(&before), pids(&after));
    env.owt_ok(&repo, ["delete", "live", "--force"]);
}
