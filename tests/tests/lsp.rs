//! End-to-end tests of `owt lsp` over stdio: lifecycle, commands, code
//! actions, the board, attach, bad input.

use std::path::Path;
use std::time::Duration;

use owt_e2e::lsp::LspClient;
use owt_e2e::{uri, wait_until, TestEnv};
use owt_protocol::{Board, NewOutput};
use serde_json::{json, Value};

const DEADLINE: Duration = Duration::from_secs(20);

fn start(env: &TestEnv, root: &Path, open_terminal: bool) -> LspClient {
    LspClient::start(
        env,
        root,
        json!({"openTerminal": open_terminal}),
        LspClient::default_capabilities(),
        open_terminal,
    )
}

#[test]
fn initialize_declares_every_command() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    let mut client = start(&env, &repo, true);
    let board: Board = serde_json::from_value(client.request("owt/board", Value::Null)).unwrap();
    assert!(board.lanes.is_empty());
    drop(client);

    // The initialize result, seen by a fresh client.
    let mut raw = start(&env, &repo, false);
    let id = raw.send_request(
        "initialize",
        json!({"processId": null, "rootUri": uri(&repo), "capabilities": {}}),
    );
    let second = raw.await_response(id, DEADLINE);
    assert!(
        second.is_err(),
        "a second initialize is an error: {second:?}"
    );
}

#[test]
fn board_changes_when_a_session_starts_and_spawn_creates_one() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    let mut client = start(&env, &repo, true);
    let created: NewOutput = env.owt_json(&repo, ["new", "from the cli"]);
    let board = client.await_notification("owt/boardChanged", DEADLINE, |b| {
        b["lanes"].as_array().is_some_and(|lanes| {
            lanes.iter().any(|l| {
                l["sessions"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|s| s["name"] == created.session.name)
            })
        })
    });
    let board: Board = serde_json::from_value(board).unwrap();
    assert_eq!(board.lanes.len(), 1);

    // owt.spawn with a selection: the task carries file, lines and text.
    std::fs::write(
        repo.join("lib.rs"),
        "fn one() {}\nfn two() {}\nfn three() {}\n",
    )
    .unwrap();
    let result = client.request(
        "workspace/executeCommand",
        json!({"command": "owt.spawn", "arguments": [{"task": "Refactor these", "uri": uri(&repo.join("lib.rs")), "start_line": 2, "end_line": 3}]}),
    );
    let spawned: NewOutput = serde_json::from_value(result).unwrap();
    assert!(spawned.session.task.starts_with("Refactor these"));
    assert!(
        spawned.session.task.contains("lib.rs, lines 2-3"),
        "{}",
        spawned.session.task
    );
    assert!(
        spawned.session.task.contains("fn two() {}\nfn three() {}"),
        "{}",
        spawned.session.task
    );
    assert!(!spawned.session.task.contains("fn one"));
    // Progress was reported while it ran, and a message at the end.
    client.await_notification("$/progress", DEADLINE, |p| p["value"]["kind"] == "begin");
    client.await_notification("$/progress", DEADLINE, |p| p["value"]["kind"] == "end");
    client.await_notification("window/showMessage", DEADLINE, |p| {
        p["message"]
            .as_str()
            .unwrap_or("")
            .contains(&format!("started {}", spawned.session.name))
    });
    let names: Vec<String> = env
        .sessions(&repo)
        .sessions
        .into_iter()
        .map(|s| s.name)
        .collect();
    assert!(names.contains(&spawned.session.name), "{names:?}");
    wait_until("the spawned agent runs", DEADLINE, || {
        let list = env.sessions(&repo);
        list.sessions
            .iter()
            .any(|s| s.name == spawned.session.name && s.agent_pid.is_some())
    });
}

#[test]
fn ship_command_merges_with_progress() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    let created: NewOutput = env.owt_json(&repo, ["new", "ship me"]);
    env.wait_settled(&repo, &created.session.name);
    std::fs::write(
        Path::new(&created.session.worktree).join("shipped.txt"),
        "done\n",
    )
    .unwrap();
    let mut client = start(&env, &repo, true);
    let result = client.request(
        "workspace/executeCommand",
        json!({"command": "owt.ship", "arguments": [{"session": created.session.name}]}),
    );
    assert_eq!(result["merge"]["merged"], true, "{result}");
    assert_eq!(
        std::fs::read_to_string(repo.join("shipped.txt")).unwrap(),
        "done\n"
    );
    let reports = {
        client.await_notification("$/progress", DEADLINE, |p| p["value"]["kind"] == "end");
        client
            .seen
            .iter()
            .filter(|m| matches!(m, owt_e2e::lsp::Incoming::Notification { method, params } if method == "$/progress" && params["value"]["kind"] == "report"))
            .count()
    };
    assert!(reports >= 3, "each step reports progress ({reports})");
    assert!(env.sessions(&repo).sessions.is_empty());
}

#[test]
fn attach_asks_the_editor_to_open_a_terminal() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    let created: NewOutput = env.owt_json(&repo, ["new", "attach to me"]);
    let mut client = start(&env, &repo, true);
    let result = client.request(
        "workspace/executeCommand",
        json!({"command": "owt.attach", "arguments": [{"session": created.session.name}]}),
    );
    assert_eq!(result["opened"], "editor");
    let params = client.await_request("owt/openTerminal", DEADLINE);
    assert_eq!(params["session"], created.session.name);
    assert_eq!(params["cwd"], created.session.worktree);
    let argv: Vec<String> = serde_json::from_value(params["argv"].clone()).unwrap();
    assert_eq!(
        &argv[argv.len() - 2..],
        ["attach", created.session.name.as_str()]
    );
}

/// Without `openTerminal`, inside a real tmux server, attach opens a split
/// running `owt attach`, which shows the agent's screen.
#[test]
fn attach_without_editor_support_opens_a_tmux_split() {
    let mut env = TestEnv::new();
    let repo = env.repo("app");
    let created: NewOutput = env.owt_json(&repo, ["new", "attach in tmux"]);
    let tmux = owt_e2e::TmuxServer::start(&env, "owt-test");
    env.extra_env.push(("TMUX".into(), tmux.tmux_env()));
    env.extra_env.push(("TMUX_PANE".into(), "%0".into()));
    let mut client = start(&env, &repo, false);
    let result = client.request(
        "workspace/executeCommand",
        json!({"command": "owt.attach", "arguments": [{"session": created.session.name}]}),
    );
    assert_eq!(result["opened"], "tmux", "{result}");
    assert_eq!(tmux.panes().len(), 2);
    wait_until("the agent's screen in the tmux split", DEADLINE, || {
        let new_pane = tmux.panes().last().unwrap().clone();
        tmux.capture(&new_pane).contains("ready>")
    });
    drop(client);
}

/// The code actions offered in `file` for the first line (a selection of
/// `select` characters) with `diagnostics`, and their command ids.
fn code_actions(
    client: &mut LspClient,
    file: &Path,
    select: u32,
    diagnostics: Value,
) -> (Value, Vec<String>) {
    let actions = client.request(
        "textDocument/codeAction",
        json!({
            "textDocument": {"uri": uri(file)},
            "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": select}},
            "context": {"diagnostics": diagnostics}
        }),
    );
    let commands = actions
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["command"]["command"].as_str().unwrap().to_string())
        .collect();
    (actions, commands)
}

#[test]
fn code_actions_on_a_selection_and_in_a_session_worktree() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    let created: NewOutput = env.owt_json(&repo, ["new", "review me"]);
    env.wait_settled(&repo, &created.session.name);
    let wt_file = Path::new(&created.session.worktree).join("README.md");
    let mut client = start(&env, &repo, true);
    client.request("owt/board", Value::Null);
    let (_, commands) = code_actions(&mut client, &repo.join("README.md"), 5, json!([]));
    assert_eq!(commands, vec!["owt.spawn"]);

    let (actions, commands) = code_actions(&mut client, &wt_file, 0, json!([]));
    assert_eq!(
        commands,
        vec!["owt.attach", "owt.peek", "owt.showBase"],
        "nothing to merge or ship yet (the session's actions say so)"
    );
    assert!(actions[0]["command"]["arguments"][0]["session"] == created.session.name.as_str());

    // A commit in the worktree: the board announces it, and merge and ship
    // are offered.
    let worktree = Path::new(&created.session.worktree);
    std::fs::write(worktree.join("work.txt"), "done\n").unwrap();
    env.git(worktree, ["add", "work.txt"]);
    env.git(worktree, ["commit", "-q", "-m", "work"]);
    client.await_notification("owt/boardChanged", DEADLINE, |board| {
        board["lanes"].as_array().into_iter().flatten().any(|lane| {
            lane["sessions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|s| s["ahead"] == 1)
        })
    });
    let (_, commands) = code_actions(&mut client, &wt_file, 0, json!([]));
    assert_eq!(
        commands,
        vec![
            "owt.ship",
            "owt.merge",
            "owt.attach",
            "owt.peek",
            "owt.showBase"
        ]
    );

    // An owt diagnostic offers open / tell / attach / merge / ship for its session.
    let diagnostic = json!({
        "range": {"start": {"line": 0, "character": 0}, "end": {"line": 1, "character": 0}},
        "source": "owt", "code": "hunk-overlap", "message": "x",
        "data": {"session": created.session.name, "level": "hunk-overlap"}
    });
    let (actions, commands) =
        code_actions(&mut client, &repo.join("README.md"), 0, json!([diagnostic]));
    assert_eq!(
        commands,
        vec![
            "owt.openAgentFile",
            "owt.send",
            "owt.attach",
            "owt.merge",
            "owt.ship"
        ]
    );
    let open = &actions[0]["command"]["arguments"][0];
    client.request(
        "workspace/executeCommand",
        json!({"command": "owt.openAgentFile", "arguments": [open]}),
    );
    let shown = client.await_request("window/showDocument", DEADLINE);
    assert_eq!(shown["uri"], uri(&wt_file));
}

#[test]
fn send_and_peek_commands_reach_the_agent() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    let created: NewOutput = env.owt_json(&repo, ["new", "talk to me"]);
    let mut client = start(&env, &repo, true);
    let name = created.session.name.as_str();
    client.request(
        "workspace/executeCommand",
        json!({"command": "owt.send", "arguments": [{"session": name, "text": "hello $(whoami) `id` ; | &"}]}),
    );
    wait_until("the agent echoes the text", DEADLINE, || {
        let peek = client.request(
            "workspace/executeCommand",
            json!({"command": "owt.peek", "arguments": [{"session": name}]}),
        );
        peek["screen"]["lines"].as_array().unwrap().iter().any(|l| {
            l.as_str()
                .unwrap()
                .contains("got: hello $(whoami) `id` ; | &")
        })
    });
}

#[test]
fn bad_input_gets_errors_never_a_crash() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    let mut client = start(&env, &repo, true);
    // Unknown method.
    let err = client.request_result("owt/nope", json!({})).unwrap_err();
    assert_eq!(err["code"], -32601);
    // Wrong param types.
    let err = client
        .request_result("textDocument/codeAction", json!({"textDocument": 5}))
        .unwrap_err();
    assert_eq!(err["code"], -32602, "{err}");
    // A command for a session that does not exist.
    let err = client
        .request_result(
            "workspace/executeCommand",
            json!({"command": "owt.ship", "arguments": [{"session": "ghost"}]}),
        )
        .unwrap_err();
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("no session named `ghost`"),
        "{err}"
    );
    // A command argument of the wrong shape, and an unknown command.
    let err = client
        .request_result(
            "workspace/executeCommand",
            json!({"command": "owt.attach", "arguments": ["just a string"]}),
        )
        .unwrap_err();
    assert_eq!(err["code"], -32602);
    let err = client
        .request_result(
            "workspace/executeCommand",
            json!({"command": "owt.frobnicate", "arguments": [{}]}),
        )
        .unwrap_err();
    assert!(
        err["message"].as_str().unwrap().contains("unknown command"),
        "{err}"
    );
    // Notifications with wrong params are ignored.
    client.notify("textDocument/didChange", json!({"textDocument": "nope"}));
    // Invalid JSON, and a wrong Content-Length, on the wire.
    client.send_raw(b"Content-Length: 12\r\n\r\n{not json!!}");
    client.send_raw(b"Content-Length: 5\r\n\r\n{\"jsonrpc\"");
    client.send_raw(b": \"2.0\", \"method\": \"initialized\", \"params\": {}}");
    // Still alive and answering.
    client.request("owt/board", Value::Null);
    assert!(client.is_running());
}

/// Found by the `lsp_framing` fuzz target: frames that passed the input
/// guard but that tower-lsp-server's decoder refuses (a header name in
/// another case, more than two headers, a non-UTF-8 charset, JSON that is
/// not a message, a body that is not UTF-8) ended the server.
#[test]
fn regression_frames_the_decoder_refuses_no_longer_end_the_server() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    let mut client = start(&env, &repo, false);
    let body = r#"{"jsonrpc":"2.0","method":"$/owt-test"}"#;
    let n = body.len();
    for header in [
        format!("content-length: {n}"),
        format!("Content-Length: {n}\r\nX-One: 1\r\nX-Two: 2"),
        format!("Content-Length: {n}\r\nContent-Type: text/plain; charset=latin1"),
    ] {
        client.send_raw(format!("{header}\r\n\r\n{body}").as_bytes());
        client.request("owt/board", Value::Null);
    }
    for body in [
        &b"[]"[..],
        b"{\"jsonrpc\":\"2.0\",\"method\":\"$/owt-test\",\"x\":\"\xff\"}",
    ] {
        client.send_raw(
            &[
                format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes(),
                body,
            ]
            .concat(),
        );
        client.request("owt/board", Value::Null);
    }
    assert!(client.is_running());
}

#[test]
fn rapid_changes_end_in_the_final_state() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    let mut client = start(&env, &repo, true);
    let file = repo.join("notes.txt");
    std::fs::write(&file, "").unwrap();
    client.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri(&file), "languageId": "text", "version": 0, "text": ""}}),
    );
    for i in 0..1000 {
        client.notify(
            "textDocument/didChange",
            json!({
                "textDocument": {"uri": uri(&file), "version": i + 1},
                "contentChanges": [{"range": {"start": {"line": i, "character": 0}, "end": {"line": i, "character": 0}}, "text": format!("line {i}\n")}]
            }),
        );
    }
    // A selection code action spawns with the text as the editor has it now:
    // every one of the 1,000 edits applied, in order.
    let actions = client.request(
        "textDocument/codeAction",
        json!({
            "textDocument": {"uri": uri(&file)},
            "range": {"start": {"line": 998, "character": 0}, "end": {"line": 999, "character": 8}},
            "context": {"diagnostics": []}
        }),
    );
    let arg = actions[0]["command"]["arguments"][0].clone();
    let result = client.request(
        "workspace/executeCommand",
        json!({"command": "owt.spawn", "arguments": [arg]}),
    );
    let task = result["session"]["task"].as_str().unwrap();
    assert!(task.contains("```\nline 998\nline 999\n```"), "{task}");
}

/// An agent's MCP `report_status` reaches the editor as a message.
#[test]
fn agent_reports_become_editor_messages() {
    use std::io::{BufRead, BufReader, Write};
    let env = TestEnv::new();
    let repo = env.repo("app");
    let created: NewOutput = env.owt_json(&repo, ["new", "report back"]);
    let mut client = start(&env, &repo, true);
    client.request("owt/board", Value::Null);

    let mut mcp = env
        .owt_cmd(&repo, ["mcp"])
        .env("OWT_SESSION", &created.session.id)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = mcp.stdin.take().unwrap();
    let stdout = mcp.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<Value>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Ok(v) = serde_json::from_str(&line) {
                let _ = tx.send(v);
            }
        }
    });
    for message in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "report_status", "arguments": {"kind": "blocked", "text": "need the staging DB password"}}}),
    ] {
        writeln!(stdin, "{message}").unwrap();
    }
    let deadline = std::time::Instant::now() + DEADLINE;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let reply = rx.recv_timeout(left).expect("the report_status reply");
        if reply["id"] == 2 {
            assert!(reply["result"]["isError"] != true, "{reply}");
            break;
        }
    }
    drop(stdin);
    let _ = mcp.wait();
    client.await_notification("window/showMessage", DEADLINE, |p| {
        p["message"]
            == format!(
                "owt: {} reports blocked: need the staging DB password",
                created.session.name
            )
    });
}
