//! The local feedback loop end to end (#21): a real test command that fails
//! until a file has the right content, the scripted agent
//! (`tests/data/fake_agent.py`) in a real session host that "fixes" the
//! work when owt types the failure into it, and the statuses, lanes and
//! `owt ship` refusals that follow. Every wait polls with a deadline.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use owt_e2e::{data_file, TestEnv};
use owt_protocol::{ChecksOutput, NewOutput, SessionList, SessionView};

const WAIT: Duration = Duration::from_secs(60);

/// A trusted repository whose `check.sh` passes only once `answer.txt`
/// says `fixed`, sessions running the fake agent, and `[checks]` from
/// `checks` (TOML lines).
fn repo(env: &TestEnv, agent_env: &str, checks: &str) -> PathBuf {
    let repo = env.untrusted_repo("app");
    std::fs::write(
        repo.join(".owt.toml"),
        format!(
            "[agent]\ndefault_tool = \"fake\"\n\n\
             [tools.fake]\nbinary = \"python3\"\ncommand_template = \"{{binary}} {}\"\n\
             prompt_mode = \"none\"\nenv = {{ {agent_env} }}\n\n\
             [checks]\n{checks}\n",
            data_file("fake_agent.py").display()
        ),
    )
    .unwrap();
    std::fs::write(
        repo.join("check.sh"),
        "echo \"running the tests\"\n\
         if grep -qx fixed answer.txt; then echo ok; exit 0; fi\n\
         echo \"FAIL: answer.txt says $(cat answer.txt)\"\nexit 1\n",
    )
    .unwrap();
    std::fs::write(repo.join("answer.txt"), "unanswered\n").unwrap();
    env.git(&repo, ["add", "."]);
    env.git(
        &repo,
        [
            "commit",
            "-q",
            "-m",
            "tests that fail until answer.txt says fixed",
        ],
    );
    env.trust(&repo);
    repo
}

fn session(env: &TestEnv, repo: &Path, name: &str) -> SessionView {
    let list: SessionList = env.owt_json(repo, ["list"]);
    list.sessions
        .into_iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no session {name}"))
}

/// Polls the session until `cond` holds (or fails loudly with the last view).
fn wait_session(
    env: &TestEnv,
    repo: &Path,
    name: &str,
    what: &str,
    cond: impl Fn(&SessionView) -> bool,
) -> SessionView {
    let deadline = Instant::now() + WAIT;
    loop {
        let s = session(env, repo, name);
        if cond(&s) {
            return s;
        }
        if Instant::now() > deadline {
            panic!(
                "timed out after {WAIT:?} waiting for {name}: {what}; last seen: {}",
                serde_json::to_string_pretty(&s).unwrap()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// What the fake agent received, one entry per submitted line or paste.
fn agent_lines(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str::<String>(l).expect("agent log line"))
        .collect()
}

fn lane_of(env: &TestEnv, repo: &Path, name: &str) -> String {
    let board: serde_json::Value = env.owt_json(repo, Vec::<&str>::new());
    for lane in board["lanes"].as_array().unwrap() {
        if lane["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["name"] == name)
        {
            return lane["lane"].as_str().unwrap().to_string();
        }
    }
    panic!("{name} is on no lane: {board}")
}

fn wait_lane(env: &TestEnv, repo: &Path, name: &str, lane: &str) {
    let deadline = Instant::now() + WAIT;
    loop {
        let now = lane_of(env, repo, name);
        if now == lane {
            return;
        }
        if Instant::now() > deadline {
            let s = session(env, repo, name);
            panic!("timed out waiting for {name} in {lane}: it is in {now}; {s:#?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `owt new NAME`, waiting until the agent is at its prompt (and, with
/// `when = "turn-end"`, its first turn was looked at: nothing to check).
fn start(env: &TestEnv, repo: &Path, name: &str, turn_end: bool) -> PathBuf {
    let out: NewOutput = env.owt_json(repo, ["new", "--name", name, "answer the question"]);
    let worktree = PathBuf::from(out.session.worktree);
    // The agent is up and its first turn (nothing to check) is over.
    wait_session(env, repo, name, "the first turn looked at", |s| {
        s.status == owt_protocol::Status::NeedsInput
            && (!turn_end || s.checks.as_ref().is_some_and(|c| c.state == "skipped"))
    });
    worktree
}

#[test]
fn failing_checks_are_typed_into_the_agent_which_fixes_them_then_ready_to_ship() {
    let env = TestEnv::new();
    let log = env.path().join("agent.log");
    let repo = repo(
        &env,
        &format!(
            "FAKE_LOG = \"{}\", FAKE_FIX = \"answer.txt=fixed\"",
            log.display()
        ),
        "command = \"sh check.sh\"\ntimeout = 60\nmax_attempts = 3",
    );
    let worktree = start(&env, &repo, "loop", true);

    // The agent's turn: wrong work. The turn ends, the checks fail, the
    // failure is typed in, the agent fixes it, the checks pass.
    env.owt_ok(&repo, ["send", "loop", "write answer.txt wrong"]);
    let s = wait_session(&env, &repo, "loop", "checks passed", |s| {
        s.checks
            .as_ref()
            .is_some_and(|c| c.state == "passed" && c.current)
    });
    assert_eq!(
        std::fs::read_to_string(worktree.join("answer.txt")).unwrap(),
        "fixed\n"
    );
    let lines = agent_lines(&log);
    let told: Vec<&String> = lines.iter().filter(|l| l.starts_with("owt:")).collect();
    assert_eq!(told.len(), 1, "one failure typed in: {lines:#?}");
    let message = told[0];
    assert!(
        message.contains("the checks failed on your work (fix 1 of 3)"),
        "{message}"
    );
    assert!(message.contains("Command: sh check.sh"), "{message}");
    assert!(message.contains("FAIL: answer.txt says wrong"), "{message}");
    assert!(message.contains("Full log: "), "{message}");
    assert!(message.contains("Fix it and end your turn"), "{message}");
    // The log named is the run's whole output, under $OWT_HOME/logs.
    let log_path = message
        .lines()
        .find_map(|l| l.strip_prefix("Full log: "))
        .unwrap();
    assert!(
        log_path.starts_with(&*env.owt_home.to_string_lossy()),
        "{log_path}"
    );
    let failed_log = std::fs::read_to_string(log_path).unwrap();
    assert!(
        failed_log.contains("FAIL: answer.txt says wrong"),
        "{failed_log}"
    );
    // Nothing of the checks reached the agent's terminal on their own: the
    // passing run's output is in no screen line, the failing one's only in
    // the message typed.
    let screen = env.owt_ok(&repo, ["peek", "loop"]);
    assert_eq!(screen.matches("running the tests").count(), 1, "{screen}");

    // Green work on a finished turn: READY TO SHIP, and `owt checks` says so.
    wait_lane(&env, &repo, "loop", "ready-to-ship");
    assert_eq!(s.checks.as_ref().unwrap().attempt, 0);
    let shown: ChecksOutput = env.owt_json(&repo, ["checks", "loop"]);
    assert_eq!(shown.checks.unwrap().state, "passed");
    let text = env.owt_ok(&repo, ["checks", "loop"]);
    assert!(text.contains("Checks of loop: sh check.sh"), "{text}");
    assert!(text.contains(": passed"), "{text}");

    // Shipping green work: the checks on record hold, it ships.
    let out = env.owt_ok(&repo, ["ship", "loop"]);
    assert!(out.contains("The checks passed."), "{out}");
    assert_eq!(
        std::fs::read_to_string(repo.join("answer.txt")).unwrap(),
        "fixed\n"
    );
}

#[test]
fn attempts_exhausted_needs_you_and_ship_refuses_red_work() {
    let env = TestEnv::new();
    let log = env.path().join("agent.log");
    // This agent cannot fix anything.
    let repo = repo(
        &env,
        &format!("FAKE_LOG = \"{}\"", log.display()),
        "command = \"sh check.sh\"\ntimeout = 60\nmax_attempts = 2",
    );
    let worktree = start(&env, &repo, "stuck", true);
    env.owt_ok(&repo, ["send", "stuck", "write answer.txt wrong"]);
    let s = wait_session(&env, &repo, "stuck", "checks failed for good", |s| {
        s.status == owt_protocol::Status::ChecksFailed && !s.status_text.contains("fixing")
    });
    assert_eq!(s.checks.as_ref().unwrap().attempt, 3, "{s:#?}");
    assert_eq!(lane_of(&env, &repo, "stuck"), "needs-you", "{s:#?}");
    let lines = agent_lines(&log);
    let told: Vec<&String> = lines.iter().filter(|l| l.starts_with("owt:")).collect();
    assert_eq!(
        told.len(),
        2,
        "max_attempts = 2: two fixes asked for, the third failure goes to you: {lines:#?}"
    );
    assert!(told[0].contains("(fix 1 of 2)"), "{}", told[0]);
    assert!(told[1].contains("(fix 2 of 2)"), "{}", told[1]);
    let text = env.owt_ok(&repo, ["list"]);
    assert!(text.contains("CHECKS"), "{text}");
    assert!(text.contains("failed 2/2"), "{text}");

    // `owt checks` exits 1 on red and shows the end of the output.
    let out = env.owt(&repo, ["checks", "stuck"]);
    assert_eq!(out.status.code(), Some(1));
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(shown.contains("FAIL: answer.txt says wrong"), "{shown}");

    // Ship refuses red work and changes nothing.
    let main_before = env.git(&repo, ["rev-parse", "main"]);
    let err = env.owt_err(&repo, ["ship", "stuck"]);
    assert!(err.contains("checks"), "{err}");
    assert!(err.contains("--no-checks"), "{err}");
    assert_eq!(env.git(&repo, ["rev-parse", "main"]), main_before);
    assert!(worktree.join("answer.txt").exists());
    assert_eq!(
        std::fs::read_to_string(worktree.join("answer.txt")).unwrap(),
        "wrong\n"
    );

    // --no-checks ships anyway, and says so.
    let out = env.owt_ok(&repo, ["ship", "stuck", "--no-checks"]);
    assert!(out.contains("skipped (--no-checks)"), "{out}");
    assert_eq!(
        std::fs::read_to_string(repo.join("answer.txt")).unwrap(),
        "wrong\n"
    );
}

#[test]
fn a_hanging_check_is_killed_at_its_timeout_and_a_flood_is_bounded() {
    let env = TestEnv::new();
    let log = env.path().join("agent.log");
    let repo = repo(
        &env,
        &format!("FAKE_LOG = \"{}\"", log.display()),
        "command = \"sh -c 'echo started; exec sleep 300'\"\ntimeout = 2\nwhen = \"manual\"",
    );
    start(&env, &repo, "hang", false);
    let t0 = Instant::now();
    let out = env.owt(&repo, ["checks", "hang", "--run"]);
    let took = t0.elapsed();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("timed out"), "{text}");
    assert!(
        took < Duration::from_secs(60),
        "killed at its timeout: {took:?}"
    );
    // Nothing of the run is left: no `sleep 300` in this test's world.
    let sleepers: Vec<i32> = env
        .our_processes()
        .into_iter()
        .filter(|p| owt_e2e::cmdline(*p as u32).iter().any(|a| a == "300"))
        .collect();
    assert!(sleepers.is_empty(), "left running: {sleepers:?}");
    // The session is usable: the agent still answers.
    env.owt_ok(&repo, ["send", "hang", "hello"]);

    // A flood: 200 000 lines; the log and the excerpt stay bounded.
    std::fs::write(
        repo.join(".owt.toml"),
        std::fs::read_to_string(repo.join(".owt.toml"))
            .unwrap()
            .replace(
                "command = \"sh -c 'echo started; exec sleep 300'\"",
                "command = \"sh -c 'seq 1 2000000; exit 3'\"",
            ),
    )
    .unwrap();
    env.trust(&repo);
    let out = env.owt(&repo, ["--json", "checks", "hang", "--run"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let shown: ChecksOutput = serde_json::from_slice(&out.stdout).unwrap();
    let c = shown.checks.unwrap();
    assert_eq!(c.exit_code, Some(3));
    let log_len = std::fs::metadata(c.log.unwrap()).unwrap().len();
    assert!(log_len <= 8 << 20, "log bounded: {log_len} bytes");
    let excerpt = shown.excerpt.unwrap();
    assert!(excerpt.lines().count() <= 80, "{}", excerpt.lines().count());
    assert!(
        excerpt.contains("2000000"),
        "the end of the output: {excerpt}"
    );
}

#[test]
fn bad_checks_config_is_a_clear_error() {
    let env = TestEnv::new();
    let repo = repo(&env, "", "command = \"sh check.sh\"\nwhen = \"sometimes\"");
    let err = env.owt_err(&repo, ["list"]);
    assert!(err.contains("when"), "{err}");
    assert!(err.contains(".owt.toml"), "{err}");
    let err = env.owt_err(&repo, ["checks", "nobody"]);
    assert!(!err.is_empty());
}

/// The pid of the session host serving `short_id` (its spec file names it).
fn host_pid(env: &TestEnv, short_id: &str) -> u32 {
    let spec = format!("{short_id}.spec.json");
    env.our_processes()
        .into_iter()
        .map(|pid| pid as u32)
        .find(|&pid| {
            let cmd = owt_e2e::cmdline(pid);
            cmd.iter().any(|a| a == "__host") && cmd.iter().any(|a| a.ends_with(&spec))
        })
        .unwrap_or_else(|| panic!("no host serves {short_id}"))
}

/// Whether the process `pid` has a thread named `name`.
fn has_thread(pid: u32, name: &str) -> bool {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .expect("the host's threads")
        .filter_map(Result::ok)
        .any(|task| {
            std::fs::read_to_string(task.path().join("comm")).is_ok_and(|c| c.trim_end() == name)
        })
}

fn wait_thread(pid: u32, name: &str, present: bool) {
    let deadline = Instant::now() + WAIT;
    while has_thread(pid, name) != present {
        assert!(
            Instant::now() < deadline,
            "timed out after {WAIT:?} waiting for the host's {name} thread to be {}",
            if present { "there" } else { "gone" }
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The feedback loop's own thread (and store connection) lives only while
/// a turn's checks run: an idle session has none (the host's monitor
/// looks), a turn's end brings it back to run them, and it goes again once
/// they are done (issue 22: an idle host's memory).
#[test]
fn the_feedback_thread_lives_only_while_a_turns_checks_run() {
    let env = TestEnv::new();
    let go = env.path().join("go");
    let repo = repo(&env, "", "command = \"sh slow.sh\"\ntimeout = 60");
    std::fs::write(
        repo.join("slow.sh"),
        format!(
            "while [ ! -e '{}' ]; do sleep 0.05; done\necho ok\n",
            go.display()
        ),
    )
    .unwrap();
    env.git(&repo, ["add", "slow.sh"]);
    env.git(
        &repo,
        ["commit", "-q", "-m", "checks that wait for the test"],
    );
    start(&env, &repo, "idle", true);
    let host = host_pid(&env, &session(&env, &repo, "idle").id);
    assert!(has_thread(host, "monitor"));
    wait_thread(host, "feedback", false);

    env.owt_ok(&repo, ["send", "idle", "write answer.txt changed"]);
    // The turn ends with new work: the thread is back, running the checks
    // (they wait for `go`).
    wait_thread(host, "feedback", true);
    wait_session(&env, &repo, "idle", "checks running", |s| {
        s.checks.as_ref().is_some_and(|c| c.state == "running")
    });
    std::fs::write(&go, "").unwrap();
    wait_session(&env, &repo, "idle", "checks passed", |s| {
        s.checks
            .as_ref()
            .is_some_and(|c| c.state == "passed" && c.current)
    });
    wait_thread(host, "feedback", false);
    assert!(has_thread(host, "monitor"), "the host lives on");
}
