//! Conflict Guard in the editor: diagnostics from `owt lsp` over stdio,
//! driven by real file writes in real worktrees and by unsaved buffers.

use std::path::Path;
use std::time::Duration;

use owt_e2e::lsp::LspClient;
use owt_e2e::{ten_lines, uri, wait_until, with_line, TestEnv};
use owt_protocol::{NewOutput, SessionList};
use serde_json::{json, Value};

const DEADLINE: Duration = Duration::from_secs(20);

fn setup(env: &TestEnv) -> (std::path::PathBuf, NewOutput) {
    let repo = env.repo("app");
    std::fs::write(repo.join("src.txt"), ten_lines()).unwrap();
    env.git(&repo, ["add", "src.txt"]);
    env.git(&repo, ["commit", "-q", "-m", "ten lines"]);
    let session: NewOutput = env.owt_json(&repo, ["new", "edit src"]);
    (repo.canonicalize().unwrap(), session)
}

fn open(client: &mut LspClient, path: &Path) {
    let text = std::fs::read_to_string(path).unwrap();
    client.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri(path), "languageId": "text", "version": 1, "text": text}}),
    );
}

fn codes(diags: &[Value]) -> Vec<(String, u64)> {
    diags
        .iter()
        .map(|d| {
            (
                d["code"].as_str().unwrap().to_string(),
                d["range"]["start"]["line"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn an_agent_write_shows_on_the_lines_it_changed_and_clears_on_revert() {
    let env = TestEnv::new();
    let (repo, session) = setup(&env);
    let wt = Path::new(&session.session.worktree);
    // The human changed line 2 (on disk, not committed); the agent writes line 8.
    std::fs::write(repo.join("src.txt"), with_line(&ten_lines(), 2, "human 2")).unwrap();
    let mut client = LspClient::start(
        &env,
        &repo,
        json!({"openTerminal": true}),
        LspClient::default_capabilities(),
        true,
    );
    let file = repo.join("src.txt");
    open(&mut client, &file);
    std::fs::write(wt.join("src.txt"), with_line(&ten_lines(), 8, "agent 8")).unwrap();
    let diags = client.await_diagnostics(&uri(&file), DEADLINE, |d| !d.is_empty());
    assert_eq!(codes(&diags), vec![("overlap".to_string(), 7)]);
    let d = &diags[0];
    assert_eq!(d["source"], "owt");
    assert_eq!(d["severity"], 3, "overlap is Information");
    assert_eq!(d["data"]["session"], session.session.name);
    assert_eq!(d["data"]["level"], "overlap");
    let message = d["message"].as_str().unwrap();
    assert!(
        message.starts_with(&format!("{} (fake, ", session.session.name)),
        "{message}"
    );
    assert!(message.contains("changed line 8 here (+1 −1)"), "{message}");
    let related = &d["relatedInformation"][0]["location"];
    assert_eq!(related["uri"], uri(&wt.join("src.txt")));

    // The agent reverts: the diagnostics clear.
    std::fs::write(wt.join("src.txt"), ten_lines()).unwrap();
    client.await_diagnostics(&uri(&file), DEADLINE, |d| d.is_empty());
}

/// Awake before you type: an agent's lines in a document you opened but
/// did not change are a hint (`aware`); typing on those lines (unsaved)
/// makes it the pair's conflict; undone, the hint is back.
#[test]
fn unsaved_edits_turn_the_awareness_hint_into_a_conflict_and_back() {
    let env = TestEnv::new();
    let (repo, session) = setup(&env);
    let wt = Path::new(&session.session.worktree);
    std::fs::write(
        wt.join("src.txt"),
        with_line(&ten_lines(), 5, "same change"),
    )
    .unwrap();
    let mut client = LspClient::start(
        &env,
        &repo,
        json!({}),
        LspClient::default_capabilities(),
        false,
    );
    let file = repo.join("src.txt");
    open(&mut client, &file);
    let diags = client.await_diagnostics(&uri(&file), DEADLINE, |d| !d.is_empty());
    assert_eq!(codes(&diags), vec![("aware".to_string(), 4)]);
    assert_eq!(diags[0]["severity"], 4, "the awareness hint is a Hint");
    assert_eq!(diags[0]["data"]["level"], "aware");
    let message = diags[0]["message"].as_str().unwrap();
    assert!(
        message.starts_with(&format!("{} (fake, ", session.session.name))
            && message.contains("is changing line 5 here (+1 −1)"),
        "{message}"
    );
    // Another change of that line, typed but not saved: a conflict.
    client.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri(&file), "version": 2},
               "contentChanges": [{"text": with_line(&ten_lines(), 5, "human 5")}]}),
    );
    let diags = client.await_diagnostics(&uri(&file), DEADLINE, |d| {
        d.iter().all(|x| x["code"] != "aware") && !d.is_empty()
    });
    assert_eq!(codes(&diags), vec![("conflict".to_string(), 4)]);
    assert_eq!(diags[0]["severity"], 1, "conflict is Error");
    assert!(
        std::fs::read_to_string(&file).unwrap() == ten_lines(),
        "nothing was saved"
    );
    // Undo in the buffer: the overlap goes, the hint is back.
    client.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri(&file), "version": 3}, "contentChanges": [{"text": ten_lines()}]}),
    );
    let diags = client.await_diagnostics(&uri(&file), DEADLINE, |d| {
        d.iter().all(|x| x["code"] == "aware") && !d.is_empty()
    });
    assert_eq!(codes(&diags), vec![("aware".to_string(), 4)]);
}

/// `initializationOptions.awareness: false` and `[guard] awareness =
/// false`: no hint for an untouched document; the pair's diagnostics as
/// before.
#[test]
fn awareness_off_by_option_or_config_shows_only_the_pairs_diagnostics() {
    let env = TestEnv::new();
    let (repo, session) = setup(&env);
    let wt = Path::new(&session.session.worktree);
    std::fs::write(wt.join("src.txt"), with_line(&ten_lines(), 5, "agent")).unwrap();
    let file = repo.join("src.txt");
    for (options, config) in [(json!({"awareness": false}), false), (json!({}), true)] {
        if config {
            let toml = std::fs::read_to_string(repo.join(".owt.toml")).unwrap_or_default();
            std::fs::write(
                repo.join(".owt.toml"),
                format!("{toml}\n[guard]\nawareness = false\n"),
            )
            .unwrap();
            env.owt_ok(&repo, ["trust"]);
        }
        let mut client = LspClient::start(
            &env,
            &repo,
            options.clone(),
            LspClient::default_capabilities(),
            false,
        );
        open(&mut client, &file);
        client.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri(&file), "version": 2},
                   "contentChanges": [{"text": with_line(&ten_lines(), 2, "human")}]}),
        );
        let diags = client.await_diagnostics(&uri(&file), DEADLINE, |d| !d.is_empty());
        assert_eq!(codes(&diags), vec![("overlap".to_string(), 4)], "{options}");
        client.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri(&file), "version": 3}, "contentChanges": [{"text": ten_lines()}]}),
        );
        // (With the hint on, the undo would bring it back: never empty.)
        client.await_diagnostics(&uri(&file), DEADLINE, |d| d.is_empty());
        let published = client.notifications("textDocument/publishDiagnostics");
        assert!(
            published.iter().all(|p| p["diagnostics"]
                .as_array()
                .unwrap()
                .iter()
                .all(|d| d["code"] != "aware")),
            "no awareness hint with {options} (config off: {config}): {published:?}"
        );
        client.kill();
    }
}

/// Found by the Helix suite in a terminal: when a newer version of the
/// buffer left the diagnostics as they were, they were not published again,
/// so the last publication named an older version; Helix drops those, and
/// never showed the conflict at all.
#[test]
fn regression_unchanged_diagnostics_are_published_again_for_a_newer_buffer_version() {
    let env = TestEnv::new();
    let (repo, session) = setup(&env);
    let wt = Path::new(&session.session.worktree);
    std::fs::write(wt.join("src.txt"), with_line(&ten_lines(), 5, "agent 5")).unwrap();
    // The message names the agent's status: let it settle first, so the
    // diagnostics of both versions are the same.
    wait_until("the agent to wait at its prompt", DEADLINE, || {
        let list: SessionList = env.owt_json(&repo, ["list"]);
        list.sessions.iter().any(|s| s.status_text == "needs-input")
    });
    // (No awareness hint: it would stand for the conflict until the typed
    // text reaches the guard.)
    let mut client = LspClient::start(
        &env,
        &repo,
        json!({"awareness": false}),
        LspClient::default_capabilities(),
        false,
    );
    let file = repo.join("src.txt");
    open(&mut client, &file);
    let human = with_line(&ten_lines(), 5, "human 5");
    for version in [2, 3] {
        // Version 3 changes nothing the guard sees (typed, then undone).
        client.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri(&file), "version": version}, "contentChanges": [{"text": human}]}),
        );
        let params = client.await_notification("textDocument/publishDiagnostics", DEADLINE, |p| {
            p["uri"] == uri(&file).as_str()
                && p["version"] == version
                && p["diagnostics"].as_array().is_some_and(|d| !d.is_empty())
        });
        assert_eq!(
            codes(params["diagnostics"].as_array().unwrap()),
            vec![("conflict".to_string(), 4)]
        );
    }
}

#[test]
fn a_conflict_sits_on_the_conflicting_lines_and_follows_edits_above() {
    let env = TestEnv::new();
    let (repo, session) = setup(&env);
    let wt = Path::new(&session.session.worktree);
    std::fs::write(wt.join("src.txt"), with_line(&ten_lines(), 5, "AGENT")).unwrap();
    let mut client = LspClient::start(
        &env,
        &repo,
        json!({}),
        LspClient::default_capabilities(),
        false,
    );
    let file = repo.join("src.txt");
    open(&mut client, &file);
    let human = with_line(&ten_lines(), 5, "HUMAN");
    client.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri(&file), "version": 2}, "contentChanges": [{"text": human}]}),
    );
    let diags = client.await_diagnostics(&uri(&file), DEADLINE, |d| {
        d.iter().any(|x| x["code"] == "conflict")
    });
    assert_eq!(codes(&diags), vec![("conflict".to_string(), 4)]);
    assert_eq!(diags[0]["severity"], 1, "conflict is Error");
    assert!(diags[0]["message"]
        .as_str()
        .unwrap()
        .contains("merging it with your changes will conflict"));
    // Two lines typed at the top: the diagnostic moves down with its lines.
    client.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri(&file), "version": 3},
               "contentChanges": [{"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}, "text": "new a\nnew b\n"}]}),
    );
    let diags = client.await_diagnostics(&uri(&file), DEADLINE, |d| {
        d.iter()
            .any(|x| x["code"] == "conflict" && x["range"]["start"]["line"] == 6)
    });
    assert_eq!(codes(&diags), vec![("conflict".to_string(), 6)]);
}

#[test]
fn an_unopened_file_touched_by_two_agents_gets_diagnostics() {
    let env = TestEnv::new();
    let (repo, first) = setup(&env);
    let second: NewOutput = env.owt_json(&repo, ["new", "also edit src"]);
    let mut client = LspClient::start(
        &env,
        &repo,
        json!({}),
        LspClient::default_capabilities(),
        false,
    );
    std::fs::write(
        Path::new(&first.session.worktree).join("src.txt"),
        with_line(&ten_lines(), 2, "first"),
    )
    .unwrap();
    std::fs::write(
        Path::new(&second.session.worktree).join("src.txt"),
        with_line(&ten_lines(), 9, "second"),
    )
    .unwrap();
    let diags = client.await_diagnostics(&uri(&repo.join("src.txt")), DEADLINE, |d| !d.is_empty());
    let message = diags[0]["message"].as_str().unwrap();
    assert!(
        message.contains(&first.session.name) && message.contains(&second.session.name),
        "{message}"
    );
}

#[test]
fn a_new_server_after_kill_9_republishes_and_no_agent_died() {
    let env = TestEnv::new();
    let (repo, session) = setup(&env);
    let wt = Path::new(&session.session.worktree);
    std::fs::write(repo.join("src.txt"), with_line(&ten_lines(), 2, "human 2")).unwrap();
    std::fs::write(wt.join("src.txt"), with_line(&ten_lines(), 8, "agent 8")).unwrap();
    let file = repo.join("src.txt");
    let mut client = LspClient::start(
        &env,
        &repo,
        json!({}),
        LspClient::default_capabilities(),
        false,
    );
    let before = client.await_diagnostics(&uri(&file), DEADLINE, |d| !d.is_empty());
    client.kill();
    let mut again = LspClient::start(
        &env,
        &repo,
        json!({}),
        LspClient::default_capabilities(),
        false,
    );
    let after = again.await_diagnostics(&uri(&file), DEADLINE, |d| !d.is_empty());
    assert_eq!(codes(&before), codes(&after));
    assert_eq!(before[0]["range"], after[0]["range"]);
    assert_eq!(before[0]["data"], after[0]["data"]);
    // The message names the agent's status, which may have moved on.
    let line = |d: &Value| {
        d["message"]
            .as_str()
            .unwrap()
            .split(") ")
            .nth(1)
            .unwrap()
            .to_string()
    };
    assert_eq!(line(&before[0]), line(&after[0]));
    let list: SessionList = env.owt_json(&repo, ["list"]);
    assert!(list.sessions[0].agent_pid.is_some());
    assert_ne!(
        list.sessions[0].status,
        owt_protocol::Status::Exited,
        "the agent survived"
    );
}

/// What Helix sees: no relatedInformation, no custom requests, commands
/// through workspace/executeCommand, attach through a tmux split.
#[test]
fn helix_capabilities_get_standalone_messages_and_commands() {
    let mut env = TestEnv::new();
    let (repo, session) = setup(&env);
    let wt = Path::new(&session.session.worktree);
    std::fs::write(repo.join("src.txt"), with_line(&ten_lines(), 2, "human 2")).unwrap();
    std::fs::write(wt.join("src.txt"), with_line(&ten_lines(), 8, "agent 8")).unwrap();
    let tmux = owt_e2e::TmuxServer::start(&env, "hx");
    env.extra_env.push(("TMUX".into(), tmux.tmux_env()));
    let helix_caps = json!({
        "window": {"workDoneProgress": true, "showDocument": {"support": true}},
        "textDocument": {"publishDiagnostics": {"versionSupport": true}, "codeAction": {}},
    });
    let mut client = LspClient::start(&env, &repo, Value::Null, helix_caps, false);
    let file = repo.join("src.txt");
    open(&mut client, &file);
    let diags = client.await_diagnostics(&uri(&file), DEADLINE, |d| !d.is_empty());
    assert!(
        diags[0]
            .get("relatedInformation")
            .is_none_or(Value::is_null),
        "{}",
        diags[0]
    );
    let message = diags[0]["message"].as_str().unwrap();
    assert!(
        message.contains(&session.session.name) && message.contains("line 8"),
        "a message that stands alone: {message}"
    );
    // A code action's command runs through workspace/executeCommand.
    let actions = client.request(
        "textDocument/codeAction",
        json!({"textDocument": {"uri": uri(&file)}, "range": diags[0]["range"], "context": {"diagnostics": [diags[0]]}}),
    );
    let attach = actions
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["command"]["command"] == "owt.attach")
        .expect("an attach action")
        .clone();
    let result = client.request(
        "workspace/executeCommand",
        json!({"command": "owt.attach", "arguments": attach["command"]["arguments"]}),
    );
    assert_eq!(result["opened"], "tmux");
    wait_until("the attach split shows the agent", DEADLINE, || {
        let panes = tmux.panes();
        panes.len() == 2 && tmux.capture(panes.last().unwrap()).contains("ready>")
    });
    drop(client);
}

/// Symbol-aware: an agent changed `parse_config`'s signature and a call in
/// `load`; you type a new call in `other` (unsaved). The agent's line names
/// its function, and your new call gets a `semantic` warning naming the
/// signature change.
#[test]
fn a_signature_the_agent_changed_warns_on_your_new_call_and_lines_name_their_function() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    let config = "pub struct Config;\n\npub fn parse_config(path: &str) -> Config {\n    let _ = path;\n    Config\n}\n";
    let main = "use config::parse_config;\n\nfn load() {\n    let _c = parse_config(\"a.toml\");\n}\n\nfn other() {}\n";
    std::fs::create_dir_all(repo.join("src")).unwrap();
    std::fs::write(repo.join("src/config.rs"), config).unwrap();
    std::fs::write(repo.join("src/main.rs"), main).unwrap();
    env.git(&repo, ["add", "src"]);
    env.git(&repo, ["commit", "-q", "-m", "config"]);
    let session: NewOutput = env.owt_json(&repo, ["new", "strict config"]);
    let repo = repo.canonicalize().unwrap();
    let wt = Path::new(&session.session.worktree);
    std::fs::write(
        wt.join("src/config.rs"),
        config.replace("(path: &str)", "(path: &str, strict: bool)"),
    )
    .unwrap();
    std::fs::write(
        wt.join("src/main.rs"),
        main.replace("(\"a.toml\")", "(\"a.toml\", true)"),
    )
    .unwrap();
    let mut client = LspClient::start(
        &env,
        &repo,
        json!({}),
        LspClient::default_capabilities(),
        false,
    );
    let file = repo.join("src/main.rs");
    open(&mut client, &file);
    let mine = main.replace(
        "fn other() {}",
        "fn other() {\n    let _d = parse_config(\"b.toml\");\n}",
    );
    client.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri(&file), "version": 2}, "contentChanges": [{"text": mine}]}),
    );
    let diags = client.await_diagnostics(&uri(&file), DEADLINE, |d| {
        d.iter().any(|x| x["code"] == "semantic") && d.iter().any(|x| x["code"] == "overlap")
    });
    let mut found = codes(&diags);
    found.sort();
    assert_eq!(
        found,
        vec![("overlap".to_string(), 3), ("semantic".to_string(), 7)]
    );
    let by_code = |code: &str| diags.iter().find(|d| d["code"] == code).unwrap();
    let overlap = by_code("overlap")["message"].as_str().unwrap();
    assert!(
        overlap.contains("changed line 4 here (in fn load)"),
        "{overlap}"
    );
    let semantic = by_code("semantic");
    assert_eq!(semantic["severity"], 2, "semantic is a Warning");
    assert_eq!(semantic["data"]["level"], "semantic");
    assert_eq!(semantic["data"]["session"], session.session.name);
    let message = semantic["message"].as_str().unwrap();
    assert!(
        message.contains(
            "changed the signature of fn parse_config (src/config.rs): \
             `pub fn parse_config(path: &str) -> Config` → \
             `pub fn parse_config(path: &str, strict: bool) -> Config`; this use may no longer build"
        ),
        "{message}"
    );
}

/// A base-conflict in your checkout: the editor is open in a session's
/// worktree, the session changed line 5, and `main` moved under it with
/// another change of line 5: an Error on the session's line, naming the
/// base's; resolved in the editor (main's line typed, unsaved), it clears.
#[test]
fn a_base_that_moved_under_the_session_is_an_error_on_its_lines() {
    let env = TestEnv::new();
    let (repo, session) = setup(&env);
    let wt = Path::new(&session.session.worktree).canonicalize().unwrap();
    std::fs::write(wt.join("src.txt"), with_line(&ten_lines(), 5, "agent 5")).unwrap();
    // main moves: line 5 changed and committed in the main checkout, before
    // the editor starts (the guard's first full computation sees it).
    let main_text = with_line(&ten_lines(), 5, "main 5");
    std::fs::write(repo.join("src.txt"), &main_text).unwrap();
    env.git(&repo, ["commit", "-q", "-am", "main changes line 5"]);
    let mut client = LspClient::start(
        &env,
        &wt,
        json!({}),
        LspClient::default_capabilities(),
        false,
    );
    let file = wt.join("src.txt");
    open(&mut client, &file);
    let diags = client.await_diagnostics(&uri(&file), DEADLINE, |d| {
        d.iter().any(|x| x["code"] == "base-conflict")
    });
    assert_eq!(codes(&diags), vec![("base-conflict".to_string(), 4)]);
    let d = &diags[0];
    assert_eq!(d["severity"], 1, "routed like a conflict: Error");
    assert_eq!(d["data"]["level"], "base-conflict");
    let message = d["message"].as_str().unwrap();
    assert_eq!(
        message,
        "main changed line 5 since you started; your changes here no longer merge into main"
    );
    // You take main's line in the editor (unsaved: your buffer is this
    // checkout's state): it merges again, the error clears.
    client.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri(&file), "version": 2}, "contentChanges": [{"text": main_text}]}),
    );
    client.await_diagnostics(&uri(&file), DEADLINE, |d| {
        d.iter().all(|x| x["code"] != "base-conflict")
    });
}
