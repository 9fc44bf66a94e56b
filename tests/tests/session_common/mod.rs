//! Helpers for the session-host end-to-end tests: a hermetic owt home and
//! repository, the built `owt` binary, sessions running the scripted fake
//! agent (`tests/data/fake_agent.py`), an `owt attach` client driven
//! through a real PTY and read through a vt100 parser, and waits that poll
//! a condition against a deadline and fail loudly.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use portable_pty::{CommandBuilder, PtySize};

/// Default deadline of one wait.
pub const WAIT: Duration = Duration::from_secs(15);

/// The `owt` binary under test (built once, see `owt_e2e::owt_bin`).
pub fn owt_bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(owt_e2e::owt_bin)
}

pub fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

pub fn fake_agent() -> PathBuf {
    workspace_root().join("tests/data/fake_agent.py")
}

/// Runs `f` on a thread and fails the test if it takes longer than `limit`.
pub fn with_timeout(limit: Duration, f: impl FnOnce() + Send + 'static) {
    let (tx, rx) = std::sync::mpsc::channel();
    let handle = std::thread::spawn(move || {
        f();
        let _ = tx.send(());
    });
    match rx.recv_timeout(limit) {
        Ok(()) => handle.join().expect("test thread"),
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
            // The body panicked: re-raise its panic.
            if let Err(panic) = handle.join() {
                std::panic::resume_unwind(panic);
            }
        }
        Err(_) => panic!("test timed out after {limit:?}"),
    }
}

/// Polls `cond` until it returns `Some` or `limit` passes (then panics with
/// `what` and the last observation).
pub fn wait_for<T>(what: &str, limit: Duration, mut cond: impl FnMut() -> Result<T, String>) -> T {
    let deadline = Instant::now() + limit;
    loop {
        match cond() {
            Ok(v) => return v,
            Err(last) if Instant::now() >= deadline => {
                panic!("timed out after {limit:?} waiting for {what}; last seen:\n{last}")
            }
            Err(_) => std::thread::sleep(Duration::from_millis(40)),
        }
    }
}

/// A hermetic world: `$OWT_HOME`, `$HOME` and a git repository in a temp dir.
pub struct Env {
    pub dir: tempfile::TempDir,
    pub home: PathBuf,
    pub repo: PathBuf,
    /// (host pid, agent pid) of every session started, killed on drop.
    pids: Mutex<Vec<(u32, Option<u32>)>>,
}

pub struct Session {
    pub name: String,
    pub short_id: String,
    pub host_pid: u32,
    pub agent_pid: u32,
    pub log: PathBuf,
}

impl Env {
    pub fn new() -> Env {
        owt_e2e::alone::beside_others();
        let dir = tempfile::Builder::new()
            .prefix("owt-e2e")
            .tempdir()
            .expect("temp dir");
        let home = dir.path().join("owt-home");
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(&repo).expect("repo dir");
        let env = Env {
            home,
            repo,
            dir,
            pids: Mutex::new(Vec::new()),
        };
        let git = |args: &[&str]| {
            let out = env
                .command("git")
                .args(args)
                .current_dir(&env.repo)
                .output()
                .expect("git");
            assert!(
                out.status.success(),
                "git {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        git(&["init", "-q", "-b", "main"]);
        std::fs::write(env.repo.join("README.md"), "hello\n").expect("write");
        git(&["add", "."]);
        git(&["commit", "-q", "-m", "init"]);
        env
    }

    /// A command with the hermetic environment.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut cmd = Command::new(program);
        for (k, v) in self.env_vars() {
            cmd.env(k, v);
        }
        cmd
    }

    pub fn env_vars(&self) -> Vec<(&'static str, String)> {
        let root = self.dir.path();
        vec![
            ("OWT_HOME", self.home.to_string_lossy().into_owned()),
            ("HOME", root.to_string_lossy().into_owned()),
            (
                "XDG_CONFIG_HOME",
                root.join("config").to_string_lossy().into_owned(),
            ),
            (
                "XDG_STATE_HOME",
                root.join("state").to_string_lossy().into_owned(),
            ),
            ("GIT_CONFIG_GLOBAL", "/dev/null".into()),
            ("GIT_CONFIG_SYSTEM", "/dev/null".into()),
            ("GIT_AUTHOR_NAME", "Test".into()),
            ("GIT_AUTHOR_EMAIL", "test@example.com".into()),
            ("GIT_COMMITTER_NAME", "Test".into()),
            ("GIT_COMMITTER_EMAIL", "test@example.com".into()),
            ("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z".into()),
            ("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z".into()),
        ]
    }

    /// `owt -C <repo> ARGS`.
    pub fn owt(&self, args: &[&str]) -> Command {
        let mut cmd = self.command(owt_bin());
        cmd.arg("-C")
            .arg(&self.repo)
            .args(args)
            .stdin(Stdio::null());
        cmd
    }

    /// Runs `owt ARGS`, returning its output.
    pub fn run(&self, args: &[&str]) -> Output {
        self.owt(args).output().expect("running owt")
    }

    /// Runs `owt ARGS` and insists on success; returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "owt {args:?} failed ({}):\nstdout: {}\nstderr: {}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Starts a session running the fake agent (extra `env` as `K=V`).
    pub fn spawn_fake(&self, name: &str, extra: &[&str]) -> Session {
        let log = self.dir.path().join(format!("{name}.agent-log"));
        let mut args = vec!["__host", "spawn", "--name", name];
        let log_env = format!("FAKE_LOG={}", log.display());
        args.extend(["--env", &log_env]);
        args.extend_from_slice(extra);
        let agent = fake_agent();
        let agent = agent.to_string_lossy();
        args.extend(["--", "python3", &agent]);
        let session = self.spawn(&args);
        Session { log, ..session }
    }

    /// `owt __host spawn ARGS`; records the pids for cleanup.
    pub fn spawn(&self, args: &[&str]) -> Session {
        let out = self.ok(args);
        self.parse_spawned(&out)
    }

    pub fn parse_spawned(&self, out: &str) -> Session {
        let v: serde_json::Value = serde_json::from_str(out.trim())
            .unwrap_or_else(|e| panic!("spawn output {out:?}: {e}"));
        let session = Session {
            name: v["name"].as_str().expect("name").to_string(),
            short_id: v["short_id"].as_str().expect("short_id").to_string(),
            host_pid: v["host_pid"].as_u64().expect("host_pid") as u32,
            agent_pid: v["agent_pid"].as_u64().unwrap_or(0) as u32,
            log: PathBuf::new(),
        };
        self.pids
            .lock()
            .unwrap()
            .push((session.host_pid, Some(session.agent_pid)));
        session
    }

    /// `owt peek NAME` text.
    pub fn peek(&self, name: &str) -> String {
        self.ok(&["peek", name])
    }

    /// Waits until `owt peek NAME` shows `needle`.
    pub fn wait_screen(&self, name: &str, needle: &str) -> String {
        wait_for(&format!("{needle:?} on the screen of {name}"), WAIT, || {
            let out = self.run(&["peek", name]);
            let text = String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr);
            if text.contains(needle) {
                Ok(text)
            } else {
                Err(text)
            }
        })
    }

    /// `owt --json wait NAME --timeout S`: (exit code, JSON).
    pub fn wait_json(&self, name: &str, timeout: &str) -> (i32, serde_json::Value) {
        let out = self.run(&["--json", "wait", name, "--timeout", timeout]);
        let v = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "owt wait output: {e}\n{}\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        });
        (out.status.code().unwrap_or(-1), v)
    }

    /// Lines the fake agent logged (each a submitted line or paste).
    pub fn agent_lines(&self, s: &Session) -> Vec<String> {
        std::fs::read_to_string(&s.log)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str::<String>(l).expect("agent log line"))
            .collect()
    }

    pub fn wait_agent_line(&self, s: &Session, expected: &str) {
        wait_for(&format!("the agent to receive {expected:?}"), WAIT, || {
            let lines = self.agent_lines(s);
            if lines.iter().any(|l| l == expected) {
                Ok(())
            } else {
                Err(format!("{lines:?}"))
            }
        })
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        for (host, agent) in self.pids.lock().map(|p| p.clone()).unwrap_or_default() {
            // SAFETY: kill has no memory preconditions.
            unsafe {
                if let Some(agent) = agent.filter(|a| *a != 0) {
                    libc::kill(-(agent as i32), libc::SIGKILL);
                }
                libc::kill(host as i32, libc::SIGKILL);
            }
        }
    }
}

/// An `owt attach` process in a real PTY, its output read into a vt100
/// screen.
pub struct AttachClient {
    pub screen: Arc<Mutex<vt100::Parser>>,
    writer: Box<dyn Write + Send>,
    child: Box<dyn portable_pty::Child + Send + Sync>,
    master: Box<dyn portable_pty::MasterPty + Send>,
    /// Everything the client printed, raw.
    pub raw: Arc<Mutex<Vec<u8>>>,
    /// Set once the terminal's output ended (the client and its
    /// terminal are gone): `raw` is complete.
    output_ended: Arc<std::sync::atomic::AtomicBool>,
}

impl AttachClient {
    pub fn start(env: &Env, name: &str, rows: u16, cols: u16) -> AttachClient {
        AttachClient::start_with(env, name, rows, cols, &[])
    }

    /// As [`AttachClient::start`] with more arguments for `owt attach`
    /// (`--relay`).
    pub fn start_with(env: &Env, name: &str, rows: u16, cols: u16, extra: &[&str]) -> AttachClient {
        AttachClient::start_in(env, name, rows, cols, extra, &[])
    }

    /// As [`AttachClient::start_with`] with environment variables of its
    /// own over the hermetic ones (another `XDG_CONFIG_HOME`).
    pub fn start_in(
        env: &Env,
        name: &str,
        rows: u16,
        cols: u16,
        extra: &[&str],
        vars: &[(&str, String)],
    ) -> AttachClient {
        let pty = portable_pty::native_pty_system()
            .openpty(PtySize {
                rows,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .expect("openpty");
        let mut cmd = CommandBuilder::new(owt_bin());
        cmd.args(["-C", &env.repo.to_string_lossy(), "attach", name]);
        cmd.args(extra);
        for (k, v) in env.env_vars() {
            cmd.env(k, v);
        }
        for (k, v) in vars {
            cmd.env(k, v);
        }
        cmd.env("TERM", "xterm-256color");
        let child = pty.slave.spawn_command(cmd).expect("spawning owt attach");
        drop(pty.slave);
        let mut reader = pty.master.try_clone_reader().expect("reader");
        let writer = pty.master.take_writer().expect("writer");
        let screen = Arc::new(Mutex::new(vt100::Parser::new(rows, cols, 0)));
        let raw = Arc::new(Mutex::new(Vec::new()));
        let output_ended = Arc::new(std::sync::atomic::AtomicBool::new(false));
        {
            let screen = screen.clone();
            let raw = raw.clone();
            let output_ended = output_ended.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 8192];
                while let Ok(n) = reader.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    screen.lock().unwrap().process(&buf[..n]);
                    raw.lock().unwrap().extend_from_slice(&buf[..n]);
                }
                output_ended.store(true, std::sync::atomic::Ordering::SeqCst);
            });
        }
        AttachClient {
            screen,
            writer,
            child,
            master: pty.master,
            raw,
            output_ended,
        }
    }

    pub fn contents(&self) -> String {
        self.screen.lock().unwrap().screen().contents()
    }

    pub fn wait_contains(&self, needle: &str) -> String {
        wait_for(&format!("{needle:?} in the attach client"), WAIT, || {
            let text = self.contents();
            if text.contains(needle) {
                Ok(text)
            } else {
                Err(text)
            }
        })
    }

    pub fn type_bytes(&mut self, bytes: &[u8]) {
        self.writer
            .write_all(bytes)
            .expect("typing into the attach client");
        self.writer.flush().expect("flush");
    }

    pub fn resize(&self, rows: u16, cols: u16) {
        self.screen
            .lock()
            .unwrap()
            .screen_mut()
            .set_size(rows, cols);
        self.master
            .resize(PtySize {
                rows,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .expect("resize");
    }

    /// Waits for the client process to end and for all it printed to be
    /// read; returns its exit code.
    pub fn wait_exit(&mut self) -> u32 {
        let code = wait_for("the attach client to exit", WAIT, || {
            match self.child.try_wait() {
                Ok(Some(status)) => Ok(status.exit_code()),
                Ok(None) => Err(self.contents()),
                Err(e) => Err(e.to_string()),
            }
        });
        wait_for("the attach client's output to end", WAIT, || {
            if self.output_ended.load(std::sync::atomic::Ordering::SeqCst) {
                Ok(())
            } else {
                Err(self.raw_text())
            }
        });
        code
    }

    /// The client process's pid.
    pub fn pid(&self) -> u32 {
        self.child.process_id().expect("the attach client's pid")
    }

    /// The path of the client's terminal (`/dev/pts/N`).
    pub fn tty(&self) -> PathBuf {
        self.master
            .tty_name()
            .expect("the attach client's tty name")
    }

    /// Whether the client's terminal is in cooked mode (canonical input
    /// and echo on), as a shell expects it back.
    pub fn cooked(&self) -> bool {
        let fd = self.master.as_raw_fd().expect("the pty master's fd");
        // SAFETY: a zeroed termios is a valid out-buffer for tcgetattr.
        let mut t: libc::termios = unsafe { std::mem::zeroed() };
        // SAFETY: a valid descriptor and buffer.
        assert_eq!(unsafe { libc::tcgetattr(fd, &mut t) }, 0, "tcgetattr");
        t.c_lflag & libc::ICANON != 0 && t.c_lflag & libc::ECHO != 0
    }

    /// Whether the client's terminal is gone: no process has it open any
    /// more, and all it printed was read.
    pub fn output_ended(&self) -> bool {
        self.output_ended.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Everything printed so far, as lossy text.
    /// Everything the client printed so far, raw.
    pub fn raw_bytes(&self) -> Vec<u8> {
        self.raw.lock().unwrap().clone()
    }

    pub fn raw_text(&self) -> String {
        String::from_utf8_lossy(&self.raw.lock().unwrap()).into_owned()
    }
}

impl Drop for AttachClient {
    fn drop(&mut self) {
        let _ = self.child.kill();
    }
}

/// Whether process `pid` has `path` open (its `/proc/PID/fd` links).
pub fn holds_open(pid: u32, path: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    entries
        .flatten()
        .any(|e| std::fs::read_link(e.path()).is_ok_and(|target| target == path))
}

/// The environment process `pid` was started with, read once it runs
/// the program whose arguments (after `argv[0]`) begin with `args`: a
/// freshly forked child shows its parent's command line and environment
/// until its `exec`, and reading it then would test the parent's.
pub fn environ_of(
    pid: u32,
    args: &[&str],
) -> std::collections::BTreeMap<std::ffi::OsString, std::ffi::OsString> {
    use std::os::unix::ffi::OsStringExt;
    let what = format!(
        "process {pid} to run `… {}` and show its environment",
        args.join(" ")
    );
    let environ = wait_for(&what, WAIT, || {
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline"))
            .map_err(|e| format!("/proc/{pid}/cmdline: {e}"))?;
        let running: Vec<&[u8]> = cmdline.split(|b| *b == 0).skip(1).collect();
        let started = running.len() >= args.len()
            && args
                .iter()
                .zip(&running)
                .all(|(want, got)| want.as_bytes() == *got);
        if !started {
            return Err(format!(
                "not exec'd yet: its command line is {:?}",
                String::from_utf8_lossy(&cmdline)
            ));
        }
        let environ = std::fs::read(format!("/proc/{pid}/environ"))
            .map_err(|e| format!("/proc/{pid}/environ: {e}"))?;
        if environ.is_empty() {
            Err("an empty environment (the process is gone)".to_string())
        } else {
            Ok(environ)
        }
    });
    environ
        .split(|b| *b == 0)
        .filter(|kv| !kv.is_empty())
        .map(|kv| {
            let at = kv.iter().position(|b| *b == b'=').unwrap_or(kv.len());
            let value = kv.get(at + 1..).unwrap_or_default();
            (
                std::ffi::OsString::from_vec(kv[..at].to_vec()),
                std::ffi::OsString::from_vec(value.to_vec()),
            )
        })
        .collect()
}
