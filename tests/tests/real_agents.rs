//! The real agent CLIs (pinned, from `scripts/install-agents`) under
//! `owt new`, driven through whole turns by the scripted model
//! (`tests/model/`): what owt says about each session is checked, with
//! timestamps, against the model's request log and the agent's own screen.
//!
//! The sequence every agent goes through: the task reaches the model as
//! one user message; while a request is outstanding owt says `working`; the
//! agent's own permission dialog makes it `blocked`; `owt approve` (which
//! types the agent's own approve key) makes it `working` again; after the final reply it
//! waits for the human (`needs-input`); the file the model asked for is in
//! the worktree. Deadlines are generous (a loaded 2-core machine): the
//! latencies themselves are measured by `bench/agents`, not asserted here.

use std::time::Duration;

use owt_e2e::agents::{self, setup_offline, share_in_windows, Agent, Model, StatusLog};
use owt_e2e::TestEnv;
use owt_protocol::{NewOutput, Status};
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
        Agent::Pi => "",
        Agent::Gemini => "Apply this change?",
    }
}

/// One whole turn of `agent` (with its permission dialog, when it has
/// one), checked end to end.
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
    // (Pi asks nothing: the same write goes through at once.)
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
    let created: NewOutput = env.owt_json(
        &repo,
        ["new", task, "--name", &name, "--ai-tool", agent.name()],
    );
    let mut status = StatusLog::start(&env, &repo, &name, true, Duration::from_millis(200));
    // `owt wait` from the start returns when the agent needs the human —
    // here, at its permission dialog. Regression (issue 16): Codex's splash
    // screen read as needs-input 1 s after start, long before its first
    // model request.
    let waited = {
        let mut wait = env.owt_cmd(&repo, ["--json", "wait", &name, "--timeout", "180"]);
        std::thread::spawn(move || {
            let out = wait.output().expect("owt wait");
            (
                agents::now_s(),
                String::from_utf8_lossy(&out.stdout).into_owned(),
            )
        })
    };

    let approved_at = if agent.has_permission_dialog() {
        approve_at_the_dialog(&env, &repo, &name, agent, &model, &status, waited)
    } else {
        // No dialog (Pi): `owt wait` returns at the end of the turn.
        let last = model.wait_step_answered(1, AGENT);
        let (waited_at, waited) = waited.join().unwrap();
        let waited: serde_json::Value = serde_json::from_str(&waited).unwrap();
        assert_eq!(
            waited["status"],
            "needs-input",
            "{}: {waited}",
            agent.name()
        );
        assert!(
            waited_at >= last.end.unwrap(),
            "{}: owt wait returned early",
            agent.name()
        );
        0.0
    };
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
    // That file is the only work: nothing the agent (or owt) wrote for
    // itself shows up (Aider committed it). Regression (issue 16): Aider's
    // history and tag cache were changed files in every Aider session.
    let dirt = env.git(
        &worktree,
        ["status", "--porcelain", "--untracked-files=all"],
    );
    assert!(
        dirt.lines().all(|l| l == "?? hello.txt"),
        "{}: the worktree has more than the model's file:\n{dirt}",
        agent.name()
    );

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
    // Deleting the session ends everything it started. Regression (issue
    // 16): Codex's detached app-server daemon outlived `owt delete`.
    let id = &created.session.id;
    assert!(
        !env.session_processes(id).is_empty(),
        "the agent runs before the delete"
    );
    env.owt_ok(&repo, ["delete", &name, "--force"]);
    let left: Vec<Vec<String>> = env
        .session_processes(id)
        .into_iter()
        .map(|pid| owt_e2e::cmdline(pid as u32))
        .collect();
    assert!(
        left.is_empty(),
        "{}: still running after owt delete: {left:?}",
        agent.name()
    );
}

/// The agent's permission dialog: owt says blocked (and `owt wait`, started
/// with the session, returned then, not before); `owt approve` (the
/// agent's own key) makes it working. Returns when the approval was sent.
fn approve_at_the_dialog(
    env: &TestEnv,
    repo: &std::path::Path,
    name: &str,
    agent: Agent,
    model: &Model,
    status: &StatusLog,
    waited: std::thread::JoinHandle<(f64, String)>,
) -> f64 {
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
    let (waited_at, waited) = waited.join().unwrap();
    let waited: serde_json::Value = serde_json::from_str(&waited).unwrap();
    // (Aider's own signal says only "it waits for you", just before the
    // dialog that the screen then reads as blocked.)
    assert!(
        waited["status"] == "blocked" || waited["status"] == "needs-input",
        "{}: owt wait returned {waited}",
        agent.name()
    );
    assert!(
        waited_at >= asked.end.unwrap(),
        "{}: owt wait returned {waited} at +{:.2}s, before the model asked for anything \
         (its first request began at +{:.2}s, since the dialog showed)",
        agent.name(),
        waited_at - shown.t,
        asked.begin - shown.t
    );

    // `owt approve` types the agent's own key (#34.6): working again.
    let approved_at = agents::now_s();
    let approved = env.owt_ok(repo, ["approve", name]);
    assert!(
        approved.contains("→ approved"),
        "{}: {approved}",
        agent.name()
    );
    status.wait_for("working after the approval", approved_at, NOTICE, |o| {
        o.status == Status::Working
    });
    approved_at
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

#[test]
fn pi_whole_turn() {
    full_turn(Agent::Pi);
}

#[test]
fn gemini_whole_turn() {
    full_turn(Agent::Gemini);
}

/// Regression (issue 16): owt typed Aider's first prompt during its slow
/// start — into a question that came first ("Add .aider* to .gitignore?"
/// took the task as its answer) or line by line. A question on screen is
/// the human's to answer: the session reads blocked with it visible, no
/// prompt is typed; once answered, the task arrives as one message.
#[test]
fn aider_leaves_a_question_at_start_to_the_human() {
    let mut env = TestEnv::new();
    let repo = env.repo("app");
    // A tracked `.env` that git does not ignore: Aider asks at start
    // whether to add it to .gitignore.
    std::fs::write(repo.join(".env"), "TOKEN=scripted\n").unwrap();
    env.git(&repo, ["add", ".env"]);
    env.git(&repo, ["commit", "-qm", "an env file"]);
    let name = "aider-asks";
    let worktree = env.path().join("app.worktrees").join(name);
    let model = Model::start(
        &env.path().join("model"),
        &json!({"turns": [{"steps": [{"text": "Nothing to change.", "stream_secs": 1}]}]}),
    );
    setup_offline(
        &mut env,
        Agent::Aider,
        &model,
        &[repo.clone(), worktree],
        true,
    );
    let task = "Read the README";
    env.owt_ok(&repo, ["new", task, "--name", name, "--ai-tool", "aider"]);
    let status = StatusLog::start(&env, &repo, name, true, Duration::from_millis(250));
    let question = "Add .env to .gitignore (recommended)?";
    let asked = status.wait_for("Aider's question on screen", 0.0, AGENT, |o| {
        o.screen.as_deref().is_some_and(|s| s.contains(question))
    });
    status.wait_for("blocked on the question", asked.t, NOTICE, |o| {
        o.status == Status::Blocked
    });
    // Time for a typed prompt to go (wrongly) in: it does not.
    std::thread::sleep(Duration::from_secs(3));
    let screen = env.owt_ok(&repo, ["peek", name]);
    assert!(screen.contains(question), "{screen}");
    assert!(
        !screen.contains(task),
        "the task was typed into the question:\n{screen}"
    );
    assert!(model.requests().is_empty(), "{:?}", model.requests());
    let blocked = status.observations();
    assert_eq!(
        blocked.last().map(|o| o.status),
        Some(Status::Blocked),
        "{}",
        status.summary()
    );

    // The human answers; then the task goes in, as one message.
    env.owt_ok(&repo, ["send", name, "n"]);
    let answered = model.wait_step_answered(0, AGENT);
    let with_task: Vec<&String> = answered
        .user_messages
        .iter()
        .filter(|m| m.contains(task))
        .collect();
    assert_eq!(with_task.len(), 1, "{:?}", answered.user_messages);
    assert!(
        with_task[0].contains(&format!("You are `{name}`")),
        "{with_task:?}"
    );
    status.wait_for(
        "waiting after the reply",
        answered.end.unwrap(),
        NOTICE,
        |o| o.status == Status::NeedsInput,
    );
    assert_eq!(
        model.main_requests().len(),
        1,
        "{:?}",
        model.main_requests()
    );
}

/// Two Aider sessions in one repository: Aider's own files (chat and input
/// history, tag cache) are nobody's work. Regression (issue 16): they were
/// changed files in every Aider session, and `owt guard` reported every
/// pair of Aider sessions as overlapping.
#[test]
fn aider_files_are_not_work_and_not_overlaps() {
    let mut env = TestEnv::new();
    let repo = env.repo("app");
    let names = ["aider-one", "aider-two"];
    let worktrees: Vec<_> = names
        .iter()
        .map(|n| env.path().join("app.worktrees").join(n))
        .collect();
    let model = Model::start(
        &env.path().join("model"),
        &json!({"turns": [{"steps": [{"text": "Nothing to change."}]}]}),
    );
    let mut trusted = worktrees.clone();
    trusted.push(repo.clone());
    setup_offline(&mut env, Agent::Aider, &model, &trusted, true);
    // As a user's own git config would: Aider writes a missing identity
    // into the shared `.git/config` at start, and two Aiders starting at
    // once then race on git's `config.lock` (Aider's own limit, in
    // docs/providers.md).
    env.git(&repo, ["config", "user.name", "Test"]);
    env.git(&repo, ["config", "user.email", "test@example.com"]);
    for name in names {
        env.owt_ok(
            &repo,
            ["new", "Look around", "--name", name, "--ai-tool", "aider"],
        );
    }
    let answered = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        model.wait_for("both sessions' requests answered", AGENT, |rs| {
            rs.iter().filter(|r| r.is_main() && r.end.is_some()).count() == 2
        })
    }));
    if let Err(panic) = answered {
        for name in names {
            eprintln!("{name}:\n{}", env.owt_ok(&repo, ["peek", name]));
        }
        std::panic::resume_unwind(panic);
    }
    for (name, worktree) in names.iter().zip(&worktrees) {
        owt_e2e::wait_until(
            &format!("{name} to write its history and to wait"),
            NOTICE,
            || {
                let list: owt_protocol::SessionList = env.owt_json(&repo, ["list"]);
                worktree.join(".aider.chat.history.md").is_file()
                    && list
                        .sessions
                        .iter()
                        .any(|s| s.name == *name && s.status == Status::NeedsInput)
            },
        );
        let dirt = env.git(worktree, ["status", "--porcelain", "--untracked-files=all"]);
        assert_eq!(dirt, "", "{name}: Aider's files show as changes");
    }
    let list: owt_protocol::SessionList = env.owt_json(&repo, ["list"]);
    for s in &list.sessions {
        assert_eq!(s.changed_files, 0, "{s:?}");
        assert_eq!(s.overlaps, 0, "{s:?}");
    }
    let guard: owt_protocol::guard::GuardReport = env.owt_json(&repo, ["guard"]);
    assert!(guard.pairs.is_empty(), "{:?}", guard.pairs);
}

/// Regression (issue 16): with `--headless`, `owt wait` returned
/// needs-input (Claude's Stop hook) before the run was over, with a blank
/// screen, and a finished run never read `done`. A headless run is working
/// until it exits; exit 0 is `done`, and its last screen stays readable.
#[test]
fn claude_headless_is_done_when_it_exits() {
    let mut env = TestEnv::new();
    let repo = env.repo("app");
    let name = "claude-headless";
    let worktree = env.path().join("app.worktrees").join(name);
    let reply = "All done: nothing needed changing.";
    let model = Model::start(
        &env.path().join("model"),
        &json!({"turns": [{"steps": [{"text": reply, "stall": 2, "stream_secs": 1}]}]}),
    );
    setup_offline(
        &mut env,
        Agent::Claude,
        &model,
        &[repo.clone(), worktree],
        true,
    );
    env.owt_ok(
        &repo,
        [
            "new",
            "Check the README",
            "--name",
            name,
            "--ai-tool",
            "claude",
            "--headless",
        ],
    );
    let out = env
        .owt_cmd(&repo, ["--json", "wait", name, "--timeout", "120"])
        .output()
        .unwrap();
    let returned = agents::now_s();
    let waited: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(waited["status"], "done", "{waited}");
    assert_eq!(waited["exit_code"], 0, "{waited}");
    assert!(out.status.success());
    let answered = model.wait_step_answered(0, NOTICE);
    assert!(returned > answered.end.unwrap());
    let screen = env.owt_ok(&repo, ["peek", name]);
    assert!(screen.contains(reply), "the final screen:\n{screen}");
    let list: owt_protocol::SessionList = env.owt_json(&repo, ["list"]);
    assert_eq!(list.sessions[0].status, Status::Done);
}

/// Regression: `opencode run` started in a linked worktree worked in the
/// main checkout (OpenCode 1.18 takes the project from git's common
/// directory): `owt new --headless --ai-tool opencode` wrote the agent's
/// file into the human's checkout. owt passes the worktree as `--dir`.
#[test]
fn opencode_headless_works_in_its_own_worktree() {
    let mut env = TestEnv::new();
    let repo = env.repo("app");
    let name = "opencode-headless";
    let worktree = env.path().join("app.worktrees").join(name);
    let model = Model::start(
        &env.path().join("model"),
        &json!({"turns": [{"steps": [
            {"write": {"path": "hello.txt", "content": "hello from the scripted model\n"}},
            {"text": "I wrote hello.txt."}]}]}),
    );
    setup_offline(
        &mut env,
        Agent::OpenCode,
        &model,
        &[repo.clone(), worktree.clone()],
        false,
    );
    env.owt_ok(
        &repo,
        [
            "new",
            "Create hello.txt with a greeting",
            "--name",
            name,
            "--ai-tool",
            "opencode",
            "--headless",
        ],
    );
    let out = env
        .owt_cmd(&repo, ["--json", "wait", name, "--timeout", "180"])
        .output()
        .unwrap();
    let waited: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(waited["status"], "done", "{waited}");
    assert_eq!(
        std::fs::read_to_string(worktree.join("hello.txt"))
            .ok()
            .as_deref(),
        Some("hello from the scripted model\n"),
        "the agent's file is in its worktree; screen:\n{}",
        env.owt_ok(&repo, ["peek", name])
    );
    assert!(
        !repo.join("hello.txt").exists(),
        "nothing is written into the human's checkout"
    );
}
