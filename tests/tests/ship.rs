//! Merge and ship on real repositories: the final state of every ref,
//! worktree and file is checked.

use std::path::{Path, PathBuf};

use owt_e2e::{read_file, write_file, TestEnv};
use owt_protocol::{Lane, MergeOutput, ShipOutput, Status};

fn commit(env: &TestEnv, dir: &Path, file: &str, text: &str, message: &str) -> String {
    write_file(dir, file, text);
    env.git(dir, ["add", "--", file]);
    env.git(dir, ["commit", "-q", "-m", message]);
    env.git(dir, ["rev-parse", "HEAD"])
}

#[test]
fn clean_fast_forward_ship() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    let (name, wt) = env.new_session(&repo, "add feature");
    write_file(&wt, "feature.txt", "new feature\n");
    write_file(&wt, "src/lib.rs", "pub fn f() {}\n");
    let out: ShipOutput = env.owt_json(&repo, ["ship", &name, "-m", "Add the feature"]);
    let commit = out.committed.expect("uncommitted work was committed");
    assert!(out.merge.merged && out.merge.deleted);
    assert_eq!(
        env.git(&repo, ["rev-parse", "main"]),
        commit,
        "fast-forward"
    );
    assert_eq!(
        env.git(&repo, ["log", "-1", "--format=%s", "main"]),
        "Add the feature"
    );
    assert_eq!(
        read_file(&repo.join("feature.txt")),
        "new feature\n",
        "the human's checkout was updated"
    );
    assert!(repo.join("src/lib.rs").is_file());
    assert_eq!(
        out.merge.checkout_updated.as_deref().map(Path::new),
        Some(repo.canonicalize().unwrap().as_path())
    );
    assert!(!wt.exists());
    assert_eq!(env.git(&repo, ["branch", "--list", "owt/*"]), "");
    assert!(env.sessions(&repo).sessions.is_empty());
}

#[test]
fn ship_onto_a_moved_base_makes_a_merge_commit_or_rebases() {
    for rebase in [false, true] {
        let env = TestEnv::new();
        let repo = env.repo("app");
        let (name, wt) = env.new_session(&repo, "agent work");
        let agent_commit = commit(&env, &wt, "agent.txt", "agent\n", "agent commit");
        let human_commit = commit(&env, &repo, "human.txt", "human\n", "human commit");
        let mut args = vec!["ship", name.as_str()];
        if rebase {
            args.push("--rebase");
        }
        let out: ShipOutput = env.owt_json(&repo, &args);
        assert_eq!(out.committed, None, "nothing was uncommitted");
        assert!(out.merge.merged);
        let parents = env.git(&repo, ["log", "-1", "--format=%P", "main"]);
        if rebase {
            assert_eq!(parents.split(' ').count(), 1, "linear history");
            let subjects = env.git(&repo, ["log", "--format=%s", "main"]);
            assert_eq!(subjects, "agent commit\nhuman commit\ninitial");
        } else {
            assert_eq!(parents.split(' ').count(), 2, "a merge commit: {parents}");
            assert!(
                parents.contains(&agent_commit)
                    || env
                        .git(
                            &repo,
                            ["merge-base", "--is-ancestor", &agent_commit, "main"]
                        )
                        .is_empty()
            );
        }
        assert!(env
            .git(
                &repo,
                ["merge-base", "--is-ancestor", &human_commit, "main"]
            )
            .is_empty());
        assert_eq!(read_file(&repo.join("agent.txt")), "agent\n");
        assert_eq!(read_file(&repo.join("human.txt")), "human\n");
    }
}

/// A session that committed AGENT on line 2 of shared.txt while the main
/// checkout committed HUMAN there: merging it conflicts.
fn conflicting_session() -> (TestEnv, PathBuf, String, PathBuf) {
    let env = TestEnv::new();
    let repo = env.repo("app");
    let shared = "shared.txt";
    commit(&env, &repo, shared, "one\ntwo\nthree\n", "shared file");
    let (name, wt) = env.new_session(&repo, "edit shared");
    commit(&env, &wt, shared, "one\nAGENT\nthree\n", "agent edit");
    commit(&env, &repo, shared, "one\nHUMAN\nthree\n", "human edit");
    (env, repo, name, wt)
}

#[test]
fn predicted_conflict_changes_nothing_and_leave_conflicts_needs_you() {
    let (env, repo, name, wt) = conflicting_session();
    let before = env.snapshot(&repo, &wt);

    let err = env.owt_err(&repo, ["merge", &name]);
    assert!(
        err.contains("would conflict in shared.txt (lines 2–6)"),
        "{err}"
    );
    assert!(err.contains("nothing was changed"), "{err}");
    assert_eq!(env.snapshot(&repo, &wt), before, "nothing changed anywhere");
    let err = env.owt_err(&repo, ["ship", &name]);
    assert!(err.contains("would conflict"), "{err}");
    assert_eq!(
        env.snapshot(&repo, &wt),
        before,
        "ship changed nothing either"
    );

    let out = env.owt(&repo, ["--json", "merge", &name, "--leave-conflicts"]);
    assert!(
        !out.status.success(),
        "a merge left in conflict is not a success"
    );
    let merge: MergeOutput = serde_json::from_slice(&out.stdout).unwrap();
    assert!(merge.left_conflicts && !merge.merged);
    assert_eq!(merge.conflicts[0].path, "shared.txt");
    assert!(read_file(&wt.join("shared.txt")).contains("<<<<<<<"));
    assert_eq!(
        env.git(&repo, ["rev-parse", "main"]),
        before
            .lines()
            .find(|l| l.starts_with("refs/heads/main"))
            .unwrap()
            .split(' ')
            .nth(1)
            .unwrap()
    );
    let list = env.sessions(&repo);
    let s = &list.sessions[0];
    assert_eq!((s.status, s.lane), (Status::Conflict, Lane::NeedsYou));
    assert_eq!(s.conflicted_files, vec!["shared.txt"]);

    // Resolving it by hand clears the conflict.
    write_file(&wt, "shared.txt", "one\nBOTH\nthree\n");
    env.git(&wt, ["add", "shared.txt"]);
    env.git(&wt, ["commit", "-q", "--no-edit"]);
    let list = env.sessions(&repo);
    assert_ne!(list.sessions[0].status, Status::Conflict);
    let merged: MergeOutput = env.owt_json(&repo, ["merge", &name]);
    assert!(merged.merged);
    assert_eq!(read_file(&repo.join("shared.txt")), "one\nBOTH\nthree\n");
}

#[test]
fn strategy_is_from_the_agents_point_of_view() {
    for (strategy, rebase, expected) in [
        ("ours", false, "AGENT"),
        ("theirs", false, "HUMAN"),
        ("ours", true, "AGENT"),
        ("theirs", true, "HUMAN"),
    ] {
        let (env, repo, name, _) = conflicting_session();
        let mut args = vec!["merge", name.as_str(), "--strategy", strategy];
        if rebase {
            args.push("--rebase");
        }
        let out: MergeOutput = env.owt_json(&repo, &args);
        assert!(out.merged, "{strategy} rebase={rebase}");
        assert_eq!(
            read_file(&repo.join("shared.txt")),
            format!("one\n{expected}\nthree\n"),
            "--strategy {strategy} (rebase={rebase})"
        );
    }
}

#[test]
fn rejecting_pre_commit_hook_stops_ship_and_keeps_everything() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    let hooks = repo.join(".git/hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    write_file(
        &hooks,
        "pre-commit",
        "#!/bin/sh\necho 'lint failed: no TODOs allowed' >&2\nexit 1\n",
    );
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        hooks.join("pre-commit"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    let (name, wt) = env.new_session(&repo, "todo work");
    write_file(&wt, "todo.txt", "TODO\n");
    let main_before = env.git(&repo, ["rev-parse", "main"]);
    let wt_head_before = env.git(&wt, ["rev-parse", "HEAD"]);
    write_file(&wt, "staged.txt", "staged\n");
    env.git(&wt, ["add", "staged.txt"]);
    let status_before = env.git(&wt, ["status", "--porcelain"]);

    let err = env.owt_err(&repo, ["ship", &name]);
    assert!(
        err.contains("lint failed"),
        "the hook's message reaches the user: {err}"
    );
    assert!(err.contains("stopped before anything was merged"), "{err}");
    assert_eq!(env.git(&repo, ["rev-parse", "main"]), main_before);
    assert_eq!(env.git(&wt, ["rev-parse", "HEAD"]), wt_head_before);
    assert_eq!(
        env.git(&wt, ["status", "--porcelain"]),
        status_before,
        "index and files as they were"
    );
    assert_eq!(read_file(&wt.join("todo.txt")), "TODO\n");
    let list = env.sessions(&repo);
    assert_eq!(list.sessions.len(), 1, "the session is kept");
    let agent = list.sessions[0].agent_pid.expect("the agent's pid");
    assert!(
        Path::new(&format!("/proc/{agent}")).exists(),
        "the agent is alive"
    );
    assert_ne!(list.sessions[0].status, Status::Exited);
}

#[test]
fn the_humans_checkout_is_updated_safely() {
    // Dirty in an unrelated file: updated, local change kept; ignored files untouched.
    let env = TestEnv::new();
    let repo = env.repo("app");
    commit(&env, &repo, ".gitignore", ".env\nnode_modules/\n", "ignore");
    commit(&env, &repo, "notes.txt", "mine\n", "notes");
    write_file(&repo, ".env", "SECRET=1\n");
    write_file(&repo, "node_modules/dep/index.js", "module.exports = 1;\n");
    let (name, wt) = env.new_session(&repo, "agent work");
    commit(&env, &wt, "agent.txt", "agent\n", "agent");
    write_file(&repo, "notes.txt", "mine, edited but not committed\n");
    let out: MergeOutput = env.owt_json(&repo, ["merge", &name]);
    assert!(out.merged && out.checkout_updated.is_some());
    assert_eq!(read_file(&repo.join("agent.txt")), "agent\n");
    assert_eq!(
        read_file(&repo.join("notes.txt")),
        "mine, edited but not committed\n"
    );
    assert_eq!(read_file(&repo.join(".env")), "SECRET=1\n");
    assert_eq!(
        read_file(&repo.join("node_modules/dep/index.js")),
        "module.exports = 1;\n"
    );

    // Dirty in a file the merge changes: refused, nothing changed.
    let (name, wt) = env.new_session(&repo, "edit notes");
    commit(&env, &wt, "notes.txt", "agent's notes\n", "agent notes");
    let main_before = env.git(&repo, ["rev-parse", "main"]);
    let err = env.owt_err(&repo, ["merge", &name]);
    assert!(
        err.contains("could not update your checkout") || err.contains("would conflict"),
        "{err}"
    );
    assert_eq!(env.git(&repo, ["rev-parse", "main"]), main_before);
    assert_eq!(
        read_file(&repo.join("notes.txt")),
        "mine, edited but not committed\n"
    );
    assert_eq!(env.sessions(&repo).sessions.len(), 1);

    // An agent that force-adds a file the human has as an ignored file: refused.
    env.owt_ok(&repo, ["delete", &name, "--force"]);
    let (name, wt) = env.new_session(&repo, "env file");
    write_file(&wt, ".env", "AGENT=1\n");
    env.git(&wt, ["add", "-f", ".env"]);
    env.git(&wt, ["commit", "-q", "-m", "agent adds .env"]);
    let err = env.owt_err(&repo, ["merge", &name]);
    // owt copied .env into this worktree, so the branch committing it is
    // refused before phase 2 would refuse to overwrite the human's.
    assert!(
        err.contains("would overwrite files git does not track there: .env")
            || err.contains("commits .env, which owt copied"),
        "{err}"
    );
    assert_eq!(read_file(&repo.join(".env")), "SECRET=1\n");
    assert_eq!(env.git(&repo, ["rev-parse", "main"]), main_before);
}

#[test]
fn base_checked_out_nowhere_moves_only_the_ref() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    let (name, wt) = env.new_session(&repo, "agent work");
    let tip = commit(&env, &wt, "agent.txt", "agent\n", "agent");
    env.git(&repo, ["checkout", "-q", "-b", "elsewhere"]);
    let out: MergeOutput = env.owt_json(&repo, ["merge", &name]);
    assert!(out.merged);
    assert_eq!(out.checkout_updated, None);
    assert_eq!(env.git(&repo, ["rev-parse", "main"]), tip);
    assert!(
        !repo.join("agent.txt").exists(),
        "the checkout on another branch is untouched"
    );
    assert_eq!(
        env.git(&repo, ["rev-parse", "--abbrev-ref", "HEAD"]),
        "elsewhere"
    );
}

#[test]
fn merge_keep_leaves_the_session() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    let (name, wt) = env.new_session(&repo, "agent work");
    commit(&env, &wt, "agent.txt", "agent\n", "agent");
    let out: MergeOutput = env.owt_json(&repo, ["merge", &name, "--keep"]);
    assert!(out.merged && !out.deleted);
    assert!(wt.is_dir());
    assert_eq!(env.sessions(&repo).sessions.len(), 1);
    let err = env.owt_err(&repo, ["merge", "nope"]);
    assert!(err.contains("no session named `nope`"), "{err}");
}

/// Kill owt with SIGKILL at each step of ship; running ship again completes
/// it, and no commit or file is lost.
#[test]
fn sigkill_at_every_step_of_ship_then_rerun_completes() {
    for point in ["ship-commit", "ship-phase1", "ship-phase2", "ship-cleanup"] {
        let env = TestEnv::new();
        let repo = env.repo("app");
        let (name, wt) = env.new_session(&repo, "crashy work");
        let committed = commit(&env, &wt, "committed.txt", "c\n", "agent commit");
        write_file(&wt, "uncommitted.txt", "u\n");
        commit(&env, &repo, "human.txt", "h\n", "human moved main");

        let mut cmd = env.owt_cmd(&repo, ["ship", &name]);
        cmd.env("OWT_FAILPOINT", point);
        let status = cmd.output().unwrap().status;
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(
            status.signal(),
            Some(libc::SIGKILL),
            "{point}: the failpoint fired"
        );

        let out: ShipOutput = env.owt_json(&repo, ["ship", &name]);
        assert!(out.merge.merged, "{point}: re-running completed the ship");
        assert!(
            env.git(&repo, ["merge-base", "--is-ancestor", &committed, "main"])
                .is_empty(),
            "{point}: the agent's commit is in main"
        );
        for (file, text) in [
            ("committed.txt", "c\n"),
            ("uncommitted.txt", "u\n"),
            ("human.txt", "h\n"),
        ] {
            assert_eq!(read_file(&repo.join(file)), text, "{point}: {file}");
        }
        assert!(!wt.exists(), "{point}: cleaned up");
        assert!(env.sessions(&repo).sessions.is_empty(), "{point}");
    }
}

#[test]
fn doctor_fix_rolls_back_an_interrupted_merge() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    let (name, wt) = env.new_session(&repo, "agent work");
    commit(&env, &wt, "agent.txt", "agent\n", "agent");
    commit(&env, &repo, "human.txt", "human\n", "human");
    let before = env.snapshot(&repo, &wt);
    let mut cmd = env.owt_cmd(&repo, ["merge", &name]);
    cmd.env("OWT_FAILPOINT", "merge-phase1");
    assert!(!cmd.output().unwrap().status.success());
    let report: owt_protocol::DoctorReport = env.owt_json(&repo, ["doctor", "--fix"]);
    let finding = report
        .findings
        .iter()
        .find(|f| f.kind == "interrupted-merge")
        .expect("found");
    assert!(
        finding.fixed && finding.detail.contains("rolled back"),
        "{finding:?}"
    );
    assert_eq!(env.snapshot(&repo, &wt), before);
    let again: owt_protocol::DoctorReport = env.owt_json(&repo, ["doctor"]);
    assert!(again.findings.is_empty(), "{:?}", again.findings);
}

#[test]
fn queue_ship_ships_the_ready_ones_and_leaves_the_conflicting_ones() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    commit(
        &env,
        &repo,
        "shared.txt",
        "one\ntwo\nthree\n",
        "shared file",
    );
    let (a, a_wt) = env.new_session(&repo, "alpha edits shared");
    let (b, b_wt) = env.new_session(&repo, "beta edits shared");
    let (c, c_wt) = env.new_session(&repo, "gamma is independent");
    commit(&env, &a_wt, "shared.txt", "one\nALPHA\nthree\n", "alpha");
    commit(&env, &b_wt, "shared.txt", "one\nBETA\nthree\n", "beta");
    commit(&env, &c_wt, "gamma.txt", "gamma\n", "gamma");
    write_file(&c_wt, "gamma-dirty.txt", "uncommitted\n");
    let b_head = env.git(&b_wt, ["rev-parse", "HEAD"]);

    // alpha and beta conflict with each other: neither is READY TO SHIP
    // (#34), so the queue ships gamma alone.
    let (out, ok): (owt_protocol::QueueShipOutput, bool) =
        env.owt_json_status(&repo, ["queue", "--ship"]);
    assert!(ok, "{out:?}");
    let shipped: Vec<&str> = out.shipped.iter().map(|s| s.merge.name.as_str()).collect();
    assert_eq!(shipped, vec![c.as_str()], "{out:?}");
    assert_eq!(out.stopped_at, None);
    assert_eq!(read_file(&repo.join("gamma.txt")), "gamma\n");
    assert_eq!(
        read_file(&repo.join("gamma-dirty.txt")),
        "uncommitted\n",
        "dirty work was committed and shipped"
    );
    // The conflicting ones are intact, with their agents, in NEEDS YOU.
    let list = env.sessions(&repo);
    let mut left: Vec<(&str, Lane)> = list
        .sessions
        .iter()
        .map(|s| (s.name.as_str(), s.lane))
        .collect();
    left.sort();
    let mut expected = vec![(a.as_str(), Lane::NeedsYou), (b.as_str(), Lane::NeedsYou)];
    expected.sort();
    assert_eq!(left, expected);
    assert_eq!(env.git(&b_wt, ["rev-parse", "HEAD"]), b_head);
}
