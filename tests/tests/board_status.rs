//! End-to-end tests of issue #34 ("the board never lies"), its status and
//! names half (the verbs and lanes half is board_truth.rs): an interrupted
//! `owt new` leaves no session that never starts, names and prefixes,
//! `owt list`'s width, what `blocked` says — the real binary, real git
//! repositories, a real store.

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use owt_e2e::{pid_alive, wait_until, TestEnv};
use owt_protocol::DoctorReport;

/// A trusted repository whose setup script writes its pid to the returned
/// file, then sleeps 20 s; `owt new "slow setup"` spawned in it, waited
/// until its setup script runs. The child and the script's pid.
fn owt_new_in_slow_setup(env: &TestEnv) -> (PathBuf, Child, u32) {
    let repo = env.repo("app");
    let pid_file = env.path().join("setup.pid");
    std::fs::create_dir_all(repo.join(".owt")).unwrap();
    std::fs::write(
        repo.join(".owt/setup.sh"),
        format!("echo $$ > '{}'; sleep 20\n", pid_file.display()),
    )
    .unwrap();
    env.trust(&repo);
    let child = env
        .owt_cmd(&repo, ["new", "slow setup"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut script = 0;
    wait_until("the setup script to start", Duration::from_secs(30), || {
        script = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|t| t.trim().parse().ok())
            .unwrap_or(0);
        script != 0
    });
    (repo, child, script)
}

fn signal(pid: u32, signal: i32) {
    // SAFETY: kill(2) on a process this test started.
    unsafe { libc::kill(pid as libc::pid_t, signal) };
}

/// Regression (#34.2): Ctrl-C during `owt new`'s 20 s setup script left
/// the session `starting` forever. Now the script is stopped and what
/// `owt new` made is removed, at once.
#[test]
fn sigint_during_setup_removes_the_half_made_session() {
    let env = TestEnv::new();
    let (repo, child, script) = owt_new_in_slow_setup(&env);
    let listed = env.sessions(&repo).sessions;
    assert_eq!(listed.len(), 1, "in setup");
    assert_eq!(listed[0].status_text, "starting: setting up the worktree");
    let interrupted_at = Instant::now();
    signal(child.id(), libc::SIGINT);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        interrupted_at.elapsed() < Duration::from_secs(10),
        "owt new waited for the setup script: {:?}",
        interrupted_at.elapsed()
    );
    assert!(
        stderr.contains("interrupted: session `slow-setup` was not created"),
        "{stderr}"
    );
    wait_until(
        "the setup script to be stopped",
        Duration::from_secs(5),
        || !pid_alive(script),
    );
    assert!(env.sessions(&repo).sessions.is_empty());
    assert!(!env.path().join("app.worktrees/slow-setup").exists());
    assert_eq!(env.git(&repo, ["branch", "--list", "owt/slow-setup"]), "");
    let report: DoctorReport = env.owt_json(&repo, ["doctor"]);
    assert!(report.findings.is_empty(), "{:?}", report.findings);
}

/// Regression (#34.2): an `owt new` that dies before starting its agent
/// (killed: no chance to clean up) left a session `owt doctor --fix` did
/// not find. Doctor names it, and `--fix` deletes it.
#[test]
fn doctor_finds_and_fixes_a_session_whose_owt_new_died() {
    let env = TestEnv::new();
    let (repo, mut child, script) = owt_new_in_slow_setup(&env);
    signal(child.id(), libc::SIGKILL);
    child.wait().unwrap();
    // The script runs in its own process group, which nobody stopped.
    signal(script, libc::SIGKILL);
    let report: DoctorReport = env.owt_json(&repo, ["doctor"]);
    let found = report
        .findings
        .iter()
        .find(|f| f.kind == "starter-gone")
        .unwrap_or_else(|| panic!("no starter-gone finding: {:?}", report.findings));
    assert_eq!(found.session.as_deref(), Some("slow-setup"));
    assert!(!found.fixed);
    let fixed: DoctorReport = env.owt_json(&repo, ["doctor", "--fix"]);
    assert!(
        fixed
            .findings
            .iter()
            .any(|f| f.kind == "starter-gone" && f.fixed),
        "{:?}",
        fixed.findings
    );
    assert!(env.sessions(&repo).sessions.is_empty());
    assert!(!Path::new(&found.path.clone().unwrap()).exists());
}

/// Regression (#34.3): a permission dialog on a follow-up turn read
/// `needs-input` (READY TO SHIP) for ~5 s before `blocked`: Claude's
/// overwrite dialog ("Do you want to overwrite README.md?") read as its
/// input box until Claude's own notification came. The real Claude Code
/// against the scripted model: a first turn with a dialog, approved, that
/// ends; work in the worktree; then `owt send` of a task that makes it
/// overwrite a file. Polled every 0.1 s: `blocked` within 1 s of the
/// dialog appearing on screen, and never `needs-input` while it is up.
#[test]
fn a_dialog_on_a_follow_up_turn_is_blocked_at_once() {
    use owt_e2e::agents::{setup_offline, Agent, Model, StatusLog};
    use owt_protocol::Status;
    use serde_json::json;
    const AGENT: Duration = Duration::from_secs(120);
    let mut env = TestEnv::new();
    let repo = env.repo("app");
    let name = "follow-up";
    let worktree = env.path().join("app.worktrees").join(name);
    let model = Model::start(
        &env.path().join("model"),
        &json!({"turns": [
            {"steps": [
                {"write": {"path": "hello.txt", "content": "hello\n"}, "stream_secs": 0.5},
                {"text": "Hello: I wrote hello.txt.", "stream_secs": 0.5}]},
            {"steps": [
                {"read": {"path": "README.md"}, "stream_secs": 0.3},
                {"write": {"path": "README.md", "content": "# test repository\n\nWith -q.\n"},
                 "stall": 1, "stream_secs": 0.5},
                {"text": "I mentioned -q in README.md.", "stream_secs": 0.5}]}]}),
    );
    setup_offline(
        &mut env,
        Agent::Claude,
        &model,
        &[repo.clone(), worktree.clone()],
        true,
    );
    env.owt_ok(
        &repo,
        ["new", "Say hello", "--name", name, "--ai-tool", "claude"],
    );
    let mut status = StatusLog::start(&env, &repo, name, true, Duration::from_millis(100));
    let asked = model.wait_step_answered(0, AGENT);
    status.wait_for("the first dialog", asked.end.unwrap(), AGENT, |o| {
        o.status == Status::Blocked
    });
    env.owt_ok(&repo, ["send", name, "1"]);
    let first = model.wait_step_answered(1, AGENT);
    status.wait_for("the first turn over", first.end.unwrap(), AGENT, |o| {
        o.status == Status::NeedsInput
    });
    // Work in the worktree: the session is READY TO SHIP while it waits.
    std::fs::write(worktree.join("notes.txt"), "work\n").unwrap();
    wait_until("READY TO SHIP", AGENT, || {
        env.session(&repo, name).lane == owt_protocol::Lane::ReadyToShip
    });
    let sent_at = owt_e2e::agents::now_s();
    env.owt_ok(&repo, ["send", name, "Also mention -q in README.md"]);
    let shown = status.wait_for("the dialog on screen", sent_at, AGENT, |o| {
        o.screen
            .as_deref()
            .is_some_and(|s| s.contains("Do you want to overwrite README.md?"))
    });
    let blocked = status.wait_for("blocked", sent_at, AGENT, |o| o.status == Status::Blocked);
    let observations = status.stop();
    let while_up: Vec<String> = observations
        .iter()
        .filter(|o| o.t >= shown.t && o.t <= blocked.t)
        .map(|o| format!("+{:.2}s {}", o.t - shown.t, o.text))
        .collect();
    let timeline = owt_e2e::agents::timeline(&model.requests(), &observations);
    eprintln!(
        "blocked {:.2}s after the dialog appeared",
        blocked.t - shown.t
    );
    assert!(
        blocked.t - shown.t <= 1.0,
        "blocked {:.2}s after the dialog appeared: {while_up:?}\n{timeline}",
        blocked.t - shown.t
    );
    assert!(
        observations
            .iter()
            .filter(|o| o.t >= shown.t && o.t <= blocked.t)
            .all(|o| o.status != Status::NeedsInput),
        "needs-input while the dialog was up: {while_up:?}\n{timeline}"
    );
}

/// #34.6: `blocked` says what Claude Code's dialog asks (in `owt list` and
/// `owt peek`'s header); `owt approve` answers it with Claude's own key;
/// with no dialog on screen `owt approve` refuses and types nothing.
/// The real Claude Code against the scripted model.
#[test]
fn owt_approve_answers_claude_codes_dialog_and_only_a_dialog() {
    use owt_e2e::agents::{setup_offline, Agent, Model};
    use owt_protocol::Status;
    use serde_json::json;
    const AGENT: Duration = Duration::from_secs(120);
    let mut env = TestEnv::new();
    let repo = env.repo("app");
    let name = "approve-me";
    let worktree = env.path().join("app.worktrees").join(name);
    let model = Model::start(
        &env.path().join("model"),
        &json!({"turns": [{"steps": [
            {"write": {"path": "hello.txt", "content": "hello\n"}, "stream_secs": 0.5},
            {"text": "I wrote hello.txt.", "stream_secs": 0.5}]}]}),
    );
    setup_offline(
        &mut env,
        Agent::Claude,
        &model,
        &[repo.clone(), worktree.clone()],
        true,
    );
    env.owt_ok(
        &repo,
        [
            "new",
            "Write hello.txt",
            "--name",
            name,
            "--ai-tool",
            "claude",
        ],
    );
    wait_until("blocked", AGENT, || {
        env.session(&repo, name).status == Status::Blocked
    });
    let view = env.session(&repo, name);
    assert_eq!(
        view.status_text,
        "blocked: Do you want to create hello.txt?"
    );
    let approve = view
        .actions
        .iter()
        .find(|a| a.action == owt_protocol::SessionAction::Approve);
    assert!(approve.is_some_and(|a| a.available), "{:?}", view.actions);
    let peek = env.owt_ok(&repo, ["peek", name]);
    assert!(
        peek.starts_with("approve-me is blocked: Do you want to create hello.txt?\n"),
        "{peek}"
    );
    let approved = env.owt_ok(&repo, ["approve", name]);
    assert!(
        approved.contains("Do you want to create hello.txt? → approved"),
        "{approved}"
    );
    let last = model.wait_step_answered(1, AGENT);
    wait_until("needs-input after the turn", AGENT, || {
        env.session(&repo, name).status == Status::NeedsInput
    });
    assert_eq!(
        std::fs::read_to_string(worktree.join("hello.txt")).unwrap(),
        "hello\n"
    );
    // No dialog now: refused, nothing typed (a `1` would be a new prompt).
    let refused = env.owt_err(&repo, ["approve", name]);
    assert!(refused.contains("shows no permission dialog"), "{refused}");
    let screen = env.owt_ok(&repo, ["peek", name]);
    assert!(
        !screen.lines().any(|l| l.trim_start().starts_with("❯ 1")),
        "{screen}"
    );
    assert_eq!(model.main_requests().last().map(|r| r.seq), Some(last.seq));
}

/// #34.7: a long task's name is cut at a word boundary; every verb takes a
/// unique prefix and suggests near misses; the shell completion scripts
/// complete session names (bash, run for real).
#[test]
fn names_are_whole_words_prefixes_work_and_complete_in_bash() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    let (long, _) = env.new_session(&repo, "Add a changelog entry for the 0.5.1 release");
    assert_eq!(long, "add-a-changelog-entry-for-the-0-5-1");
    let (auth, _) = env.new_session(&repo, "Add auth");
    env.owt_ok(&repo, ["peek", "add-a-ch"]);
    let waited = env.owt_ok(&repo, ["wait", "add-au", "--timeout", "1"]);
    assert!(waited.contains(&auth), "{waited}");
    let err = env.owt_err(&repo, ["peek", "add-a"]);
    assert!(
        err.contains("`add-a` is the start of several sessions"),
        "{err}"
    );
    let err = env.owt_err(&repo, ["delete", "add-auht"]);
    assert!(err.contains("did you mean `add-auth`?"), "{err}");
    assert_eq!(env.sessions(&repo).sessions.len(), 2, "nothing deleted");

    let names = env.owt_ok(&repo, ["__complete-names"]);
    let mut names: Vec<&str> = names.lines().collect();
    names.sort();
    assert_eq!(names, [long.as_str(), auth.as_str()]);
    let script = env.path().join("owt.bash");
    std::fs::write(&script, env.owt_ok(&repo, ["completions", "bash"])).unwrap();
    let bin_dir = owt_e2e::owt_bin().parent().unwrap().to_path_buf();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap());
    let completed = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!(
            "source '{}'; COMP_WORDS=(owt peek add-a-c); COMP_CWORD=2; _owt_with_names; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            script.display()
        ))
        .current_dir(&repo)
        .env("PATH", path)
        .env("HOME", &env.home)
        .env("OWT_HOME", &env.owt_home)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&completed.stdout).trim(),
        long,
        "{}",
        String::from_utf8_lossy(&completed.stderr)
    );
}

/// #34.9: a template is guessed only when the task says its kind plainly,
/// and `owt new` says which one the prompt carries and how to avoid it.
/// Regression: "Fix typos in CONTRIBUTING" got the bugfix protocol.
#[test]
fn owt_new_says_which_template_and_guesses_only_when_sure() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    let said = |task: &str, extra: &[&str]| {
        let mut args = vec!["new", task];
        args.extend_from_slice(extra);
        let out = env.owt(&repo, &args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let typos = said("Fix typos in CONTRIBUTING", &[]);
    assert!(
        typos.contains("Template: docs, guessed from the task (pick another with --template NAME; --raw sends the task alone)."),
        "{typos}"
    );
    let unsure = said("Make the cache faster", &[]);
    assert!(
        unsure.contains("Template: none guessed; the general protocol"),
        "{unsure}"
    );
    let chosen = said("Make the cache faster again", &["--template", "refactor"]);
    assert!(
        chosen.contains("Template: refactor (--template)."),
        "{chosen}"
    );
    let raw = said("Verbatim", &["--raw"]);
    assert!(!raw.contains("Template:"), "{raw}");
}

/// #34.9: the setup script's output streams through `owt new` while it
/// runs (not after, nor never: its stdout went nowhere), and is kept in a
/// log whose path `owt new` names.
#[test]
fn setup_output_streams_while_it_runs_and_is_kept_in_a_named_log() {
    use std::io::BufRead;
    let env = TestEnv::new();
    let repo = env.repo("app");
    let go = env.path().join("go");
    std::fs::create_dir_all(repo.join(".owt")).unwrap();
    std::fs::write(
        repo.join(".owt/setup.sh"),
        format!(
            "echo step one\nwhile [ ! -e '{}' ]; do sleep 0.05; done\necho step two >&2\n",
            go.display()
        ),
    )
    .unwrap();
    env.trust(&repo);
    let mut child = env
        .owt_cmd(&repo, ["new", "streaming setup"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            let _ = tx.send(line);
        }
    });
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !seen.iter().any(|l: &String| l == "  setup: step one") {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => seen.push(line),
            Err(_) => panic!("no `setup: step one` while the script runs: {seen:?}"),
        }
    }
    assert!(!go.exists(), "the script was still waiting");
    std::fs::write(&go, "").unwrap();
    assert!(child.wait().unwrap().success());
    seen.extend(rx.iter());
    assert!(seen.iter().any(|l| l == "  setup: step two"), "{seen:?}");
    let named = seen
        .iter()
        .find_map(|l| l.split("its output is kept in ").nth(1))
        .unwrap_or_else(|| panic!("no log named: {seen:?}"));
    let log = named.trim_end_matches(')');
    assert_eq!(
        std::fs::read_to_string(log).unwrap(),
        "step one\nstep two\n"
    );
}

/// #34.9: a `--headless` run that ends with no changes shows its last
/// output in `owt peek` (each agent's non-interactive form, for real).
#[test]
fn a_headless_run_with_no_changes_shows_its_last_output_in_peek() {
    use owt_e2e::agents::{setup_offline, Agent, Model};
    use serde_json::json;
    for agent in [Agent::Codex, Agent::Gemini, Agent::Claude] {
        let mut env = TestEnv::new();
        let repo = env.repo("app");
        let name = format!("{}-headless", agent.name());
        let worktree = env.path().join("app.worktrees").join(&name);
        let reply = "Nothing needed changing: the README is fine.";
        let model = Model::start(
            &env.path().join("model"),
            &json!({"turns": [{"steps": [{"text": reply, "stream_secs": 0.5}]}]}),
        );
        setup_offline(&mut env, agent, &model, &[repo.clone(), worktree], true);
        env.owt_ok(
            &repo,
            [
                "new",
                "Check the README",
                "--name",
                &name,
                "--ai-tool",
                agent.name(),
                "--headless",
            ],
        );
        let waited = env.owt_ok(&repo, ["--json", "wait", &name, "--timeout", "120"]);
        let screen = env.owt_ok(&repo, ["peek", &name]);
        // The reply's end: Gemini CLI may print its own "[STARTUP] …"
        // diagnostics into the middle of the first words it streams.
        assert!(
            screen.contains("the README is fine."),
            "{}: {waited}\nthe final screen:\n{screen}",
            agent.name()
        );
    }
}
