//! Starting hosts: a detached `owt __host run` that says when it serves
//! its socket, the admitter that starts queued sessions, and the host
//! process's own entry point.

use std::ffi::OsString;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::platform::process::Signal;
use owt_protocol::host::Transport;

use super::stopping::kill;
use super::{acp_host, host, log_path, HostSpec, SessionError, Started};
use crate::feedback::notify::Notifier;
use crate::feedback::turn::{Feedback, HostSide, TurnHooks};
use crate::store::Store;

/// This build's version, which a session host must have.
pub const OWT_VERSION: &str = env!("CARGO_PKG_VERSION");

/// How long [`start_host`] waits for a host to serve its socket.
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// Starts a detached host for `spec` and waits until it serves its socket.
/// The host is the session host binary beside the owt binary (this
/// program, or `$OWT_BIN` for tests that link this library into another
/// executable), else that owt binary's `__host run`
/// ([`crate::platform::exe::host_for`]).
pub fn start_host(spec: &HostSpec) -> Result<Started, SessionError> {
    start_host_with(spec, &crate::platform::exe::host_for(&owt_exe()?))
}

/// The descriptor number the host finds its readiness pipe at.
const READY_FD: i32 = 3;

/// As [`start_host`], running the host from `exe` (an owt binary, or the
/// session host binary).
pub fn start_host_with(spec: &HostSpec, exe: &Path) -> Result<Started, SessionError> {
    let err = |doing: &str, e: std::io::Error| SessionError::io(doing, e);
    let logs = spec.home.join("logs");
    host::ensure_private_dir(&logs)?;
    let spec_file = logs.join(format!("{}.spec.json", spec.short_id));
    let json = serde_json::to_vec_pretty(spec)
        .map_err(|e| err("encoding the host spec", std::io::Error::other(e)))?;
    crate::store::write_private(&spec_file, &json)
        .map_err(|e| err(&format!("writing {}", spec_file.display()), e))?;
    let log_file = log_path(&spec.home, &spec.short_id);
    let (read_end, write_end) =
        crate::platform::pipe::cloexec().map_err(|e| err("creating the readiness pipe", e))?;
    let mut child = spawn_host(spec, exe, &spec_file, &log_file, write_end.as_raw_fd())?;
    drop(write_end);
    let host_pid = child.id();
    if !readable_before(&read_end, Instant::now() + START_TIMEOUT) {
        kill(host_pid, Signal::KILL);
        let _ = child.wait();
        return Err(SessionError::NotReady {
            seconds: START_TIMEOUT.as_secs(),
            log: log_file,
        });
    }
    let mut line = String::new();
    let _ = BufReader::new(File::from(read_end)).read_line(&mut line);
    let line = line.trim();
    if let Some(rest) = line.strip_prefix("ok") {
        let agent_pid = rest.trim().parse::<u32>().ok().filter(|p| *p != 0);
        // Reap the host when it ends, if this process lives that long.
        std::thread::spawn(move || {
            let _ = child.wait();
        });
        return Ok(Started {
            host_pid,
            agent_pid,
        });
    }
    let _ = child.wait();
    if let Some(message) = line.strip_prefix("error: ") {
        return Err(SessionError::Host(message.to_string()));
    }
    Err(SessionError::ExitedEarly {
        tail: log_tail(&log_file),
        log: log_file,
    })
}

/// Starts `exe __host run --spec SPEC_FILE --ready-fd 3 --owt-version V`
/// in its own session, its output appended to `log_file`, the readiness
/// pipe's write end `write_fd` at [`READY_FD`]. The version is this
/// program's: a session host binary from another build refuses to run.
fn spawn_host(
    spec: &HostSpec,
    exe: &Path,
    spec_file: &Path,
    log_file: &Path,
    write_fd: i32,
) -> Result<std::process::Child, SessionError> {
    let err = |doing: &str, e: std::io::Error| SessionError::io(doing, e);
    let log = File::options()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(log_file)
        .map_err(|e| err(&format!("opening {}", log_file.display()), e))?;
    let log2 = log
        .try_clone()
        .map_err(|e| err("duplicating the log file", e))?;
    let mut cmd = Command::new(exe);
    cmd.args(["__host", "run", "--spec"])
        .arg(spec_file)
        .args(["--ready-fd", &READY_FD.to_string()])
        .args(["--owt-version", OWT_VERSION])
        .env("OWT_HOME", &spec.home)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log2);
    // The child must find the pipe at READY_FD.
    crate::platform::process::new_session_on_exec(&mut cmd, Some((write_fd, READY_FD)));
    cmd.spawn()
        .map_err(|e| err(&format!("starting the session host {}", exe.display()), e))
}

/// Whether `read_end` has something to read (a line, or its end) before
/// `deadline`.
fn readable_before(read_end: &std::os::fd::OwnedFd, deadline: Instant) -> bool {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        let wait = left.min(Duration::from_secs(1));
        if crate::platform::poll::readable(read_end, Some(wait)) {
            return true;
        }
    }
}

/// The last five lines of the host's log.
fn log_tail(log_file: &Path) -> String {
    std::fs::read_to_string(log_file)
        .map(|t| {
            t.lines()
                .rev()
                .take(5)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// The owt binary to run for hosts and helpers: `$OWT_BIN` (tests that
/// link this library into another executable) or this program (the `owt`
/// beside it, in the session host binary).
fn owt_exe() -> Result<PathBuf, SessionError> {
    crate::platform::exe::owt_to_run().map_err(|e| SessionError::io("finding the owt binary", e))
}

/// Starts `owt __admit` detached (its own session, no terminal): it
/// starts the queued sessions there is room for now. What a session host
/// does when its agent ended or gave back memory, and `owt lsp` when it
/// sees sessions waiting; it returns at once.
pub fn spawn_admitter(home: &Path) -> Result<(), SessionError> {
    spawn_detached(home, &["__admit".into()], "admit.log")
}

/// Starts `owt ARGS` detached (its own session, no terminal, standard
/// error appended to `logs/LOG` under `home`) and returns at once; the
/// child is reaped when it ends, if this process lives that long.
pub fn spawn_detached(home: &Path, args: &[OsString], log: &str) -> Result<(), SessionError> {
    let exe = owt_exe()?;
    let log = File::options()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(home.join("logs").join(log))
        .ok();
    let mut cmd = Command::new(&exe);
    cmd.args(args)
        .env("OWT_HOME", home)
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    match log {
        Some(log) => cmd.stderr(log),
        None => cmd.stderr(Stdio::null()),
    };
    crate::platform::process::new_session_on_exec(&mut cmd, None);
    let what = args
        .first()
        .map_or_else(String::new, |a| a.to_string_lossy().into_owned());
    let mut child = cmd
        .spawn()
        .map_err(|e| SessionError::io(format!("starting {} {what}", exe.display()), e))?;
    std::thread::spawn(move || {
        let _ = child.wait();
    });
    Ok(())
}

/// Starts an admitter ([`spawn_admitter`]) when sessions wait in the
/// queue; logs what goes wrong.
pub fn admit_if_queued(store: &Store, home: &Path) {
    match store.any_queued() {
        Ok(true) => {
            if let Err(e) = spawn_admitter(home) {
                tracing::warn!("starting queued sessions: {e}");
            }
        }
        Ok(false) => {}
        Err(e) => tracing::warn!("looking for queued sessions: {e}"),
    }
}

/// Runs the host in this process (the `__host run` subcommand).
/// `ready_fd` is the readiness pipe [`start_host`] passes; `hooks`, what a
/// terminal session's feedback loop asks of the use cases above
/// (`ops::host::turn_hooks`).
pub fn run_host(
    spec: HostSpec,
    ready_fd: Option<i32>,
    hooks: TurnHooks,
) -> Result<(), SessionError> {
    // The descriptor number the parent passed for this process to own
    // (`--ready-fd`), made close-on-exec: kept out of the agent.
    let ready = ready_fd.map(crate::platform::fd::take_inherited);
    // A dying client must not kill the host.
    crate::platform::process::ignore_pipe_signals(true);
    match spec.transport {
        Transport::Pty => {
            let hooks = host_hooks(&spec, hooks);
            host::run(spec, ready, hooks)
        }
        Transport::Acp => acp_host::run(spec, ready),
    }
}

/// What a terminal session's host drives beside its agent: the
/// notifications out and the feedback loop (`feedback`), over `hooks`.
fn host_hooks(spec: &HostSpec, hooks: TurnHooks) -> host::HostHooks {
    let (session_id, home) = (spec.session_id, spec.home.clone());
    host::HostHooks {
        notifier: Box::new(move |row| {
            Box::new(Notifier::start(row.id, row.worktree_path, hooks.config))
        }),
        feedback: Box::new(move |agent| {
            Box::new(Feedback::new(HostSide {
                session_id,
                home,
                type_text: agent.type_text,
                exiting: agent.exiting,
                hooks,
            }))
        }),
        on_exit: crate::feedback::run::kill_all,
    }
}

impl host::Watcher for Feedback {
    fn poll(&mut self, store: &Store) {
        Feedback::poll(self, store);
    }
}

impl host::Watcher for Notifier {
    fn poll(&mut self, store: &Store) {
        Notifier::poll(self, store);
    }

    fn exited(self: Box<Self>, store: &Store) {
        Notifier::exited(*self, store);
    }
}
