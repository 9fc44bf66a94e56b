//! The preventive guard: `owt hook --pre-edit` answers an agent's pre-edit
//! hook with who else is changing the lines it is about to change, per
//! `[guard] pre_edit` (warn, block, off), and fails open. First through
//! the real owt binary with Claude Code's hook input on stdin, then with
//! the real Claude Code, Gemini CLI, OpenCode and Pi (pinned,
//! `scripts/install-agents`) under `owt new` against the scripted model
//! (`tests/model/`): each one's own write tool is warned or refused through
//! the hook owt installed for it, and what the model is told names the
//! other session.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use owt_e2e::agents::{setup_offline, Agent, Model};
use owt_e2e::lsp::LspClient;
use owt_e2e::{uri, wait_until, TestEnv};
use owt_protocol::{NewOutput, SessionList};
use serde_json::{json, Value};

/// Deadline for anything an agent does (start, a model round trip).
const AGENT: Duration = Duration::from_secs(120);

fn twenty_lines() -> String {
    (1..=20).map(|i| format!("line {i}\n")).collect()
}

fn with_lines(lines: &[usize], tag: &str) -> String {
    (1..=20)
        .map(|i| {
            if lines.contains(&i) {
                format!("line {i} ({tag})\n")
            } else {
                format!("line {i}\n")
            }
        })
        .collect()
}

/// A repository with `src/shared.txt` (20 lines), `[guard] pre_edit =
/// mode` (none: the default), and a fake-agent session `a0` whose worktree
/// changed lines 8–10.
fn setup(env: &TestEnv, mode: Option<&str>) -> (PathBuf, NewOutput) {
    let repo = env.repo("app");
    std::fs::create_dir_all(repo.join("src")).unwrap();
    std::fs::write(repo.join("src/shared.txt"), twenty_lines()).unwrap();
    if let Some(mode) = mode {
        set_mode(env, &repo, mode);
    }
    env.git(&repo, ["add", "-A"]);
    env.git(&repo, ["commit", "-q", "-m", "twenty lines"]);
    let a0: NewOutput = env.owt_json(&repo, ["new", "rework shared", "--name", "a0"]);
    std::fs::write(
        Path::new(&a0.session.worktree).join("src/shared.txt"),
        with_lines(&[8, 9, 10], "a0"),
    )
    .unwrap();
    (repo.canonicalize().unwrap(), a0)
}

fn set_mode(env: &TestEnv, repo: &Path, mode: &str) {
    let toml = std::fs::read_to_string(repo.join(".owt.toml")).unwrap();
    let toml = match toml.find("\n[guard]") {
        Some(at) => toml[..at].to_string(),
        None => toml,
    };
    std::fs::write(
        repo.join(".owt.toml"),
        format!("{toml}\n[guard]\npre_edit = \"{mode}\"\n"),
    )
    .unwrap();
    env.trust(repo);
}

/// `OWT_SESSION` of a session, read from its agent's environment.
fn short_id(env: &TestEnv, repo: &Path, name: &str) -> String {
    let list: SessionList = env.owt_json(repo, ["list"]);
    let pid = list
        .sessions
        .iter()
        .find(|s| s.name == name)
        .and_then(|s| s.agent_pid)
        .unwrap_or_else(|| panic!("{name} has no agent pid"));
    let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
    environ
        .split(|b| *b == 0)
        .find_map(|kv| kv.strip_prefix(b"OWT_SESSION="))
        .map(|v| String::from_utf8_lossy(v).into_owned())
        .expect("OWT_SESSION in the agent's environment")
}

/// Runs `owt hook --pre-edit` as Claude Code would: in the session's
/// worktree, `OWT_SESSION` set, the tool call on stdin. Returns (exit
/// status, stdout, stderr).
fn hook(env: &TestEnv, cwd: &Path, session: &str, input: &str) -> (bool, String, String) {
    let mut cmd = env.owt_cmd(cwd, ["hook", "--pre-edit"]);
    cmd.env("OWT_SESSION", session)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn edit_input(worktree: &Path, old: &str) -> String {
    json!({
        "session_id": "x", "hook_event_name": "PreToolUse", "cwd": worktree,
        "tool_name": "Edit",
        "tool_input": {"file_path": worktree.join("src/shared.txt"), "old_string": old, "new_string": "changed\n"}
    })
    .to_string()
}

#[test]
fn the_pre_edit_hook_names_who_else_is_on_those_lines_per_config_and_fails_open() {
    let env = TestEnv::new();
    let (repo, a0) = setup(&env, None);
    let b0: NewOutput = env.owt_json(&repo, ["new", "also shared", "--name", "b0"]);
    let wt = PathBuf::from(&b0.session.worktree);
    let id = short_id(&env, &repo, "b0");

    // warn (the default): the edit goes on, the agent is told who is there.
    let (ok, out, err) = hook(&env, &wt, &id, &edit_input(&wt, "line 9\n"));
    assert!(ok, "{err}");
    let answer: Value = serde_json::from_str(&out).unwrap_or_else(|_| panic!("{out:?} {err}"));
    let said = &answer["hookSpecificOutput"];
    assert_eq!(said["hookEventName"], "PreToolUse");
    assert!(said.get("permissionDecision").is_none(), "{answer}");
    let context = said["additionalContext"].as_str().unwrap();
    assert!(
        context.contains("a0 (fake) is editing lines 8–10 of src/shared.txt")
            && context.contains("owt send a0"),
        "{context}"
    );

    // Other lines (two away from a0's): nothing to say.
    let (ok, out, _) = hook(&env, &wt, &id, &edit_input(&wt, "line 2\nline 3\n"));
    assert!(ok && out.trim().is_empty(), "{out}");
    // A line next to a0's meets them (git would conflict there too).
    let (_, out, _) = hook(&env, &wt, &id, &edit_input(&wt, "line 11\n"));
    assert!(out.contains("a0 (fake) is editing lines 8–10"), "{out}");

    // The human's uncommitted change in the main checkout counts too.
    std::fs::write(repo.join("src/shared.txt"), with_lines(&[15], "you")).unwrap();
    let (_, out, _) = hook(&env, &wt, &id, &edit_input(&wt, "line 15\n"));
    assert!(
        out.contains("the main checkout (you) has changes on line 15 of src/shared.txt"),
        "{out}"
    );
    std::fs::write(repo.join("src/shared.txt"), twenty_lines()).unwrap();

    // block: refused, with what to do about it.
    set_mode(&env, &repo, "block");
    let (ok, out, err) = hook(&env, &wt, &id, &edit_input(&wt, "line 9\n"));
    assert!(ok, "{err}");
    let answer: Value = serde_json::from_str(&out).unwrap_or_else(|_| panic!("{out:?} {err}"));
    let said = &answer["hookSpecificOutput"];
    assert_eq!(said["permissionDecision"], "deny", "{answer}");
    let reason = said["permissionDecisionReason"].as_str().unwrap();
    assert!(
        reason.contains("a0 (fake) is editing lines 8–10 of src/shared.txt")
            && reason.contains("owt send a0")
            && reason.contains("change other lines"),
        "{reason}"
    );
    // A new file only this session writes is nobody else's.
    let write_new = json!({"hook_event_name": "PreToolUse", "cwd": wt, "tool_name": "Write",
        "tool_input": {"file_path": wt.join("src/new.txt"), "content": "x\n"}});
    let (_, out, _) = hook(&env, &wt, &id, &write_new.to_string());
    assert!(out.trim().is_empty(), "{out}");
    // …but one a0 also created is.
    std::fs::write(
        PathBuf::from(&a0.session.worktree).join("src/new.txt"),
        "a0's\n",
    )
    .unwrap();
    let (_, out, _) = hook(&env, &wt, &id, &write_new.to_string());
    assert!(
        out.contains("a0 (fake) is also creating src/new.txt"),
        "{out}"
    );

    // off: silent.
    set_mode(&env, &repo, "off");
    let (ok, out, _) = hook(&env, &wt, &id, &edit_input(&wt, "line 9\n"));
    assert!(ok && out.trim().is_empty(), "{out}");

    // Fails open: garbage, an unknown session, another tool, no session.
    set_mode(&env, &repo, "block");
    let edit9 = edit_input(&wt, "line 9\n");
    for (session, input) in [
        (id.as_str(), "not json"),
        ("nosuchid", edit9.as_str()),
        (
            id.as_str(),
            r#"{"tool_name": "Bash", "tool_input": {"command": "rm -rf /"}}"#,
        ),
        ("", edit9.as_str()),
    ] {
        let (ok, out, _) = hook(&env, &wt, session, input);
        assert!(ok && out.trim().is_empty(), "{session} {input}: {out}");
    }
}

/// Opens `path` in `client` with its text on disk, then types `text` over
/// it (version 2), unsaved.
fn open_and_type(client: &mut LspClient, path: &Path, text: &str) {
    let on_disk = std::fs::read_to_string(path).unwrap();
    client.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri(path), "languageId": "text", "version": 1, "text": on_disk}}),
    );
    client.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri(path), "version": 2}, "contentChanges": [{"text": text}]}),
    );
}

/// What the hook says about session `id` editing `old` in `wt`, once it
/// says something `done` accepts (the server records the buffers a moment
/// after they change); fails loudly after the deadline.
fn hook_until(
    env: &TestEnv,
    wt: &Path,
    id: &str,
    old: &str,
    what: &str,
    done: impl Fn(&str) -> bool,
) -> String {
    let mut said = String::new();
    wait_until(what, Duration::from_secs(20), || {
        let (ok, out, err) = hook(env, wt, id, &edit_input(wt, old));
        assert!(ok, "{err}");
        said = out;
        done(&said)
    });
    said
}

#[test]
fn your_unsaved_editor_buffer_is_named_by_the_pre_edit_hook_until_saved_closed_or_the_server_dies()
{
    let env = TestEnv::new();
    let (repo, _a0) = setup(&env, None);
    let b0: NewOutput = env.owt_json(&repo, ["new", "also shared", "--name", "b0"]);
    let wt = PathBuf::from(&b0.session.worktree).canonicalize().unwrap();
    let id = short_id(&env, &repo, "b0");
    let file = repo.join("src/shared.txt");
    let unsaved_15 = "you (unsaved in your editor) are changing line 15 of src/shared.txt";

    // Line 15 typed in the main checkout's buffer, not saved.
    let mut editor = LspClient::start(
        &env,
        &repo,
        json!({}),
        LspClient::default_capabilities(),
        false,
    );
    open_and_type(&mut editor, &file, &with_lines(&[15], "you"));
    let out = hook_until(&env, &wt, &id, "line 15\n", "the unsaved line 15", |o| {
        o.contains(unsaved_15)
    });
    let answer: Value = serde_json::from_str(&out).unwrap();
    let context = answer["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(
        answer["hookSpecificOutput"]
            .get("permissionDecision")
            .is_none()
            && context.contains("ask the person")
            && !context.contains("owt send"),
        "warned, with nobody to `owt send` to: {context}"
    );
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        twenty_lines(),
        "nothing was saved"
    );
    // Lines nobody changes: nothing to say; a0's lines: only a0.
    let (_, out, _) = hook(&env, &wt, &id, &edit_input(&wt, "line 2\nline 3\n"));
    assert!(out.trim().is_empty(), "{out}");
    let (_, out, _) = hook(&env, &wt, &id, &edit_input(&wt, "line 9\n"));
    assert!(
        out.contains("a0 (fake) is editing lines 8–10") && !out.contains("unsaved"),
        "{out}"
    );
    // block: refused, the person named.
    set_mode(&env, &repo, "block");
    let (_, out, _) = hook(&env, &wt, &id, &edit_input(&wt, "line 15\n"));
    let answer: Value = serde_json::from_str(&out).unwrap_or_else(|_| panic!("{out:?}"));
    assert_eq!(answer["hookSpecificOutput"]["permissionDecision"], "deny");
    assert!(
        answer["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .contains(unsaved_15),
        "{answer}"
    );
    set_mode(&env, &repo, "warn");
    // set_mode rewrote .owt.toml: the record names src/shared.txt only.

    // A second editor, in b0's own worktree, line 5 typed: the agent is
    // about to write over what you are typing in its checkout.
    let mut in_worktree = LspClient::start(
        &env,
        &wt,
        json!({}),
        LspClient::default_capabilities(),
        false,
    );
    open_and_type(
        &mut in_worktree,
        &wt.join("src/shared.txt"),
        &with_lines(&[5], "you"),
    );
    hook_until(
        &env,
        &wt,
        &id,
        "line 5\n",
        "the unsaved line 5 in b0's worktree",
        |o| {
            o.contains(
            "you (unsaved in your editor, in this worktree) are changing line 5 of src/shared.txt",
        )
        },
    );
    drop(in_worktree);
    hook_until(
        &env,
        &wt,
        &id,
        "line 5\n",
        "line 5 forgotten on exit",
        |o| o.trim().is_empty(),
    );
    // The first editor still counts.
    let (_, out, _) = hook(&env, &wt, &id, &edit_input(&wt, "line 15\n"));
    assert!(out.contains(unsaved_15), "{out}");

    // Saved: the main checkout's change on disk, no longer unsaved.
    std::fs::write(&file, with_lines(&[15], "you")).unwrap();
    editor.notify(
        "textDocument/didSave",
        json!({"textDocument": {"uri": uri(&file)}}),
    );
    hook_until(&env, &wt, &id, "line 15\n", "the saved line 15", |o| {
        o.contains("the main checkout (you) has changes on line 15 of src/shared.txt")
            && !o.contains("unsaved")
    });

    // Typed again (line 17), then closed unsaved: forgotten.
    editor.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri(&file), "version": 3},
               "contentChanges": [{"text": with_lines(&[15, 17], "you")}]}),
    );
    let unsaved_17 = "you (unsaved in your editor) are changing line 17 of src/shared.txt";
    hook_until(&env, &wt, &id, "line 17\n", "the unsaved line 17", |o| {
        o.contains(unsaved_17)
    });
    editor.notify(
        "textDocument/didClose",
        json!({"textDocument": {"uri": uri(&file)}}),
    );
    hook_until(
        &env,
        &wt,
        &id,
        "line 17\n",
        "line 17 forgotten on close",
        |o| o.trim().is_empty(),
    );

    // Typed again, then the server is killed: its record stays behind and
    // is ignored; the next server removes it.
    open_and_type(&mut editor, &file, &with_lines(&[15, 17], "you"));
    hook_until(
        &env,
        &wt,
        &id,
        "line 17\n",
        "the unsaved line 17 again",
        |o| o.contains(unsaved_17),
    );
    let record = env
        .owt_home
        .join("unsaved")
        .join(format!("{}.json", editor.pid()));
    assert!(record.exists(), "{}", record.display());
    editor.kill();
    assert!(record.exists(), "a killed server cannot remove its record");
    let (ok, out, _) = hook(&env, &wt, &id, &edit_input(&wt, "line 17\n"));
    assert!(
        ok && out.trim().is_empty(),
        "the dead server's record: {out}"
    );
    let _next = LspClient::start(
        &env,
        &repo,
        json!({}),
        LspClient::default_capabilities(),
        false,
    );
    wait_until("the stale record removed", Duration::from_secs(20), || {
        !record.exists()
    });
}

/// Claude Code, its Write answered by the pre-edit hook owt installed;
/// returns (the model's log entry of the request after the Write, the
/// file in Claude's worktree afterwards).
fn claude_writes_over_a0s_lines(mode: Option<&str>) -> (Value, String) {
    agent_writes_over_a0s_lines(Agent::Claude, mode)
}

/// `agent` (under `owt new`, against the scripted model) reads
/// src/shared.txt and writes line 9 of it with its own write tool, which
/// a0 is changing; returns (the body of the request after the write, the
/// file in the agent's worktree afterwards).
fn agent_writes_over_a0s_lines(agent: Agent, mode: Option<&str>) -> (Value, String) {
    agent_writes_over_lines(agent, mode, None)
}

/// [`agent_writes_over_a0s_lines`], and with `typed`, an editor (the real
/// `owt lsp`) in the main checkout whose buffer of src/shared.txt has
/// that line typed over, unsaved, all along.
fn agent_writes_over_lines(
    agent: Agent,
    mode: Option<&str>,
    typed: Option<usize>,
) -> (Value, String) {
    let mut env = TestEnv::new();
    let (repo, _a0) = setup(&env, mode);
    let _editor = typed.map(|line| {
        let mut editor = LspClient::start(
            &env,
            &repo,
            json!({}),
            LspClient::default_capabilities(),
            false,
        );
        let file = repo.join("src/shared.txt");
        open_and_type(&mut editor, &file, &with_lines(&[line], "you"));
        let record = env
            .owt_home
            .join("unsaved")
            .join(format!("{}.json", editor.pid()));
        wait_until("the editor's record of unsaved buffers", AGENT, || {
            std::fs::read_to_string(&record).is_ok_and(|r| r.contains("shared.txt"))
        });
        editor
    });
    let name = format!("{}-edit", agent.name());
    let name = name.as_str();
    let worktree = env.path().join("app.worktrees").join(name);
    let model = Model::start_logging_bodies(
        &env.path().join("model"),
        &json!({"turns": [{"steps": [
            {"read": {"path": "src/shared.txt"}},
            {"write": {"path": "src/shared.txt", "content": with_lines(&[9], "claude")}},
            {"text": "I changed line 9."}
        ]}]}),
    );
    setup_offline(
        &mut env,
        agent,
        &model,
        &[repo.clone(), worktree.clone()],
        false,
    );
    env.owt_ok(
        &repo,
        [
            "new",
            "Change line 9 of src/shared.txt",
            "--name",
            name,
            "--ai-tool",
            agent.name(),
        ],
    );
    let after = model.wait_step_answered(2, AGENT);
    let text = std::fs::read_to_string(worktree.join("src/shared.txt")).unwrap();
    (after.body.expect("the request's body is logged"), text)
}

/// The tool result of the Write (step 1) in the request that followed it.
fn write_result(body: &Value) -> (String, bool) {
    let messages = body["messages"].as_array().expect("messages");
    for message in messages.iter().rev() {
        for part in message["content"].as_array().into_iter().flatten() {
            if part["type"] == "tool_result"
                && part["tool_use_id"]
                    .as_str()
                    .is_some_and(|id| id.ends_with("owt_step_1"))
            {
                let text = match &part["content"] {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                return (text, part["is_error"] == true);
            }
        }
    }
    panic!("no tool result for the Write in {body}");
}

#[test]
fn claude_code_write_is_refused_with_the_other_session_named_when_pre_edit_blocks() {
    let (body, text) = claude_writes_over_a0s_lines(Some("block"));
    let (result, is_error) = write_result(&body);
    assert!(is_error, "the Write was refused: {result}");
    assert!(
        result.contains("a0 (fake) is editing lines 8–10 of src/shared.txt")
            && result.contains("owt send a0"),
        "the model is told who and what to do: {result}"
    );
    assert_eq!(text, twenty_lines(), "the file was not written");
}

#[test]
fn claude_code_write_goes_through_with_a_warning_naming_the_other_session() {
    let (body, text) = claude_writes_over_a0s_lines(None);
    let (result, is_error) = write_result(&body);
    assert!(!is_error, "the Write went through: {result}");
    assert_eq!(text, with_lines(&[9], "claude"), "the file was written");
    let whole = body.to_string();
    assert!(
        whole.contains("owt Conflict Guard: a0 (fake) is editing lines 8–10 of src/shared.txt"),
        "the warning reaches the model: {result}\n{whole}"
    );
}

#[test]
fn claude_code_write_is_warned_of_your_unsaved_buffer_in_the_editor() {
    let (body, text) = agent_writes_over_lines(Agent::Claude, None, Some(9));
    let (result, is_error) = write_result(&body);
    assert!(!is_error, "the Write went through: {result}");
    assert_eq!(text, with_lines(&[9], "claude"), "the file was written");
    let whole = body.to_string();
    assert!(
        whole.contains("you (unsaved in your editor) are changing line 9 of src/shared.txt")
            && whole.contains("a0 (fake) is editing lines 8–10 of src/shared.txt"),
        "the warning names you and a0: {result}\n{whole}"
    );
}

/// What the model was told about its write in the request after it:
/// Gemini's `functionResponse` of `write_file` (Gemini API), OpenCode's
/// `tool` message for the write (Chat Completions). Returns (text, whether
/// it is an error: Gemini says, Chat Completions has no such flag).
fn tool_result_of_write(agent: Agent, body: &Value) -> (String, Option<bool>) {
    match agent {
        Agent::Gemini => {
            for content in body["contents"].as_array().expect("contents").iter().rev() {
                for part in content["parts"].as_array().into_iter().flatten() {
                    let r = &part["functionResponse"];
                    if r["name"] == "write_file" {
                        let response = &r["response"];
                        return match response.get("error") {
                            Some(e) => {
                                (e.as_str().map_or(e.to_string(), str::to_string), Some(true))
                            }
                            None => (response.to_string(), Some(false)),
                        };
                    }
                }
            }
            panic!("no functionResponse of write_file in {body}");
        }
        Agent::OpenCode | Agent::Pi => {
            for m in body["messages"].as_array().expect("messages").iter().rev() {
                if m["role"] == "tool"
                    && m["tool_call_id"]
                        .as_str()
                        .is_some_and(|id| id.ends_with("owt_step_1"))
                {
                    let text = match &m["content"] {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    return (text, None);
                }
            }
            panic!("no tool message for the write in {body}");
        }
        _ => unreachable!("{agent:?}"),
    }
}

/// `agent` writes over a0's lines with `[guard] pre_edit = "block"`: the
/// write is refused, and the model reads who and what to do.
fn write_is_refused_naming_a0(agent: Agent) {
    let (body, text) = agent_writes_over_a0s_lines(agent, Some("block"));
    let (result, is_error) = tool_result_of_write(agent, &body);
    if agent == Agent::Gemini {
        assert_eq!(is_error, Some(true), "the write_file was refused: {result}");
    }
    assert!(
        result.contains("owt Conflict Guard refused this edit: a0 (fake) is editing lines 8–10 of src/shared.txt")
            && result.contains("owt send a0"),
        "the model is told who and what to do: {result}"
    );
    assert_eq!(text, twenty_lines(), "the file was not written");
}

/// `agent` writes over a0's lines with the default `warn`: the write goes
/// through and its result, which the model reads, names a0.
fn write_goes_through_warning_of_a0(agent: Agent) {
    let (body, text) = agent_writes_over_a0s_lines(agent, None);
    let (result, is_error) = tool_result_of_write(agent, &body);
    if agent == Agent::Gemini {
        assert_eq!(
            is_error,
            Some(false),
            "the write_file went through: {result}"
        );
    }
    assert_eq!(text, with_lines(&[9], "claude"), "the file was written");
    assert!(
        result.contains("owt Conflict Guard: a0 (fake) is editing lines 8–10 of src/shared.txt"),
        "the warning is in the write's result the model reads: {result}"
    );
}

#[test]
fn gemini_cli_write_is_refused_with_the_other_session_named_when_pre_edit_blocks() {
    write_is_refused_naming_a0(Agent::Gemini);
}

#[test]
fn gemini_cli_write_goes_through_with_a_warning_naming_the_other_session() {
    write_goes_through_warning_of_a0(Agent::Gemini);
}

#[test]
fn opencode_write_is_refused_with_the_other_session_named_when_pre_edit_blocks() {
    write_is_refused_naming_a0(Agent::OpenCode);
}

#[test]
fn opencode_write_goes_through_with_a_warning_naming_the_other_session() {
    write_goes_through_warning_of_a0(Agent::OpenCode);
}

#[test]
fn pi_write_is_refused_with_the_other_session_named_when_pre_edit_blocks() {
    write_is_refused_naming_a0(Agent::Pi);
}

#[test]
fn pi_write_goes_through_with_a_warning_naming_the_other_session() {
    write_goes_through_warning_of_a0(Agent::Pi);
}

/// Gemini CLI's hooks go in the worktree's `.gemini/settings.json`:
/// merged into it (the user's keys kept) and kept out of commits when the
/// repository does not track it; left alone, with a warning, when it does.
#[test]
fn gemini_hooks_are_merged_into_an_untracked_settings_file_and_a_tracked_one_is_left_alone() {
    let mut env = TestEnv::new();
    let (repo, _a0) = setup(&env, None);
    let model = Model::start(
        &env.path().join("model"),
        &json!({"turns": [{"steps": [{"text": "Nothing to do."}]}]}),
    );
    let untracked = env.path().join("app.worktrees").join("g-untracked");
    let tracked = env.path().join("app.worktrees").join("g-tracked");
    setup_offline(
        &mut env,
        Agent::Gemini,
        &model,
        &[repo.clone(), untracked.clone(), tracked.clone()],
        false,
    );
    let new = |name: &str| -> NewOutput {
        env.owt_json(
            &repo,
            ["new", "nothing", "--name", name, "--ai-tool", "gemini"],
        )
    };
    // Untracked: owt's hooks, and `git status` stays clean.
    let out = new("g-untracked");
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
    let settings: Value = serde_json::from_str(
        &std::fs::read_to_string(untracked.join(".gemini/settings.json")).unwrap(),
    )
    .unwrap();
    for event in ["BeforeTool", "AfterTool"] {
        let hook = &settings["hooks"][event][0];
        assert_eq!(hook["matcher"], "^(write_file|replace)$", "{settings}");
        assert!(
            hook["hooks"][0]["command"]
                .as_str()
                .is_some_and(|c| c.ends_with(" hook --pre-edit")),
            "{settings}"
        );
    }
    let status = env.git(&untracked, ["status", "--porcelain"]);
    assert!(status.trim().is_empty(), "kept out of commits: {status}");

    // Tracked: left as it is, and owt says so.
    let theirs = "{\"model\": {\"name\": \"gemini-2.5-pro\"}}\n";
    std::fs::create_dir_all(repo.join(".gemini")).unwrap();
    std::fs::write(repo.join(".gemini/settings.json"), theirs).unwrap();
    // (-f: the first session's exclusion, in the repository's shared
    // info/exclude, covers the path now.)
    env.git(&repo, ["add", "-f", ".gemini/settings.json"]);
    env.git(&repo, ["commit", "-q", "-m", "gemini settings"]);
    let out = new("g-tracked");
    assert!(
        out.warnings.iter().any(|w| w.contains(
            ".gemini/settings.json is tracked in this repository: owt did not add Conflict Guard's pre-edit hook"
        )),
        "{:?}",
        out.warnings
    );
    assert_eq!(
        std::fs::read_to_string(tracked.join(".gemini/settings.json")).unwrap(),
        theirs
    );
}

/// Gemini CLI's dialect through the real owt binary, with the payloads
/// gemini 0.61.0 sends: `BeforeTool` warns the person (`systemMessage`)
/// and keeps the warning for that call; the `AfterTool` of the same call
/// hands it to the model once (`additionalContext`); another call's
/// `AfterTool` gets nothing; `block` is `decision: deny`.
#[test]
fn gemini_before_and_after_tool_answers_through_the_binary() {
    let env = TestEnv::new();
    let (repo, _a0) = setup(&env, None);
    let b0: NewOutput = env.owt_json(&repo, ["new", "also shared", "--name", "b0"]);
    let wt = PathBuf::from(&b0.session.worktree);
    let id = short_id(&env, &repo, "b0");
    let call = |event: &str, old: &str| {
        json!({"session_id": "g", "cwd": wt, "hook_event_name": event, "tool_name": "replace",
            "tool_input": {"file_path": wt.join("src/shared.txt"), "old_string": old, "new_string": "x\n"}})
        .to_string()
    };
    let (ok, out, err) = hook(&env, &wt, &id, &call("BeforeTool", "line 9\n"));
    assert!(ok, "{err}");
    let answer: Value = serde_json::from_str(&out).unwrap_or_else(|_| panic!("{out:?} {err}"));
    assert!(answer.get("decision").is_none(), "let through: {answer}");
    let shown = answer["systemMessage"].as_str().unwrap_or_default();
    assert!(
        shown.contains("owt Conflict Guard: a0 (fake) is editing lines 8–10 of src/shared.txt"),
        "{answer}"
    );
    // Another call's AfterTool: nothing.
    let (_, out, _) = hook(&env, &wt, &id, &call("AfterTool", "line 2\n"));
    assert!(out.trim().is_empty(), "{out}");
    // This call's: the warning, once.
    let (_, out, _) = hook(&env, &wt, &id, &call("AfterTool", "line 9\n"));
    let answer: Value = serde_json::from_str(&out).unwrap_or_else(|_| panic!("{out:?}"));
    assert_eq!(answer["hookSpecificOutput"]["hookEventName"], "AfterTool");
    assert_eq!(answer["hookSpecificOutput"]["additionalContext"], shown);
    let (_, out, _) = hook(&env, &wt, &id, &call("AfterTool", "line 9\n"));
    assert!(out.trim().is_empty(), "handed over once: {out}");

    set_mode(&env, &repo, "block");
    let (_, out, _) = hook(&env, &wt, &id, &call("BeforeTool", "line 9\n"));
    let answer: Value = serde_json::from_str(&out).unwrap_or_else(|_| panic!("{out:?}"));
    assert_eq!(answer["decision"], "deny", "{answer}");
    assert!(
        answer["reason"]
            .as_str()
            .is_some_and(|r| r.contains("refused this edit: a0 (fake) is editing lines 8–10")),
        "{answer}"
    );
}
