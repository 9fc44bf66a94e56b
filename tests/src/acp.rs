//! Helpers for the Agent Client Protocol tests: the real ACP adapters
//! offline ([`setup_acp`]), a scripted misbehaving ACP agent
//! (`tests/data/fake-acp-agent.py`, [`fake_acp_tool`]) and a program in a
//! real PTY read through a vt100 screen ([`Pty`], for `owt attach`).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use portable_pty::{CommandBuilder, PtySize};

use crate::agents::{setup_offline, Agent, Model};
use crate::{data_file, wait_until, TestEnv};

/// [`setup_offline`] for an agent's ACP server. Claude's adapter runs
/// Claude Code through its SDK, which refuses to start as root unless
/// `IS_SANDBOX` is set (its permission bypass option is checked even when
/// unused); this machine runs tests as root.
pub fn setup_acp(env: &mut TestEnv, agent: Agent, model: &Model, trusted: &[PathBuf], ask: bool) {
    setup_offline(env, agent, model, trusted, ask);
    if agent == Agent::Claude {
        env.extra_env.push(("IS_SANDBOX".into(), "1".into()));
    }
}

/// Declares `[tools.acpfake]` in the user's configuration (not `fake`:
/// [`TestEnv::repo`]'s `.owt.toml` declares that one, and wins): the fake ACP agent
/// in `mode`, logging what it receives to the returned file.
pub fn fake_acp_tool(env: &TestEnv, mode: &str) -> PathBuf {
    let log = env.path().join(format!("fake-acp-{mode}.jsonl"));
    let config = env.home.join(".config/owt/config.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    let script = data_file("fake-acp-agent.py");
    std::fs::write(
        &config,
        format!(
            "[tools.acpfake]\nbinary = \"{}\"\nacp = \"{{binary}} --mode {mode} --log '{}'\"\n",
            script.display(),
            log.display()
        ),
    )
    .unwrap();
    log
}

/// `owt new TASK --name NAME --ai-tool acpfake --acp --raw`: an ACP session
/// of the fake ACP agent ([`fake_acp_tool`]).
pub fn start_fake_acp(
    env: &TestEnv,
    repo: &Path,
    name: &str,
    task: &str,
) -> owt_protocol::SessionView {
    let out: owt_protocol::NewOutput = env.owt_json(
        repo,
        [
            "new",
            task,
            "--name",
            name,
            "--ai-tool",
            "acpfake",
            "--acp",
            "--raw",
        ],
    );
    assert_eq!(out.session.transport, owt_protocol::host::Transport::Acp);
    out.session
}

/// The lines the fake agent received, as JSON.
pub fn fake_log(log: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// The session host's log of `short_id`.
pub fn host_log(env: &TestEnv, short_id: &str) -> String {
    std::fs::read_to_string(env.owt_home.join("logs").join(format!("{short_id}.log")))
        .unwrap_or_default()
}

/// Polls `owt list` until the session `name` satisfies `want` (30 s, then
/// a failure with its status and its host's log).
pub fn wait_status(
    env: &TestEnv,
    repo: &Path,
    name: &str,
    want: impl Fn(&owt_protocol::SessionView) -> bool,
) -> owt_protocol::SessionView {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let s = env.session(repo, name);
        if want(&s) {
            return s;
        }
        if std::time::Instant::now() >= deadline {
            panic!(
                "timed out waiting for {name}'s status; it is {:?} ({}); host log:\n{}",
                s.status,
                s.status_text,
                host_log(env, &s.id)
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A program in a real pseudo-terminal, its output read into a screen.
pub struct Pty {
    screen: Arc<Mutex<vt100::Parser>>,
    raw: Arc<Mutex<Vec<u8>>>,
    writer: Box<dyn Write + Send>,
    child: Box<dyn portable_pty::Child + Send + Sync>,
    _master: Box<dyn portable_pty::MasterPty + Send>,
}

impl Pty {
    /// Runs `owt ARGS` in `cwd` with `env`'s environment.
    pub fn owt(env: &TestEnv, cwd: &Path, args: &[&str]) -> Pty {
        let pty = portable_pty::native_pty_system()
            .openpty(PtySize {
                rows: 50,
                cols: 160,
                pixel_width: 0,
                pixel_height: 0,
            })
            .expect("openpty");
        let probe = env.owt_cmd(cwd, args);
        let mut cmd = CommandBuilder::new(probe.get_program());
        cmd.args(probe.get_args());
        cmd.cwd(cwd);
        for (k, v) in probe.get_envs() {
            match v {
                Some(v) => cmd.env(k, v),
                None => cmd.env_remove(k),
            }
        }
        cmd.env("TERM", "xterm-256color");
        let child = pty.slave.spawn_command(cmd).expect("spawning owt in a pty");
        drop(pty.slave);
        let mut reader = pty.master.try_clone_reader().expect("pty reader");
        let writer = pty.master.take_writer().expect("pty writer");
        let screen = Arc::new(Mutex::new(vt100::Parser::new(50, 160, 2000)));
        let raw = Arc::new(Mutex::new(Vec::new()));
        {
            let screen = screen.clone();
            let raw = raw.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 8192];
                while let Ok(n) = reader.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    screen.lock().unwrap().process(&buf[..n]);
                    raw.lock().unwrap().extend_from_slice(&buf[..n]);
                }
            });
        }
        Pty {
            screen,
            raw,
            writer,
            child,
            _master: pty.master,
        }
    }

    /// Everything the program printed (lossy text, escapes removed by
    /// the screen model's reading of each line).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.raw.lock().unwrap()).replace("\r\n", "\n")
    }

    pub fn screen(&self) -> String {
        self.screen.lock().unwrap().screen().contents()
    }

    pub fn wait_for(&self, needle: &str, timeout: Duration) {
        let deadline = std::time::Instant::now() + timeout;
        while !self.text().contains(needle) {
            if std::time::Instant::now() >= deadline {
                panic!(
                    "timed out after {timeout:?} waiting for {needle:?} from the program in the pty; it printed:\n{}",
                    self.text()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Types `line` and Enter.
    pub fn line(&mut self, line: &str) {
        self.writer.write_all(line.as_bytes()).unwrap();
        self.writer.write_all(b"\r").unwrap();
        self.writer.flush().unwrap();
    }

    /// Waits for the program to exit; its exit code.
    pub fn wait_exit(&mut self, timeout: Duration) -> u32 {
        let mut code = None;
        wait_until("the program in the pty to exit", timeout, || {
            code = self.child.try_wait().ok().flatten().map(|s| s.exit_code());
            code.is_some()
        });
        code.unwrap_or(u32::MAX)
    }
}

impl Drop for Pty {
    fn drop(&mut self) {
        let _ = self.child.kill();
    }
}

/// `node SCRIPT ARGS` in `cwd` with `env`'s hermetic environment (what
/// `owt` gets, so an `owt` the script starts sees the test's `OWT_HOME`).
pub fn node(env: &TestEnv, cwd: &Path, script: &Path, args: &[&std::ffi::OsStr]) -> Command {
    let probe = env.owt_cmd(cwd, std::iter::empty::<&str>());
    let mut cmd = Command::new("node");
    cmd.arg(script).args(args).current_dir(cwd);
    for (k, v) in probe.get_envs() {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    cmd
}
