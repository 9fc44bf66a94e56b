//! ACP sessions against an agent that misbehaves on purpose
//! (`tests/data/fake-acp-agent.py`: the real adapters never send garbage
//! or die on demand; they are tested in `acp_real_agents.rs`). The agent is
//! a `[tools.fake]` with an `acp` command in the user's configuration, run
//! by `owt new --acp` like any agent.

use std::time::Duration;

use owt_e2e::acp::{fake_acp_tool, fake_log, host_log, wait_status};
use owt_e2e::{wait_until, TestEnv};
use owt_protocol::{SessionView, Status, UsageOutput};

const WAIT: Duration = Duration::from_secs(30);

fn session(env: &TestEnv, repo: &std::path::Path, name: &str) -> SessionView {
    env.session(repo, name)
}

fn start(env: &TestEnv, repo: &std::path::Path, name: &str, task: &str) -> SessionView {
    owt_e2e::acp::start_fake_acp(env, repo, name, task)
}

#[test]
fn an_agent_speaking_another_protocol_version_is_a_clear_error() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    fake_acp_tool(&env, "version2");
    start(&env, &repo, "v2", "hello");
    let s = wait_status(&env, &repo, "v2", |s| s.status == Status::Exited);
    assert_eq!(
        s.status_text,
        "exited: the agent speaks ACP protocol version 2; owt speaks version 1 (update owt, or pin an agent adapter that speaks version 1)"
    );
    let peek = env.owt_ok(&repo, ["peek", "v2"]);
    assert!(
        peek.contains("owt: the agent speaks ACP protocol version 2"),
        "{peek}"
    );
    assert!(
        env.session_processes(&s.id).is_empty(),
        "the agent was stopped"
    );
}

#[test]
fn lines_that_are_not_json_rpc_and_unknown_updates_are_skipped_and_logged() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    let log = fake_acp_tool(&env, "garbage");
    let s = start(&env, &repo, "junk", "hello");
    wait_status(&env, &repo, "junk", |s| s.status == Status::NeedsInput);
    let peek = env.owt_ok(&repo, ["peek", "junk"]);
    assert!(peek.contains("fake reply to: hello"), "{peek}");

    // The agent was told, in JSON-RPC's words, what it got wrong.
    let got = fake_log(&log);
    let errors: Vec<(serde_json::Value, i64)> = got
        .iter()
        .filter(|m| m.get("method").is_none() && m.get("error").is_some())
        .map(|m| (m["id"].clone(), m["error"]["code"].as_i64().unwrap()))
        .collect();
    assert!(
        errors.contains(&(serde_json::Value::Null, -32700)),
        "{errors:?}"
    );
    assert!(
        errors.contains(&(serde_json::json!(77), -32600)),
        "{errors:?}"
    );
    let log = host_log(&env, &s.id);
    assert!(
        log.contains("the agent sent a line that is not JSON-RPC"),
        "{log}"
    );
    assert!(
        log.contains("ignoring session/update of unknown kind \"hologram_update\""),
        "{log}"
    );

    // And the session goes on.
    env.owt_ok(&repo, ["send", "junk", "again"]);
    wait_until("the second reply", WAIT, || {
        env.owt_ok(&repo, ["peek", "junk"])
            .contains("fake reply to: again")
    });
    let s = wait_status(&env, &repo, "junk", |s| s.status == Status::NeedsInput);
    assert_eq!(s.acp.as_ref().map(|a| a.turns), Some(2));
    assert_eq!(s.acp.as_ref().map(|a| a.input_tokens), Some(20));
}

/// An agent of yours keeps no records owt reads: what it reports through
/// ACP (`PromptResponse.usage`, 10 in and 2 out per turn from the fake
/// agent; the cumulative cost of `usage_update`) is what `owt usage`
/// counts, per session, agent and day, once.
#[test]
fn tokens_an_acp_agent_of_yours_reports_count_in_owt_usage() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    fake_acp_tool(&env, "ok");
    start(&env, &repo, "mine", "hello");
    wait_status(&env, &repo, "mine", |s| {
        s.acp.as_ref().is_some_and(|a| a.turns == 1) && s.status == Status::NeedsInput
    });
    env.owt_ok(&repo, ["send", "mine", "again"]);
    let s = wait_status(&env, &repo, "mine", |s| {
        s.acp.as_ref().is_some_and(|a| a.turns == 2) && s.status == Status::NeedsInput
    });
    let want = (20, 4, 0, 0);
    let counts = |t: &owt_protocol::TokenUsage| {
        (
            t.input_tokens,
            t.output_tokens,
            t.cache_read_tokens,
            t.cache_write_tokens,
        )
    };
    assert_eq!(s.usage.as_ref().map(counts), Some(want), "{s:?}");
    // `usage_update`: the context fill, and the cumulative cost ($0.25 a turn).
    let acp = s.acp.as_ref().unwrap();
    assert_eq!((acp.context_used, acp.context_size), (Some(24), Some(1000)));
    assert_eq!(acp.cost_usd, Some(0.5), "{s:?}");
    assert_eq!(
        s.usage.as_ref().and_then(|u| u.cost_usd),
        Some(0.5),
        "{s:?}"
    );
    // Twice: a second read counts nothing again.
    for _ in 0..2 {
        let usage: UsageOutput = env.owt_json(&repo, ["usage", "--days", "1"]);
        let mine = usage.sessions.iter().find(|u| u.name == "mine");
        assert!(
            mine.is_some_and(|u| u.live && u.provider == "acpfake" && counts(&u.tokens) == want),
            "{usage:#?}"
        );
        let agent = usage.by_agent.iter().find(|a| a.provider == "acpfake");
        assert_eq!(agent.map(|a| counts(&a.tokens)), Some(want), "{usage:#?}");
        assert_eq!(usage.by_day.len(), 1, "{usage:#?}");
        assert_eq!(counts(&usage.by_day[0].tokens), want, "{usage:#?}");
        assert_eq!(usage.by_day[0].tokens.cost_usd, Some(0.5), "{usage:#?}");
    }
}

#[test]
fn an_agent_that_dies_mid_turn_is_exited_with_its_code() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    fake_acp_tool(&env, "die");
    let s = start(&env, &repo, "dies", "hello");
    let s2 = wait_status(&env, &repo, "dies", |s| s.status == Status::Exited);
    assert_eq!(s2.status_text, "exited with code 3");
    assert_eq!(s2.exit_code, Some(3));
    // The transcript says what happened, after the host is gone too.
    wait_until("the host to leave", WAIT, || {
        !env.owt_home
            .join("run")
            .join(format!("{}.sock", s.id))
            .exists()
    });
    let peek = env.owt_ok(&repo, ["peek", "dies"]);
    assert!(peek.contains("starting on it"), "{peek}");
    assert!(
        peek.contains("owt: the agent exited with code 3 in the middle of a turn"),
        "{peek}"
    );
    let err = env.owt_err(&repo, ["send", "dies", "more"]);
    assert!(
        err.contains("not typing into `dies`: the agent exited with code 3"),
        "{err}"
    );
}

#[test]
fn the_agents_files_and_terminals_stay_in_its_worktree() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    // A committed link that leads out of every checkout of the repository.
    std::os::unix::fs::symlink("../../escape-target", repo.join("link")).unwrap();
    env.git(&repo, ["add", "link"]);
    env.git(&repo, ["commit", "-qm", "a link"]);
    let target = env.path().join("escape-target");
    std::fs::create_dir_all(&target).unwrap();
    fake_acp_tool(&env, "escape");
    let s = start(&env, &repo, "escape", "try");
    wait_status(&env, &repo, "escape", |s| s.status == Status::NeedsInput);
    let worktree = std::path::PathBuf::from(&s.worktree);
    let peek = env.owt_ok(&repo, ["peek", "escape"]);
    for refused in [
        "write ..: error -32602",
        "write abs: error -32602",
        "write link: error -32602",
        "read abs: error -32602",
        "terminal outside: error -32602",
    ] {
        assert!(peek.contains(refused), "{refused}:\n{peek}");
    }
    assert!(peek.contains("write inside: ok null"), "{peek}");
    assert!(
        peek.contains(r#"read inside: ok {"content":"inside\n"}"#),
        "{peek}"
    );
    assert!(peek.contains("terminal inside: ok"), "{peek}");
    assert!(
        peek.contains(r#"exit: ok {"exitCode":0,"signal":null}"#),
        "{peek}"
    );
    let real = worktree.canonicalize().unwrap();
    assert!(
        peek.contains(&format!("output: \"{}\\n\"", real.display())),
        "{peek}"
    );
    assert!(!worktree.parent().unwrap().join("outside.txt").exists());
    assert!(!target.join("via-link.txt").exists());
    assert_eq!(
        std::fs::read_to_string(worktree.join("inside.txt")).unwrap(),
        "inside\n"
    );
}

#[test]
fn an_acp_sessions_host_records_its_git_facts_for_owt_list() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    fake_acp_tool(&env, "escape");
    let s = start(&env, &repo, "escape", "try");
    wait_status(&env, &repo, "escape", |s| s.status == Status::NeedsInput);
    // The agent wrote `inside.txt` through `fs/write_text_file`; its host
    // reads that from its journal and records it, as a terminal session's
    // host does: a listing takes it from the store, not from a walk. The
    // host may record its first reading before the agent's writes land
    // (a write is in the store within the journal's quiet time, not at
    // once), so wait for the reading that has them.
    let worktree = std::path::PathBuf::from(&s.worktree);
    let changed = env.git(&worktree, ["status", "--porcelain", "-uall"]);
    assert!(changed.contains("inside.txt"), "{changed}");
    wait_until("the ACP host's git facts to be recorded", WAIT, || {
        env.listing_sources(&repo) == vec!["the host's record"]
            && session(&env, &repo, "escape").changed_files as usize == changed.lines().count()
    });
    let before = session(&env, &repo, "escape").changed_files;
    // A later write in its checkout shows too, still from the host.
    std::fs::write(worktree.join("later.txt"), "later\n").unwrap();
    wait_until("the later write to show in `owt list`", WAIT, || {
        session(&env, &repo, "escape").changed_files == before + 1
    });
    assert_eq!(env.listing_sources(&repo), vec!["the host's record"]);
}

#[test]
fn a_denied_permission_request_writes_nothing() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    fake_acp_tool(&env, "ask");
    let s = start(&env, &repo, "asks", "go");
    let blocked = wait_status(&env, &repo, "asks", |s| s.status == Status::Blocked);
    let p = blocked.permission.expect("the question in owt list");
    assert_eq!(p.question, "Write ask.txt");
    assert_eq!(
        p.options
            .iter()
            .map(|o| o.name.as_str())
            .collect::<Vec<_>>(),
        ["Allow", "Reject"]
    );
    // A wrong option is refused, and changes nothing.
    let err = env.owt_err(&repo, ["approve", "asks", "7"]);
    assert!(
        err.contains("no option `7`; the options are: 1 Allow (yes), 2 Reject (no)"),
        "{err}"
    );
    assert_eq!(session(&env, &repo, "asks").status, Status::Blocked);
    let denied = env.owt_ok(&repo, ["deny", "asks"]);
    assert_eq!(denied.trim(), "asks: Write ask.txt → Reject");
    let after = wait_status(&env, &repo, "asks", |s| s.status == Status::NeedsInput);
    assert!(after.permission.is_none());
    assert!(env.owt_ok(&repo, ["peek", "asks"]).contains("you chose no"));
    assert!(!std::path::Path::new(&s.worktree).join("ask.txt").exists());
    let err = env.owt_err(&repo, ["approve", "asks"]);
    assert!(
        err.contains("not approving for `asks`: no permission request is pending"),
        "{err}"
    );
}

#[test]
fn a_program_that_is_not_an_acp_agent_gets_a_bounded_number_of_answers() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    fake_acp_tool(&env, "echo");
    let s = start(&env, &repo, "echo", "hello");
    // It echoes each error response back as a line that is not JSON-RPC:
    // owt answers 20 of them, then stops (and the echoes with it).
    wait_until("owt to stop answering", WAIT, || {
        host_log(&env, &s.id).contains("skipping further ones without an answer")
    });
    let log = host_log(&env, &s.id);
    assert_eq!(
        log.matches("the agent sent a line that is not JSON-RPC")
            .count(),
        20,
        "{log}"
    );
    assert_eq!(session(&env, &repo, "echo").status, Status::Starting);
    env.owt_ok(&repo, ["__host", "stop", "echo"]);
    assert_eq!(session(&env, &repo, "echo").status, Status::Exited);
}

/// `owt acp`'s side: lines from the editor that are not JSON-RPC, an
/// unknown method and another protocol version get JSON-RPC answers, and
/// the connection goes on until its input ends.
#[test]
fn owt_acp_answers_bad_lines_and_goes_on() {
    use std::io::{BufRead, BufReader, Write};
    let env = TestEnv::new();
    let repo = env.repo("app");
    let mut child = env
        .owt_cmd(&repo, ["acp"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        // (its warnings about the bad lines: asserted through the answers)
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("owt acp");
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut ask = |line: &str| -> serde_json::Value {
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
        let got = lines.next().expect("an answer").expect("reading owt acp");
        serde_json::from_str(&got).unwrap_or_else(|e| panic!("{e}: {got}"))
    };
    let r = ask("this is not JSON");
    assert_eq!(
        (r["id"].clone(), r["error"]["code"].clone()),
        (serde_json::Value::Null, (-32700).into())
    );
    let r = ask(r#"{"jsonrpc":"2.0","id":1}"#);
    assert_eq!(r["error"]["code"], -32600, "{r}");
    let r = ask(r#"{"jsonrpc":"2.0","id":2,"method":"session/teleport","params":{}}"#);
    assert_eq!(
        (r["id"].clone(), r["error"]["code"].clone()),
        (2.into(), (-32601).into())
    );
    // ACP: the agent answers with the version it speaks; the client decides.
    let r = ask(r#"{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":2}}"#);
    assert_eq!(r["result"]["protocolVersion"], 1, "{r}");
    let r = ask(
        r#"{"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"sessionId":"nope","prompt":[]}}"#,
    );
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("nope"),
        "{r}"
    );
    drop(stdin);
    let status = child.wait().unwrap();
    assert!(status.success(), "{status}");
}

/// A session beyond `[agent] max_running` waits in the queue as an ACP
/// session; once started (`owt start`, the same launch the queue uses when
/// a running agent ends) its agent runs as the ACP server it was asked
/// for, and its first prompt goes through the protocol.
#[test]
fn a_queued_acp_session_starts_as_an_acp_session() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    let log = fake_acp_tool(&env, "ok");
    // One agent at a time; no memory kept free, so only the count decides.
    let config = env.home.join(".config/owt/config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("\n[agent]\nmax_running = 1\nmin_free_memory = \"0 B\"\n");
    std::fs::write(&config, text).unwrap();

    start(&env, &repo, "first", "hello");
    wait_status(&env, &repo, "first", |s| s.status == Status::NeedsInput);
    let queued = start(&env, &repo, "later", "the queued task");
    assert_eq!(queued.status, Status::Queued, "{queued:?}");
    assert_eq!(queued.agent_pid, None, "{queued:?}");
    assert!(
        !fake_log(&log)
            .iter()
            .any(|m| m.to_string().contains("the queued task")),
        "a queued session's agent has not been asked anything"
    );

    let started: SessionView = env.owt_json(&repo, ["start", "later"]);
    assert_eq!(
        started.transport,
        owt_protocol::host::Transport::Acp,
        "{started:?}"
    );
    let later = wait_status(&env, &repo, "later", |s| s.status == Status::NeedsInput);
    assert_eq!(later.acp.as_ref().map(|a| a.turns), Some(1), "{later:?}");
    let peek = env.owt_ok(&repo, ["peek", "later"]);
    assert!(peek.contains("fake reply to: the queued task"), "{peek}");
    let prompted = fake_log(&log)
        .iter()
        .any(|m| m["method"] == "session/prompt" && m.to_string().contains("the queued task"));
    assert!(prompted, "the first prompt went through session/prompt");
}

/// The ACP host runs in the session host binary (`owt-host`), but the MCP
/// server it gives the agent is owt's (`owt mcp`): owt-host has no such
/// verb.
#[test]
fn the_acp_host_gives_the_agent_owts_mcp_server_not_the_host_binary() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    let log = fake_acp_tool(&env, "ok");
    let s = start(&env, &repo, "mcp", "hello");
    wait_status(&env, &repo, "mcp", |s| s.status == Status::NeedsInput);
    let spec = format!("{}.spec.json", s.id);
    let host = env
        .our_processes()
        .into_iter()
        .find(|pid| {
            let cmd = owt_e2e::cmdline(*pid as u32);
            cmd.iter().any(|a| a == "__host") && cmd.iter().any(|a| a.ends_with(&spec))
        })
        .expect("the session's host");
    let host_exe = std::fs::read_link(format!("/proc/{host}/exe")).unwrap();
    assert_eq!(host_exe.file_name().unwrap(), "owt-host", "{host_exe:?}");
    let got = fake_log(&log);
    let new = got
        .iter()
        .find(|m| m["method"] == "session/new")
        .unwrap_or_else(|| panic!("no session/new in {got:?}"));
    let server = &new["params"]["mcpServers"][0];
    let owt = owt_e2e::owt_bin().canonicalize().unwrap();
    assert_eq!(server["command"], owt.to_string_lossy().as_ref(), "{new}");
    assert_eq!(server["args"], serde_json::json!(["mcp"]), "{new}");
}
