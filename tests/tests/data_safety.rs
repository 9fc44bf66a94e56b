//! Data safety (issue 15): no command loses a file it did not create.
//! Files owt copies into a worktree never reach a commit; delete and ship
//! move the files git does not keep to the trash; doctor never removes a
//! live worktree and re-adopts the sessions a lost store forgot; a stale
//! git lock stops a merge before anything changes, and a fast-forward that
//! fails half-way leaves the human's checkout as it was; an agent that
//! cannot start is an error that leaves nothing behind. (The disk-full
//! merge is in the fault suite, `faults.rs`.)

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use owt_e2e::lsp::LspClient;
use owt_e2e::{pid_alive, read_file, wait_until, write_file, TestEnv};
use owt_protocol::{DbPurge, DeleteOutput, DoctorReport, MergeOutput, NewOutput, ShipOutput};
use serde_json::json;

const DEADLINE: Duration = Duration::from_secs(30);

fn commit(env: &TestEnv, dir: &Path, file: &str, text: &str, message: &str) {
    write_file(dir, file, text);
    env.git(dir, ["add", "-f", "--", file]);
    env.git(dir, ["commit", "-q", "-m", message]);
}

// ---------------------------------------------------------------------------
// Item 4: owt's own `.env` copy is never committed.

#[test]
fn regression_a_copied_env_is_never_committed_or_shipped() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    // Untracked and not in .gitignore: owt copies it into every worktree.
    write_file(&repo, ".env", "SECRET=hunter2\n");
    let (name, wt) = env.new_session(&repo, "use the env");
    assert_eq!(read_file(&wt.join(".env")), "SECRET=hunter2\n", "copied");
    assert_eq!(
        env.git(&wt, ["status", "--porcelain"]),
        "",
        "owt's copy is not the agent's work"
    );
    write_file(&wt, "feature.txt", "the work\n");
    // The host records the new file within its debounce.
    wait_until("the listing to count feature.txt", DEADLINE, || {
        env.sessions(&repo).sessions[0].changed_files == 1
    });
    // The agent forces it into the index; ship still does not commit it.
    env.git(&wt, ["add", "-f", ".env"]);
    let out: ShipOutput = env.owt_json(&repo, ["ship", &name]);
    assert!(out.merge.merged);
    assert_eq!(
        env.git(&repo, ["log", "--all", "--format=%H", "--", ".env"]),
        "",
        "no commit holds .env"
    );
    assert_eq!(read_file(&repo.join("feature.txt")), "the work\n");
    assert_eq!(
        read_file(&repo.join(".env")),
        "SECRET=hunter2\n",
        "yours, untouched"
    );

    // A branch that committed the copy itself is not merged.
    let (name, wt) = env.new_session(&repo, "commits the secret");
    commit(&env, &wt, ".env", "SECRET=hunter2\n", "oops");
    let before = env.git(&repo, ["rev-parse", "main"]);
    let err = env.owt_err(&repo, ["merge", &name]);
    assert!(err.contains("commits .env, which owt copied"), "{err}");
    assert_eq!(env.git(&repo, ["rev-parse", "main"]), before);
}

// ---------------------------------------------------------------------------
// Item 5: ignored files go to the trash, not away.

#[test]
fn regression_delete_and_ship_keep_ignored_files_in_the_trash() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    commit(
        &env,
        &repo,
        ".gitignore",
        ".env\nbuild/\n*.log\nnode_modules/\n",
        "ignore",
    );
    write_file(&repo, ".env", "SECRET=1\n");
    let config = env.home.join(".config/owt/config.toml");
    write_file(
        config.parent().unwrap(),
        "config.toml",
        "[worktree]\ndisposable = [\"node_modules\"]\n",
    );

    // An agent's edited .env, a build, a log: kept; the cache: dropped.
    let (name, wt) = env.new_session(&repo, "builds things");
    write_file(&wt, ".env", "SECRET=edited by the agent\n");
    write_file(&wt, "build/out.bin", "long build\n");
    write_file(&wt, "run.log", "log\n");
    write_file(&wt, "node_modules/x/index.js", "cache\n");
    let text = env.owt_ok(&repo, ["delete", &name]);
    assert!(text.contains("to the trash:"), "{text}");
    let trash_root = env.owt_home.join("trash/app");
    let entries: Vec<PathBuf> = std::fs::read_dir(&trash_root)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(entries.len(), 1, "{entries:?}");
    let trash = &entries[0];
    assert!(
        trash
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with(&format!("{name}-")),
        "{}",
        trash.display()
    );
    assert!(text.contains(&trash.display().to_string()), "{text}");
    assert_eq!(
        read_file(&trash.join(".env")),
        "SECRET=edited by the agent\n"
    );
    assert_eq!(read_file(&trash.join("build/out.bin")), "long build\n");
    assert_eq!(read_file(&trash.join("run.log")), "log\n");
    assert!(!trash.join("node_modules").exists(), "disposable");
    assert!(!wt.exists());

    // An unchanged copy and owt's own files go without a copy.
    let (name, wt) = env.new_session(&repo, "only logs");
    write_file(&wt, "run2.log", "log 2\n");
    let out: DeleteOutput = env.owt_json(&repo, ["delete", &name]);
    assert_eq!(out.trashed, vec!["run2.log"]);
    assert!(out.dropped.contains(&".env".to_string()), "{out:#?}");
    let kept = PathBuf::from(out.trash.expect("a trash folder"));
    assert_eq!(read_file(&kept.join("run2.log")), "log 2\n");

    // --force says what it discards, and keeps a copy of that too.
    let (name, wt) = env.new_session(&repo, "uncommitted");
    write_file(&wt, "README.md", "changed by the agent\n");
    write_file(&wt, "notes.txt", "new file\n");
    let err = env.owt_err(&repo, ["delete", &name]);
    assert!(err.contains("uncommitted work"), "{err}");
    let out: DeleteOutput = env.owt_json(&repo, ["delete", &name, "--force"]);
    let mut discarded = out.discarded.clone();
    discarded.sort();
    assert_eq!(discarded, vec!["README.md", "notes.txt"]);
    let kept = PathBuf::from(out.trash.expect("a trash folder"));
    assert_eq!(read_file(&kept.join("README.md")), "changed by the agent\n");
    assert_eq!(read_file(&kept.join("notes.txt")), "new file\n");

    // Ship's clean-up does the same.
    let (name, wt) = env.new_session(&repo, "ships with a build");
    write_file(&wt, "feature.txt", "done\n");
    write_file(&wt, "build/cache.bin", "built\n");
    let out: ShipOutput = env.owt_json(&repo, ["ship", &name]);
    assert!(out.merge.deleted);
    let kept = PathBuf::from(out.merge.trash.expect("ship kept the build"));
    assert_eq!(read_file(&kept.join("build/cache.bin")), "built\n");

    // `owt doctor` lists the trash; `owt db purge` empties it by age.
    let report: DoctorReport = env.owt_json(&repo, ["doctor"]);
    assert_eq!(report.trash.len(), 4, "{report:#?}");
    let purged: DbPurge = env.owt_json(&repo, ["db", "purge", "--days", "1"]);
    assert!(purged.trash_deleted.is_empty(), "younger than a day");
    let purged: DbPurge = env.owt_json(&repo, ["db", "purge", "--days", "0"]);
    assert_eq!(purged.trash_deleted.len(), 4);
    assert!(env
        .owt_json::<DoctorReport, _, _>(&repo, ["doctor"])
        .trash
        .is_empty());
}

// ---------------------------------------------------------------------------
// Item 6: doctor never removes a live worktree.

#[test]
fn regression_doctor_from_another_state_folder_never_removes_a_live_worktree() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    let (name, wt) = env.new_session(&repo, "live agent");
    let agent = env.sessions(&repo).sessions[0]
        .agent_pid
        .expect("a live agent");
    write_file(&wt, "work.txt", "in progress\n");
    env.git(&wt, ["add", "work.txt"]);
    env.git(&wt, ["commit", "-q", "-m", "committed work"]);

    // Another state folder (sudo, an editor's environment) finds a folder
    // it does not know: it must leave it alone.
    let other = env.path().join("other-state");
    let mut cmd = env.owt_cmd(&repo, ["--json", "doctor", "--fix"]);
    cmd.env("OWT_HOME", &other);
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: DoctorReport = serde_json::from_slice(&out.stdout).unwrap();
    let finding = report
        .findings
        .iter()
        .find(|f| f.path.as_deref() == Some(wt.to_str().unwrap()))
        .unwrap_or_else(|| panic!("{report:#?}"));
    assert!(!finding.fixed, "{finding:#?}");
    assert!(
        finding
            .skipped_reason
            .as_deref()
            .unwrap_or("")
            .contains(&env.owt_home.display().to_string()),
        "{finding:#?}"
    );
    assert!(wt.join("work.txt").is_file() && pid_alive(agent));

    // The store is lost: doctor re-adopts the live session.
    for file in ["owt.db", "owt.db-wal", "owt.db-shm"] {
        let _ = std::fs::remove_file(env.owt_home.join(file));
    }
    assert!(env.sessions(&repo).sessions.is_empty());
    let report: DoctorReport = env.owt_json(&repo, ["doctor", "--fix"]);
    assert!(
        report
            .findings
            .iter()
            .any(|f| f.kind == "lost-session" && f.fixed && f.session.as_deref() == Some(&name)),
        "{report:#?}"
    );
    assert!(wt.join("work.txt").is_file() && pid_alive(agent));
    let list = env.sessions(&repo);
    assert_eq!(list.sessions.len(), 1, "{list:#?}");
    assert_eq!(list.sessions[0].name, name);
    assert_eq!(list.sessions[0].task, "live agent");
    // It is an ordinary session again: send reaches the agent.
    env.owt_ok(&repo, ["send", &name, "after re-adoption"]);
    wait_until("the agent to echo", DEADLINE, || {
        env.owt_ok(&repo, ["peek", &name])
            .contains("got: after re-adoption")
    });
    // A second run finds nothing to do about it.
    let again: DoctorReport = env.owt_json(&repo, ["doctor"]);
    assert!(
        again
            .findings
            .iter()
            .all(|f| f.path.as_deref() != Some(wt.to_str().unwrap())),
        "{again:#?}"
    );
}

#[test]
fn doctor_removes_an_orphan_worktree_only_when_nothing_needs_it() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    commit(&env, &repo, ".gitignore", "build/\n", "ignore");
    // A worktree made by hand in owt's folder: no session, no metadata.
    let orphan = env.path().join("app.worktrees/by-hand");
    env.git(
        &repo,
        [
            "worktree",
            "add",
            "-q",
            "-b",
            "by-hand",
            orphan.to_str().unwrap(),
        ],
    );
    let fix = |env: &TestEnv| -> owt_protocol::DoctorFinding {
        let report: DoctorReport = env.owt_json(&repo, ["doctor", "--fix"]);
        report
            .findings
            .into_iter()
            .find(|f| f.kind == "orphan-worktree-folder")
            .expect("the orphan is reported")
    };
    // A shell in it.
    let mut shell = Command::new("sleep")
        .arg("600")
        .current_dir(&orphan)
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let f = fix(&env);
    assert!(
        !f.fixed && f.skipped_reason.as_deref().unwrap().contains("sleep"),
        "{f:#?}"
    );
    let _ = shell.kill();
    let _ = shell.wait();
    // An ignored build in it.
    write_file(&orphan, "build/out.bin", "long build\n");
    let f = fix(&env);
    assert!(
        !f.fixed && f.skipped_reason.as_deref().unwrap().contains("build/"),
        "{f:#?}"
    );
    std::fs::remove_dir_all(orphan.join("build")).unwrap();
    // git's own worktree lock.
    env.git(
        &repo,
        [
            "worktree",
            "lock",
            "--reason",
            "on a USB disk",
            orphan.to_str().unwrap(),
        ],
    );
    let f = fix(&env);
    assert!(
        !f.fixed
            && f.skipped_reason
                .as_deref()
                .unwrap()
                .contains("on a USB disk"),
        "{f:#?}"
    );
    env.git(&repo, ["worktree", "unlock", orphan.to_str().unwrap()]);
    assert!(orphan.exists());
    // Nothing needs it any more: removed.
    assert!(fix(&env).fixed);
    assert!(!orphan.exists());
}

// ---------------------------------------------------------------------------
// Item 8: stale git locks, and a checkout never left half-updated.

#[test]
fn regression_a_stale_git_lock_stops_a_merge_before_anything_changes() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    let (name, wt) = env.new_session(&repo, "feature");
    commit(&env, &wt, "feature.txt", "the work\n", "feature");
    // A git killed while updating HEAD left its lock behind.
    let lock = repo.join(".git/HEAD.lock");
    std::fs::write(&lock, "").unwrap();
    let before = env.snapshot(&repo, &wt);
    for verb in ["merge", "ship"] {
        let err = env.owt_err(&repo, [verb, name.as_str()]);
        assert!(
            err.contains("HEAD.lock") && err.contains("owt doctor --fix"),
            "{verb}: {err}"
        );
        assert_eq!(env.snapshot(&repo, &wt), before, "{verb} changed something");
    }
    assert!(!repo.join("feature.txt").exists());
    let report: DoctorReport = env.owt_json(&repo, ["doctor"]);
    assert!(
        report.findings.iter().any(|f| f.kind == "stale-git-lock"
            && f.path.as_deref().is_some_and(|p| p.ends_with("HEAD.lock"))),
        "{report:#?}"
    );
    let fixed: DoctorReport = env.owt_json(&repo, ["doctor", "--fix"]);
    assert!(fixed
        .findings
        .iter()
        .any(|f| f.kind == "stale-git-lock" && f.fixed));
    assert!(!lock.exists());
    let merged: MergeOutput = env.owt_json(&repo, ["merge", &name]);
    assert!(merged.merged);
    assert_eq!(read_file(&repo.join("feature.txt")), "the work\n");
}

#[test]
fn regression_a_fast_forward_that_fails_half_way_leaves_your_checkout_as_it_was() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    let (name, wt) = env.new_session(&repo, "feature");
    commit(&env, &wt, "feature.txt", "the work\n", "feature");
    // Your own uncommitted change elsewhere must survive too.
    write_file(&repo, "README.md", "# my local edit\n");
    // git writes the index and files, then fails to move the branch (the
    // hook stands in for a lock taken at that moment).
    let hook = repo.join(".git/hooks/reference-transaction");
    std::fs::create_dir_all(hook.parent().unwrap()).unwrap();
    std::fs::write(
        &hook,
        "#!/bin/sh\n[ \"$1\" = prepared ] || exit 0\nwhile read old new ref; do\n  [ \"$ref\" = refs/heads/main ] && { echo \"main is locked\" >&2; exit 1; }\ndone\nexit 0\n",
    )
    .unwrap();
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let head = env.git(&repo, ["rev-parse", "HEAD"]);
    let err = env.owt_err(&repo, ["merge", &name]);
    assert!(err.contains("left as it was"), "{err}");
    assert_eq!(env.git(&repo, ["rev-parse", "HEAD"]), head);
    assert_eq!(
        env.git(&repo, ["status", "--porcelain"]),
        " M README.md",
        "nothing of the agent's is staged or written in your checkout"
    );
    assert!(!repo.join("feature.txt").exists());
    assert_eq!(read_file(&repo.join("README.md")), "# my local edit\n");
}

// ---------------------------------------------------------------------------
// Smaller ones.

#[test]
fn regression_an_agent_that_cannot_start_is_an_error_that_leaves_nothing() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    let bad = env.path().join("bad-shebang.sh");
    std::fs::write(&bad, "#!/nonexistent/interpreter\necho hi\n").unwrap();
    std::fs::set_permissions(&bad, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    write_file(
        &env.home.join(".config/owt"),
        "config.toml",
        &format!("[tools.bad]\nbinary = \"{}\"\n", bad.display()),
    );
    let err = env.owt_err(&repo, ["new", "will not start", "--ai-tool", "bad"]);
    assert!(
        err.contains("/nonexistent/interpreter") && err.contains("does not exist"),
        "{err}"
    );
    // A task too long for exec (one argument is limited to 128 KiB), as
    // an editor sends it (a command line could not hold it).
    let mut lsp = LspClient::start(
        &env,
        &repo,
        json!({}),
        LspClient::default_capabilities(),
        false,
    );
    let err = lsp
        .request_result(
            "workspace/executeCommand",
            json!({"command": "owt.spawn", "arguments": [{"task": "y".repeat(200_000)}]}),
        )
        .expect_err("a task exec cannot pass");
    assert!(
        err["message"]
            .as_str()
            .unwrap_or("")
            .contains("MAX_ARG_STRLEN"),
        "{err}"
    );
    assert!(env.sessions(&repo).sessions.is_empty());
    assert!(
        !env.path().join("app.worktrees").exists()
            || std::fs::read_dir(env.path().join("app.worktrees"))
                .unwrap()
                .next()
                .is_none(),
        "no worktree left"
    );
    assert_eq!(env.git(&repo, ["branch", "--list", "owt/*"]), "");
}

#[test]
fn regression_worktrees_of_a_submodule_go_outside_the_superproject() {
    let env = TestEnv::new();
    let lib = env.repo("lib");
    let sup = env.repo("sup");
    env.git(
        &sup,
        [
            "-c",
            "protocol.file.allow=always",
            "submodule",
            "add",
            "-q",
            lib.to_str().unwrap(),
            "libs/sm",
        ],
    );
    env.git(&sup, ["commit", "-q", "-m", "add the submodule"]);
    let sm = sup.join("libs/sm");
    env.git(&sm, ["checkout", "-q", "-B", "main"]);
    env.trust(&sm);
    let out: NewOutput = env.owt_json(&sm, ["new", "in the submodule"]);
    let wt = PathBuf::from(&out.session.worktree);
    let sup_real = sup.canonicalize().unwrap();
    assert!(
        !wt.starts_with(&sup_real),
        "{} is inside the superproject",
        wt.display()
    );
    assert_eq!(
        wt.parent().unwrap(),
        env.path()
            .canonicalize()
            .unwrap()
            .join("sup.libs.sm.worktrees")
    );
    assert_eq!(env.git(&sup, ["status", "--porcelain"]), "");
}

#[test]
fn regression_delete_warns_about_a_shell_inside_the_worktree() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    let (name, wt) = env.new_session(&repo, "cd into me");
    let mut shell = Command::new("sleep")
        .arg("600")
        .current_dir(&wt)
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let out = env.owt(&repo, ["delete", &name]);
    let _ = shell.kill();
    let _ = shell.wait();
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("pid {} (sleep)", shell.id()))
            && stderr.contains("working directory inside"),
        "{stderr}"
    );
}

#[test]
fn regression_a_truncated_store_is_a_clear_error_and_a_replaced_one_is_reopened() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    let (name, _) = env.new_session(&repo, "keeps the store open");
    let db = env.owt_home.join("owt.db");
    let mut lsp = LspClient::start(
        &env,
        &repo,
        json!({}),
        LspClient::default_capabilities(),
        false,
    );
    lsp.request(owt_protocol::lsp::METHOD_BOARD, serde_json::Value::Null);

    // `: > owt.db` while the host holds it open.
    std::fs::write(&db, "").unwrap();
    let started = std::time::Instant::now();
    let err = env.owt_err(&repo, ["list"]);
    assert!(
        err.contains("truncated") && err.contains("mv ") && err.contains("owt doctor --fix"),
        "{err}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "it failed at once, not after the busy timeout"
    );
    lsp.await_notification("window/showMessage", DEADLINE, |p| {
        let text = p["message"].as_str().unwrap_or("");
        text.contains("status store") && text.contains("truncated")
    });

    // Moved aside as the message says: a new store, and the editor's owt
    // notices and reads it too.
    let broken = env.owt_home.join("owt.db.broken");
    std::fs::create_dir(&broken).unwrap();
    for file in ["owt.db", "owt.db-wal", "owt.db-shm"] {
        let _ = std::fs::rename(env.owt_home.join(file), broken.join(file));
    }
    lsp.await_notification("window/showMessage", DEADLINE, |p| {
        p["message"]
            .as_str()
            .unwrap_or("")
            .contains("now reads the store")
    });
    let report: DoctorReport = env.owt_json(&repo, ["doctor", "--fix"]);
    assert!(
        report
            .findings
            .iter()
            .any(|f| f.kind == "lost-session" && f.fixed),
        "{report:#?}"
    );
    // Trust lives in the store too: a new store trusts nothing yet.
    env.trust(&repo);
    let (second, _) = env.new_session(&repo, "after the new store");
    wait_until("the editor's board to show both sessions", DEADLINE, || {
        let board = lsp.request(owt_protocol::lsp::METHOD_BOARD, serde_json::Value::Null);
        let text = board.to_string();
        text.contains(&format!("\"{name}\"")) && text.contains(&format!("\"{second}\""))
    });
}
