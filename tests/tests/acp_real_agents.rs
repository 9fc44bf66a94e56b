//! ACP sessions (`owt new --acp`) with the real ACP servers — Zed's
//! adapters `@zed-industries/claude-agent-acp` and
//! `@zed-industries/codex-acp` from npm, and OpenCode's own `opencode acp`
//! (pinned by `scripts/install-agents`) — driven through two turns by the
//! scripted model (`tests/model/`).
//!
//! The sequence every agent goes through: the agent asks permission
//! through the protocol (`session/request_permission`), owt says `blocked`
//! with the question and its options; `owt approve` answers it and owt says
//! `working`, then `needs-input` when the turn ends (`stopReason`); the file
//! is in the session's worktree and nowhere else; the tokens the agent
//! reported are recorded; a second prompt goes through `owt send`; stopping
//! the session leaves it `exited` with no process behind. Deadlines are
//! generous (a loaded 2-core machine): latencies are measured by
//! `bench/acp.py`, not asserted here.

use std::time::Duration;

use owt_e2e::acp::{host_log, setup_acp};
use owt_e2e::agents::{self, Agent, Model, StatusLog};
use owt_e2e::{wait_until, TestEnv};
use owt_protocol::{NewOutput, SessionList, SessionView, Status, UsageOutput};
use serde_json::json;

/// Deadline for anything an agent does (start, a model round trip).
const AGENT: Duration = Duration::from_secs(120);
/// Deadline for owt to notice what the agent did.
const NOTICE: Duration = Duration::from_secs(20);

fn view(env: &TestEnv, repo: &std::path::Path, name: &str) -> SessionView {
    let list: SessionList = env.owt_json(repo, ["list"]);
    list.sessions
        .into_iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no session {name} in owt list"))
}

fn two_turns(agent: Agent) {
    let mut env = TestEnv::new();
    let repo = env.repo("app");
    let name = format!("{}-acp", agent.name());
    let worktree = env.path().join("app.worktrees").join(&name);
    // The step that needs the human's approval: a file written through the
    // agent's own edit tool (Codex writes files freely in its workspace, so
    // it is asked to run a command that needs approval instead).
    let ask = if agent == Agent::Codex {
        json!({"run": {"command": "printf 'hello from the scripted model\\n' > hello.txt", "ask": true}})
    } else {
        json!({"write": {"path": "hello.txt", "content": "hello from the scripted model\n"}})
    };
    let model = Model::start(
        &env.path().join("model"),
        &json!({"turns": [
            {"steps": [ask, {"text": "I wrote hello.txt.", "stall": 2}]},
            {"steps": [{"text": "Second turn: nothing more to write."}]}
        ]}),
    );
    setup_acp(
        &mut env,
        agent,
        &model,
        &[repo.clone(), worktree.clone()],
        true,
    );
    let created: NewOutput = env.owt_json(
        &repo,
        [
            "new",
            "Create hello.txt with a greeting",
            "--name",
            &name,
            "--ai-tool",
            agent.name(),
            "--acp",
        ],
    );
    assert_eq!(
        created.session.transport,
        owt_protocol::host::Transport::Acp
    );
    let short_id = created.session.id.clone();
    let status = StatusLog::start(&env, &repo, &name, false, Duration::from_millis(200));
    let fail = |what: &str| -> String {
        format!(
            "{}: {what}\nowt said:\n{}\nmodel log:\n{}\nhost log:\n{}\ntranscript:\n{}",
            agent.name(),
            status.summary(),
            std::fs::read_to_string(&model.log).unwrap_or_default(),
            host_log(&env, &short_id),
            env.owt(&repo, ["peek", &name]).stdout.escape_ascii()
        )
    };

    // The permission request: blocked, with the question and its options.
    let asked = model.wait_step_answered(0, AGENT);
    status.wait_for("blocked", asked.begin, AGENT, |o| {
        o.status == Status::Blocked
    });
    let blocked = view(&env, &repo, &name);
    let permission = blocked
        .permission
        .clone()
        .unwrap_or_else(|| panic!("{}", fail("no permission in owt list while blocked")));
    assert!(
        permission
            .options
            .iter()
            .any(|o| o.kind.starts_with("allow")),
        "{}",
        fail(&format!("no allow option: {permission:?}"))
    );
    assert!(
        permission
            .options
            .iter()
            .any(|o| o.kind.starts_with("reject")),
        "{}",
        fail(&format!("no reject option: {permission:?}"))
    );
    assert!(
        !worktree.join("hello.txt").exists(),
        "written before approval"
    );
    let peek = env.owt_ok(&repo, ["peek", &name]);
    assert!(
        peek.contains(&permission.question),
        "{}",
        fail("the question is not in the transcript")
    );

    // `owt approve`: working, then waiting when the turn ends.
    let approved_at = agents::now_s();
    let approved = env.owt_ok(&repo, ["approve", &name]);
    assert!(
        approved.starts_with(&format!("{name}: {} → ", permission.question)),
        "{approved}"
    );
    status.wait_for("working after the approval", approved_at, NOTICE, |o| {
        o.status == Status::Working
    });
    let turn_over = model.wait_step_answered(1, AGENT).end.unwrap();
    status.wait_for("waiting after the final reply", turn_over, NOTICE, |o| {
        o.status == Status::NeedsInput
    });
    let mut after = view(&env, &repo, &name);
    assert!(
        after.permission.is_none(),
        "{}",
        fail("the question stayed")
    );
    let peek = env.owt_ok(&repo, ["peek", &name]);
    assert!(
        peek.contains("I wrote hello.txt."),
        "{}",
        fail("no final reply")
    );

    // The file is in the worktree only.
    assert_eq!(
        std::fs::read_to_string(worktree.join("hello.txt")).unwrap_or_default(),
        "hello from the scripted model\n",
        "{}",
        fail("hello.txt is not in the worktree")
    );
    assert!(
        !repo.join("hello.txt").exists(),
        "written in the main checkout"
    );

    // Usage: the turn is counted, and the tokens the agent reported.
    let acp = after.acp.clone().expect("acp facts in owt list");
    assert_eq!(acp.turns, 1, "{}", fail("turns"));
    assert!(
        acp.agent.is_some() && acp.session_id.is_some(),
        "{}",
        fail(&format!("agent info: {acp:?}"))
    );
    // The turn ends (stopReason) without waiting for the agent to write
    // its records of the last step: give them a moment, then compare.
    let (output, _) = model_output_tokens(&model);
    let deadline = std::time::Instant::now() + NOTICE;
    while after.usage.as_ref().map_or(0, |u| u.output_tokens) < output
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(100));
        after = view(&env, &repo, &name);
    }
    check_usage(agent, &model, &after, &fail);
    check_owt_usage(&env, &repo, &name, agent, &after, &fail);

    // A second prompt through `owt send`.
    let sent_at = agents::now_s();
    env.owt_ok(&repo, ["send", &name, "Anything else?"]);
    let second = model.wait_for("the second prompt", AGENT, |rs| {
        rs.iter().any(|r| {
            r.is_main()
                && r.begin >= sent_at
                && r.user_messages.iter().any(|m| m.contains("Anything else?"))
                && r.end.is_some()
        })
    });
    let second_end = second
        .iter()
        .filter(|r| r.is_main() && r.begin >= sent_at)
        .filter_map(|r| r.end)
        .fold(0.0, f64::max);
    status.wait_for("waiting after the second turn", second_end, NOTICE, |o| {
        o.status == Status::NeedsInput
    });
    wait_until("the second reply in the transcript", NOTICE, || {
        env.owt_ok(&repo, ["peek", &name])
            .contains("Second turn: nothing more to write.")
    });
    let after2 = view(&env, &repo, &name);
    assert_eq!(
        after2.acp.as_ref().map(|a| a.turns),
        Some(2),
        "{}",
        fail("turns")
    );

    // Exit: the agent and its host are gone, the session says so.
    env.owt_ok(&repo, ["__host", "stop", &name]);
    let exited = view(&env, &repo, &name);
    assert_eq!(exited.status, Status::Exited, "{}", fail("not exited"));
    wait_until("the agent's processes to go", NOTICE, || {
        env.session_processes(&short_id).is_empty()
    });
}

/// The tokens recorded for the session match what the model reported
/// for the turn's two steps: exactly in the agent's own records (read by
/// `owt list`, as for its terminal sessions); through the protocol as far
/// as each agent reports (`PromptResponse.usage`): all of them for
/// Claude's adapter, OpenCode's last answer only, none for Codex's adapter
/// (it sends only `usage_update` with the context size).
fn check_usage(agent: Agent, model: &Model, view: &SessionView, fail: &dyn Fn(&str) -> String) {
    let acp = view.acp.as_ref().unwrap();
    let (output, last) = model_output_tokens(model);
    eprintln!(
        "{}: acp usage {acp:?}; agent records {:?}; model output tokens {output}",
        agent.name(),
        view.usage
    );
    let records = view.usage.as_ref().map_or(0, |u| u.output_tokens);
    assert_eq!(
        records,
        output,
        "{}",
        fail("output tokens in the agent's records")
    );
    let through_acp = match agent {
        Agent::Claude => output,
        Agent::OpenCode => last,
        _ => 0,
    };
    assert_eq!(
        acp.output_tokens,
        through_acp,
        "{}",
        fail("output tokens reported through ACP")
    );
    assert!(
        acp.context_used.is_some_and(|u| u > 0),
        "{}",
        fail("no usage_update")
    );
}

/// The output tokens the model reported for the first turn's two steps:
/// in all, and in its last step.
fn model_output_tokens(model: &Model) -> (u64, u64) {
    let steps: Vec<_> = model
        .main_requests()
        .into_iter()
        .filter(|r| r.end.is_some() && matches!(r.step, Some(0 | 1)))
        .collect();
    let output: u64 = steps
        .iter()
        .map(|r| r.usage["output_tokens"].as_u64().unwrap_or(0))
        .sum();
    let last = steps
        .last()
        .map_or(0, |r| r.usage["output_tokens"].as_u64().unwrap_or(0));
    (output, last)
}

/// `owt usage` counts the ACP session's tokens per session, agent and day:
/// the same as `owt list` shows from the agent's own records (which
/// `check_usage` matched with the model's log), under the session's agent.
fn check_owt_usage(
    env: &TestEnv,
    repo: &std::path::Path,
    name: &str,
    agent: Agent,
    view: &SessionView,
    fail: &dyn Fn(&str) -> String,
) {
    let want = view.usage.clone().unwrap_or_default();
    let counts = |t: &owt_protocol::TokenUsage| {
        (
            t.input_tokens,
            t.output_tokens,
            t.cache_read_tokens,
            t.cache_write_tokens,
        )
    };
    assert!(want.output_tokens > 0, "{}", fail("no tokens in owt list"));
    let usage: UsageOutput = env.owt_json(repo, ["usage", "--days", "1"]);
    let report = format!("owt usage: {usage:#?}");
    let session = usage
        .sessions
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("{}", fail(&format!("{name} not in {report}"))));
    assert!(
        session.live && session.provider == agent.name(),
        "{}",
        fail(&report)
    );
    assert_eq!(counts(&session.tokens), counts(&want), "{}", fail(&report));
    // The only session of this test: its agent's and its day's totals.
    let by_agent = usage
        .by_agent
        .iter()
        .find(|a| a.provider == agent.name())
        .unwrap_or_else(|| panic!("{}", fail(&report)));
    assert_eq!(counts(&by_agent.tokens), counts(&want), "{}", fail(&report));
    assert_eq!(usage.by_day.len(), 1, "{}", fail(&report));
    assert_eq!(
        counts(&usage.by_day[0].tokens),
        counts(&want),
        "{}",
        fail(&report)
    );
}

#[test]
fn claude_agent_acp_two_turns() {
    two_turns(Agent::Claude);
}

#[test]
fn codex_acp_two_turns() {
    two_turns(Agent::Codex);
}

#[test]
fn opencode_acp_two_turns() {
    two_turns(Agent::OpenCode);
}
