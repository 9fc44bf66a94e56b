//! Security checks: the session sockets are private (folder 0700, sockets
//! 0600, and a peer of another uid is refused even when the file
//! permissions would let it in), no owt process ever listens on TCP/UDP,
//! and task text and session names reach agents as argv or typed text,
//! never through a shell.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use owt_e2e::lsp::LspClient;
use owt_e2e::{cmdline, inet_sockets, pid_alive, socket_inodes, wait_until, TestEnv};
use owt_protocol::host::FrameKind;
use owt_protocol::{NewOutput, SessionList};
use serde_json::{json, Value};

const DEADLINE: Duration = Duration::from_secs(30);
/// The uid the foreign client runs as.
const NOBODY: u32 = 65534;

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn agent_pid(env: &TestEnv, repo: &Path, name: &str) -> u32 {
    let list: SessionList = env.owt_json(repo, ["list"]);
    list.sessions
        .iter()
        .find(|s| s.name == name)
        .and_then(|s| s.agent_pid)
        .unwrap_or_else(|| panic!("{name} has no agent pid: {list:#?}"))
}

/// The agent's session host: its parent process, `owt __host`.
fn host_pid(agent: u32) -> u32 {
    let status = std::fs::read_to_string(format!("/proc/{agent}/status")).unwrap();
    let ppid = status
        .lines()
        .find_map(|l| l.strip_prefix("PPid:"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        cmdline(ppid).iter().any(|a| a == "__host"),
        "{:?}",
        cmdline(ppid)
    );
    ppid
}

/// A client of the host protocol run as `nobody` (via setpriv): connects,
/// sends an attach hello, and prints what came back, one line:
/// `connect-failed <errno name>` or `frames <kind,kind,…> | <payloads>`
/// (what arrived before the connection was closed or reset).
const FOREIGN_CLIENT: &str = r#"
import errno, json, socket, struct, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect(sys.argv[1])
except OSError as e:
    print("connect-failed", errno.errorcode.get(e.errno, e.errno)); sys.exit(0)
hello = json.dumps({"version": 1, "role": "attach", "rows": 24, "cols": 80}).encode()
try:
    s.sendall(struct.pack("<BI", 1, len(hello)) + hello)
except OSError:
    pass
s.settimeout(10)
data = b""
try:
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
except ConnectionResetError:
    pass  # the host closed with our hello unread: the kernel sends a reset
except OSError as e:
    print("read-error", e); sys.exit(0)
kinds, texts = [], []
while len(data) >= 5:
    kind, n = struct.unpack("<BI", data[:5])
    kinds.append(hex(kind)); texts.append(data[5:5 + n].decode("utf-8", "replace"))
    data = data[5 + n:]
print("frames", ",".join(kinds), "|", " ".join(texts))
"#;

fn foreign_client(socket: &Path) -> String {
    let out = Command::new("setpriv")
        .args([
            &format!("--reuid={NOBODY}"),
            &format!("--regid={NOBODY}"),
            "--clear-groups",
            "/usr/bin/python3",
            "-c",
            FOREIGN_CLIENT,
        ])
        .arg(socket)
        .stdin(Stdio::null())
        .output()
        .expect("running setpriv (the tests run as root)");
    assert!(
        out.status.success(),
        "the foreign client failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

#[test]
fn sockets_are_private_and_another_uid_gets_no_service() {
    // SAFETY: geteuid has no preconditions.
    assert_eq!(unsafe { libc::geteuid() }, 0, "these checks run as root");
    let env = TestEnv::new();
    let repo = env.repo("app");
    let session: NewOutput = env.owt_json(&repo, ["new", "guarded"]);
    let run = env.owt_home.join("run");
    let socket = run.join(format!("{}.sock", session.session.id));
    wait_until("the socket", DEADLINE, || socket.exists());
    assert_eq!(mode(&run), 0o700, "the socket folder");
    assert_eq!(mode(&socket), 0o600, "the socket");

    // Let `nobody` walk down to the run folder (the temp dir is 0700).
    chmod(env.path(), 0o711);
    chmod(&env.owt_home, 0o711);
    // 1. As owt leaves it, the folder stops another uid at connect(2).
    assert_eq!(foreign_client(&socket), "connect-failed EACCES");
    // 2. Folder opened up: the socket's own 0600 still stops it.
    chmod(&run, 0o711);
    assert_eq!(foreign_client(&socket), "connect-failed EACCES");
    // 3. Socket opened up too: only the host's peer-credential check
    //    stands, and it refuses — an error frame, no welcome, closed.
    chmod(&socket, 0o666);
    // The host answers with an error frame and closes before reading the
    // hello; whether that frame arrives before the reset the unread hello
    // causes is a race, so both are a refusal — a welcome (0x81) never is.
    let reply = foreign_client(&socket);
    let refused_with_error = format!(
        "frames {:#x} | {{\"message\":\"this session host belongs to another user\"}}",
        FrameKind::Error as u8
    );
    assert!(
        reply == "frames  | " || reply == refused_with_error,
        "the host must refuse another uid, got: {reply}"
    );
    chmod(&socket, 0o600);
    chmod(&run, 0o700);
    // Still serving its owner.
    env.owt_ok(&repo, ["send", &session.session.name, "owner here"]);
    wait_until("the owner's text", DEADLINE, || {
        env.owt_ok(&repo, ["peek", &session.session.name])
            .contains("got: owner here")
    });
}

/// Inet sockets `pid` holds (there must be none).
fn inet_sockets_of(pid: u32) -> Vec<(String, String, String, u64)> {
    let mine = socket_inodes(pid);
    inet_sockets(pid)
        .into_iter()
        .filter(|(_, _, _, inode)| mine.contains(inode))
        .collect()
}

#[test]
fn no_owt_process_opens_a_tcp_or_udp_socket() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    let session: NewOutput = env.owt_json(&repo, ["new", "no network"]);
    let agent = agent_pid(&env, &repo, &session.session.name);
    let host = host_pid(agent);
    // The host's listening unix socket is among its fds: the fd walk works.
    assert!(!socket_inodes(host).is_empty(), "the host holds its socket");

    let mut lsp = LspClient::start(
        &env,
        &repo,
        json!({}),
        LspClient::default_capabilities(),
        false,
    );
    // Let the server do its work: a board means sessions and guard are up.
    lsp.request(owt_protocol::lsp::METHOD_BOARD, Value::Null);

    let mut mcp = env
        .owt_cmd(&repo, ["mcp"])
        .env("OWT_SESSION", &session.session.id)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawning owt mcp");
    let mut mcp_in = mcp.stdin.take().unwrap();
    let mut mcp_out = BufReader::new(mcp.stdout.take().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in (&mut mcp_out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    for (id, method) in [(1, "initialize"), (2, "tools/list")] {
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "owt-e2e", "version": "1"}}});
        writeln!(mcp_in, "{request}").unwrap();
        let line = rx
            .recv_timeout(DEADLINE)
            .unwrap_or_else(|_| panic!("owt mcp did not answer {method}"));
        assert!(line.contains(&format!("\"id\":{id}")), "{line}");
    }

    for (what, pid) in [
        ("owt lsp", lsp.pid()),
        ("the session host", host),
        ("owt mcp", mcp.id()),
    ] {
        assert!(pid_alive(pid), "{what} is running");
        let inet = inet_sockets_of(pid);
        assert!(
            inet.is_empty(),
            "{what} (pid {pid}) has inet sockets: {inet:?}"
        );
    }
    drop(mcp_in);
    let _ = mcp.wait();
}

#[test]
fn task_text_and_session_names_never_go_through_a_shell() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    let trap = env.path().join("pwned");
    std::fs::create_dir_all(&trap).unwrap();
    let p = |n: u32| trap.join(format!("p{n}")).display().to_string();
    let task = format!(
        "fix $(touch {}) and `touch {}`; touch {} | touch {} > {} && touch {}",
        p(1),
        p(2),
        p(3),
        p(4),
        p(5),
        p(6)
    );
    let name_wish = format!("x$(touch {});`touch {}`|>", p(7), p(8));
    let session: NewOutput = env.owt_json(&repo, ["new", &task, "--name", &name_wish]);
    let name = session.session.name.clone();
    assert!(
        name.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
        "the session name is a slug: {name}"
    );
    let agent = agent_pid(&env, &repo, &name);
    // The agent got the prompt as argv: one argument holds the task verbatim.
    let argv = cmdline(agent);
    let holding: Vec<&String> = argv.iter().filter(|a| a.contains(&task)).collect();
    assert_eq!(holding.len(), 1, "{argv:#?}");
    assert!(
        holding[0].contains(&name),
        "the prompt names the session: {}",
        holding[0]
    );
    wait_until("the agent to print its arguments", DEADLINE, || {
        env.owt_ok(&repo, ["peek", &name]).contains("ready>")
    });
    // Typed text: `owt send` types it; the agent echoes it verbatim.
    let typed = format!("$(touch {}); `touch {}` | cat > {}", p(9), p(10), p(11));
    env.owt_ok(&repo, ["send", &name, &typed]);
    wait_until("the agent to echo the typed text", DEADLINE, || {
        env.owt_ok(&repo, ["peek", &name])
            .contains(&format!("got: {typed}"))
    });
    let created: Vec<PathBuf> = std::fs::read_dir(&trap)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(created.is_empty(), "a shell ran task text: {created:?}");
}

// ---------------------------------------------------------------------------
// Issue 15, item 1: a cloned repository runs nothing unasked.

/// A script that records that it ran (in `trap`), then acts as the idle
/// agent (so a session it starts looks like any other).
fn evil_script(env: &TestEnv, name: &str, trap: &Path) -> PathBuf {
    let path = env.path().join(name);
    std::fs::write(
        &path,
        format!(
            "#!/bin/sh\ntouch {}\nexec {} \"$@\"\n",
            trap.display(),
            owt_e2e::data_file("idle-agent.sh").display()
        ),
    )
    .unwrap();
    chmod(&path, 0o755);
    path
}

/// The user's own configuration: the `fake` agent is theirs.
fn user_config_with_fake_agent(env: &TestEnv) {
    let dir = env.home.join(".config/owt");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("config.toml"),
        format!(
            "[agent]\ndefault_tool = \"fake\"\n\n[tools.fake]\nbinary = \"{}\"\n",
            owt_e2e::data_file("idle-agent.sh").display()
        ),
    )
    .unwrap();
}

/// The environment of a running process, `KEY=value` each.
fn environ(pid: u32) -> Vec<String> {
    std::fs::read(format!("/proc/{pid}/environ"))
        .unwrap_or_default()
        .split(|b| *b == 0)
        .map(|kv| String::from_utf8_lossy(kv).into_owned())
        .collect()
}

#[test]
fn regression_a_cloned_repository_runs_nothing_until_the_user_trusts_it() {
    let env = TestEnv::new();
    user_config_with_fake_agent(&env);
    let repo = env.untrusted_repo("app");
    let traps = env.path().join("traps");
    std::fs::create_dir_all(&traps).unwrap();
    let evil = evil_script(&env, "evil.sh", &traps.join("tool-ran"));
    let autostart = env.path().join("outside/autostart");
    std::fs::write(
        repo.join(".owt.toml"),
        format!(
            "[agent]\ndefault_tool = \"x\"\nenv = {{ NODE_OPTIONS = \"--require ./evil.js\" }}\n\n\
             [tools.x]\nbinary = \"{}\"\n\n\
             [tools.claude]\nbinary = \"/bin/sh\"\ncommand_template = \"{{binary}} -c 'touch {}'\"\n\n\
             [worktree]\nbase_directory = \"{}\"\n\n[guard]\nignore = [\"*.lock\"]\n",
            evil.display(),
            traps.join("claude-hijacked").display(),
            autostart.display()
        ),
    )
    .unwrap();
    std::fs::create_dir_all(repo.join(".owt")).unwrap();
    std::fs::write(
        repo.join(".owt/setup.sh"),
        format!("touch {}\n", traps.join("setup-ran").display()),
    )
    .unwrap();
    env.git(&repo, ["add", "-A"]);
    env.git(&repo, ["commit", "-q", "-m", "a hostile configuration"]);
    let config = repo.canonicalize().unwrap().join(".owt.toml");
    let ran = || -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&traps)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };

    // A plain `owt new`: the user's own agent, default place, no setup,
    // no environment from the repository; the warning says exactly what.
    let out: NewOutput = env.owt_json(&repo, ["new", "plain task"]);
    assert_eq!(out.session.provider, "fake", "the user's default agent");
    assert_eq!(ran(), Vec::<String>::new(), "nothing of the repository ran");
    assert!(
        !autostart.exists() && out.session.worktree.contains("/app.worktrees/"),
        "{}",
        out.session.worktree
    );
    let warning = out.warnings.join("\n");
    for needle in [
        config.display().to_string(),
        "not trusted".into(),
        "tools.x".into(),
        "agent.default_tool".into(),
        "agent.env.NODE_OPTIONS".into(),
        "worktree.base_directory".into(),
        ".owt/setup.sh".into(),
        "owt trust --show".into(),
        "tools.claude".into(),
    ] {
        assert!(
            warning.contains(&needle),
            "{needle:?} missing from: {warning}"
        );
    }
    let agent = agent_pid(&env, &repo, &out.session.name);
    assert!(
        !environ(agent)
            .iter()
            .any(|kv| kv.starts_with("NODE_OPTIONS=")),
        "the repository's env reached the agent"
    );

    // An explicit `--ai-tool claude` is the built-in claude (found on PATH
    // here as a stand-in script), never the repository's /bin/sh.
    let bin = env.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let fake_claude = bin.join("claude");
    std::fs::copy(owt_e2e::data_file("idle-agent.sh"), &fake_claude).unwrap();
    chmod(&fake_claude, 0o755);
    let path = format!("{}:/usr/bin:/bin", bin.display());
    let mut cmd = env.owt_cmd(
        &repo,
        ["--json", "new", "explicit claude", "--ai-tool", "claude"],
    );
    cmd.env("PATH", &path);
    let created = cmd.output().unwrap();
    assert!(
        created.status.success(),
        "{}",
        String::from_utf8_lossy(&created.stderr)
    );
    let claude: NewOutput = serde_json::from_slice(&created.stdout).unwrap();
    let argv = cmdline(agent_pid(&env, &repo, &claude.session.name));
    assert!(
        argv.iter().any(|a| a.ends_with("/bin/claude")) && !argv.iter().any(|a| a == "/bin/sh"),
        "{argv:?}"
    );
    assert_eq!(ran(), Vec::<String>::new());

    // The repository's own agent: refused with the way to trust it.
    let err = env.owt_err(&repo, ["new", "run x", "--ai-tool", "x"]);
    assert!(
        err.contains("agent `x` is declared in") && err.contains("owt trust"),
        "{err}"
    );
    assert_eq!(ran(), Vec::<String>::new());

    // `--show` prints what would run and trusts nothing.
    let show = env.owt_ok(&repo, ["trust", "--show"]);
    for needle in [
        "NOT trusted",
        &evil.display().to_string(),
        "NODE_OPTIONS",
        "| touch",
        "never applied",
        "Trust these files as they are now with: owt trust",
    ] {
        assert!(show.contains(needle), "{needle:?} missing from:\n{show}");
    }
    let shown: owt_protocol::TrustOutput = env.owt_json(&repo, ["trust", "--show"]);
    assert!(
        shown.files.iter().all(|f| f.state == "untrusted"),
        "{shown:#?}"
    );
    let again: NewOutput = env.owt_json(&repo, ["new", "still untrusted"]);
    assert_eq!(again.session.provider, "fake");
    assert_eq!(ran(), Vec::<String>::new());

    // Trusted: the repository's agent, environment, folder and setup apply
    // — but a built-in agent is still never redefined.
    let trusted: owt_protocol::TrustOutput = env.owt_json(&repo, ["trust"]);
    assert!(
        trusted.files.iter().all(|f| f.state == "trusted"),
        "{trusted:#?}"
    );
    let x: NewOutput = env.owt_json(&repo, ["new", "now x"]);
    assert_eq!(x.session.provider, "x");
    assert!(x
        .session
        .worktree
        .starts_with(&autostart.display().to_string()));
    wait_until("the repository's agent to run", DEADLINE, || {
        traps.join("tool-ran").exists()
    });
    assert_eq!(ran(), vec!["setup-ran", "tool-ran"]);
    assert!(environ(agent_pid(&env, &repo, &x.session.name))
        .iter()
        .any(|kv| kv == "NODE_OPTIONS=--require ./evil.js"));
    assert!(
        x.warnings.iter().any(|w| w.contains("tools.claude")),
        "{:?}",
        x.warnings
    );
    let mut cmd = env.owt_cmd(
        &repo,
        ["--json", "new", "claude again", "--ai-tool", "claude"],
    );
    cmd.env("PATH", &path);
    let again = cmd.output().unwrap();
    assert!(again.status.success());
    let again: NewOutput = serde_json::from_slice(&again.stdout).unwrap();
    let argv = cmdline(agent_pid(&env, &repo, &again.session.name));
    assert!(argv.iter().any(|a| a.ends_with("/bin/claude")), "{argv:?}");
    assert!(!traps.join("claude-hijacked").exists());

    // A changed file needs trust again.
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, format!("{text}# changed\n")).unwrap();
    let changed: NewOutput = env.owt_json(&repo, ["new", "after a change"]);
    assert_eq!(changed.session.provider, "fake");
    assert!(
        changed
            .warnings
            .join("\n")
            .contains("changed since you trusted it"),
        "{:?}",
        changed.warnings
    );
    env.owt_ok(&repo, ["trust"]);
    let revoked: owt_protocol::TrustOutput = env.owt_json(&repo, ["trust", "--revoke"]);
    assert!(revoked.files.iter().all(|f| f.state == "untrusted"));
    let after: NewOutput = env.owt_json(&repo, ["new", "after revoke"]);
    assert_eq!(after.session.provider, "fake");

    // An agent cannot trust its own repository (OWT_SESSION is set).
    let mut cmd = env.owt_cmd(&repo, ["trust"]);
    cmd.env("OWT_SESSION", &after.session.id);
    let refused = cmd.output().unwrap();
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("inside an agent"));
}

#[test]
fn regression_a_seed_worktreerc_runs_no_install_script_until_trusted() {
    let env = TestEnv::new();
    user_config_with_fake_agent(&env);
    let repo = env.untrusted_repo("app");
    let trap = env.path().join("preinstall-ran");
    std::fs::remove_file(repo.join(".owt.toml")).unwrap();
    std::fs::write(
        repo.join(".worktreerc"),
        "[environment]\nauto_install_deps = true\n",
    )
    .unwrap();
    std::fs::write(
        repo.join("package.json"),
        format!(
            r#"{{"name": "hostile", "version": "1.0.0", "private": true, "scripts": {{"preinstall": "touch {}"}}}}"#,
            trap.display()
        ),
    )
    .unwrap();
    env.git(&repo, ["add", "-A"]);
    env.git(&repo, ["commit", "-q", "-m", "seed config"]);
    let out: NewOutput = env.owt_json(&repo, ["new", "no install"]);
    assert!(!trap.exists(), "npm's preinstall ran");
    let warning = out.warnings.join("\n");
    assert!(
        warning.contains(".worktreerc") && warning.contains("environment.auto_install_deps"),
        "{warning}"
    );
    env.owt_ok(&repo, ["trust"]);
    let out: NewOutput = env.owt_json(&repo, ["new", "install now"]);
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
    assert!(trap.exists(), "trusted: the install ran");
}

#[test]
fn regression_the_editor_is_told_what_an_untrusted_repository_may_not_do() {
    let env = TestEnv::new();
    user_config_with_fake_agent(&env);
    let repo = env.untrusted_repo("app");
    let mut lsp = LspClient::start(
        &env,
        &repo,
        json!({}),
        LspClient::default_capabilities(),
        false,
    );
    let message = lsp.await_notification("window/showMessage", DEADLINE, |p| {
        p["message"].as_str().unwrap_or("").contains("not trusted")
    });
    let text = message["message"].as_str().unwrap();
    assert!(
        text.contains("tools.fake") && text.contains("owt trust"),
        "{text}"
    );
    assert_eq!(message["type"], 2, "a warning");
    // The same rule in the editor: the repository's agent does not run.
    let spawned = lsp.request_result(
        "workspace/executeCommand",
        json!({"command": "owt.spawn", "arguments": [{"task": "use the repo's agent"}]}),
    );
    let spawned: NewOutput = serde_json::from_value(spawned.unwrap()).unwrap();
    assert_eq!(spawned.session.provider, "fake");
    assert!(spawned.warnings.iter().any(|w| w.contains("not trusted")));
}

// ---------------------------------------------------------------------------
// Issue 15, item 2: the store is private.

#[test]
fn regression_the_state_folder_is_private_and_old_installs_are_fixed() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    let session: NewOutput = env.owt_json(&repo, ["new", "private"]);
    let home = &env.owt_home;
    assert_eq!(mode(home), 0o700, "OWT_HOME");
    for file in ["owt.db", "owt.db-wal", "owt.db-shm"] {
        assert_eq!(mode(&home.join(file)), 0o600, "{file}");
    }
    let logs: Vec<PathBuf> = std::fs::read_dir(home.join("logs"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(!logs.is_empty());
    for log in &logs {
        assert_eq!(mode(log), 0o600, "{}", log.display());
    }
    assert_eq!(mode(&home.join("logs")), 0o700);

    // An install made by an older owt: opened up, then fixed on first open.
    chmod(home, 0o755);
    for file in ["owt.db", "owt.db-wal", "owt.db-shm"] {
        chmod(&home.join(file), 0o644);
    }
    chmod(&logs[0], 0o644);
    let out = env.owt(&repo, ["list"]);
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("made owt's state folder private"),
        "{stderr}"
    );
    assert_eq!(mode(home), 0o700);
    for file in ["owt.db", "owt.db-wal", "owt.db-shm"] {
        assert_eq!(mode(&home.join(file)), 0o600, "{file}");
    }
    assert_eq!(mode(&logs[0]), 0o600);
    // Once fixed, nothing more to say.
    let out = env.owt(&repo, ["list"]);
    assert!(String::from_utf8_lossy(&out.stderr).is_empty());
    assert!(!session.session.name.is_empty());
}

// ---------------------------------------------------------------------------
// Issue 15, item 3: owt.spawn reads selections only from the workspace.

#[test]
fn regression_owt_spawn_reads_no_file_outside_the_workspace() {
    let env = TestEnv::new();
    let repo = env.repo("app").canonicalize().unwrap();
    let secret = env.path().join("secret.txt");
    std::fs::write(&secret, "TOPSECRET-LINE\n").unwrap();
    std::os::unix::fs::symlink(&secret, repo.join("link-to-secret.txt")).unwrap();
    std::fs::write(repo.join("lib.rs"), "fn inside() {}\n").unwrap();
    let mut lsp = LspClient::start(
        &env,
        &repo,
        json!({}),
        LspClient::default_capabilities(),
        false,
    );
    let spawn = |lsp: &mut LspClient, path: &Path| {
        lsp.request_result(
            "workspace/executeCommand",
            json!({"command": "owt.spawn", "arguments": [{"task": "look", "uri": format!("file://{}", path.display()), "start_line": 1, "end_line": 1}]}),
        )
    };
    for path in [
        secret.clone(),
        repo.join("link-to-secret.txt"),
        PathBuf::from("/etc/passwd"),
        repo.join("../secret.txt"),
    ] {
        let err = spawn(&mut lsp, &path).expect_err("a file outside the workspace");
        assert!(
            err["message"]
                .as_str()
                .unwrap_or("")
                .contains("outside the workspace"),
            "{}: {err}",
            path.display()
        );
    }
    // Nothing reached the store.
    let list: SessionList = env.owt_json(&repo, ["list"]);
    assert!(list.sessions.is_empty(), "{list:#?}");
    let dump = Command::new("sqlite3")
        .arg(env.owt_home.join("owt.db"))
        .arg(".dump")
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&dump.stdout).contains("TOPSECRET"));
    // A file inside the workspace still works.
    let ok = spawn(&mut lsp, &repo.join("lib.rs")).expect("a file of the workspace");
    let created: NewOutput = serde_json::from_value(ok).unwrap();
    assert!(created.session.task.contains("fn inside() {}"));
}

// ---------------------------------------------------------------------------
// Issue 15, smaller ones: terminal control characters and NUL.

#[test]
fn regression_the_board_and_list_escape_control_characters_from_tasks() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    env.owt_ok(
        &repo,
        ["new", "esc \u{1b}]0;PWNED\u{7} title", "--name", "esc"],
    );
    env.owt_ok(&repo, ["note", "note \u{1b}[2J cleared"]);
    for args in [vec![], vec!["list"], vec!["note"]] {
        let out = env.owt_ok(&repo, &args);
        assert!(
            !out.bytes().any(|b| b == 0x1b || b == 0x07),
            "`owt {args:?}` printed raw control characters: {out:?}"
        );
        if args != ["list"] {
            assert!(
                out.contains("\\x1b"),
                "`owt {args:?}` shows them escaped: {out}"
            );
        }
    }
    // --json keeps the text as it was (JSON escapes it).
    let list: SessionList = env.owt_json(&repo, ["list"]);
    assert!(list.sessions[0].task.contains('\u{1b}'));
}

#[test]
fn regression_a_task_holding_nul_is_refused_by_the_editor_command() {
    let env = TestEnv::new();
    let repo = env.repo("app");
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
            json!({"command": "owt.spawn", "arguments": [{"task": "before\u{0}after"}]}),
        )
        .expect_err("a NUL in the task");
    assert!(
        err["message"].as_str().unwrap_or("").contains("NUL"),
        "{err}"
    );
    let list: SessionList = env.owt_json(&repo, ["list"]);
    assert!(list.sessions.is_empty(), "nothing was created: {list:#?}");
}
