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
