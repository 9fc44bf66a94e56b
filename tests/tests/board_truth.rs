//! The board never lies (issue #34): every verb obeys the `actions` the
//! board shows, with a real session host running the scripted agent
//! (`tests/data/fake_agent.py`), real git repositories and the real `owt`
//! binary.

use std::path::{Path, PathBuf};
use std::time::Duration;

use owt_e2e::{data_file, read_file, wait_until, write_file, TestEnv};
use owt_protocol::{Lane, SessionAction, SessionView, ShipOutput, Status};

const WAIT: Duration = Duration::from_secs(30);

/// A trusted repository whose agent is the scripted fake agent (its task
/// is not typed into it: `owt send` tells it what to do).
fn repo(env: &TestEnv) -> PathBuf {
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

fn view(env: &TestEnv, repo: &Path, name: &str) -> Option<SessionView> {
    env.sessions(repo)
        .sessions
        .into_iter()
        .find(|s| s.name == name)
}

fn wait_status(env: &TestEnv, repo: &Path, name: &str, status: Status) {
    wait_until(&format!("{name} to be {}", status.as_str()), WAIT, || {
        view(env, repo, name).is_some_and(|v| v.status == status)
    });
}

fn reason(view: &SessionView, action: SessionAction) -> Option<String> {
    view.actions
        .iter()
        .find(|a| a.action == action)
        .and_then(|a| a.reason.clone())
}

/// Regression (#34 item 1): `owt ship` of a working agent stopped it,
/// committed its half-written file to main and said "Merged". Now ship,
/// merge and delete refuse with the board's reason and the flag that does
/// it anyway, changing nothing; `--now` ships.
#[test]
fn regression_verbs_refuse_a_working_agent_until_now() {
    let env = TestEnv::new();
    let repo = repo(&env);
    let out: owt_protocol::NewOutput =
        env.owt_json(&repo, ["new", "--name", "busy", "write the logging"]);
    let worktree = PathBuf::from(out.session.worktree);
    wait_status(&env, &repo, "busy", Status::NeedsInput);
    // A commit (so merge has something to merge) and a half-written file.
    write_file(&worktree, "done.txt", "finished part\n");
    env.git(&worktree, ["add", "done.txt"]);
    env.git(&worktree, ["commit", "-q", "-m", "finished part"]);
    write_file(&worktree, "half.txt", "half-writ");
    env.owt_ok(&repo, ["send", "busy", "busy 120"]);
    wait_status(&env, &repo, "busy", Status::Working);
    let board = view(&env, &repo, "busy").unwrap();
    for action in [
        SessionAction::Ship,
        SessionAction::Merge,
        SessionAction::Delete,
    ] {
        assert_eq!(
            reason(&board, action).as_deref(),
            Some("its agent is working (mid-turn)"),
            "{action:?} on the board: {board:#?}"
        );
    }
    let before = env.snapshot(&repo, &worktree);
    for (verb, flag) in [("ship", "--now"), ("merge", "--now"), ("delete", "--force")] {
        let out = env.owt(&repo, [verb, "busy"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "owt {verb}: {stderr}");
        let doing = match verb {
            "ship" => "shipping",
            "merge" => "merging",
            _ => "deleting",
        };
        assert!(
            stderr.contains(&format!(
                "Error: not {doing} `busy`: its agent is working (mid-turn); nothing was changed"
            )),
            "owt {verb}: {stderr}"
        );
        assert!(
            stderr.contains(&format!(
                "Hint: wait for its turn to end (`owt peek busy`), or run `owt {verb} busy {flag}`"
            )),
            "owt {verb}: {stderr}"
        );
        assert_eq!(
            env.snapshot(&repo, &worktree),
            before,
            "owt {verb} changed something"
        );
        assert_eq!(read_file(&worktree.join("half.txt")), "half-writ");
        let still = view(&env, &repo, "busy").expect("the session is still there");
        assert_eq!(
            still.status,
            Status::Working,
            "owt {verb} stopped the agent"
        );
    }
    let shipped: ShipOutput = env.owt_json(&repo, ["ship", "busy", "--now"]);
    assert!(shipped.committed.is_some() && shipped.merge.merged && shipped.merge.deleted);
    assert_eq!(read_file(&repo.join("half.txt")), "half-writ");
    assert!(view(&env, &repo, "busy").is_none());
}

/// Regression (#34 item 1): shipping a session with no commits and no
/// changed files printed "Merged … (x → x)" and deleted it. Now it is an
/// error that says so, and the session stays.
#[test]
fn regression_shipping_nothing_is_an_error() {
    let env = TestEnv::new();
    let repo = repo(&env);
    env.owt_ok(&repo, ["new", "--name", "empty", "nothing yet"]);
    wait_status(&env, &repo, "empty", Status::NeedsInput);
    let main_before = env.git(&repo, ["rev-parse", "main"]);
    let out = env.owt(&repo, ["ship", "empty"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "Error: not shipping `empty`: nothing to ship: no commits and no changed files; nothing was changed"
        ),
        "{stderr}"
    );
    assert!(!stderr.contains("Hint:"), "no flag ships nothing: {stderr}");
    assert_eq!(env.git(&repo, ["rev-parse", "main"]), main_before);
    assert!(view(&env, &repo, "empty").is_some());
}

/// Regression (#34 item 4): a row that conflicted with main stayed in
/// READY TO SHIP, `owt queue` disagreed with the board about who is ready,
/// and ranked a conflicting session with other overlap counts than the
/// board's. Now the queue is exactly READY TO SHIP, with the board's
/// counts, and conflicting work (with the base, or with another session)
/// is in NEEDS YOU.
#[test]
fn regression_list_lanes_and_queue_agree() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    let commit = |dir: &Path, file: &str, text: &str| {
        write_file(dir, file, text);
        env.git(dir, ["add", "--", file]);
        env.git(dir, ["commit", "-q", "-m", file]);
    };
    let (ready, wt) = env.new_session(&repo, "ready work");
    commit(&wt, "ready.txt", "ready\n");
    let (uncommitted, wt) = env.new_session(&repo, "uncommitted work");
    write_file(&wt, "uncommitted.txt", "not committed\n");
    let (base, wt) = env.new_session(&repo, "base conflict");
    commit(&wt, "README.md", "# the agent's title\n");
    commit(&repo, "README.md", "# the human's title\n");
    let (p1, wt) = env.new_session(&repo, "pair one");
    commit(&wt, "shared.txt", "one\n");
    let (p2, wt) = env.new_session(&repo, "pair two");
    commit(&wt, "shared.txt", "two\n");

    let queue: owt_protocol::guard::QueueReport = env.owt_json(&repo, ["queue"]);
    let list = env.sessions(&repo);
    let lane_of = |name: &str| {
        list.sessions
            .iter()
            .find(|s| s.name == name)
            .map(|s| s.lane)
            .unwrap()
    };
    for conflicting in [&base, &p1, &p2] {
        assert_eq!(
            lane_of(conflicting),
            Lane::NeedsYou,
            "{conflicting}: {list:#?}"
        );
    }
    let mut on_board: Vec<&str> = list
        .sessions
        .iter()
        .filter(|s| s.lane == Lane::ReadyToShip)
        .map(|s| s.name.as_str())
        .collect();
    on_board.sort();
    let mut queued: Vec<&str> = queue.steps.iter().map(|s| s.session.as_str()).collect();
    queued.sort();
    assert_eq!(on_board, vec![ready.as_str(), uncommitted.as_str()]);
    assert_eq!(queued, on_board, "{queue:#?}");
    for step in &queue.steps {
        let row = list
            .sessions
            .iter()
            .find(|s| s.name == step.session)
            .unwrap();
        assert_eq!(step.overlaps, row.overlaps, "{}", step.session);
    }
    // The committed one is ordered; the uncommitted one comes after it.
    assert_eq!(queue.steps[1].session, uncommitted);
    let text = env.owt_ok(&repo, ["queue"]);
    assert!(
        text.contains("2. uncommitted-work (0 commits, 1 file) is not committed yet (ship commits it first), then merges into main; overlaps 0 other sessions."),
        "{text}"
    );
}

/// Regression (#34 item 5): after a conflicting ship was refused it said
/// "nothing was changed", though it had committed the worktree. Now it
/// says what it did: the commit, and that nothing was merged.
#[test]
fn regression_a_refused_ship_says_it_committed_the_worktree() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    let (name, wt) = env.new_session(&repo, "edit shared");
    write_file(&wt, "README.md", "# the agent's title\n");
    write_file(&repo, "README.md", "# the human's title\n");
    env.git(&repo, ["commit", "-q", "-am", "the human's title"]);
    let main_before = env.git(&repo, ["rev-parse", "main"]);

    let err = env.owt_err(&repo, ["ship", &name]);
    let head = env.git(&wt, ["rev-parse", "HEAD"]);
    assert_eq!(
        env.git(&wt, ["log", "-1", "--format=%s"]),
        "edit shared",
        "ship committed the worktree"
    );
    assert!(!err.contains("nothing was changed"), "{err}");
    assert!(err.contains("would conflict in README.md (lines "), "{err}");
    assert!(
        err.contains(&format!(
            "); nothing was merged; ship committed the work in its worktree first, as {} on owt/{name} (now one commit further)",
            &head[..10]
        )),
        "{err}"
    );
    assert_eq!(env.git(&repo, ["rev-parse", "main"]), main_before);
}

/// Regression (#34 item 5): a merge whose phase 2 failed printed
/// "Advancing main to …" just before "main did not move", squashed git's
/// lines onto one, and told to "run the merge again" while `owt doctor`
/// called the state an interrupted merge to fix. Now: no "Advancing", git's
/// lines kept, the doctor's name for the state and one next step, which
/// works.
#[test]
fn regression_a_failed_phase_two_says_what_happened_and_the_next_step() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    let (name, wt) = env.new_session(&repo, "edit the readme");
    write_file(&wt, "README.md", "# the agent's title\n");
    env.git(&wt, ["commit", "-q", "-am", "the agent's title"]);
    // The human edits the same file in their checkout, uncommitted.
    write_file(&repo, "README.md", "# my own edit\n");

    let out = env.owt(&repo, ["merge", &name]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(!stderr.contains("Advancing"), "{stderr}");
    assert!(!stderr.contains("run the merge again"), "{stderr}");
    assert!(stderr.contains("main did not move"), "{stderr}");
    assert!(
        stderr.contains(
            "would be overwritten by merge:\n    \tREADME.md\n    Please commit your changes or stash them before you merge."
        ),
        "git's lines are kept: {stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "the merge of `{name}` stopped before main moved: main was brought into owt/{name} in its worktree, and `owt doctor` lists it as an interrupted-merge; next: fix the cause above, then run `owt merge {name}` again to complete it"
        )),
        "{stderr}"
    );
    let doctor: owt_protocol::DoctorReport = env.owt_json(&repo, ["doctor"]);
    assert!(
        doctor
            .findings
            .iter()
            .any(|f| f.kind == "interrupted-merge" && f.session.as_deref() == Some(&name)),
        "{doctor:#?}"
    );
    // The next step said works.
    env.git(&repo, ["checkout", "--", "README.md"]);
    let merged: owt_protocol::MergeOutput = env.owt_json(&repo, ["merge", &name]);
    assert!(merged.merged);
    assert_eq!(read_file(&repo.join("README.md")), "# the agent's title\n");
}

/// Regression (#34 item 10): `owt --help` named three lanes of four.
#[test]
fn regression_help_names_the_four_lanes() {
    let env = TestEnv::new();
    let help = env.owt_ok(env.path(), ["--help"]);
    // clap wraps the text: compare it with its lines joined.
    let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        help.contains("The board: NEEDS YOU, READY TO SHIP, IN FLIGHT, READY TO CLEAN."),
        "{help}"
    );
}

/// Regression (#34 item 10): `owt delete --force` called a modified
/// tracked file one "git does not keep".
#[test]
fn regression_delete_calls_uncommitted_work_uncommitted() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    let (name, wt) = env.new_session(&repo, "edit the readme");
    write_file(&wt, "README.md", "# edited, not committed\n");
    let out = env.owt_ok(&repo, ["delete", &name, "--force"]);
    assert!(!out.contains("git does not keep"), "{out}");
    assert!(
        out.contains("Moved 1 file of uncommitted work to the trash: "),
        "{out}"
    );
    assert!(
        out.contains("(README.md); copy back what you need"),
        "{out}"
    );
}

/// Regression (#34 item 10): ship's "not reviewed" warning listed the
/// files a merge brought in from main. Now it lists the agent's files
/// only (a resolved conflict is the agent's side's work: listed).
#[test]
fn regression_ship_warns_of_the_agents_files_not_mains() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    let (name, wt) = env.new_session(&repo, "agent work");
    let commit = |dir: &Path, files: &[(&str, &str)], message: &str| {
        for (file, text) in files {
            write_file(dir, file, text);
            env.git(dir, ["add", "--", file]);
        }
        env.git(dir, ["commit", "-q", "-m", message]);
    };
    commit(
        &wt,
        &[("c.txt", "agent\n"), ("agent.txt", "agent\n")],
        "agent",
    );
    commit(
        &repo,
        &[("c.txt", "human\n"), ("main.txt", "main\n")],
        "human",
    );
    let out = env.owt(&repo, ["merge", &name, "--leave-conflicts"]);
    assert!(!out.status.success());
    write_file(&wt, "c.txt", "both\n");
    env.git(&wt, ["add", "c.txt"]);
    let out = env.owt(&repo, ["ship", &name]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "Warning: shipping 2 files not reviewed since their last change (agent.txt, c.txt)"
        ),
        "{stderr}"
    );
    assert!(!stderr.contains("main.txt"), "{stderr}");
}

/// #34 (Done when: "each verb is allowed exactly when the board's actions
/// allow it"): attach, send, peek, approve, deny and resume go through the same
/// check as ship, merge and delete. A session waiting for room and one
/// whose agent exited are refused with the reason the board shows for
/// that action, and nothing is typed; what the board allows works.
#[test]
fn every_verb_refuses_with_the_boards_reason() {
    let env = TestEnv::new();
    let repo = repo(&env);
    let mut config = read_file(&repo.join(".owt.toml"));
    config = config.replace(
        "[agent]\n",
        "[agent]\nmax_running = 1\nmin_free_memory = \"0 B\"\n",
    );
    std::fs::write(repo.join(".owt.toml"), config).unwrap();
    env.git(&repo, ["commit", "-qam", "one agent at a time"]);
    env.trust(&repo);
    env.owt_ok(&repo, ["new", "--name", "ends", "say goodbye"]);
    wait_status(&env, &repo, "ends", Status::NeedsInput);
    let queued = env.owt_ok(&repo, ["new", "--name", "later", "wait your turn"]);
    assert!(queued.contains("Queued session later"), "{queued}");

    // Each verb, by the board's action it is.
    let verbs = [
        (SessionAction::Attach, "attach"),
        (SessionAction::Send, "send"),
        (SessionAction::Peek, "peek"),
        (SessionAction::Approve, "approve"),
        (SessionAction::Deny, "deny"),
        (SessionAction::Resume, "resume"),
    ];
    let refused_as_shown = |name: &str, action: SessionAction, verb: &str| {
        let board = view(&env, &repo, name).unwrap();
        let shown = reason(&board, action)
            .unwrap_or_else(|| panic!("{action:?} is allowed on {name}: {board:#?}"));
        let mut args = vec![verb, name];
        if action == SessionAction::Send {
            args.push("hello");
        }
        let out = env.owt(&repo, &args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "owt {args:?} worked: {stderr}");
        assert!(
            stderr.contains(&shown),
            "owt {args:?} on {name}: the board says {shown:?}; the verb: {stderr}"
        );
    };

    // Waiting for room: nothing can be done to it but delete and start.
    for (action, verb) in verbs {
        refused_as_shown("later", action, verb);
    }
    assert_eq!(view(&env, &repo, "later").unwrap().status, Status::Queued);

    // The agent exits: the saved screen can be read; nothing can be typed.
    env.owt_ok(&repo, ["send", "ends", "exit 3"]);
    wait_until("ends to exit", WAIT, || {
        view(&env, &repo, "ends").is_some_and(|v| v.status == Status::Exited)
    });
    let board = view(&env, &repo, "ends").unwrap();
    assert!(board.can(SessionAction::Peek), "{board:#?}");
    assert!(env.owt_ok(&repo, ["peek", "ends"]).contains("bye"));
    for (action, verb) in verbs {
        if !matches!(action, SessionAction::Peek | SessionAction::Resume) {
            refused_as_shown("ends", action, verb);
        }
    }
    // Its agent is gone: it can be resumed, as the board says.
    assert!(board.can(SessionAction::Resume), "{board:#?}");
    let resumed = env.owt_ok(&repo, ["resume", "ends"]);
    assert!(resumed.contains("Resumed session ends"), "{resumed}");
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// #35 (each row shows its status "and how long in it"): the session's
/// host records when a status began while nobody looks (`owt wait` derives
/// no view), so the first listing after a long wait shows the wait, not
/// zero; a new status starts a new time, which then holds.
#[test]
fn a_status_says_since_when_even_when_nobody_looked() {
    let env = TestEnv::new();
    let repo = repo(&env);
    env.owt_ok(&repo, ["new", "--name", "timed", "be timed"]);
    env.owt_ok(&repo, ["wait", "timed", "--timeout", "30"]);
    let waited = now_ms();
    // Nothing lists it: its host records the status once it held (read
    // from the store's SQLite file itself).
    let db = env.owt_home.join("owt.db");
    wait_until("the host to record needs-input", WAIT, || {
        let out = std::process::Command::new("python3")
            .args([
                "-c",
                "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); \
                 print(''.join(v for (v,) in c.execute(\
                 \"SELECT value FROM facts WHERE kind='status-since'\")))",
            ])
            .arg(&db)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).contains("\"needs-input\"")
    });
    let first = view(&env, &repo, "timed").unwrap();
    assert_eq!(first.status, Status::NeedsInput, "{first:#?}");
    let since = first.status_since.expect("a time for its status");
    // The host looks every 250 ms, and records a status once it held for
    // 750 ms: its time is at most a look later than the change, long
    // before this listing.
    assert!(
        since <= waited + 300 && since >= first.created_at,
        "needs-input since {since}: `owt wait` returned at {waited}, it was made at {}",
        first.created_at
    );
    // It holds while the status does.
    assert_eq!(
        view(&env, &repo, "timed").unwrap().status_since,
        Some(since)
    );
    let sent = now_ms();
    env.owt_ok(&repo, ["send", "timed", "busy 30"]);
    wait_status(&env, &repo, "timed", Status::Working);
    let working = view(&env, &repo, "timed").unwrap();
    let since_working = working.status_since.expect("a time for working");
    assert!(
        since_working >= sent,
        "working since {since_working}, sent at {sent}"
    );
    // The control plane's row says how long: `working 0s` or so.
    let row = env.owt_ok(&repo, ["--json", "list"]);
    assert!(row.contains("\"status_since\""), "{row}");
}
