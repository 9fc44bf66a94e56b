//! End-to-end tests of the foundation verbs: new, list, delete, doctor,
//! config, db — the real binary, real git repositories, a real store.

use std::path::Path;
use std::time::Duration;

use owt_e2e::{data_file, wait_until, TestEnv};
use owt_protocol::{
    Board, ConfigShow, DbHealth, DeleteOutput, DoctorReport, NewOutput, SessionList, VersionOutput,
};

#[test]
fn new_list_delete_round_trip() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    let created: NewOutput = env.owt_json(&repo, ["new", "Add JWT auth!"]);
    let s = &created.session;
    assert_eq!(s.name, "add-jwt-auth");
    assert_eq!(s.branch, "owt/add-jwt-auth");
    assert_eq!(s.base, "main");
    assert_eq!(s.provider, "fake");
    let expected_worktree = env
        .path()
        .canonicalize()
        .unwrap()
        .join("app.worktrees/add-jwt-auth");
    assert_eq!(Path::new(&s.worktree), expected_worktree);
    assert!(
        expected_worktree.join("README.md").is_file(),
        "worktree is checked out"
    );
    assert_eq!(
        env.git(&expected_worktree, ["rev-parse", "--abbrev-ref", "HEAD"]),
        "owt/add-jwt-auth"
    );
    // Its index carries the cache of trees (as `git worktree add` writes
    // it) and is otherwise what a checkout leaves: nothing staged or dirty.
    let index = std::fs::read(
        Path::new(&env.git(&expected_worktree, ["rev-parse", "--absolute-git-dir"])).join("index"),
    )
    .unwrap();
    assert!(
        index.windows(4).any(|w| w == b"TREE"),
        "the index has a tree-cache extension"
    );
    assert_eq!(env.git(&expected_worktree, ["status", "--porcelain"]), "");

    let list = env.sessions(&repo);
    assert_eq!(list.sessions.len(), 1);
    assert_eq!(list.sessions[0].name, "add-jwt-auth");
    let text = env.owt_ok(&repo, ["ls"]);
    assert!(text.lines().next().unwrap().starts_with("NAME"), "{text}");
    assert!(text.contains("add-jwt-auth"), "{text}");

    let board: Board = env.owt_json(&repo, Vec::<&str>::new());
    let on_board: Vec<_> = board
        .lanes
        .iter()
        .flat_map(|l| &l.sessions)
        .map(|s| s.name.as_str())
        .collect();
    assert_eq!(on_board, vec!["add-jwt-auth"]);

    env.wait_settled(&repo, "add-jwt-auth");
    let deleted: DeleteOutput = env.owt_json(&repo, ["delete", "add-jwt-auth"]);
    assert!(deleted.worktree_removed && deleted.branch_deleted);
    assert_eq!(deleted.backup_ref, None, "no commits ahead, so no backup");
    assert!(!expected_worktree.exists());
    assert_eq!(env.git(&repo, ["branch", "--list", "owt/*"]), "");
    assert!(env.sessions(&repo).sessions.is_empty());
    assert_eq!(
        env.git(&repo, ["worktree", "list", "--porcelain"])
            .matches("worktree ")
            .count(),
        1
    );
}

#[test]
fn hostile_names_become_safe_slugs_inside_base_directory() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    let base = env.path().canonicalize().unwrap().join("app.worktrees");
    let cases: &[(&[&str], &str)] = &[
        (&["new", "fix the login page"], "fix-the-login-page"),
        (&["new", "x", "--name", "../../escape"], "escape"),
        (&["new", "Überprüfe die Straße 🚀"], "berpr-fe-die-stra-e"),
        (
            &["new", "--", "-rf --no-preserve-root"],
            "rf-no-preserve-root",
        ),
        (
            &["new", "$(touch pwned); `id` | tee x && rm -rf ~"],
            "touch-pwned-id-tee-x-rm-rf",
        ),
        (&["new", "日本語"], "session"),
    ];
    for (args, want) in cases {
        let out: NewOutput = env.owt_json(&repo, *args);
        assert_eq!(out.session.name, *want, "{args:?}");
        let path = Path::new(&out.session.worktree);
        assert_eq!(
            path.parent(),
            Some(base.as_path()),
            "{args:?} escaped: {path:?}"
        );
        assert!(path.is_dir());
    }
    assert!(!repo.join("pwned").exists() && !env.path().join("pwned").exists());
    // The task text reached the agent verbatim (as its argument), never a shell.
    let list = env.sessions(&repo);
    let metachar = list
        .sessions
        .iter()
        .find(|s| s.name.starts_with("touch-pwned"))
        .unwrap();
    assert_eq!(metachar.task, "$(touch pwned); `id` | tee x && rm -rf ~");
}

#[test]
fn collisions_get_numbered_names() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    let names: Vec<String> = (0..3)
        .map(|_| {
            env.owt_json::<NewOutput, _, _>(&repo, ["new", "fix login"])
                .session
                .name
        })
        .collect();
    assert_eq!(names, vec!["fix-login", "fix-login-2", "fix-login-3"]);
}

#[test]
fn reuses_an_existing_branch() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    env.git(&repo, ["branch", "feature/existing"]);
    std::fs::write(repo.join("f.txt"), "on main\n").unwrap();
    env.git(&repo, ["checkout", "-q", "feature/existing"]);
    env.git(&repo, ["add", "f.txt"]);
    env.git(&repo, ["commit", "-q", "-m", "work on the branch"]);
    env.git(&repo, ["checkout", "-q", "main"]);
    let tip = env.git(&repo, ["rev-parse", "feature/existing"]);

    let out: NewOutput = env.owt_json(&repo, ["new", "continue", "--branch", "feature/existing"]);
    assert_eq!(out.session.branch, "feature/existing");
    let wt = Path::new(&out.session.worktree);
    assert_eq!(env.git(wt, ["rev-parse", "HEAD"]), tip);
    assert!(wt.join("f.txt").is_file());

    // owt did not create it, so delete keeps it.
    env.wait_settled(&repo, &out.session.name);
    let deleted: DeleteOutput = env.owt_json(&repo, ["delete", &out.session.name]);
    assert!(!deleted.branch_deleted);
    assert_eq!(env.git(&repo, ["rev-parse", "feature/existing"]), tip);
}

#[test]
fn branch_checked_out_elsewhere_is_refused_and_nothing_is_left() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    env.git(&repo, ["branch", "taken"]);
    let other = env.path().join("other-checkout");
    env.git(
        &repo,
        ["worktree", "add", "-q", other.to_str().unwrap(), "taken"],
    );
    let before_branches = env.git(&repo, ["branch", "--list"]);
    let before_worktrees = env.git(&repo, ["worktree", "list"]);

    let err = env.owt_err(&repo, ["new", "use it", "--branch", "taken"]);
    assert!(
        err.contains("branch `taken` is already checked out at"),
        "{err}"
    );
    assert!(err.contains("other-checkout"), "{err}");
    let main_err = env.owt_err(&repo, ["new", "use main", "--branch", "main"]);
    assert!(main_err.contains("already checked out"), "{main_err}");

    assert_eq!(env.git(&repo, ["branch", "--list"]), before_branches);
    assert_eq!(env.git(&repo, ["worktree", "list"]), before_worktrees);
    assert!(!env.path().join("app.worktrees").join("use-it").exists());
    assert!(env.sessions(&repo).sessions.is_empty());
}

#[test]
fn delete_refuses_dirty_work_and_force_keeps_a_backup_ref() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    let out: NewOutput = env.owt_json(&repo, ["new", "dirty work"]);
    let wt = Path::new(&out.session.worktree).to_path_buf();
    std::fs::write(wt.join("committed.txt"), "work\n").unwrap();
    env.git(&wt, ["add", "committed.txt"]);
    env.git(&wt, ["commit", "-q", "-m", "agent work"]);
    let tip = env.git(&wt, ["rev-parse", "HEAD"]);
    std::fs::write(wt.join("untracked.txt"), "not yet committed\n").unwrap();

    env.wait_settled(&repo, "dirty-work");
    let err = env.owt_err(&repo, ["delete", "dirty-work"]);
    assert!(
        err.contains("uncommitted work") && err.contains("untracked.txt"),
        "{err}"
    );
    assert!(err.contains("--force"), "{err}");
    assert!(
        wt.join("untracked.txt").is_file(),
        "refusal changed nothing"
    );
    assert_eq!(env.sessions(&repo).sessions.len(), 1);

    let deleted: DeleteOutput = env.owt_json(&repo, ["delete", "dirty-work", "--force"]);
    assert_eq!(
        deleted.backup_ref.as_deref(),
        Some("refs/owt/backup/dirty-work")
    );
    assert!(!wt.exists());
    assert_eq!(
        env.git(&repo, ["rev-parse", "refs/owt/backup/dirty-work"]),
        tip
    );
    assert_eq!(env.git(&repo, ["branch", "--list", "owt/dirty-work"]), "");
    let text = String::from_utf8(env.owt(&repo, ["new", "again"]).stdout).unwrap();
    assert!(text.contains("Started session again"), "{text}");
}

#[test]
fn two_repositories_may_share_a_session_name() {
    let env = TestEnv::new();
    let a = env.repo("a");
    let b = env.repo("b");
    let sa: NewOutput = env.owt_json(&a, ["new", "fix login"]);
    let sb: NewOutput = env.owt_json(&b, ["new", "fix login"]);
    assert_eq!(sa.session.name, "fix-login");
    assert_eq!(sb.session.name, "fix-login");
    assert_ne!(sa.session.id, sb.session.id);
    assert_eq!(env.sessions(&a).sessions.len(), 1);
    assert_eq!(env.sessions(&b).sessions.len(), 1);
    env.wait_settled(&a, "fix-login");
    env.owt_ok(&a, ["delete", "fix-login"]);
    assert!(env.sessions(&a).sessions.is_empty());
    assert_eq!(
        env.sessions(&b).sessions.len(),
        1,
        "deleting in a left b alone"
    );
}

#[test]
fn dash_c_from_inside_a_worktree_is_the_same_repository() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    let out: NewOutput = env.owt_json(&repo, ["new", "first"]);
    let wt = Path::new(&out.session.worktree).join("sub");
    std::fs::create_dir_all(&wt).unwrap();
    let from_main = env.sessions(&repo);
    let from_wt: SessionList = env.owt_json(env.path(), ["-C", wt.to_str().unwrap(), "list"]);
    // The same repository and sessions (their statuses may move on between
    // the two calls: the agent is starting).
    let ids = |l: &SessionList| {
        l.sessions
            .iter()
            .map(|s| (s.name.clone(), s.id.clone(), s.worktree.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(from_main.repository, from_wt.repository);
    assert_eq!(ids(&from_main), ids(&from_wt));
    // A session started from inside a worktree belongs to the same repository.
    let second: NewOutput = env.owt_json(&wt, ["new", "second"]);
    assert_eq!(second.session.base, "main");
    assert_eq!(env.sessions(&repo).sessions.len(), 2);
}

#[test]
fn invalid_config_names_file_key_and_line() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    let config = repo.join(".owt.toml");
    std::fs::write(
        &config,
        "[worktree]\ncopy_files = [\".env\"]\nauto_cleanup_days = \"soon\"\n",
    )
    .unwrap();
    for args in [vec!["config", "validate"], vec!["new", "x"], vec!["list"]] {
        let out = env.owt(&repo, &args);
        assert!(!out.status.success(), "{args:?} should fail");
        let err = String::from_utf8_lossy(&out.stderr);
        let canonical = config.canonicalize().unwrap();
        assert!(
            err.contains(&format!("{}:3:", canonical.display()))
                && err.contains("worktree.auto_cleanup_days"),
            "{args:?}: {err}"
        );
    }
    assert!(
        !env.path().join("app.worktrees").exists(),
        "nothing created"
    );

    std::fs::write(
        &config,
        "[tools.x]\nbinary = \"x\"\nprompt_flagg = \"-p\"\n",
    )
    .unwrap();
    let err = env.owt_err(&repo, ["config", "validate"]);
    assert!(
        err.contains(":3:") && err.contains("tools.x.prompt_flagg"),
        "{err}"
    );
}

#[test]
fn config_show_and_version_json() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    let show: ConfigShow = env.owt_json(&repo, ["config", "show"]);
    // The repository's file and the user's (the test env's limit on
    // running agents).
    assert_eq!(show.sources.len(), 2, "{:?}", show.sources);
    assert!(
        show.sources.iter().any(|s| s.ends_with(".owt.toml"))
            && show.sources.iter().any(|s| s.ends_with("owt/config.toml")),
        "{:?}",
        show.sources
    );
    assert_eq!(show.config["agent"]["max_running"], 64);
    assert_eq!(show.config["agent"]["default_tool"], "fake");
    let text = env.owt_ok(&repo, ["config", "show"]);
    assert!(text.contains("[tools.fake]"), "{text}");
    let version: VersionOutput = env.owt_json(&repo, ["version"]);
    assert_eq!(version.version, env!("CARGO_PKG_VERSION"));
}

#[test]
fn setup_copies_env_and_runs_the_script() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    std::fs::write(repo.join(".env"), "SECRET=1\n").unwrap();
    std::fs::write(repo.join(".gitignore"), ".env\n").unwrap();
    std::fs::create_dir_all(repo.join(".owt")).unwrap();
    std::fs::write(
        repo.join(".owt/setup.sh"),
        "printf '%s\\n%s\\n%s\\n' \"$OWT_WORKTREE\" \"$OWT_REPO_PATH\" \"$OWT_SESSION\" > setup-ran.txt\n",
    )
    .unwrap();
    env.trust(&repo);
    let out: NewOutput = env.owt_json(&repo, ["new", "with setup"]);
    assert!(
        out.warnings.iter().all(|w| !w.contains("setup script")),
        "{:?}",
        out.warnings
    );
    let wt = Path::new(&out.session.worktree);
    assert_eq!(
        std::fs::read_to_string(wt.join(".env")).unwrap(),
        "SECRET=1\n"
    );
    let ran = std::fs::read_to_string(wt.join("setup-ran.txt")).unwrap();
    let lines: Vec<&str> = ran.lines().collect();
    assert_eq!(Path::new(lines[0]), wt);
    assert_eq!(Path::new(lines[1]), repo.canonicalize().unwrap());
    assert_eq!(lines[2], "with-setup");

    std::fs::write(repo.join(".owt/setup.sh"), "echo failing >&2; exit 3\n").unwrap();
    env.trust(&repo);
    let out: NewOutput = env.owt_json(&repo, ["new", "failing setup"]);
    assert!(
        out.warnings
            .iter()
            .any(|w| w.contains("setup script") && w.contains("3")),
        "{:?}",
        out.warnings
    );
    assert!(
        Path::new(&out.session.worktree).is_dir(),
        "a failing setup does not abort"
    );
}

#[test]
fn doctor_finds_and_fixes_orphans_without_losing_work() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    let gone: NewOutput = env.owt_json(&repo, ["new", "gone"]);
    std::fs::remove_dir_all(&gone.session.worktree).unwrap();
    // Worktrees of this repository that no session owns: one clean, one dirty.
    let base = env.path().join("app.worktrees");
    env.git(
        &repo,
        [
            "worktree",
            "add",
            "-q",
            "-b",
            "stray",
            base.join("stray").to_str().unwrap(),
        ],
    );
    env.git(
        &repo,
        [
            "worktree",
            "add",
            "-q",
            "-b",
            "stray-dirty",
            base.join("stray-dirty").to_str().unwrap(),
        ],
    );
    std::fs::write(base.join("stray-dirty/precious.txt"), "do not lose me\n").unwrap();

    let report: DoctorReport = env.owt_json(&repo, ["doctor"]);
    let kinds: Vec<&str> = report.findings.iter().map(|f| f.kind.as_str()).collect();
    assert!(kinds.contains(&"missing-worktree"), "{kinds:?}");
    assert!(kinds.contains(&"prunable-git-worktree"), "{kinds:?}");
    assert_eq!(
        kinds
            .iter()
            .filter(|k| **k == "orphan-worktree-folder")
            .count(),
        2,
        "{kinds:?}"
    );
    assert!(report.findings.iter().all(|f| !f.fixed));

    let fixed: DoctorReport = env.owt_json(&repo, ["doctor", "--fix"]);
    let dirty = fixed
        .findings
        .iter()
        .find(|f| {
            f.path
                .as_deref()
                .is_some_and(|p| p.ends_with("stray-dirty"))
        })
        .unwrap();
    assert!(
        !dirty.fixed
            && dirty
                .skipped_reason
                .as_deref()
                .unwrap()
                .contains("uncommitted")
    );
    assert!(base.join("stray-dirty/precious.txt").is_file());
    assert!(!base.join("stray").exists());
    assert!(env.sessions(&repo).sessions.is_empty());
    let again: DoctorReport = env.owt_json(&repo, ["doctor"]);
    assert_eq!(
        again.findings.len(),
        1,
        "only the dirty one remains: {:?}",
        again.findings
    );
}

#[test]
fn no_agent_installed_lists_install_hints() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    std::fs::write(repo.join(".owt.toml"), "").unwrap();
    let mut cmd = env.owt_cmd(&repo, ["new", "task"]);
    cmd.env("PATH", "/usr/bin:/bin");
    let out = cmd.output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no agent CLI is installed"), "{err}");
    for hint in [
        "@anthropic-ai/claude-code",
        "@openai/codex",
        "opencode-ai",
        "aider-chat",
    ] {
        assert!(err.contains(hint), "missing {hint}: {err}");
    }
    assert!(!env.path().join("app.worktrees").exists());
}

#[test]
fn db_health_and_purge() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    env.owt_ok(&repo, ["new", "one"]);
    let health: DbHealth = env.owt_json(&repo, ["db", "health", "--check"]);
    assert_eq!(health.integrity, "ok");
    assert_eq!(health.journal_mode, "wal");
    assert_eq!(health.sessions, 1);
    assert!(health.problems.is_empty());
    let purge: owt_protocol::DbPurge = env.owt_json(&repo, ["db", "purge", "--days", "0"]);
    assert_eq!(purge.days, 0);
    env.owt_ok(&repo, ["db", "vacuum"]);
}

#[test]
fn twenty_concurrent_news_give_twenty_sessions() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    let children: Vec<_> = (0..20)
        .map(|i| {
            env.owt_cmd(
                &repo,
                ["--json", "new", &format!("parallel task {}", i % 4)],
            )
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
        })
        .collect();
    let mut errors = Vec::new();
    let mut names = Vec::new();
    for child in children {
        let out = child.wait_with_output().unwrap();
        if !out.status.success() {
            errors.push(String::from_utf8_lossy(&out.stderr).into_owned());
            continue;
        }
        let doc: NewOutput = serde_json::from_slice(&out.stdout).unwrap();
        names.push(doc.session.name);
    }
    assert!(errors.is_empty(), "errors: {errors:#?}");
    names.sort();
    names.dedup();
    assert_eq!(names.len(), 20, "{names:?}");
    let list = env.sessions(&repo);
    assert_eq!(list.sessions.len(), 20);
    for s in &list.sessions {
        assert!(
            Path::new(&s.worktree).join("README.md").is_file(),
            "{} checked out",
            s.name
        );
    }
    assert_eq!(env.git(&repo, ["worktree", "list"]).lines().count(), 21);
}

#[test]
fn the_fake_agent_is_executable() {
    let agent = data_file("idle-agent.sh");
    let out = std::process::Command::new(&agent)
        .arg("a b")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("arg: a b"));
    wait_until("nothing", Duration::from_millis(10), || true);
}
