//! Running one command for the feedback loops: in a folder, in a process
//! group of its own, output (stdout and stderr together) to a log file and
//! never to anyone's terminal, killed at its timeout or when cancelled.
//!
//! Invariants: the log is bounded ([`LOG_HEAD_BYTES`] from the start plus
//! the last [`TAIL_BYTES`]); a command that floods its output costs a
//! bounded amount of memory and disk; a run that ends (or is cancelled, or
//! times out) leaves nothing of its process group behind.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::platform::process::Signal;

/// Bytes of output written to the log from its start.
pub const LOG_HEAD_BYTES: u64 = 4 * 1024 * 1024;
/// Bytes of the output's end kept in memory (and added to a cut log).
pub const TAIL_BYTES: usize = 256 * 1024;
/// Between SIGTERM and SIGKILL.
const KILL_GRACE: Duration = Duration::from_secs(2);

/// What to run.
#[derive(Debug, Clone)]
pub struct RunSpec {
    pub argv: Vec<String>,
    pub cwd: PathBuf,
    pub timeout: Duration,
    pub log: PathBuf,
    pub env: Vec<(String, String)>,
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub exit_code: Option<i32>,
    /// The signal that ended it, when one did.
    pub signal: Option<i32>,
    pub timed_out: bool,
    pub cancelled: bool,
    pub duration: Duration,
    /// The output's last bytes (at most [`TAIL_BYTES`]).
    pub tail: Vec<u8>,
    /// All the bytes it wrote (the log may hold fewer).
    pub output_bytes: u64,
}

impl Outcome {
    pub fn passed(&self) -> bool {
        self.exit_code == Some(0) && !self.timed_out && !self.cancelled
    }
}

/// The output as it comes: the log file (bounded) and the tail in memory.
struct Sink {
    log: Option<File>,
    written: u64,
    total: u64,
    tail: VecDeque<u8>,
}

impl Sink {
    fn push(&mut self, bytes: &[u8]) {
        self.total += bytes.len() as u64;
        if let Some(log) = self.log.as_mut() {
            let room = LOG_HEAD_BYTES.saturating_sub(self.written) as usize;
            let head = &bytes[..bytes.len().min(room)];
            if !head.is_empty() && log.write_all(head).is_ok() {
                self.written += head.len() as u64;
            }
        }
        self.tail.extend(bytes);
        let excess = self.tail.len().saturating_sub(TAIL_BYTES);
        self.tail.drain(..excess);
    }

    /// Completes the log: when its head was cut, a marker and the tail.
    fn finish(&mut self) {
        let Some(log) = self.log.as_mut() else { return };
        if self.total > self.written {
            let tail_len = self.tail.len() as u64;
            let omitted = self.total.saturating_sub(self.written + tail_len);
            let (a, b) = self.tail.as_slices();
            let _ = write!(
                log,
                "\n[owt: {omitted} bytes of output not kept; its last {tail_len} bytes follow]\n"
            );
            let _ = log.write_all(a);
            let _ = log.write_all(b);
        }
        let _ = log.flush();
    }
}

/// A started run.
pub struct Running {
    child: Child,
    pgid: i32,
    started: Instant,
    timeout: Duration,
    sink: Arc<Mutex<Sink>>,
    reader: Option<std::thread::JoinHandle<()>>,
    timed_out: bool,
    cancelled: bool,
}

impl std::fmt::Debug for Running {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Running")
            .field("pgid", &self.pgid)
            .field("started", &self.started)
            .finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Process groups of this process's runs still going.
static GROUPS: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// Kills every run of this process still going (a session host about to
/// exit: `std::process::exit` runs no destructor).
pub fn kill_all() {
    for pgid in lock(&GROUPS).drain(..) {
        kill_group(pgid, Signal::KILL);
    }
}

fn forget_group(pgid: i32) {
    lock(&GROUPS).retain(|g| *g != pgid);
}

/// Creates `dir` (0700) if need be.
fn private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
}

impl Running {
    /// Starts `spec.argv` in `spec.cwd` (no shell), stdin from /dev/null,
    /// stdout and stderr into one pipe read into the log.
    pub fn start(spec: &RunSpec) -> Result<Running, String> {
        let Some((program, args)) = spec.argv.split_first() else {
            return Err("the command is empty".into());
        };
        if let Some(dir) = spec.log.parent() {
            private_dir(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        }
        let log = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&spec.log)
            .map_err(|e| format!("creating the log {}: {e}", spec.log.display()))?;
        let (reader, writer) = std::io::pipe().map_err(|e| format!("making a pipe: {e}"))?;
        let writer2 = writer
            .try_clone()
            .map_err(|e| format!("making a pipe: {e}"))?;
        let mut cmd = Command::new(program);
        cmd.args(args)
            .current_dir(&spec.cwd)
            .stdin(Stdio::null())
            .stdout(writer)
            .stderr(writer2)
            .process_group(0);
        for (k, v) in &spec.env {
            cmd.env(k, v);
        }
        let child = cmd.spawn().map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => format!(
                "`{program}` was not found (the command is run without a shell: write `sh -c \"…\"` for shell syntax)"
            ),
            _ => format!("starting `{program}` in {}: {e}", spec.cwd.display()),
        })?;
        // The command holds the writing ends now.
        drop(cmd);
        let pgid = child.id() as i32;
        lock(&GROUPS).push(pgid);
        let sink = Arc::new(Mutex::new(Sink {
            log: Some(log),
            written: 0,
            total: 0,
            tail: VecDeque::new(),
        }));
        let reader = {
            let sink = sink.clone();
            std::thread::Builder::new()
                .name("checks-output".into())
                .spawn(move || read_into(reader, &sink))
                .map_err(|e| format!("starting the output reader: {e}"))?
        };
        Ok(Running {
            child,
            pgid,
            started: Instant::now(),
            timeout: spec.timeout,
            sink,
            reader: Some(reader),
            timed_out: false,
            cancelled: false,
        })
    }

    /// The process group (its leader's pid).
    pub fn pgid(&self) -> i32 {
        self.pgid
    }

    /// Kills the run (its whole process group); [`Running::poll`] then
    /// reports it cancelled.
    pub fn cancel(&mut self) {
        self.cancelled = true;
        self.kill_group();
    }

    fn kill_group(&mut self) {
        kill_group(self.pgid, Signal::TERM);
        let deadline = Instant::now() + KILL_GRACE;
        while Instant::now() < deadline {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        kill_group(self.pgid, Signal::KILL);
    }

    /// The outcome once the command ended (killing it at its timeout);
    /// `None` while it runs.
    pub fn poll(&mut self) -> Option<Outcome> {
        if !self.timed_out && !self.cancelled && self.started.elapsed() >= self.timeout {
            self.timed_out = true;
            self.kill_group();
        }
        let status = match self.child.try_wait() {
            Ok(Some(status)) => status,
            Ok(None) => return None,
            Err(e) => {
                tracing::warn!("waiting for the checks command: {e}");
                self.kill_group();
                self.child.wait().ok()?
            }
        };
        // Whatever it left running in its group goes too (a server a test
        // started, say): nothing of a run outlives it.
        kill_group(self.pgid, Signal::KILL);
        forget_group(self.pgid);
        Some(self.outcome(status.code(), status.signal()))
    }

    /// Blocks until the command ends (or its timeout), asking `cancel`
    /// every 50 ms.
    pub fn wait(mut self, cancel: &dyn Fn() -> bool) -> Outcome {
        loop {
            if let Some(outcome) = self.poll() {
                return outcome;
            }
            if !self.cancelled && cancel() {
                self.cancel();
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn outcome(&mut self, exit_code: Option<i32>, signal: Option<i32>) -> Outcome {
        // The reader ends when the last writer is gone; a process that left
        // the group may keep the pipe open: stop waiting after a moment.
        if let Some(reader) = self.reader.take() {
            let deadline = Instant::now() + Duration::from_millis(500);
            while !reader.is_finished() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        let mut sink = lock(&self.sink);
        sink.finish();
        // A reader still going writes nothing more to the log.
        sink.log = None;
        Outcome {
            exit_code,
            signal,
            timed_out: self.timed_out,
            cancelled: self.cancelled,
            duration: self.started.elapsed(),
            tail: sink.tail.iter().copied().collect(),
            output_bytes: sink.total,
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            kill_group(self.pgid, Signal::KILL);
            let _ = self.child.wait();
        }
        forget_group(self.pgid);
    }
}

fn read_into(mut reader: std::io::PipeReader, sink: &Mutex<Sink>) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match reader.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => lock(sink).push(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}

fn kill_group(pgid: i32, signal: Signal) {
    if let Ok(pgid) = u32::try_from(pgid) {
        crate::platform::process::signal_group(pgid, signal);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(dir: &Path, script: &str, timeout_ms: u64) -> RunSpec {
        RunSpec {
            argv: vec!["sh".into(), "-c".into(), script.into()],
            cwd: dir.to_path_buf(),
            timeout: Duration::from_millis(timeout_ms),
            log: dir.join("logs/run.log"),
            env: Vec::new(),
        }
    }

    #[test]
    fn exit_code_output_and_log() {
        let dir = tempfile::tempdir().unwrap();
        let run =
            Running::start(&spec(dir.path(), "echo out; echo err >&2; exit 3", 10_000)).unwrap();
        let outcome = run.wait(&|| false);
        assert_eq!(outcome.exit_code, Some(3));
        assert!(!outcome.passed());
        assert_eq!(String::from_utf8_lossy(&outcome.tail), "out\nerr\n");
        let log = std::fs::read_to_string(dir.path().join("logs/run.log")).unwrap();
        assert_eq!(log, "out\nerr\n");
    }

    #[test]
    fn a_hanging_command_and_its_children_are_killed_at_the_timeout() {
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("child.pid");
        let script = format!("sleep 300 & echo $! > {}; wait", pidfile.display());
        let started = Instant::now();
        let outcome = Running::start(&spec(dir.path(), &script, 500))
            .unwrap()
            .wait(&|| false);
        assert!(outcome.timed_out, "{outcome:?}");
        assert!(started.elapsed() < Duration::from_secs(20));
        let pid: i32 = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while crate::session::pid_alive(pid as u32) {
            assert!(
                Instant::now() < deadline,
                "the background sleep {pid} outlived the run"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn a_flood_of_output_is_bounded_in_the_log_and_in_memory() {
        let dir = tempfile::tempdir().unwrap();
        // ~20 MiB of output, then a last line that must survive.
        let script = "yes 'flood flood flood flood flood flood flood' | head -c 20000000; echo; echo THE END";
        let outcome = Running::start(&spec(dir.path(), script, 60_000))
            .unwrap()
            .wait(&|| false);
        assert_eq!(outcome.exit_code, Some(0));
        assert!(outcome.output_bytes > 20_000_000);
        assert!(outcome.tail.len() <= TAIL_BYTES);
        assert!(String::from_utf8_lossy(&outcome.tail).ends_with("THE END\n"));
        let log = std::fs::metadata(dir.path().join("logs/run.log")).unwrap();
        assert!(
            log.len() <= LOG_HEAD_BYTES + TAIL_BYTES as u64 + 200,
            "log {} bytes",
            log.len()
        );
        let text = std::fs::read(dir.path().join("logs/run.log")).unwrap();
        assert!(String::from_utf8_lossy(&text).contains("bytes of output not kept"));
        assert!(text.ends_with(b"THE END\n"));
    }

    #[test]
    fn cancelling_kills_the_group() {
        let dir = tempfile::tempdir().unwrap();
        let run = Running::start(&spec(dir.path(), "sleep 300", 60_000)).unwrap();
        let pgid = run.pgid();
        let asked = std::sync::atomic::AtomicBool::new(false);
        let outcome = run.wait(&|| !asked.swap(true, std::sync::atomic::Ordering::SeqCst));
        assert!(outcome.cancelled && !outcome.passed());
        assert!(!crate::session::pid_alive(pgid as u32));
    }

    #[test]
    fn a_missing_program_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = spec(dir.path(), "", 1000);
        s.argv = vec!["no-such-program-owt".into()];
        let err = Running::start(&s).unwrap_err();
        assert!(
            err.contains("was not found") && err.contains("sh -c"),
            "{err}"
        );
    }
}
