//! `owt.resume` over the real `owt lsp`: offered as a code action exactly
//! when the board's `resume` action is available, and run through the same
//! ops function as `owt resume` (refused with the board's reason).

use std::path::Path;
use std::time::Duration;

use owt_e2e::lsp::LspClient;
use owt_e2e::{data_file, uri, wait_until, TestEnv};

use owt_protocol::{SessionAction, SessionView, Status};
use serde_json::{json, Value};

const DEADLINE: Duration = Duration::from_secs(30);

fn view(env: &TestEnv, repo: &Path, name: &str) -> SessionView {
    env.sessions(repo)
        .sessions
        .into_iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no session {name}"))
}

/// The commands of the code actions offered at the top of `file`.
fn offered(client: &mut LspClient, file: &Path) -> Vec<String> {
    let actions = client.request(
        "textDocument/codeAction",
        json!({
            "textDocument": {"uri": uri(file)},
            "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
            "context": {"diagnostics": []}
        }),
    );
    actions
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["command"]["command"].as_str().unwrap().to_string())
        .collect()
}

/// Whether a `owt/boardChanged` board shows `name` with `status`.
fn board_shows(board: &Value, name: &str, status: &str) -> bool {
    board["lanes"].as_array().into_iter().flatten().any(|lane| {
        lane["sessions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|s| s["name"] == name && s["status"] == status)
    })
}

/// A repository whose agent is the test fake agent, which exits on
/// `exit N` (as in tests/tests/board_truth.rs).
fn repo(env: &TestEnv) -> std::path::PathBuf {
    let repo = env.untrusted_repo("app");
    std::fs::write(
        repo.join(".owt.toml"),
        format!(
            "[agent]\ndefault_tool = \"fake\"\n\n\
             [tools.fake]\nbinary = \"python3\"\ncommand_template = \"{{binary}} {}\"\n\
             prompt_mode = \"none\"\n",
            data_file("fake_agent.py").display()
        ),
    )
    .unwrap();
    env.git(&repo, ["add", "."]);
    env.git(&repo, ["commit", "-q", "-m", "the fake agent"]);
    env.trust(&repo);
    repo
}

#[test]
fn resume_is_offered_when_the_board_allows_it_and_restarts_the_agent() {
    let env = TestEnv::new();
    let repo = repo(&env);
    env.owt_ok(&repo, ["new", "--name", "ends", "say goodbye"]);
    wait_until("ends to wait for input", DEADLINE, || {
        view(&env, &repo, "ends").status == Status::NeedsInput
    });
    let wt_file = Path::new(&view(&env, &repo, "ends").worktree).join("README.md");
    let mut client = LspClient::start(
        &env,
        &repo,
        json!({"openTerminal": true}),
        LspClient::default_capabilities(),
        true,
    );
    client.request("owt/board", Value::Null);

    // Its agent runs: no resume offered, and owt.resume is refused with the
    // board's reason.
    let running = view(&env, &repo, "ends");
    assert!(!running.can(SessionAction::Resume), "{running:#?}");
    assert!(!offered(&mut client, &wt_file).contains(&"owt.resume".to_string()));
    let reason = running
        .actions
        .iter()
        .find(|a| a.action == SessionAction::Resume)
        .and_then(|a| a.reason.clone())
        .expect("the board says why resume is not available");
    let err = client
        .request_result(
            "workspace/executeCommand",
            json!({"command": "owt.resume", "arguments": [{"session": "ends"}]}),
        )
        .unwrap_err();
    let message = err["message"].as_str().unwrap_or_default();
    assert!(message.contains(&reason), "{message} vs {reason}");
    assert_eq!(view(&env, &repo, "ends").status, Status::NeedsInput);

    // The agent exits: the board says resume, and the code action follows.
    env.owt_ok(&repo, ["send", "ends", "exit 3"]);
    wait_until("ends to exit", DEADLINE, || {
        view(&env, &repo, "ends").status == Status::Exited
    });
    assert!(view(&env, &repo, "ends").can(SessionAction::Resume));
    wait_until("the LSP's board to show ends exited", DEADLINE, || {
        let board = client.request("owt/board", Value::Null);
        board_shows(&board, "ends", Status::Exited.as_str())
    });
    let commands = offered(&mut client, &wt_file);
    assert!(commands.contains(&"owt.resume".to_string()), "{commands:?}");

    // owt.resume restarts it, as `owt resume` does.
    let result = client.request(
        "workspace/executeCommand",
        json!({"command": "owt.resume", "arguments": [{"session": "ends"}]}),
    );
    assert_eq!(result["name"], "ends", "{result}");
    client.await_notification("window/showMessage", DEADLINE, |p| {
        p["message"].as_str().unwrap_or("").contains("resumed ends")
    });
    wait_until("ends to run again", DEADLINE, || {
        let v = view(&env, &repo, "ends");
        v.status != Status::Exited && v.agent_pid.is_some()
    });
    wait_until("the LSP's board to show ends running", DEADLINE, || {
        let board = client.request("owt/board", Value::Null);
        !board_shows(&board, "ends", Status::Exited.as_str())
    });
    let commands = offered(&mut client, &wt_file);
    assert!(
        !commands.contains(&"owt.resume".to_string()),
        "{commands:?}"
    );
}
