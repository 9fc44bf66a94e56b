//! End-to-end tests of Conflict Guard's verbs with the real binary:
//! `owt guard`, `owt queue`, and the overlaps column of `owt list`.
//! Sessions come from `owt new` (the harness's fake agent); their work is
//! written straight into their worktrees.

use std::path::{Path, PathBuf};

use owt_e2e::TestEnv;
use owt_protocol::guard::{GuardReport, Level, QueueReport};
use owt_protocol::{NewOutput, SessionList};

fn numbered(changed: &[(usize, &str)]) -> String {
    (1..=10)
        .map(|i| match changed.iter().find(|(n, _)| *n == i) {
            Some((_, text)) => format!("{text}\n"),
            None => format!("line {i}\n"),
        })
        .collect()
}

fn new_session(env: &TestEnv, repo: &Path, name: &str) -> PathBuf {
    let out: NewOutput = env.owt_json(repo, ["new", &format!("work on {name}"), "--name", name]);
    assert_eq!(out.session.name, name);
    env.wait_settled(repo, name);
    PathBuf::from(out.session.worktree)
}

fn repo_with_numbered_file(env: &TestEnv) -> PathBuf {
    let repo = env.repo("app");
    std::fs::write(repo.join("f.txt"), numbered(&[])).unwrap();
    std::fs::write(repo.join("other.txt"), "other\n").unwrap();
    env.git(&repo, ["add", "."]);
    env.git(&repo, ["commit", "-q", "-m", "numbered file"]);
    repo
}

#[test]
fn guard_reports_every_pair_with_levels_paths_and_lines() {
    let env = TestEnv::new();
    let repo = repo_with_numbered_file(&env);
    let one = new_session(&env, &repo, "one");
    let two = new_session(&env, &repo, "two");
    let three = new_session(&env, &repo, "three");
    std::fs::write(one.join("f.txt"), numbered(&[(3, "one was here")])).unwrap();
    std::fs::write(two.join("f.txt"), numbered(&[(4, "two was here")])).unwrap();
    std::fs::write(three.join("other.txt"), "three\n").unwrap();
    // The human edits the same file far below, uncommitted.
    std::fs::write(repo.join("f.txt"), numbered(&[(9, "human")])).unwrap();

    let report: GuardReport = env.owt_json(&repo, ["guard"]);
    let names: Vec<&str> = report
        .participants
        .iter()
        .map(|p| p.name.as_str())
        .collect();
    assert_eq!(names, ["one", "three", "two", "you"]);
    let summary: Vec<(String, String, Level, Vec<String>)> = report
        .pairs
        .iter()
        .map(|p| {
            (
                p.a.clone(),
                p.b.clone(),
                p.level,
                p.paths.iter().map(|x| x.path.clone()).collect(),
            )
        })
        .collect();
    let f = vec!["f.txt".to_string()];
    assert_eq!(
        summary,
        [
            ("one".into(), "two".into(), Level::Conflict, f.clone()),
            ("one".into(), "you".into(), Level::Overlap, f.clone()),
            ("two".into(), "you".into(), Level::Overlap, f.clone()),
        ]
    );
    let conflict = &report.pairs[0];
    assert_eq!(conflict.conflicting_paths, ["f.txt"]);
    assert_eq!(conflict.paths[0].a_ranges[0].start, 3);
    assert_eq!(conflict.paths[0].b_ranges[0].start, 4);

    // One session's pairs only.
    let only: GuardReport = env.owt_json(&repo, ["guard", "three"]);
    assert!(only.pairs.is_empty());
    let text = env.owt_ok(&repo, ["guard", "one"]);
    assert!(text.contains("one and two would conflict:"), "{text}");
    assert!(
        text.contains("f.txt (conflict): one: lines 3; two: lines 4."),
        "{text}"
    );
    assert_eq!(
        env.owt_ok(&repo, ["guard", "three"]).trim(),
        "three overlaps nobody."
    );

    // `owt list` shows the overlap counts.
    let list: SessionList = env.owt_json(&repo, ["list"]);
    let overlaps: Vec<(String, u32)> = list
        .sessions
        .iter()
        .map(|s| (s.name.clone(), s.overlaps))
        .collect();
    assert_eq!(
        overlaps,
        [("one".into(), 2), ("two".into(), 2), ("three".into(), 0)]
    );
    let table = env.owt_ok(&repo, ["list"]);
    assert!(
        table.lines().next().unwrap().contains("OVERLAPS"),
        "{table}"
    );

    // Unknown names are refused with the list of sessions.
    let err = env.owt_err(&repo, ["guard", "nobody"]);
    assert!(err.contains("no session named `nobody`"), "{err}");
}

#[test]
fn a_base_that_moved_under_a_session_is_a_base_conflict_in_guard_and_on_the_board() {
    let env = TestEnv::new();
    let repo = repo_with_numbered_file(&env);
    let one = new_session(&env, &repo, "one");
    let two = new_session(&env, &repo, "two");
    std::fs::write(one.join("f.txt"), numbered(&[(3, "one was here")])).unwrap();
    std::fs::write(two.join("other.txt"), "two\n").unwrap();
    // main moves on under them: line 3 changes there too.
    std::fs::write(repo.join("f.txt"), numbered(&[(3, "main moved")])).unwrap();
    env.git(&repo, ["commit", "-q", "-am", "main moves"]);

    let report: GuardReport = env.owt_json(&repo, ["guard"]);
    assert_eq!(report.base_conflicts.len(), 1, "{report:#?}");
    let conflict = &report.base_conflicts[0];
    assert_eq!(
        (conflict.name.as_str(), conflict.base.as_str()),
        ("one", "main")
    );
    assert_eq!(conflict.conflicting_paths, ["f.txt"]);
    assert_eq!(conflict.paths[0].level, Level::BaseConflict);
    assert_eq!(conflict.paths[0].a_ranges[0].start, 3);
    assert_eq!(conflict.paths[0].b_ranges[0].start, 3);
    assert!(report.pairs.is_empty(), "{report:#?}");
    let text = env.owt_ok(&repo, ["guard"]);
    assert!(
        text.contains("one no longer merges into main (main moved on):\n  f.txt (conflict): one: lines 3; main: lines 3."),
        "{text}"
    );
    assert_eq!(
        env.owt_ok(&repo, ["guard", "two"]).trim(),
        "two overlaps nobody."
    );

    // The board and `owt list --json` show it from the recorded facts.
    let list: SessionList = env.owt_json(&repo, ["list"]);
    let conflicts: Vec<(String, Vec<String>)> = list
        .sessions
        .iter()
        .map(|s| (s.name.clone(), s.base_conflicts.clone()))
        .collect();
    assert_eq!(
        conflicts,
        [
            ("one".into(), vec!["f.txt".to_string()]),
            ("two".into(), vec![])
        ]
    );
    let board = env.owt_ok(&repo, Vec::<String>::new());
    let line = board
        .lines()
        .find(|l| l.trim_start().starts_with("one "))
        .unwrap();
    assert!(line.contains("conflicts with main in f.txt"), "{board}");

    // Resolved in the worktree (it takes main's line): gone everywhere.
    std::fs::write(one.join("f.txt"), numbered(&[(3, "main moved")])).unwrap();
    let report: GuardReport = env.owt_json(&repo, ["guard"]);
    assert!(report.base_conflicts.is_empty(), "{report:#?}");
    let list: SessionList = env.owt_json(&repo, ["list"]);
    assert!(list.sessions.iter().all(|s| s.base_conflicts.is_empty()));
}

#[test]
fn guard_honours_ignore_globs_but_shows_conflicts() {
    let env = TestEnv::new();
    let repo = repo_with_numbered_file(&env);
    std::fs::write(repo.join("Cargo.lock"), numbered(&[])).unwrap();
    let config = std::fs::read_to_string(repo.join(".owt.toml")).unwrap();
    std::fs::write(
        repo.join(".owt.toml"),
        format!("{config}\n[guard]\nignore = [\"*.lock\"]\n"),
    )
    .unwrap();
    env.git(&repo, ["add", "."]);
    env.git(&repo, ["commit", "-q", "-m", "lock file"]);
    env.trust(&repo);
    let one = new_session(&env, &repo, "one");
    let two = new_session(&env, &repo, "two");
    std::fs::write(one.join("Cargo.lock"), numbered(&[(1, "one")])).unwrap();
    std::fs::write(two.join("Cargo.lock"), numbered(&[(9, "two")])).unwrap();
    let report: GuardReport = env.owt_json(&repo, ["guard"]);
    assert!(report.pairs.is_empty(), "{report:#?}");
    std::fs::write(two.join("Cargo.lock"), numbered(&[(1, "two")])).unwrap();
    let report: GuardReport = env.owt_json(&repo, ["guard"]);
    assert_eq!(report.pairs.len(), 1);
    assert_eq!(report.pairs[0].level, Level::Conflict);
    assert!(report.pairs[0].paths[0].ignored);
}

#[test]
fn queue_lists_the_ready_sessions_smallest_first_never_conflicting_ones() {
    let env = TestEnv::new();
    let repo = repo_with_numbered_file(&env);
    let commit = |wt: &Path, file: &str, text: String| {
        std::fs::write(wt.join(file), text).unwrap();
        env.git(wt, ["add", "."]);
        env.git(wt, ["commit", "-q", "-m", "work"]);
    };
    let big = new_session(&env, &repo, "big");
    let small = new_session(&env, &repo, "small");
    let left = new_session(&env, &repo, "left");
    let right = new_session(&env, &repo, "right");
    new_session(&env, &repo, "idle");
    commit(&big, "b1.txt", "b1\n".into());
    commit(&big, "b2.txt", "b2\n".into());
    commit(&small, "s.txt", "s\n".into());
    commit(&left, "f.txt", numbered(&[(5, "left")]));
    commit(&right, "f.txt", numbered(&[(5, "right")]));
    commit(&right, "r.txt", "more\n".into());

    let queue: QueueReport = env.owt_json(&repo, ["queue"]);
    let order: Vec<(&str, bool, &[String])> = queue
        .steps
        .iter()
        .map(|s| {
            (
                s.session.as_str(),
                s.conflict_free,
                s.predicted_conflicts.as_slice(),
            )
        })
        .collect();
    let none: &[String] = &[];
    // left and right conflict with each other: neither is READY TO SHIP
    // (#34), so neither is queued.
    assert_eq!(order, [("small", true, none), ("big", true, none)]);
    let big_step = &queue.steps[1];
    assert_eq!(
        (big_step.ahead, big_step.changed_files, big_step.overlaps),
        (2, 2, 0)
    );
    let list: owt_protocol::SessionList = env.owt_json(&repo, ["list"]);
    for name in ["left", "right"] {
        let s = list.sessions.iter().find(|s| s.name == name).unwrap();
        assert_eq!((s.lane, s.overlaps), (owt_protocol::Lane::NeedsYou, 1));
    }
    let text = env.owt_ok(&repo, ["queue"]);
    assert!(
        text.contains(
            "2. big (2 commits, 2 files) merges cleanly into main; overlaps 0 other sessions."
        ),
        "{text}"
    );
}

#[test]
fn queue_with_nothing_ready_says_so() {
    let env = TestEnv::new();
    let repo = repo_with_numbered_file(&env);
    new_session(&env, &repo, "fresh");
    let queue: QueueReport = env.owt_json(&repo, ["queue"]);
    assert!(queue.steps.is_empty());
    assert!(env
        .owt_ok(&repo, ["queue"])
        .starts_with("No session is ready to ship"));
}

/// `owt guard --json`'s entry for participant `name`.
fn guard_of(env: &TestEnv, repo: &Path, name: &str) -> owt_protocol::guard::GuardParticipant {
    let report: GuardReport = env.owt_json(repo, ["guard"]);
    report
        .participants
        .into_iter()
        .find(|p| p.name == name)
        .expect("the session takes part")
}

/// [`guard_of`], polled until `done` holds for it (the host's journal
/// needs a walk of its own before it answers).
fn guard_until(
    env: &TestEnv,
    repo: &Path,
    name: &str,
    what: &str,
    done: impl Fn(&owt_protocol::guard::GuardParticipant) -> bool,
) -> owt_protocol::guard::GuardParticipant {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let participant = guard_of(env, repo, name);
        if done(&participant) {
            return participant;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{what}: not within 30 s; last: {participant:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn guard_reads_a_live_agents_journal_and_still_sees_every_change() {
    let env = TestEnv::new();
    let repo = repo_with_numbered_file(&env);
    let one = new_session(&env, &repo, "one");
    let from_journal =
        |p: &owt_protocol::guard::GuardParticipant| p.scan.as_deref() == Some("journal");
    guard_until(
        &env,
        &repo,
        "one",
        "the host's journal is used",
        from_journal,
    );

    std::fs::write(one.join("f.txt"), numbered(&[(3, "one was here")])).unwrap();
    std::fs::create_dir_all(one.join("new/deep")).unwrap();
    std::fs::write(one.join("new/deep/x.txt"), "x\n").unwrap();
    std::fs::remove_file(one.join("other.txt")).unwrap();
    let expected = ["f.txt", "new/deep/x.txt", "other.txt"];
    // Asked right after the writes: the journal already has them.
    let p = guard_of(&env, &repo, "one");
    assert_eq!(p.scan.as_deref(), Some("journal"));
    assert_eq!(p.changed_paths, expected);

    // A commit moves HEAD and the index: the answer stays right, whether
    // owt walks or the journal (after a walk of its own) answers.
    env.git(&one, ["add", "-A"]);
    env.git(&one, ["commit", "-q", "-m", "work"]);
    let p = guard_of(&env, &repo, "one");
    assert_eq!(p.changed_paths, expected, "right after the commit");
    let p = guard_until(
        &env,
        &repo,
        "one",
        "the journal after the commit",
        from_journal,
    );
    assert_eq!(p.changed_paths, expected);
    // The deleted file is back as it was on main (untracked now).
    std::fs::write(one.join("other.txt"), "other\n").unwrap();
    let p = guard_of(&env, &repo, "one");
    assert_eq!(p.scan.as_deref(), Some("journal"));
    assert_eq!(p.changed_paths, ["f.txt", "new/deep/x.txt"]);

    // No host, no journal: owt walks the worktree.
    let out = env.owt(&repo, ["__host", "stop", "one"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let p = guard_of(&env, &repo, "one");
    assert_eq!(p.scan.as_deref(), Some("walk"));
    assert_eq!(p.changed_paths, ["f.txt", "new/deep/x.txt"]);
}

/// The graph folders owt keeps under `owt_home` that git has written a
/// graph into.
fn written_graphs(owt_home: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(owt_home.join("cache/commit-graphs")) else {
        return Vec::new();
    };
    entries
        .flatten()
        .map(|e| e.path())
        .filter(|dir| dir.join("info/commit-graphs/commit-graph-chain").is_file())
        .collect()
}

#[test]
fn the_first_new_session_of_a_repository_writes_the_guards_commit_graph_in_the_background() {
    let env = TestEnv::new();
    let repo = repo_with_numbered_file(&env);
    // Bad input to the hidden writer: an error, nothing written.
    let err = env.owt_err(&repo, ["__commit-graph", ".git", "not-a-commit"]);
    assert!(err.contains("not a full commit id"), "{err}");
    assert!(!env.owt_home.join("cache/commit-graphs").exists());

    new_session(&env, &repo, "one");
    owt_e2e::wait_until(
        "owt new's background write of the guard's commit-graph",
        std::time::Duration::from_secs(60),
        || !written_graphs(&env.owt_home).is_empty(),
    );
    let graphs = written_graphs(&env.owt_home);
    assert_eq!(graphs.len(), 1, "{graphs:?}");
    let named = std::fs::read_to_string(graphs[0].join("repository")).unwrap();
    assert_eq!(
        Path::new(named.trim_end()),
        repo.join(".git").canonicalize().unwrap()
    );
    // The graph holds the history (git reads it), and nothing of the
    // repository was written.
    let verify = std::process::Command::new("git")
        .args(["commit-graph", "verify", "--object-dir"])
        .arg(&graphs[0])
        .env("GIT_ALTERNATE_OBJECT_DIRECTORIES", &graphs[0])
        .current_dir(&repo)
        .output()
        .unwrap();
    assert!(
        verify.status.success(),
        "{}",
        String::from_utf8_lossy(&verify.stderr)
    );
    assert!(!repo.join(".git/objects/info/commit-graph").exists());
    assert!(!repo.join(".git/objects/info/commit-graphs").exists());
    // The guard still answers, and a second session changes nothing.
    new_session(&env, &repo, "two");
    let report: GuardReport = env.owt_json(&repo, ["guard", "--cold"]);
    assert!(report.participants.iter().any(|p| p.name == "two"));
    assert_eq!(written_graphs(&env.owt_home), graphs);
    // The writer is plumbing: it opens no store (which would, e.g., make
    // a state folder private under a test that opened it, or resume
    // lost sessions).
    use std::os::unix::fs::PermissionsExt;
    let open = std::fs::Permissions::from_mode(0o755);
    std::fs::set_permissions(&env.owt_home, open).unwrap();
    let head = env.git(&repo, ["rev-parse", "HEAD"]);
    let args: Vec<std::ffi::OsString> = vec![
        "__commit-graph".into(),
        repo.join(".git").into(),
        head.trim().into(),
    ];
    env.owt_ok(&repo, args);
    let mode = std::fs::metadata(&env.owt_home)
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o755, "the writer left OWT_HOME as it was");
}
