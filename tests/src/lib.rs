//! Harness for end-to-end tests of the built `owt` binary.
//!
//! Every test gets a [`TestEnv`]: a temp folder with its own `HOME`,
//! `OWT_HOME` and hermetic git (`GIT_CONFIG_GLOBAL=/dev/null`, fixed author
//! and dates, `main` as the default branch). Repositories are real git
//! repositories made by the git CLI. Dropping the env kills every process
//! that was started with its `OWT_HOME` (session hosts and agents), so no
//! test leaves agents behind.

pub mod acp;
pub mod agents;
pub mod alone;
pub mod cockpit;
pub mod lsp;
pub mod remote;

pub use alone::alone;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;

/// The `owt` binary under test: `$OWT_BIN`, else built once per test
/// process with `cargo build -p owt --bins` (same profile as the tests;
/// the session host binary `owt-host` beside it too), so a test never
/// runs a stale binary.
pub fn owt_bin() -> PathBuf {
    static BIN: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BIN.get_or_init(|| {
        if let Some(bin) = std::env::var_os("OWT_BIN").or_else(|| std::env::var_os("OWT_E2E_BIN")) {
            return PathBuf::from(bin);
        }
        let exe = std::env::current_exe().expect("current_exe");
        // target/<profile>/deps/<test-binary>
        let profile_dir = exe
            .parent()
            .and_then(Path::parent)
            .expect("target profile dir")
            .to_path_buf();
        let release = profile_dir.file_name().is_some_and(|n| n == "release");
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut build = Command::new(cargo);
        // Both binaries: owt starts session hosts with the owt-host
        // beside it.
        build.args(["build", "-q", "-p", "owt", "--bins"]);
        if release {
            build.arg("--release");
        }
        let status = build
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .expect("running cargo build -p owt");
        assert!(status.success(), "cargo build -p owt failed");
        let bin = profile_dir.join("owt");
        assert!(
            bin.exists(),
            "{} does not exist after building",
            bin.display()
        );
        bin
    })
    .clone()
}

/// A file under `tests/data/`.
pub fn data_file(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("data")
        .join(name)
}

/// The `PATH` of a test that means "owt is not installed", built from
/// scratch: the system's folders, never the caller's `PATH` (which may
/// hold an installed owt: `cargo install` puts it in `~/.cargo/bin`), and
/// none of them that holds an `owt` anyway.
pub fn path_without_owt() -> String {
    [
        "/usr/local/sbin",
        "/usr/local/bin",
        "/usr/sbin",
        "/usr/bin",
        "/sbin",
        "/bin",
    ]
    .into_iter()
    .filter(|dir| std::fs::symlink_metadata(Path::new(dir).join("owt")).is_err())
    .collect::<Vec<_>>()
    .join(":")
}

/// `--json` followed by `args`.
fn json_args<I, S>(args: I) -> Vec<std::ffi::OsString>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut all = vec![std::ffi::OsString::from("--json")];
    all.extend(args.into_iter().map(|a| a.as_ref().to_os_string()));
    all
}

/// Polls `condition` until it holds or `timeout` passes; then panics naming
/// `what`.
pub fn wait_until(what: &str, timeout: Duration, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    let mut pause = Duration::from_millis(5);
    loop {
        if condition() {
            return;
        }
        if Instant::now() >= deadline {
            panic!("timed out after {timeout:?} waiting for {what}");
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(100));
    }
}

pub struct TestEnv {
    pub root: tempfile::TempDir,
    pub home: PathBuf,
    pub owt_home: PathBuf,
    /// Extra environment for every `owt` run.
    pub extra_env: Vec<(String, String)>,
}

impl Default for TestEnv {
    fn default() -> Self {
        Self::new()
    }
}

impl TestEnv {
    pub fn new() -> TestEnv {
        alone::beside_others();
        let root = tempfile::Builder::new()
            .prefix("owt-e2e-")
            .tempdir()
            .expect("tempdir");
        let home = root.path().join("home");
        let owt_home = root.path().join("owt");
        std::fs::create_dir_all(&home).unwrap();
        // An explicit limit on running agents, so that whether a test's
        // sessions start does not depend on how much memory the machine
        // running the suite has left (the default limit is what memory
        // holds; tests of the queue set their own in `.owt.toml`).
        let config = home.join(".config/owt");
        std::fs::create_dir_all(&config).unwrap();
        std::fs::write(config.join("config.toml"), "[agent]\nmax_running = 64\n").unwrap();
        TestEnv {
            root,
            home,
            owt_home,
            extra_env: Vec::new(),
        }
    }

    pub fn path(&self) -> &Path {
        self.root.path()
    }

    fn hermetic(&self, cmd: &mut Command) {
        cmd.env("HOME", &self.home)
            .env("OWT_HOME", &self.owt_home)
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("XDG_STATE_HOME")
            .env_remove("RUST_LOG")
            .env_remove("TMUX")
            .env_remove("OWT_SESSION");
        hermetic_git(cmd);
        for (k, v) in &self.extra_env {
            cmd.env(k, v);
        }
    }

    /// A `Command` for `owt` in `cwd`, hermetic.
    pub fn owt_cmd<I, S>(&self, cwd: &Path, args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut cmd = Command::new(owt_bin());
        cmd.args(args).current_dir(cwd).stdin(Stdio::null());
        self.hermetic(&mut cmd);
        cmd
    }

    pub fn owt<I, S>(&self, cwd: &Path, args: I) -> Output
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.owt_cmd(cwd, args).output().expect("running owt")
    }

    /// Runs `owt` and returns stdout; panics with stderr when it fails.
    pub fn owt_ok<I, S>(&self, cwd: &Path, args: I) -> String
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let args: Vec<_> = args
            .into_iter()
            .map(|a| a.as_ref().to_os_string())
            .collect();
        let out = self.owt(cwd, &args);
        assert!(
            out.status.success(),
            "owt {:?} failed ({}):\nstdout: {}\nstderr: {}",
            args,
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("utf-8 stdout")
    }

    /// Runs `owt --json …` and parses stdout as `T`.
    pub fn owt_json<T: DeserializeOwned, I, S>(&self, cwd: &Path, args: I) -> T
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let all = json_args(args);
        let stdout = self.owt_ok(cwd, &all);
        serde_json::from_str(&stdout)
            .unwrap_or_else(|e| panic!("parsing {all:?} output: {e}\n{stdout}"))
    }

    /// Runs `owt --json …` that may exit non-zero (e.g. sync with
    /// conflicts); parses stdout and returns it with the success flag.
    pub fn owt_json_status<T: DeserializeOwned, I, S>(&self, cwd: &Path, args: I) -> (T, bool)
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let all = json_args(args);
        let out = self.owt(cwd, &all);
        let doc = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "parsing {all:?} output: {e}\n{}\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        });
        (doc, out.status.success())
    }

    /// Runs owt expecting failure; returns stderr.
    pub fn owt_err<I, S>(&self, cwd: &Path, args: I) -> String
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let args: Vec<_> = args
            .into_iter()
            .map(|a| a.as_ref().to_os_string())
            .collect();
        let out = self.owt(cwd, &args);
        assert!(
            !out.status.success(),
            "owt {:?} succeeded but should have failed:\n{}",
            args,
            String::from_utf8_lossy(&out.stdout)
        );
        String::from_utf8_lossy(&out.stderr).into_owned()
    }

    /// `owt new TASK` in `repo`: the session's name and worktree.
    /// Waits until the agent's start-up output settled (it is neither
    /// `starting` nor `working`), so that ship, merge and delete, which
    /// refuse an agent at work, act on it.
    pub fn new_session(&self, repo: &Path, task: &str) -> (String, PathBuf) {
        let out: owt_protocol::NewOutput = self.owt_json(repo, ["new", task]);
        let name = out.session.name;
        self.wait_settled(repo, &name);
        (name, PathBuf::from(out.session.worktree))
    }

    /// Waits (15 s at most, then panics) until the agent of `name` is
    /// neither `starting` nor `working`: its start-up output settled.
    pub fn wait_settled(&self, repo: &Path, name: &str) {
        use owt_protocol::Status;
        wait_until(
            &format!("the agent of {name} to settle"),
            Duration::from_secs(15),
            || {
                self.sessions(repo)
                    .sessions
                    .iter()
                    .find(|s| s.name == name)
                    .is_none_or(|s| !matches!(s.status, Status::Starting | Status::Working))
            },
        );
    }

    /// `owt --json list` in `dir`.
    pub fn sessions(&self, dir: &Path) -> owt_protocol::SessionList {
        self.owt_json(dir, ["list"])
    }

    /// The session `name` as `owt --json list` in `dir` shows it (panics
    /// when there is none).
    pub fn session(&self, dir: &Path, name: &str) -> owt_protocol::SessionView {
        self.sessions(dir)
            .sessions
            .into_iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("no session {name}"))
    }

    /// Every ref, the status (ignored files too) of the main checkout and
    /// of `worktree`, and the worktree's HEAD: for "nothing changed" checks.
    /// Where one `owt list` took each session's git facts from, in the order
    /// it lists them (its debug log: "the host's record", "journal", "walk").
    pub fn listing_sources(&self, repo: &Path) -> Vec<String> {
        let out = self
            .owt_cmd(repo, ["--log-format", "json", "list", "--json"])
            .env("RUST_LOG", "owt_core::ops::list=debug")
            .output()
            .unwrap();
        let log = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{log}");
        let from: Vec<(String, String)> = log
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter_map(|l| {
                let fields = &l["fields"];
                let source = fields["message"]
                    .as_str()?
                    .strip_prefix("git facts from ")?;
                Some((fields["session"].as_str()?.to_string(), source.to_string()))
            })
            .collect();
        let listed: owt_protocol::SessionList = serde_json::from_slice(&out.stdout).unwrap();
        listed
            .sessions
            .iter()
            .map(|s| {
                from.iter().find(|(name, _)| *name == s.name).map_or_else(
                    || format!("nothing for {} in: {log}", s.name),
                    |(_, f)| f.clone(),
                )
            })
            .collect()
    }

    pub fn snapshot(&self, repo: &Path, worktree: &Path) -> String {
        let refs = self.git(repo, ["for-each-ref", "--format=%(refname) %(objectname)"]);
        let main_status = self.git(repo, ["status", "--porcelain", "--ignored"]);
        let wt_status = self.git(worktree, ["status", "--porcelain", "--ignored"]);
        let wt_head = self.git(worktree, ["rev-parse", "HEAD"]);
        format!("{refs}\n--\n{main_status}\n--\n{wt_status}\n{wt_head}")
    }

    /// `git ARGS` in `cwd` with this env's `HOME` and `OWT_HOME` (see
    /// [`git`]).
    pub fn git<I, S>(&self, cwd: &Path, args: I) -> String
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut cmd = Command::new("git");
        self.hermetic(&mut cmd);
        run_git(&mut cmd, cwd, args)
    }

    /// A new repository `name` with one commit (README.md) on `main`, and an
    /// `.owt.toml` declaring the `fake` agent (`tests/data/idle-agent.sh`),
    /// committed and trusted (`owt trust`: a repository's own agents run
    /// only once the user trusts its files).
    pub fn repo(&self, name: &str) -> PathBuf {
        let path = self.untrusted_repo(name);
        self.trust(&path);
        path
    }

    /// `owt trust` in `repo` (after changing its `.owt.toml` or
    /// `.owt/setup.sh`, which then need trust again). Not asserted: a test
    /// that needs the trust fails on its own, naming `owt trust`, and the
    /// suite can run against an owt without the verb.
    pub fn trust(&self, repo: &Path) {
        let _ = self.owt(repo, ["trust"]);
    }

    /// As [`TestEnv::repo`], without trusting it.
    pub fn untrusted_repo(&self, name: &str) -> PathBuf {
        let path = self.root.path().join(name);
        std::fs::create_dir_all(&path).unwrap();
        self.git(&path, ["init", "-q", "-b", "main"]);
        std::fs::write(path.join("README.md"), "# test repository\n").unwrap();
        std::fs::write(
            path.join(".owt.toml"),
            format!(
                "[agent]\ndefault_tool = \"fake\"\n\n[tools.fake]\nbinary = \"{}\"\n",
                data_file("idle-agent.sh").display()
            ),
        )
        .unwrap();
        self.git(&path, ["add", "."]);
        self.git(&path, ["commit", "-q", "-m", "initial"]);
        path
    }

    /// Pids of processes started for the session `short_id` (its agent and
    /// whatever the agent started): those whose environment carries
    /// `OWT_SESSION=<short_id>` and this env's `OWT_HOME`.
    pub fn session_processes(&self, short_id: &str) -> Vec<i32> {
        let session = format!("OWT_SESSION={short_id}");
        self.our_processes()
            .into_iter()
            .filter(|pid| {
                std::fs::read(format!("/proc/{pid}/environ"))
                    .is_ok_and(|env| env.split(|b| *b == 0).any(|var| var == session.as_bytes()))
            })
            .filter(|pid| pid_alive(*pid as u32))
            .collect()
    }

    /// Pids of processes started with this env's `OWT_HOME`.
    pub fn our_processes(&self) -> Vec<i32> {
        let needle = format!("OWT_HOME={}", self.owt_home.display());
        let mut pids = Vec::new();
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return pids;
        };
        for entry in entries.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|s| s.parse::<i32>().ok())
            else {
                continue;
            };
            if pid == std::process::id() as i32 {
                continue;
            }
            if let Ok(environ) = std::fs::read(entry.path().join("environ")) {
                if environ
                    .split(|b| *b == 0)
                    .any(|var| var == needle.as_bytes())
                {
                    pids.push(pid);
                }
            }
        }
        pids
    }
}

impl Drop for TestEnv {
    fn drop(&mut self) {
        for pid in self.our_processes() {
            // SAFETY: plain kill(2) on a pid we found by our own OWT_HOME.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
    }
}

/// The `file://` URI of `path` (what an editor sends).
pub fn uri(path: &Path) -> String {
    format!("file://{}", path.display())
}

/// Ten numbered lines, `line 1` … `line 10`: a file for overlap tests.
pub fn ten_lines() -> String {
    (1..=10).map(|i| format!("line {i}\n")).collect()
}

/// `text` with its line `line` (1-based) replaced by `new`.
pub fn with_line(text: &str, line: usize, new: &str) -> String {
    text.lines()
        .enumerate()
        .map(|(i, l)| {
            if i + 1 == line {
                format!("{new}\n")
            } else {
                format!("{l}\n")
            }
        })
        .collect()
}

/// Sets the hermetic git environment on `cmd`: no user or system
/// configuration, a fixed identity and fixed dates.
pub fn hermetic_git(cmd: &mut Command) -> &mut Command {
    cmd.env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_SYSTEM", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "Test")
        .env("GIT_AUTHOR_EMAIL", "test@example.com")
        .env("GIT_COMMITTER_NAME", "Test")
        .env("GIT_COMMITTER_EMAIL", "test@example.com")
        .env("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z")
        .env("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z")
}

/// Points libgit2's configuration search paths (system, global, XDG) at an
/// empty folder, once per process, so that `git2` in a unit test reads no
/// user or system configuration (owt-core forbids the `unsafe` this takes).
pub fn hermetic_git2() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let empty = std::env::temp_dir().join("owt-tests-empty-git-config");
        std::fs::create_dir_all(&empty).unwrap();
        // SAFETY: runs once, before any test thread reads these (the tests
        // that use it call it before their first git2 call).
        unsafe {
            for level in [
                git2::ConfigLevel::System,
                git2::ConfigLevel::Global,
                git2::ConfigLevel::XDG,
            ] {
                git2::opts::set_search_path(level, &empty).unwrap();
            }
        }
    });
}

/// For unit tests that run git in-process and as a child: libgit2 and the
/// git CLI read no user or system configuration ([`hermetic_git2`], and
/// `GIT_CONFIG_*` in this process's environment), with a fixed identity
/// and dates; once per process.
pub fn hermetic_git_process() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        hermetic_git2();
        for (k, v) in [
            ("GIT_CONFIG_GLOBAL", "/dev/null"),
            ("GIT_CONFIG_SYSTEM", "/dev/null"),
            ("GIT_CONFIG_NOSYSTEM", "1"),
            ("GIT_AUTHOR_NAME", "Test"),
            ("GIT_AUTHOR_EMAIL", "test@example.com"),
            ("GIT_COMMITTER_NAME", "Test"),
            ("GIT_COMMITTER_EMAIL", "test@example.com"),
            ("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z"),
            ("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z"),
        ] {
            std::env::set_var(k, v);
        }
    });
}

/// Runs `git ARGS` in `cwd`, hermetic ([`hermetic_git`]); its stdout,
/// trimmed. Panics with git's stderr when it fails.
pub fn git<I, S>(cwd: &Path, args: I) -> String
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut cmd = Command::new("git");
    hermetic_git(&mut cmd);
    run_git(&mut cmd, cwd, args)
}

fn run_git<I, S>(cmd: &mut Command, cwd: &Path, args: I) -> String
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let args: Vec<_> = args
        .into_iter()
        .map(|a| a.as_ref().to_os_string())
        .collect();
    let out = cmd
        .args(&args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .output()
        .expect("running git");
    assert!(
        out.status.success(),
        "git {:?} failed: {}",
        args,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim_end().to_string()
}

/// Whether `pid` is a running process (not a zombie).
pub fn pid_alive(pid: u32) -> bool {
    // SAFETY: signal 0 only checks existence.
    if unsafe { libc::kill(pid as i32, 0) } != 0 {
        return false;
    }
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            !s.rsplit(')')
                .next()
                .is_some_and(|r| r.trim_start().starts_with(['Z', 'X']))
        })
        .unwrap_or(false)
}

/// Writes `text` to `dir/file`, making its folders.
pub fn write_file(dir: &Path, file: &str, text: &str) {
    let path = dir.join(file);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// The text of `path` (panics naming it when it cannot be read).
pub fn read_file(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Resident memory of `pid` in KiB (`VmRSS` of `/proc/<pid>/status`).
pub fn vm_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// The argv of `pid` (`/proc/<pid>/cmdline`).
pub fn cmdline(pid: u32) -> Vec<String> {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .unwrap_or_default()
        .split(|b| *b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect()
}

/// Inodes of the sockets `pid` holds open (`socket:[N]` links in
/// `/proc/<pid>/fd`).
pub fn socket_inodes(pid: u32) -> Vec<u64> {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return Vec::new();
    };
    fds.flatten()
        .filter_map(|fd| std::fs::read_link(fd.path()).ok())
        .filter_map(|target| {
            target
                .to_str()?
                .strip_prefix("socket:[")?
                .strip_suffix(']')?
                .parse()
                .ok()
        })
        .collect()
}

/// Inet sockets (TCP and UDP, v4 and v6) of `pid`'s network namespace:
/// `(table, local address, state, inode)` from `/proc/<pid>/net/*`.
pub fn inet_sockets(pid: u32) -> Vec<(String, String, String, u64)> {
    let mut out = Vec::new();
    for table in ["tcp", "tcp6", "udp", "udp6"] {
        let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/net/{table}")) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let cols: Vec<&str> = line.split_whitespace().collect();
            if cols.len() > 9 {
                if let Ok(inode) = cols[9].parse() {
                    out.push((
                        table.to_string(),
                        cols[1].to_string(),
                        cols[3].to_string(),
                        inode,
                    ));
                }
            }
        }
    }
    out
}

/// A real tmux server on its own socket (for attach-in-a-split tests);
/// killed on drop.
pub struct TmuxServer {
    socket: PathBuf,
    home: PathBuf,
    pub session: String,
}

impl TmuxServer {
    /// Starts a detached 200×50 session `session` under `env`'s folder.
    pub fn start(env: &TestEnv, session: &str) -> TmuxServer {
        let server = TmuxServer {
            socket: env.path().join(format!("tmux-{session}.sock")),
            home: env.home.clone(),
            session: session.to_string(),
        };
        server.run(&[
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            session,
            "-x",
            "200",
            "-y",
            "50",
        ]);
        server
    }

    /// Runs a tmux command against this server; returns stdout (trimmed).
    pub fn run(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .env("HOME", &self.home)
            .env_remove("TMUX")
            .output()
            .expect("tmux is installed");
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// The value of `$TMUX` inside this server (what a client would see).
    pub fn tmux_env(&self) -> String {
        self.run(&[
            "display-message",
            "-p",
            "#{socket_path},#{pid},#{session_id}",
        ])
    }

    /// Pane ids of the session, oldest first.
    pub fn panes(&self) -> Vec<String> {
        self.run(&["list-panes", "-t", &self.session, "-F", "#{pane_id}"])
            .lines()
            .map(str::to_string)
            .collect()
    }

    pub fn capture(&self, pane: &str) -> String {
        self.run(&["capture-pane", "-p", "-t", pane])
    }
}

impl Drop for TmuxServer {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .arg("kill-server")
            .status();
    }
}
