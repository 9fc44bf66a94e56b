//! Security checks on links and files that are not files (issue #33): a
//! cloned repository that commits a symbolic link, a FIFO or a link to a
//! device makes owt write nowhere outside its worktree, read nothing
//! outside it, and never hang or run out of memory; owt's own files in a
//! worktree are opened without following links.

use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use owt_e2e::acp::{fake_acp_tool, wait_status};
use owt_e2e::lsp::LspClient;
use owt_e2e::TestEnv;
use owt_protocol::{NewOutput, Status};
use serde_json::json;

/// A folder holding a stand-in `claude` (the idle agent), and a PATH with
/// it first: `--ai-tool claude` runs it, and owt writes Claude Code's
/// integration files as for the real one.
fn path_with_fake_claude(env: &TestEnv) -> String {
    let bin = env.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let fake = bin.join("claude");
    std::fs::copy(owt_e2e::data_file("idle-agent.sh"), &fake).unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    format!("{}:/usr/bin:/bin", bin.display())
}

/// `owt --json new TASK --ai-tool claude` in `repo`, with the stand-in
/// claude; the output (asserted to succeed).
fn new_claude_session(env: &TestEnv, repo: &Path, task: &str) -> NewOutput {
    let mut cmd = env.owt_cmd(repo, ["--json", "new", task, "--ai-tool", "claude"]);
    cmd.env("PATH", path_with_fake_claude(env));
    let out: Output = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "owt new failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn commit_all(env: &TestEnv, repo: &Path, message: &str) {
    env.git(repo, ["add", "-A"]);
    env.git(repo, ["commit", "-q", "-m", message]);
}

fn mkdirs(path: &Path) -> PathBuf {
    std::fs::create_dir_all(path).unwrap();
    path.to_path_buf()
}

#[test]
fn regression_integration_files_committed_as_links_are_not_written_through() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    // The user's own Claude Code folder, and a place outside.
    let claude = mkdirs(&env.home.join(".claude"));
    let local = claude.join("settings.local.json");
    std::fs::write(&local, "{\"theme\": \"dark\"}\n").unwrap();
    let outside = mkdirs(&env.path().join("outside"));
    // `.claude` a link to the user's folder (so the settings file itself is
    // not tracked), `.mcp.json` a link to a missing file outside.
    symlink(&claude, repo.join(".claude")).unwrap();
    symlink(outside.join("created.json"), repo.join(".mcp.json")).unwrap();
    commit_all(&env, &repo, "links");

    let created = new_claude_session(&env, &repo, "links");
    let warnings = created.warnings.join("\n");
    assert_eq!(
        std::fs::read_to_string(&local).unwrap(),
        "{\"theme\": \"dark\"}\n",
        "the user's own settings are untouched: {warnings}"
    );
    assert_eq!(
        std::fs::read_dir(&claude).unwrap().count(),
        1,
        "nothing is created in the user's folder"
    );
    assert!(
        !outside.join("created.json").exists(),
        "nothing is created outside the worktree"
    );
    let worktree = PathBuf::from(&created.session.worktree);
    assert!(
        warnings.contains(&format!(
            "{} is a symbolic link",
            worktree.join(".claude").display()
        )),
        "the link is named in a warning: {warnings}"
    );
    // `.mcp.json` is tracked (a committed link): left alone as such.
    assert!(warnings.contains(".mcp.json"), "{warnings}");
    assert!(
        !warnings.contains("did not start"),
        "the session still starts: {warnings}"
    );
}

#[test]
fn regression_an_acp_agent_cannot_write_through_a_committed_dangling_link() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    let outside = mkdirs(&env.path().join("x"));
    symlink(outside.join("created.txt"), repo.join("notes.txt")).unwrap();
    commit_all(&env, &repo, "a dangling link");
    fake_acp_tool(&env, "escape");
    owt_e2e::acp::start_fake_acp(&env, &repo, "escape", "try");
    wait_status(&env, &repo, "escape", |s| s.status == Status::NeedsInput);
    let peek = env.owt_ok(&repo, ["peek", "escape"]);
    assert!(
        peek.contains("write notes: error -32602"),
        "the write is refused as invalid:\n{peek}"
    );
    assert!(peek.contains("notes.txt is a symbolic link"), "{peek}");
    assert!(
        !outside.join("created.txt").exists(),
        "nothing is created outside the worktree"
    );
}

#[test]
fn regression_copy_files_never_writes_through_a_folder_a_branch_made_a_link() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    let config = repo.join(".owt.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        format!("{text}\n[worktree]\ncopy_files = [\"config/local.env\"]\n"),
    )
    .unwrap();
    owt_e2e::write_file(&repo, "config/README", "settings\n");
    commit_all(&env, &repo, "copy config/local.env");
    env.trust(&repo);
    // A branch where `config` is a link to a folder anyone can write.
    let shared = mkdirs(&env.path().join("shared"));
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
    env.git(&repo, ["checkout", "-q", "-b", "hostile"]);
    env.git(&repo, ["rm", "-q", "-r", "config"]);
    symlink(&shared, repo.join("config")).unwrap();
    commit_all(&env, &repo, "config is a link");
    env.git(&repo, ["checkout", "-q", "main"]);
    owt_e2e::write_file(&repo, "config/local.env", "SECRET=1\n");

    let created: NewOutput = env.owt_json(&repo, ["new", "hostile work", "--branch", "hostile"]);
    let warnings = created.warnings.join("\n");
    assert!(
        std::fs::read_dir(&shared).unwrap().next().is_none(),
        "the secret never reaches the shared folder"
    );
    assert!(
        warnings.contains("not copying `config/local.env`")
            && warnings.contains("config is a symbolic link"),
        "the link is named in a warning: {warnings}"
    );
    assert!(!warnings.contains("did not start"), "{warnings}");
}

/// Runs `cmd` (its stdin an open pipe nobody writes to, as an editor's
/// stream is) with its address space capped at 1 GiB, so a read that never
/// ends fails in the process and not on the machine; fails the test when
/// it has not exited within `deadline`.
fn output_within(mut cmd: Command, deadline: Duration) -> Output {
    use std::os::unix::process::CommandExt;
    let limit = libc::rlimit {
        rlim_cur: 1 << 30,
        rlim_max: 1 << 30,
    };
    // SAFETY: setrlimit is async-signal-safe; nothing else runs in the
    // child between fork and exec.
    unsafe {
        cmd.pre_exec(move || match libc::setrlimit(libc::RLIMIT_AS, &limit) {
            0 => Ok(()),
            _ => Err(std::io::Error::last_os_error()),
        });
    }
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let stdin = child.stdin.take();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "still running after {deadline:?} (killed); stderr: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(stdin);
    child.wait_with_output().unwrap()
}

#[test]
fn regression_a_config_file_that_is_not_a_file_is_a_clear_error_not_a_hang() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    let config = repo.join(".owt.toml");
    for target in ["/dev/zero", "/proc/self/fd/0"] {
        std::fs::remove_file(&config).unwrap();
        symlink(target, &config).unwrap();
        let out = output_within(env.owt_cmd(&repo, ["list"]), Duration::from_secs(20));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{target}: {stderr}");
        assert!(
            stderr.contains(&format!("{} is a link to outside", config.display())),
            "{target}: the error names the file: {stderr}"
        );
    }
    // Not a link: a FIFO or a file too large is refused for what it is.
    std::fs::remove_file(&config).unwrap();
    let made = Command::new("mkfifo").arg(&config).status().unwrap();
    assert!(made.success());
    let out = output_within(env.owt_cmd(&repo, ["list"]), Duration::from_secs(20));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(".owt.toml is a FIFO, not a regular file"),
        "{stderr}"
    );
    std::fs::remove_file(&config).unwrap();
    std::fs::write(&config, format!("# {}\n", "x".repeat(2 << 20))).unwrap();
    let out = output_within(env.owt_cmd(&repo, ["list"]), Duration::from_secs(20));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(".owt.toml is larger than 1048576 bytes"),
        "{stderr}"
    );

    // `owt lsp` in that repository still answers `initialize` (it used to
    // read the editor's stream as its configuration and never answer).
    std::fs::remove_file(&config).unwrap();
    symlink("/proc/self/fd/0", &config).unwrap();
    let lsp = LspClient::start(
        &env,
        &repo,
        json!({}),
        LspClient::default_capabilities(),
        false,
    );
    drop(lsp);
}

#[test]
fn regression_delete_never_follows_a_worktree_folder_replaced_by_a_link() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    // Another checkout, with an ignored file of its own.
    let other = env.repo("other");
    owt_e2e::write_file(&other, ".gitignore", "local.db\n");
    commit_all(&env, &other, "ignore local.db");
    owt_e2e::write_file(&other, "local.db", "the other checkout's data\n");
    let (name, worktree) = env.new_session(&repo, "linked");
    std::fs::rename(&worktree, env.path().join("moved-aside")).unwrap();
    symlink(&other, &worktree).unwrap();

    let err = env.owt_err(&repo, ["delete", &name]);
    assert!(
        err.contains(&format!("{}, is a symbolic link", worktree.display()))
            && err.contains("nothing was deleted"),
        "a clear error naming the link: {err}"
    );
    assert_eq!(
        std::fs::read_to_string(other.join("local.db")).unwrap(),
        "the other checkout's data\n",
        "the other checkout's ignored file stays where it is"
    );
    assert!(
        !env.owt_home.join("trash").exists()
            || std::fs::read_dir(env.owt_home.join("trash"))
                .unwrap()
                .next()
                .is_none(),
        "nothing went to the trash"
    );
    assert!(env.sessions(&repo).sessions.iter().any(|s| s.name == name));
}

#[test]
fn regression_the_task_kept_beside_gits_worktree_metadata_is_private() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    let (name, _) = env.new_session(&repo, "a private task");
    let file = repo.join(".git/worktrees").join(&name).join("owt.json");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("a private task"), "{text}");
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "{} is {mode:o}", file.display());
}

#[test]
fn regression_owts_entries_never_go_into_integration_files_the_repository_tracks() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    owt_e2e::write_file(
        &repo,
        ".mcp.json",
        "{\"mcpServers\": {\"team\": {\"command\": \"team-mcp\"}}}\n",
    );
    owt_e2e::write_file(
        &repo,
        ".claude/settings.local.json",
        "{\"model\": \"opus\"}\n",
    );
    commit_all(&env, &repo, "the team's Claude Code settings");

    let created = new_claude_session(&env, &repo, "tracked");
    let warnings = created.warnings.join("\n");
    assert!(
        warnings.contains(".claude/settings.local.json is tracked in this repository")
            && warnings.contains(".mcp.json and .claude/settings.local.json are tracked")
            && warnings.contains("claude mcp add owt -- "),
        "each refusal says how to enable it by hand: {warnings}"
    );
    let worktree = PathBuf::from(&created.session.worktree);
    let changed = env.git(&worktree, ["status", "--porcelain", "-uall"]);
    assert_eq!(
        changed, "",
        "the tracked files are unchanged, nothing to ship"
    );
    assert!(!warnings.contains("did not start"), "{warnings}");
}

/// The peak resident memory (VmHWM, KiB) of a running process.
fn peak_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

#[test]
fn regression_the_guard_streams_a_huge_untracked_file() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    let (_, worktree) = env.new_session(&repo, "huge");
    // 1 GiB that takes no disk: a sparse file.
    let big = std::fs::File::create(worktree.join("huge.bin")).unwrap();
    big.set_len(1 << 30).unwrap();
    drop(big);
    owt_e2e::write_file(&worktree, "README.md", "# changed\n");

    let mut child = env
        .owt_cmd(&repo, ["--json", "guard"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let start = Instant::now();
    let mut peak = 0;
    while child.try_wait().unwrap().is_none() {
        if let Some(kib) = peak_rss_kib(pid) {
            peak = peak.max(kib);
        }
        if start.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            panic!("owt guard still running after 120 s (peak RSS {peak} KiB)");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let elapsed = start.elapsed();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!(
        "FIGURE owt guard over a 1 GiB sparse untracked file: peak RSS {peak} KiB, {elapsed:?}"
    );
    assert!(
        peak < 128 << 10,
        "the guard's peak RSS was {peak} KiB for a 1 GiB sparse file"
    );
}

#[test]
fn regression_the_helix_project_file_is_never_written_through_a_committed_link() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    let outside = mkdirs(&env.path().join("outside"));
    symlink(&outside, repo.join(".helix")).unwrap();
    commit_all(&env, &repo, "a .helix link");
    let err = env.owt_err(&repo, ["editor", "helix", "--project", "--write"]);
    assert!(
        err.contains(".helix/languages.toml is reached through a symbolic link"),
        "{err}"
    );
    assert!(
        std::fs::read_dir(&outside).unwrap().next().is_none(),
        "nothing is written outside the repository"
    );
}

#[test]
fn regression_owt_spawn_never_reads_a_fifo_of_the_workspace() {
    let env = TestEnv::new();
    let repo = env.repo("app").canonicalize().unwrap();
    let fifo = repo.join("pipe.txt");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let mut lsp = LspClient::start(
        &env,
        &repo,
        json!({}),
        LspClient::default_capabilities(),
        false,
    );
    let id = lsp.send_request(
        "workspace/executeCommand",
        json!({"command": "owt.spawn", "arguments": [{"task": "look", "uri": format!("file://{}", fifo.display()), "start_line": 1, "end_line": 1}]}),
    );
    let err = lsp
        .await_response(id, Duration::from_secs(20))
        .expect_err("a FIFO is not a file to quote");
    assert!(
        err["message"]
            .as_str()
            .unwrap_or("")
            .contains("pipe.txt is a FIFO, not a regular file"),
        "{err}"
    );
    // The sidecar still answers.
    let board = lsp.request_result("owt/board", serde_json::Value::Null);
    assert!(board.is_ok(), "{board:?}");
}
