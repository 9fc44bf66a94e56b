//! Notes, the first prompt, sync, cleanup, usage, JSON logs: end to end.

use std::path::Path;
use std::time::Duration;

use owt_e2e::{wait_until, TestEnv};
use owt_protocol::{CleanupOutput, NewOutput, NotesOutput, SessionList, SyncOutput, UsageOutput};

const DEADLINE: Duration = Duration::from_secs(20);

fn screen(env: &TestEnv, repo: &Path, name: &str) -> String {
    let out = env.owt(repo, ["peek", name]);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn commit(env: &TestEnv, dir: &Path, file: &str, text: &str) {
    std::fs::write(dir.join(file), text).unwrap();
    env.git(dir, ["add", file]);
    env.git(dir, ["commit", "-q", "-m", &format!("edit {file}")]);
}

#[test]
fn notes_reach_live_agents_and_new_first_prompts() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    let a: NewOutput = env.owt_json(&repo, ["new", "first agent"]);
    wait_until("the first agent's prompt", DEADLINE, || {
        screen(&env, &repo, &a.session.name).contains("ready>")
    });
    // #34.9: an idle agent gets the note with its next prompt, not as a
    // turn of its own (regression: one went back to `blocked`).
    // Settled: neither `starting` (which is not `working` either, and
    // turns into it as the start-up output comes) nor `working`.
    env.wait_settled(&repo, &a.session.name);
    let noted: NotesOutput = env.owt_json(&repo, ["note", "Users table has verified_at"]);
    assert_eq!(noted.notes, vec!["Users table has verified_at"]);
    assert!(noted.delivered_to.is_empty(), "{noted:?}");
    assert_eq!(noted.at_next_turn, vec![a.session.name.clone()]);
    assert!(!screen(&env, &repo, &a.session.name).contains("owt note"));
    env.owt_ok(&repo, ["send", &a.session.name, "next task"]);
    let deadline = std::time::Instant::now() + DEADLINE;
    loop {
        let s = screen(&env, &repo, &a.session.name);
        if s.contains("got: [owt note, shared with every agent] Users table has verified_at")
            && s.contains("next task")
        {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no note with the next prompt:\n{s}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // Given once: the prompt after carries it no more.
    env.owt_ok(&repo, ["send", &a.session.name, "and then"]);
    wait_until("the prompt after", DEADLINE, || {
        screen(&env, &repo, &a.session.name).contains("got: and then")
    });
    // --now types it in at once.
    let now: NotesOutput = env.owt_json(&repo, ["note", "Ports are 20000 up", "--now"]);
    assert_eq!(now.delivered_to, vec![a.session.name.clone()]);
    wait_until("the note typed into the live agent", DEADLINE, || {
        screen(&env, &repo, &a.session.name)
            .contains("got: [owt note, shared with every agent] Ports are 20000 up")
    });

    let b: NewOutput = env.owt_json(&repo, ["new", "Fix the login crash"]);
    wait_until("the second agent's first prompt", DEADLINE, || {
        let s = screen(&env, &repo, &b.session.name);
        s.contains("- Users table has verified_at") && s.contains("REPRODUCE → DIAGNOSE")
    });
    let s = screen(&env, &repo, &b.session.name);
    assert!(
        s.contains("first-agent: first agent"),
        "the other agent is named: {s}"
    );

    let listed: NotesOutput = env.owt_json(&repo, ["note"]);
    assert_eq!(listed.notes.len(), 2);
    let cleared: NotesOutput = env.owt_json(&repo, ["note", "--clear"]);
    assert_eq!((cleared.cleared, cleared.notes.len()), (2, 0));

    let raw: NewOutput = env.owt_json(&repo, ["new", "verbatim please", "--raw"]);
    wait_until("the raw prompt", DEADLINE, || {
        screen(&env, &repo, &raw.session.name).contains("arg: verbatim please")
    });
    assert!(!screen(&env, &repo, &raw.session.name).contains("How to work"));
    let err = env.owt_err(&repo, ["new", "x", "--template", "nonsense"]);
    assert!(err.contains("unknown template `nonsense`"), "{err}");
}

#[test]
fn sync_with_and_without_conflicts() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    commit(&env, &repo, "shared.txt", "one\n");
    let clean: NewOutput = env.owt_json(&repo, ["new", "clean sync"]);
    let clash: NewOutput = env.owt_json(&repo, ["new", "clashing sync"]);
    let clash_wt = Path::new(&clash.session.worktree).to_path_buf();
    commit(&env, &clash_wt, "shared.txt", "agent\n");
    let clash_head = env.git(&clash_wt, ["rev-parse", "HEAD"]);
    commit(&env, &repo, "shared.txt", "human\n");
    commit(&env, &repo, "human.txt", "h\n");

    let out: SyncOutput = env.owt_json_status(&repo, ["sync", "--all"]).0;
    let by_name = |n: &str| out.sessions.iter().find(|s| s.name == n).unwrap().clone();
    assert_eq!(by_name(&clean.session.name).outcome, "synced");
    assert!(Path::new(&clean.session.worktree)
        .join("human.txt")
        .is_file());
    let clashed = by_name(&clash.session.name);
    assert_eq!(
        (clashed.outcome.as_str(), clashed.conflicts.clone()),
        ("conflicts", vec!["shared.txt".to_string()])
    );
    assert_eq!(
        env.git(&clash_wt, ["rev-parse", "HEAD"]),
        clash_head,
        "restored"
    );
    assert_eq!(env.git(&clash_wt, ["status", "--porcelain"]), "");

    let again: SyncOutput = env.owt_json(&repo, ["sync", &clean.session.name]);
    assert_eq!(again.sessions[0].outcome, "up-to-date");
}

#[test]
fn sync_fast_forwards_the_base_from_its_upstream() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    let remote = env.path().join("remote.git");
    env.git(
        env.path(),
        [
            "clone",
            "-q",
            "--bare",
            repo.to_str().unwrap(),
            remote.to_str().unwrap(),
        ],
    );
    env.git(&repo, ["remote", "add", "origin", remote.to_str().unwrap()]);
    env.git(&repo, ["fetch", "-q", "origin"]);
    env.git(
        &repo,
        ["branch", "-q", "--set-upstream-to=origin/main", "main"],
    );
    let s: NewOutput = env.owt_json(&repo, ["new", "track upstream"]);
    // Someone else pushes to the remote.
    let other = env.path().join("other");
    env.git(
        env.path(),
        [
            "clone",
            "-q",
            remote.to_str().unwrap(),
            other.to_str().unwrap(),
        ],
    );
    commit(&env, &other, "upstream.txt", "from upstream\n");
    env.git(&other, ["push", "-q", "origin", "main"]);

    let out: SyncOutput = env.owt_json(&repo, ["sync", &s.session.name]);
    assert_eq!(out.sessions[0].fetched_from.as_deref(), Some("origin/main"));
    assert_eq!(out.sessions[0].outcome, "synced");
    assert!(
        repo.join("upstream.txt").is_file(),
        "the human's checkout of main was fast-forwarded"
    );
    assert!(Path::new(&s.session.worktree)
        .join("upstream.txt")
        .is_file());
}

#[test]
fn cleanup_lists_then_removes_stale_sessions_but_keeps_dirty_ones() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    let clean: NewOutput = env.owt_json(&repo, ["new", "stale clean"]);
    let dirty: NewOutput = env.owt_json(&repo, ["new", "stale dirty"]);
    std::fs::write(
        Path::new(&dirty.session.worktree).join("precious.txt"),
        "keep me\n",
    )
    .unwrap();
    // Both agents exit, so both are stale at once with --days 0.
    for s in [&clean, &dirty] {
        env.owt_ok(&repo, ["send", &s.session.name, "exit"]);
    }
    wait_until("both agents exited", DEADLINE, || {
        let list: SessionList = env.owt_json(&repo, ["list"]);
        list.sessions
            .iter()
            .all(|s| s.status == owt_protocol::Status::Exited)
    });
    let dry: CleanupOutput = env.owt_json(&repo, ["cleanup", "--days", "0"]);
    assert_eq!(dry.stale.len(), 2);
    assert!(dry.removed.is_empty());
    let list: SessionList = env.owt_json(&repo, ["list"]);
    assert_eq!(list.sessions.len(), 2, "a dry run removes nothing");
    let none: CleanupOutput = env.owt_json(&repo, ["cleanup"]);
    assert!(none.stale.is_empty(), "nothing is 14 days old");

    let forced: CleanupOutput = env.owt_json(&repo, ["cleanup", "--days", "0", "--force"]);
    assert_eq!(forced.removed, vec![clean.session.name.clone()]);
    assert_eq!(forced.kept.len(), 1);
    assert!(
        forced.kept[0].1.contains("uncommitted work"),
        "{:?}",
        forced.kept
    );
    assert!(Path::new(&dirty.session.worktree)
        .join("precious.txt")
        .is_file());

    let usage: UsageOutput = env.owt_json(&repo, ["usage"]);
    assert_eq!((usage.sessions_started, usage.deleted), (2, 1));
    assert_eq!(usage.by_provider, vec![("fake".to_string(), 2)]);
}

#[test]
fn json_logs_carry_the_correlation_id_and_the_session() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    env.owt_ok(&repo, ["new", "logged"]);
    env.wait_settled(&repo, "logged");
    let out = env.owt(&repo, ["--log-format", "json", "-v", "delete", "logged"]);
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    let records: Vec<serde_json::Value> = stderr
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l}: {e}")))
        .collect();
    let record = records
        .iter()
        .find(|r| r["fields"]["message"] == "deleting the session")
        .unwrap_or_else(|| panic!("no record of the delete in: {stderr}"));
    let spans = record["spans"].as_array().unwrap();
    assert!(
        spans
            .iter()
            .any(|s| s["name"] == "command" && s["cid"].as_str().is_some_and(|c| c.len() == 8)),
        "{record}"
    );
    assert!(spans.iter().any(|s| s["session"] == "logged"), "{record}");
}

#[test]
fn dependencies_install_for_node_and_python_projects() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    let config = std::fs::read_to_string(repo.join(".owt.toml")).unwrap();
    std::fs::write(
        repo.join(".owt.toml"),
        format!("{config}\n[environment]\nauto_install_deps = true\n"),
    )
    .unwrap();
    std::fs::write(
        repo.join("package.json"),
        r#"{"name": "fixture", "version": "1.0.0", "private": true, "dependencies": {"is-number": "7.0.0"}}"#,
    )
    .unwrap();
    std::fs::write(repo.join("requirements.txt"), "six==1.16.0\n").unwrap();
    std::fs::write(repo.join(".gitignore"), "node_modules/\n.venv/\n").unwrap();
    env.git(&repo, ["add", "."]);
    env.git(&repo, ["commit", "-q", "-m", "node and python project"]);
    env.trust(&repo);
    let out: NewOutput = env.owt_json(&repo, ["new", "with deps"]);
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
    let wt = Path::new(&out.session.worktree);
    assert!(
        wt.join("node_modules/is-number/package.json").is_file(),
        "npm installed the dependency"
    );
    let six = std::fs::read_dir(wt.join(".venv/lib"))
        .unwrap()
        .flatten()
        .any(|d| d.path().join("site-packages/six.py").is_file());
    assert!(six, "pip installed six into .venv");
    assert_eq!(
        env.git(wt, ["status", "--porcelain"]),
        "",
        "installed files are ignored, the worktree is clean"
    );

    // A failing install is a warning, and the session still starts.
    std::fs::write(
        repo.join("requirements.txt"),
        "this-package-does-not-exist-owt-test==0.0.0\n",
    )
    .unwrap();
    std::fs::remove_file(repo.join("package.json")).unwrap();
    env.git(&repo, ["commit", "-qam", "broken requirements"]);
    let out: NewOutput = env.owt_json(&repo, ["new", "broken deps"]);
    assert!(
        out.warnings.iter().any(|w| w.contains("python (pip)")),
        "{:?}",
        out.warnings
    );
    assert!(Path::new(&out.session.worktree).is_dir());
}

#[test]
fn a_seed_worktreerc_is_read_when_there_is_no_owt_toml() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    let agent = owt_e2e::data_file("idle-agent.sh");
    std::fs::remove_file(repo.join(".owt.toml")).unwrap();
    std::fs::write(
        repo.join(".worktreerc.toml"),
        format!(
            "[worktree]\nbase_directory = \"../seed-worktrees\"\n\n[tmux]\nai_tool = \"seedtool\"\n\n[backend]\nmode = \"tmux\"\n\n[tools.seedtool]\nbinary = \"{}\"\n",
            agent.display()
        ),
    )
    .unwrap();
    env.git(&repo, ["add", "-A"]);
    env.git(&repo, ["commit", "-q", "-m", "seed config"]);
    env.trust(&repo);
    let show: owt_protocol::ConfigShow = env.owt_json(&repo, ["config", "show"]);
    assert!(show.sources[0].ends_with(".worktreerc.toml"));
    assert!(show.origins["agent.default_tool"].ends_with(".worktreerc.toml"));
    assert!(show.ignored.iter().any(|k| k.starts_with("backend")));
    let out: NewOutput = env.owt_json(&repo, ["new", "seeded"]);
    assert_eq!(out.session.provider, "seedtool");
    assert!(
        out.session.worktree.contains("/seed-worktrees/seeded"),
        "{}",
        out.session.worktree
    );
}

#[test]
fn a_branch_session_goes_through_new_send_ship() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    let out: NewOutput = env.owt_json(&repo, ["branch", "in place work"]);
    assert_eq!(out.session.kind, owt_protocol::SessionKind::Branch);
    assert_eq!(
        Path::new(&out.session.worktree),
        repo.canonicalize().unwrap()
    );
    assert_eq!(
        env.git(&repo, ["rev-parse", "--abbrev-ref", "HEAD"]),
        "owt/in-place-work"
    );
    assert!(!env.path().join("app.worktrees").exists(), "no worktree");
    let err = env.owt_err(&repo, ["new", "second", "--in-place"]);
    assert!(err.contains("already hosts the branch session"), "{err}");

    env.owt_ok(&repo, ["send", &out.session.name, "hello in place"]);
    wait_until("the agent got the text", DEADLINE, || {
        screen(&env, &repo, &out.session.name).contains("got: hello in place")
    });
    let report: owt_protocol::DoctorReport = env.owt_json(&repo, ["doctor"]);
    assert!(
        report.findings.is_empty(),
        "a healthy branch session is no orphan: {:?}",
        report.findings
    );

    std::fs::write(repo.join("in-place.txt"), "agent work\n").unwrap();
    env.wait_settled(&repo, &out.session.name);
    let shipped: owt_protocol::ShipOutput = env.owt_json(&repo, ["ship", &out.session.name]);
    assert!(shipped.merge.merged && shipped.merge.deleted, "{shipped:?}");
    assert_eq!(
        env.git(&repo, ["rev-parse", "--abbrev-ref", "HEAD"]),
        "main",
        "back on the base"
    );
    assert_eq!(
        std::fs::read_to_string(repo.join("in-place.txt")).unwrap(),
        "agent work\n"
    );
    assert_eq!(env.git(&repo, ["status", "--porcelain"]), "");
    assert_eq!(env.git(&repo, ["branch", "--list", "owt/*"]), "");

    // Delete of a branch session switches the checkout back and keeps the commits.
    let again: NewOutput = env.owt_json(&repo, ["new", "another in place", "--in-place"]);
    commit(&env, &repo, "kept.txt", "kept\n");
    env.wait_settled(&repo, &again.session.name);
    let deleted: owt_protocol::DeleteOutput = env.owt_json(&repo, ["delete", &again.session.name]);
    assert!(
        !deleted.worktree_removed,
        "the human's checkout is never removed"
    );
    assert_eq!(
        deleted.backup_ref.as_deref(),
        Some("refs/owt/backup/another-in-place")
    );
    assert_eq!(
        env.git(&repo, ["rev-parse", "--abbrev-ref", "HEAD"]),
        "main"
    );
    assert!(repo.is_dir() && repo.join("README.md").is_file());
}

/// Regression: two sends at the same moment used to interleave as
/// `textAtextB⏎⏎`; each send's text and Enter now go together.
#[test]
fn concurrent_sends_arrive_as_whole_lines() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    let s: NewOutput = env.owt_json(&repo, ["new", "many senders"]);
    wait_until("the agent's prompt", DEADLINE, || {
        screen(&env, &repo, &s.session.name).contains("ready>")
    });
    let children: Vec<_> = (0..8)
        .map(|i| {
            env.owt_cmd(
                &repo,
                ["send", &s.session.name, &format!("message-{i}-end")],
            )
            .spawn()
            .unwrap()
        })
        .collect();
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }
    wait_until("every message on a line of its own", DEADLINE, || {
        let out = env.owt(&repo, ["peek", &s.session.name, "--scrollback"]);
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        (0..8).all(|i| {
            text.lines()
                .any(|l| l.trim_end().ends_with(&format!("got: message-{i}-end")))
        })
    });
}
