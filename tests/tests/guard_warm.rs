//! `owt guard` answered by a running `owt lsp` (its live guard, over
//! `$OWT_HOME/run/lsp-<pid>.sock`): the same report as a cold run, with
//! what was written just before the question, and a cold answer when the
//! server is gone.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use owt_e2e::lsp::LspClient;
use owt_e2e::{ten_lines, wait_until, with_line, TestEnv};
use owt_protocol::NewOutput;
use serde_json::{json, Value};

const DEADLINE: Duration = Duration::from_secs(30);
const WARM: &str = "answered by the live guard of owt lsp";

/// A repository with `src.txt` and two sessions; their worktrees.
fn setup(env: &TestEnv) -> (PathBuf, PathBuf, PathBuf) {
    let repo = env.repo("app");
    std::fs::write(repo.join("src.txt"), ten_lines()).unwrap();
    env.git(&repo, ["add", "src.txt"]);
    env.git(&repo, ["commit", "-q", "-m", "ten lines"]);
    let a: NewOutput = env.owt_json(&repo, ["new", "edit src"]);
    let b: NewOutput = env.owt_json(&repo, ["new", "also edit src"]);
    (
        repo.canonicalize().unwrap(),
        PathBuf::from(a.session.worktree),
        PathBuf::from(b.session.worktree),
    )
}

fn start_lsp(env: &TestEnv, repo: &Path) -> LspClient {
    LspClient::start(
        env,
        repo,
        json!({}),
        LspClient::default_capabilities(),
        false,
    )
}

/// `owt -v --json guard ARGS`: the report, and the log (which path).
fn guard(env: &TestEnv, repo: &Path, args: &[&str]) -> (Value, String) {
    let out = env.owt(repo, [&["-v", "--json", "guard"], args].concat());
    let log = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "owt guard failed: {log}");
    (serde_json::from_slice(&out.stdout).unwrap(), log)
}

/// Polls until the server's live guard answers `owt guard`.
fn wait_warm(env: &TestEnv, repo: &Path) {
    wait_until("owt lsp answers owt guard", DEADLINE, || {
        guard(env, repo, &[]).1.contains(WARM)
    });
}

/// The report without its one timing field.
fn untimed(mut report: Value) -> Value {
    report.as_object_mut().unwrap().remove("computed_at");
    report
}

fn pair_paths(report: &Value) -> Vec<String> {
    report["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["paths"].as_array().unwrap().iter())
        .map(|p| p["path"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_warm_answer_equals_a_cold_run() {
    let env = TestEnv::new();
    let (repo, a, b) = setup(&env);
    std::fs::write(a.join("src.txt"), with_line(&ten_lines(), 3, "a 3")).unwrap();
    std::fs::write(b.join("src.txt"), with_line(&ten_lines(), 3, "b 3")).unwrap();
    std::fs::write(repo.join("src.txt"), with_line(&ten_lines(), 9, "you 9")).unwrap();
    let _lsp = start_lsp(&env, &repo);
    wait_warm(&env, &repo);
    let (warm, log) = guard(&env, &repo, &[]);
    assert!(log.contains(WARM), "{log}");
    let (cold, log) = guard(&env, &repo, &["--cold"]);
    assert!(log.contains("computed here (--cold)"), "{log}");
    assert_eq!(untimed(warm.clone()), untimed(cold));
    assert_eq!(warm["pairs"].as_array().unwrap().len(), 3, "{warm}");
    // A session's pairs only, as a cold run filters them.
    let name = warm["participants"][0]["name"]
        .as_str()
        .unwrap()
        .to_string();
    let (warm_one, _) = guard(&env, &repo, &[&name]);
    let (cold_one, _) = guard(&env, &repo, &[&name, "--cold"]);
    assert_eq!(untimed(warm_one), untimed(cold_one));
}

/// One query on the server's socket, as `owt guard` sends it: the answer.
fn ask(socket: &Path, request: &[u8]) -> Value {
    let mut stream = UnixStream::connect(socket).unwrap();
    stream.set_read_timeout(Some(DEADLINE)).unwrap();
    // The server may answer (and close) before reading it all.
    let _ = stream.write_all(request);
    let mut line = String::new();
    BufReader::new(&stream).read_line(&mut line).unwrap();
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
}

/// No stale report: what a session wrote just before the question is in
/// the answer (the server applies every queued file event first, rather
/// than answer before its debounce ran out).
#[test]
fn a_write_just_before_the_question_is_in_the_warm_answer() {
    let env = TestEnv::new();
    let (repo, a, b) = setup(&env);
    std::fs::write(b.join("new.txt"), "b's new file\n").unwrap();
    let lsp = start_lsp(&env, &repo);
    wait_warm(&env, &repo);
    let socket = env.owt_home.join(format!("run/lsp-{}.sock", lsp.pid()));
    // Asked on the socket at once (no process to start in between).
    for round in 0..10 {
        let file = format!("late-{round}.txt");
        std::fs::write(b.join(&file), "b\n").unwrap();
        std::fs::write(a.join(&file), "a\n").unwrap();
        let answer = ask(&socket, b"{\"version\": 1}\n");
        assert!(
            pair_paths(&answer["report"]).contains(&file),
            "{file}: {answer}"
        );
    }
    // And through `owt guard`.
    std::fs::write(a.join("src.txt"), with_line(&ten_lines(), 5, "a 5")).unwrap();
    std::fs::write(b.join("src.txt"), with_line(&ten_lines(), 5, "b 5")).unwrap();
    let (report, log) = guard(&env, &repo, &[]);
    assert!(log.contains(WARM), "{log}");
    let levels: Vec<&str> = report["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["level"].as_str().unwrap())
        .collect();
    assert_eq!(levels, vec!["conflict"], "{report}");
}

/// A server killed with SIGKILL leaves its record and socket: `owt guard`
/// does not try it (its pid is dead) and computes the report; the next
/// server removes them.
#[test]
fn a_killed_server_is_passed_over_and_cleaned_by_the_next() {
    let env = TestEnv::new();
    let (repo, a, b) = setup(&env);
    std::fs::write(a.join("src.txt"), with_line(&ten_lines(), 3, "a 3")).unwrap();
    std::fs::write(b.join("src.txt"), with_line(&ten_lines(), 3, "b 3")).unwrap();
    let lsp = start_lsp(&env, &repo);
    wait_warm(&env, &repo);
    let pid = lsp.pid();
    let run = env.owt_home.join("run");
    let record = run.join(format!("lsp-{pid}.json"));
    let socket = run.join(format!("lsp-{pid}.sock"));
    lsp.kill();
    assert!(record.exists() && socket.exists(), "left behind by SIGKILL");
    let (report, log) = guard(&env, &repo, &[]);
    assert!(
        log.contains("computed here (no live owt lsp answered: no owt lsp serves this repository)"),
        "{log}"
    );
    assert_eq!(report["pairs"][0]["level"], "conflict", "{report}");
    let _again = start_lsp(&env, &repo);
    wait_until("the next server removes the stale record", DEADLINE, || {
        !record.exists() && !socket.exists()
    });
    wait_warm(&env, &repo);
}

/// What is not a request gets an error answer, and the server keeps
/// serving.
#[test]
fn garbage_on_the_socket_gets_an_error_and_the_server_keeps_serving() {
    let env = TestEnv::new();
    let (repo, _, _) = setup(&env);
    let lsp = start_lsp(&env, &repo);
    wait_warm(&env, &repo);
    let socket = env.owt_home.join(format!("run/lsp-{}.sock", lsp.pid()));
    let long = "x".repeat(10_000);
    let garbage: [&[u8]; 4] = [
        b"not json\n",
        b"{\"version\": 99}\n",
        long.as_bytes(),
        b"\xff\xfe\x00\n",
    ];
    for bytes in garbage {
        let answer = ask(&socket, bytes);
        assert!(answer["error"].is_string(), "{answer}");
        assert!(answer.get("report").is_none(), "{answer}");
    }
    let (_, log) = guard(&env, &repo, &[]);
    assert!(log.contains(WARM), "{log}");
}
