//! `owt resume`: a session whose host was killed (`kill -9`, as an OOM
//! kill or a reboot would) is restarted in its worktree with the real
//! agent's own resume (Claude Code `--resume <id>`, `codex resume <id>`,
//! OpenCode `--session <id>`, Gemini CLI `--resume <id>`, Aider
//! `--restore-chat-history`): the scripted model receives the earlier
//! conversation (its first task) in the next request.

use std::path::{Path, PathBuf};
use std::time::Duration;

use owt_e2e::agents::{setup_offline, Agent, Model, StatusLog};
use owt_e2e::{cmdline, TestEnv};
use owt_protocol::{NewOutput, Status};
use serde_json::json;

/// Deadline for anything the agent does (start, a model round trip).
const AGENT: Duration = Duration::from_secs(120);

#[test]
fn claude_code_resumed_after_kill_9_continues_its_conversation() {
    resumed_after_kill_9(Agent::Claude);
}

#[test]
fn codex_resumed_after_kill_9_continues_its_conversation() {
    resumed_after_kill_9(Agent::Codex);
}

#[test]
fn opencode_resumed_after_kill_9_continues_its_conversation() {
    resumed_after_kill_9(Agent::OpenCode);
}

#[test]
fn gemini_resumed_after_kill_9_continues_its_conversation() {
    resumed_after_kill_9(Agent::Gemini);
}

#[test]
fn aider_resumed_after_kill_9_continues_its_conversation() {
    resumed_after_kill_9(Agent::Aider);
}

/// The word the first task asks the agent to remember.
const TASK: &str = "Remember the word PINEAPPLE";

/// What the resumed agent is asked.
const QUESTION: &str = "Tell me the word again";

/// A session of `agent` (its first turn answered) whose host and agent
/// were killed with SIGKILL; `owt list` says so. Returns the test's
/// environment, repository, session name and model.
fn killed_mid_conversation(agent: Agent) -> (TestEnv, PathBuf, String, Model) {
    let mut env = TestEnv::new();
    let repo = env.repo("app");
    let name = format!("{}-resumed", agent.name());
    let worktree = env.path().join("app.worktrees").join(&name);
    let model = Model::start(
        &env.path().join("model"),
        &json!({"turns": [
            {"steps": [{"text": "Noted: the word is PINEAPPLE."}]},
            {"steps": [{"text": "The word was PINEAPPLE."}]}]}),
    );
    setup_offline(
        &mut env,
        agent,
        &model,
        &[repo.clone(), worktree.clone()],
        true,
    );
    let created: NewOutput = env.owt_json(
        &repo,
        ["new", TASK, "--name", &name, "--ai-tool", agent.name()],
    );
    model.wait_step_answered(0, AGENT);
    let status = StatusLog::start(&env, &repo, &name, false, Duration::from_millis(200));
    status.wait_for("waiting after the first turn", 0.0, AGENT, |o| {
        matches!(o.status, Status::NeedsInput | Status::Done)
    });
    kill_host(&env, &created.session.id);
    status.wait_for("exited (host lost)", 0.0, AGENT, |o| {
        o.status == Status::Exited
    });
    (env, repo, name, model)
}

/// Kills `agent`'s session mid-conversation, resumes it with `owt
/// resume`, asks a question: the model receives the first turn with it.
fn resumed_after_kill_9(agent: Agent) {
    let (env, repo, name, model) = killed_mid_conversation(agent);
    // `owt list` says it can be resumed.
    let listed = env.owt_ok(&repo, ["list"]);
    assert!(listed.contains("exited (host lost), resumable"), "{listed}");
    let since = owt_e2e::agents::now_s();
    let out = env.owt_ok(&repo, ["resume", &name]);
    assert!(
        out.contains("resumed") || out.contains("restored"),
        "{}: {out}",
        agent.name()
    );
    assert!(
        !out.contains("note of what happened"),
        "{}: {out}",
        agent.name()
    );
    asks_and_the_model_sees_the_first_turn(&env, &repo, &name, &model, agent, since);
}

/// `[agent] auto_resume`: off (the default), a session whose host died
/// stays so whatever verb runs; on, the next verb (`owt list`) resumes it
/// and the model sees the earlier conversation.
#[test]
fn auto_resume_resumes_a_lost_session_at_the_next_command() {
    let agent = Agent::Codex;
    let (env, repo, name, model) = killed_mid_conversation(agent);
    let requests = model.requests().len();
    for _ in 0..2 {
        let listed = env.owt_ok(&repo, ["list"]);
        assert!(listed.contains("exited (host lost), resumable"), "{listed}");
    }
    let out = env.owt_cmd(&repo, ["usage"]).output().unwrap();
    assert!(!String::from_utf8_lossy(&out.stderr).contains("Resumed"));
    assert_eq!(
        model.requests().len(),
        requests,
        "nothing resumed: no request"
    );
    // The user's config ends in its `[agent]` table.
    let config = env.home.join(".config/owt/config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("auto_resume = true\n");
    std::fs::write(&config, text).unwrap();
    let since = owt_e2e::agents::now_s();
    let out = env.owt_cmd(&repo, ["list"]).output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!("Resumed session {name} ([agent] auto_resume)")),
        "{stderr}"
    );
    assert!(!stdout.contains("host lost"), "{stdout}");
    asks_and_the_model_sees_the_first_turn(&env, &repo, &name, &model, agent, since);
}

/// Waits for the resumed agent to show its restored conversation, asks
/// it a question and checks that the model's request with that question
/// carries the first task too (a fresh agent would have only the
/// question).
fn asks_and_the_model_sees_the_first_turn(
    env: &TestEnv,
    repo: &Path,
    name: &str,
    model: &Model,
    agent: Agent,
    since: f64,
) {
    let resumed = StatusLog::start(env, repo, name, true, Duration::from_millis(200));
    // The agents show the earlier turns; Aider says it restored them.
    let restored = match agent {
        Agent::Aider => "Restored previous conversation history",
        _ => "PINEAPPLE",
    };
    resumed.wait_for("the restored conversation, waiting", since, AGENT, |o| {
        matches!(o.status, Status::NeedsInput | Status::Done)
            && o.screen.as_deref().is_some_and(|s| s.contains(restored))
    });
    // (No `?`: Gemini CLI takes one typed into its prompt for its
    // shortcuts help.)
    env.owt_ok(repo, ["send", name, QUESTION]);
    let asked = |r: &owt_e2e::agents::ModelRequest| {
        r.is_main() && r.user_messages.iter().any(|m| m.contains(QUESTION))
    };
    let log = model.wait_for("the question after the resume", AGENT, |rs| {
        rs.iter().any(asked)
    });
    let next = log.iter().find(|r| asked(r)).unwrap();
    assert!(
        next.user_messages.iter().any(|m| m.contains(TASK)),
        "{}: the resumed request lacks the first turn: {:?}",
        agent.name(),
        next.user_messages
    );
}

/// kill -9 every session host of `env` and the agent of session `id`:
/// nothing gets to say goodbye.
fn kill_host(env: &TestEnv, id: &str) {
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
}

/// `[agent] auto_resume` at `owt lsp` start: a session whose host was
/// killed is resumed by the editor's server starting, no verb run (the
/// repository's fake agent, restarted with a note: it has no resume).
#[test]
fn auto_resume_resumes_a_lost_session_when_owt_lsp_starts() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    let (name, _) = env.new_session(&repo, "remember the word PINEAPPLE");
    let id = env.session(&repo, &name).id;
    kill_host(&env, &id);
    owt_e2e::wait_until("the host lost", AGENT, || {
        let view = env.session(&repo, &name);
        view.host_lost && env.session_processes(&id).is_empty()
    });
    let config = env.home.join(".config/owt/config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("auto_resume = true\n");
    std::fs::write(&config, text).unwrap();
    // From here on no owt verb runs until the agent is back: only the
    // server can have resumed it.
    let _lsp = owt_e2e::lsp::LspClient::start(
        &env,
        &repo,
        json!({}),
        owt_e2e::lsp::LspClient::default_capabilities(),
        false,
    );
    owt_e2e::wait_until("owt lsp to resume the agent", AGENT, || {
        !env.session_processes(&id).is_empty()
    });
    // Until the new host has answered once, the board still says the old
    // one is gone (and peek refuses with that reason): poll past it.
    owt_e2e::wait_until("the restarted agent's note", AGENT, || {
        let peek = env.owt(&repo, ["peek", &name]);
        peek.status.success()
            && String::from_utf8_lossy(&peek.stdout).contains("previous run on this task ended")
    });
    assert!(!env.session(&repo, &name).host_lost);
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
    assert!(
        err.contains("not resuming `live`: its agent has not exited"),
        "{err}"
    );
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
