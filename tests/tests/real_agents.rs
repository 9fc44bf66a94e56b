//! The real agent CLIs (pinned, from `scripts/install-agents`) under
//! `owt new`, driven through whole turns by the scripted model
//! (`tests/model/`): what owt says about each session is checked, with
//! timestamps, against the model's request log and the agent's own screen.
//!
//! The sequence every agent goes through: the task reaches the model as
//! one user message; while a request is outstanding owt says `working`; the
//! agent's own permission dialog makes it `blocked`; `owt send` with the
//! agent's approve key makes it `working` again; after the final reply it
//! waits for the human (`needs-input`); the file the model asked for is in
//! the worktree. Deadlines are generous (a loaded 2-core machine): the
//! latencies themselves are measured by `bench/agents`, not asserted here.

use std::time::Duration;

use owt_e2e::agents::{self, setup_offline, share_in_windows, Agent, Model, StatusLog};
use owt_e2e::TestEnv;
use owt_protocol::Status;
use serde_json::json;

/// Deadline for anything an agent does (start, a model round trip).
const AGENT: Duration = Duration::from_secs(120);
/// Deadline for owt to notice what the agent did.
const NOTICE: Duration = Duration::from_secs(20);

/// The words of each agent's permission dialog (its screen is the truth
/// of when the dialog appeared).
fn dialog_text(agent: Agent) -> &'static str {
    match agent {
        Agent::Claude => "Do you want to create hello.txt?",
        Agent::Codex => "Would you like to run the following command?",
        Agent::OpenCode => "Permission required",
        Agent::Aider => "Create new file?",
    }
}

/// One whole turn of `agent` with a permission dialog, checked end to end.
fn full_turn(agent: Agent) {
    let mut env = TestEnv::new();
    let repo = env.repo("app");
    let name = format!("{}-turn", agent.name());
    let worktree = env.path().join("app.worktrees").join(&name);
    // The step that needs the human's approval: a file written through the
    // agent's own edit tool (Codex writes files freely in its workspace, so
    // it is asked to run a command that needs approval instead).
    let ask = if agent == Agent::Codex {
        json!({"run": {"command": "printf 'hello from the scripted model\\n' > hello.txt", "ask": true},
               "stall": 2, "stream_secs": 1})
    } else {
        json!({"write": {"path": "hello.txt", "content": "hello from the scripted model\n"},
               "stall": 2, "stream_secs": 1})
    };
    // Aider has no tools: its whole turn is one reply, then the dialog, then
    // its commit message (an aux request, made to take 2 s of work).
    let model = Model::start(
        &env.path().join("model"),
        &json!({"aux_stall": if agent == Agent::Aider { 2 } else { 0 },
                "turns": [{"steps": [ask,
                    {"text": "I wrote hello.txt.", "stall": 2, "stream_secs": 2}]}]}),
    );
    setup_offline(
        &mut env,
        agent,
        &model,
        &[repo.clone(), worktree.clone()],
        true,
    );
    let task = "Create hello.txt with a greeting";
    env.owt_ok(
        &repo,
        ["new", task, "--name", &name, "--ai-tool", agent.name()],
    );
    let mut status = StatusLog::start(&env, &repo, &name, true, Duration::from_millis(200));

    // The dialog appears on the agent's screen: owt says blocked.
    let asked = model.wait_step_answered(0, AGENT);
    let shown = status.wait_for("the permission dialog on screen", asked.begin, AGENT, |o| {
        o.screen
            .as_deref()
            .is_some_and(|s| s.contains(dialog_text(agent)))
    });
    let blocked = status.wait_for("blocked", shown.t - 1.0, NOTICE, |o| {
        o.status == Status::Blocked
    });
    eprintln!(
        "{}: dialog on screen at +{:.2}s after the model's answer, blocked {:.2}s after the dialog",
        agent.name(),
        shown.t - asked.end.unwrap(),
        blocked.t - shown.t
    );

    // Approve with the agent's own key: working again, then the final reply.
    let approved_at = agents::now_s();
    env.owt_ok(&repo, ["send", &name, agent.approve_text()]);
    status.wait_for("working after the approval", approved_at, NOTICE, |o| {
        o.status == Status::Working
    });
    // The end of the turn: the final reply (for Aider, its commit message
    // after the approval).
    let turn_over = if agent == Agent::Aider {
        model
            .wait_for("Aider's commit message", AGENT, |rs| {
                rs.iter()
                    .any(|r| !r.is_main() && r.end.is_some() && r.begin > approved_at)
            })
            .into_iter()
            .rfind(|r| !r.is_main())
            .and_then(|r| r.end)
            .unwrap()
    } else {
        model.wait_step_answered(1, AGENT).end.unwrap()
    };
    let waiting = status.wait_for("waiting after the final reply", turn_over, NOTICE, |o| {
        matches!(o.status, Status::NeedsInput | Status::Done)
    });
    eprintln!(
        "{}: {} {:.2}s after the final reply",
        agent.name(),
        waiting.text,
        waiting.t - turn_over
    );
    // It stays so (no late `working` from a stale screen).
    std::thread::sleep(Duration::from_secs(2));
    let observations = status.stop();
    let late: Vec<_> = observations
        .iter()
        .filter(|o| o.t > waiting.t + 1.0 && !matches!(o.status, Status::NeedsInput | Status::Done))
        .collect();
    assert!(
        late.is_empty(),
        "{} left needs-input after its turn: {:?}",
        agent.name(),
        late.iter().map(|o| &o.text).collect::<Vec<_>>()
    );

    // The file the model asked for.
    let written = std::fs::read_to_string(worktree.join("hello.txt"))
        .unwrap_or_else(|e| panic!("{}: hello.txt in the worktree: {e}", agent.name()));
    assert_eq!(written.trim(), "hello from the scripted model");

    // The task (with owt's protocol around it) reached the model as one
    // user message: never split into lines or repeated.
    let main = model.main_requests();
    let first = &main[0];
    let with_task: Vec<&String> = first
        .user_messages
        .iter()
        .filter(|m| m.contains(task))
        .collect();
    assert_eq!(
        with_task.len(),
        1,
        "{}: the task in {} user messages: {:?}",
        agent.name(),
        with_task.len(),
        first.user_messages
    );
    assert!(
        with_task[0].contains(&format!("You are `{name}`")),
        "{}: the prompt arrived cut: {:?}",
        agent.name(),
        with_task[0]
    );
    assert!(
        main.len() <= 3,
        "{}: one task, at most three model requests: {main:#?}",
        agent.name()
    );

    // While a request of the script was outstanding, owt said working.
    let windows: Vec<(f64, f64)> = main
        .iter()
        .filter_map(|r| r.end.map(|end| (r.begin, end)))
        .collect();
    let (share, n) = share_in_windows(&observations, &windows, Status::Working);
    assert!(
        n >= 5 && share >= 0.8,
        "{}: working in {:.0}% of {n} polls while the model was busy; requests and polls:\n{}",
        agent.name(),
        share * 100.0,
        agents::timeline(&model.requests(), &observations)
    );
    eprintln!(
        "{}: working in {:.0}% of {n} polls while a request was outstanding",
        agent.name(),
        share * 100.0
    );
    env.owt_ok(&repo, ["delete", &name, "--force"]);
}

#[test]
fn claude_code_whole_turn() {
    full_turn(Agent::Claude);
}

#[test]
fn codex_whole_turn() {
    full_turn(Agent::Codex);
}

#[test]
fn opencode_whole_turn() {
    full_turn(Agent::OpenCode);
}

#[test]
fn aider_whole_turn() {
    full_turn(Agent::Aider);
}
