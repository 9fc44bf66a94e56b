//! Talking to an ACP session without a TUI, in a real terminal: `owt
//! attach` prints the transcript (the prompt, the permission question with
//! numbered options) and reads lines — a number answers the question,
//! `/deny` refuses, any other line is the next prompt, `/detach` leaves —
//! and `owt wait` returns once the agent waits on the human. The agent is
//! the scripted ACP agent (`tests/data/fake-acp-agent.py --mode ask`).

use std::path::Path;
use std::time::Duration;

use owt_e2e::acp::{fake_acp_tool, Pty};
use owt_e2e::TestEnv;
use owt_protocol::{SessionView, Status};

const WAIT: Duration = Duration::from_secs(30);

fn session(env: &TestEnv, repo: &Path, name: &str) -> SessionView {
    env.session(repo, name)
}

#[test]
fn attach_shows_the_question_and_answers_it_and_wait_returns_when_blocked() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    fake_acp_tool(&env, "ask");
    let created = owt_e2e::acp::start_fake_acp(&env, &repo, "asks", "go");
    let worktree = Path::new(&created.worktree).to_path_buf();

    // `owt wait` returns once the agent waits on the human: here, blocked.
    let waited: serde_json::Value = env.owt_json(&repo, ["wait", "asks", "--timeout", "30"]);
    assert_eq!(waited["status"], "blocked", "{waited}");
    assert_eq!(waited["timed_out"], false, "{waited}");

    let mut attach = Pty::owt(&env, &repo, &["attach", "asks"]);
    attach.wait_for("-- attached to asks (ACP)", WAIT);
    let text = attach.text();
    assert!(text.contains("go"), "the prompt in the transcript:\n{text}");
    assert!(
        text.contains("Permission: Write ask.txt") && text.contains("1) Allow   2) Reject"),
        "the question with numbered options:\n{text}"
    );

    // A bare number answers the question.
    attach.line("1");
    attach.wait_for("you chose yes", WAIT);
    assert_eq!(
        std::fs::read_to_string(worktree.join("ask.txt")).unwrap(),
        "asked\n"
    );
    owt_e2e::wait_until("asks to wait for input", WAIT, || {
        session(&env, &repo, "asks").status == Status::NeedsInput
    });

    // Any other line is the next prompt; /deny refuses its question.
    std::fs::remove_file(worktree.join("ask.txt")).unwrap();
    attach.line("once more");
    owt_e2e::wait_until("the second question", WAIT, || {
        attach.text().matches("Permission: Write ask.txt").count() >= 2
    });
    attach.wait_for("answer: a number (or /approve N), /deny", WAIT);
    attach.line("/deny");
    attach.wait_for("you chose no", WAIT);
    assert!(
        !worktree.join("ask.txt").exists(),
        "denied: nothing written"
    );
    let peek = env.owt_ok(&repo, ["peek", "asks"]);
    assert!(
        peek.contains("once more"),
        "the typed prompt reached the agent:\n{peek}"
    );

    attach.line("/detach");
    assert_eq!(attach.wait_exit(WAIT), 0, "{}", attach.text());
    // Detaching leaves the agent running.
    let after = session(&env, &repo, "asks");
    assert_eq!(after.status, Status::NeedsInput, "{after:?}");
}
