//! An ACP session's permission request answered from the editor, over the
//! real `owt lsp`: the NEEDS YOU question with one action per option plus
//! Deny (`window/showMessageRequest`), the same answers as code actions and
//! `owt.approve` / `owt.deny` commands, and bad input refused without
//! touching the request. The agent is the scripted ACP agent
//! (`tests/data/fake-acp-agent.py --mode ask`: asks to write ask.txt, writes
//! it when allowed); the real adapters' permission flow is in
//! `acp_real_agents.rs`.

use std::path::Path;
use std::time::Duration;

use owt_e2e::acp::fake_acp_tool;
use owt_e2e::lsp::LspClient;
use owt_e2e::{uri, TestEnv};
use owt_protocol::{SessionView, Status};
use serde_json::{json, Value};

const WAIT: Duration = Duration::from_secs(30);
const SHOW_MESSAGE_REQUEST: &str = "window/showMessageRequest";

fn session(env: &TestEnv, repo: &Path, name: &str) -> SessionView {
    env.session(repo, name)
}

fn wait_status(env: &TestEnv, repo: &Path, name: &str, want: Status) -> SessionView {
    owt_e2e::acp::wait_status(env, repo, name, |s| s.status == want)
}

/// An ACP session of the asking agent, started from the CLI.
fn start_asking(env: &TestEnv, repo: &Path, name: &str) -> SessionView {
    owt_e2e::acp::start_fake_acp(env, repo, name, "go")
}

/// A client like Neovim or VS Code: it answers `window/showMessageRequest`
/// (the test does, through [`LspClient::held`]).
fn asking_client(env: &TestEnv, repo: &Path) -> LspClient {
    let mut caps = LspClient::default_capabilities();
    caps["window"]["showMessage"] =
        json!({"messageActionItem": {"additionalPropertiesSupport": true}});
    let mut client = LspClient::start(env, repo, json!({}), caps, false);
    client.held.push(SHOW_MESSAGE_REQUEST);
    // Processed after `initialized`: the first read of the sessions is done.
    client.request("owt/board", Value::Null);
    client
}

fn execute(client: &mut LspClient, command: &str, arg: Value) -> Result<Value, Value> {
    client.request_result(
        "workspace/executeCommand",
        json!({"command": command, "arguments": [arg]}),
    )
}

/// The permission answers `textDocument/codeAction` offers in `file`:
/// each title and command.
fn permission_actions(client: &mut LspClient, file: &Path) -> Vec<(String, Value)> {
    let actions = client.request(
        "textDocument/codeAction",
        json!({
            "textDocument": {"uri": uri(file)},
            "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
            "context": {"diagnostics": []},
        }),
    );
    actions
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["kind"] == "source.owt.permission")
        .map(|a| {
            (
                a["title"].as_str().unwrap().to_string(),
                a["command"].clone(),
            )
        })
        .collect()
}

fn error_message(result: Result<Value, Value>) -> String {
    match result {
        Err(e) => e["message"].as_str().unwrap_or_default().to_string(),
        Ok(v) => panic!("expected an error, got {v}"),
    }
}

#[test]
fn the_needs_you_question_offers_each_option_and_deny_and_its_answer_unblocks() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    fake_acp_tool(&env, "ask");
    let mut client = asking_client(&env, &repo);
    let s = start_asking(&env, &repo, "asks");

    let (id, params) = client.await_held_request(SHOW_MESSAGE_REQUEST, WAIT);
    assert_eq!(
        params["message"], "owt: asks is blocked: Write ask.txt (ask.txt)",
        "{params}"
    );
    assert_eq!(params["type"], 2, "a warning: {params}");
    let titles: Vec<&str> = params["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, ["Allow", "Reject", "Deny"]);
    // Still blocked while the question is open.
    assert_eq!(session(&env, &repo, "asks").status, Status::Blocked);
    assert!(
        client
            .notifications("window/showMessage")
            .iter()
            .all(|m| !m["message"].as_str().unwrap().contains("is blocked")),
        "the question replaces the plain \"blocked\" message"
    );

    client.reply(id, json!({"title": "Allow"}));
    client.await_notification("window/showMessage", WAIT, |m| {
        m["message"] == "owt: asks: answered Allow"
    });
    let after = wait_status(&env, &repo, "asks", Status::NeedsInput);
    assert!(after.permission.is_none());
    assert_eq!(
        std::fs::read_to_string(Path::new(&s.worktree).join("ask.txt")).unwrap(),
        "asked\n",
        "the agent wrote the file it was allowed to"
    );
    assert!(env
        .owt_ok(&repo, ["peek", "asks"])
        .contains("you chose yes"));

    // The next request is asked again; dismissing the question (null)
    // answers nothing, and Deny through the command refuses.
    env.owt_ok(&repo, ["send", "asks", "again"]);
    let (id, params) = client.await_held_request(SHOW_MESSAGE_REQUEST, WAIT);
    assert_eq!(
        params["message"],
        "owt: asks is blocked: Write ask.txt (ask.txt)"
    );
    client.reply(id, Value::Null);
    client.request("owt/board", Value::Null);
    assert_eq!(session(&env, &repo, "asks").status, Status::Blocked);
    let pending = session(&env, &repo, "asks").permission.expect("pending");
    let denied = execute(
        &mut client,
        "owt.deny",
        json!({"session": "asks", "permission_id": pending.id}),
    )
    .expect("owt.deny");
    assert_eq!(
        denied,
        json!({"question": "Write ask.txt", "option_id": "no", "name": "Reject"})
    );
    wait_status(&env, &repo, "asks", Status::NeedsInput);
    assert!(env.owt_ok(&repo, ["peek", "asks"]).contains("you chose no"));
}

#[test]
fn code_actions_answer_and_bad_input_changes_nothing() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    fake_acp_tool(&env, "ask");
    // Helix 25.07: no window/showMessageRequest.
    let mut client = LspClient::start(
        &env,
        &repo,
        json!({}),
        json!({"textDocument": {"publishDiagnostics": {}}}),
        false,
    );
    client.request("owt/board", Value::Null);
    let s = start_asking(&env, &repo, "asks");
    let told = client.await_notification("window/showMessage", WAIT, |m| {
        m["message"]
            .as_str()
            .is_some_and(|t| t.starts_with("owt: asks is blocked: Write ask.txt (ask.txt)"))
    });
    let told = told["message"].as_str().unwrap();
    assert!(
        told.contains("answer with a code action")
            && told.contains(
                r#":lsp-workspace-command owt.approve {"session": "asks", "option": "N"}"#
            ),
        "{told}"
    );
    let pending = session(&env, &repo, "asks").permission.expect("pending");

    // The answers are code actions in any document of the workspace.
    std::fs::write(repo.join("notes.md"), "notes\n").unwrap();
    let offered = permission_actions(&mut client, &repo.join("notes.md"));
    let titles: Vec<&str> = offered.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(
        titles,
        [
            "owt: asks: Allow — Write ask.txt",
            "owt: asks: Reject — Write ask.txt",
            "owt: asks: deny — Write ask.txt",
        ]
    );
    assert_eq!(
        offered[0].1,
        json!({"title": "owt: asks: Allow — Write ask.txt", "command": "owt.approve",
               "arguments": [{"session": "asks", "option": "yes", "permission_id": pending.id}]})
    );
    assert_eq!(offered[2].1["command"], "owt.deny");

    // Bad input: a clear error, and the request stays pending.
    let err = error_message(execute(
        &mut client,
        "owt.approve",
        json!({"session": "nope"}),
    ));
    assert!(err.contains("no session named `nope`"), "{err}");
    let err = error_message(execute(
        &mut client,
        "owt.approve",
        json!({"session": "asks", "option": "7"}),
    ));
    assert!(
        err.contains("no option `7`; the options are: 1 Allow (yes), 2 Reject (no)"),
        "{err}"
    );
    let err = error_message(execute(
        &mut client,
        "owt.approve",
        json!({"session": "asks", "permission_id": pending.id + 100}),
    ));
    assert!(err.contains("was already answered"), "{err}");
    let err = error_message(execute(&mut client, "owt.approve", json!({})));
    assert!(
        err.contains(r#"owt.approve needs {"session": "name"}"#),
        "{err}"
    );
    let err = error_message(execute(
        &mut client,
        "owt.deny",
        json!({"session": "asks", "option": "yes"}),
    ));
    assert!(err.contains("owt.deny takes no \"option\""), "{err}");
    let still = session(&env, &repo, "asks");
    assert_eq!(still.status, Status::Blocked);
    assert_eq!(still.permission.as_ref(), Some(&pending));

    // A PTY agent's dialog is answered with its own key, and only when
    // one is on its screen (#34.6): none here, nothing typed.
    env.owt_ok(&repo, ["new", "a terminal agent", "--name", "tty"]);
    let err = error_message(execute(
        &mut client,
        "owt.approve",
        json!({"session": "tty"}),
    ));
    assert!(
        err.contains("tty shows no permission dialog owt knows how to answer: nothing was typed"),
        "{err}"
    );

    // The Allow action's command, as the editor runs it; a number works
    // as an option too (`"option": 1` typed in Helix).
    let (_, command) = &offered[0];
    let answered =
        execute(&mut client, "owt.approve", command["arguments"][0].clone()).expect("owt.approve");
    assert_eq!(answered["name"], "Allow");
    wait_status(&env, &repo, "asks", Status::NeedsInput);
    assert_eq!(
        std::fs::read_to_string(Path::new(&s.worktree).join("ask.txt")).unwrap(),
        "asked\n"
    );
    let err = error_message(execute(
        &mut client,
        "owt.approve",
        json!({"session": "asks", "option": 1}),
    ));
    assert!(
        err.contains("asks has no pending permission request"),
        "{err}"
    );

    env.owt_ok(&repo, ["send", "asks", "again"]);
    wait_status(&env, &repo, "asks", Status::Blocked);
    let answered = execute(
        &mut client,
        "owt.approve",
        json!({"session": "asks", "option": 2}),
    )
    .expect("owt.approve 2");
    assert_eq!(answered["name"], "Reject");
    wait_status(&env, &repo, "asks", Status::NeedsInput);
    // No answer is offered once none is pending.
    let offered = permission_actions(&mut client, &repo.join("notes.md"));
    assert!(offered.is_empty(), "{offered:?}");
}
