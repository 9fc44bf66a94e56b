//! `owt guard` answered by a running `owt lsp`: the server keeps a live
//! engine, so it answers in milliseconds what a cold run computes in
//! seconds. Each server listens on `$OWT_HOME/run/lsp-<pid>.sock` (0600,
//! clients of another user refused) and says which repository it serves
//! (its main checkout) in `$OWT_HOME/run/lsp-<pid>.json`, written
//! atomically; `owt guard` asks the live servers of its repository.
//!
//! The query (protocol.md, "Guard queries"): one line of JSON each way,
//! [`WarmRequest`] then [`WarmAnswer`], with a version; a request longer
//! than [`MAX_REQUEST`], not JSON or of another version gets an error
//! answer. A record whose server is gone (its pid dead, or reused by a
//! process that started at another time, as [`super::unsaved`] tells) is
//! ignored, and removed with its socket by the next server that starts.
//!
//! Invariant: only `owt lsp` writes or removes records and sockets, its own
//! and the stale ones of dead servers; `owt guard` only reads and connects.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use owt_protocol::guard::{GuardReport, WarmAnswer, WarmRequest, WARM_VERSION};
use serde::{Deserialize, Serialize};

use super::pid_record::{self, start_ticks};

/// The folder under `$OWT_HOME` (the session hosts' sockets are there too).
pub const DIR: &str = "run";
/// The longest request line read.
pub const MAX_REQUEST: u64 = 4096;
/// The longest answer read (a report of thousands of pairs).
const MAX_ANSWER: u64 = 256 << 20;
/// How long the server waits for a client's request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(2);

/// What a running `owt lsp` serves.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub version: u32,
    pub pid: u32,
    /// When the process started (see [`super::unsaved::Record::started`]).
    pub started: Option<u64>,
    /// The main checkout of the repository it serves.
    pub root: PathBuf,
}

/// `$OWT_HOME/run/lsp-<pid>.json`.
pub fn record_path(home: &Path, pid: u32) -> PathBuf {
    home.join(DIR).join(format!("lsp-{pid}.json"))
}

/// `$OWT_HOME/run/lsp-<pid>.sock`.
pub fn socket_path(home: &Path, pid: u32) -> PathBuf {
    home.join(DIR).join(format!("lsp-{pid}.sock"))
}

/// Listens for this process (removing the stale records and sockets of
/// dead servers first) and writes its record naming `root`.
pub fn listen(home: &Path, root: &Path) -> std::io::Result<UnixListener> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    remove_stale(home);
    let dir = home.join(DIR);
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)?;
    let pid = std::process::id();
    let socket = socket_path(home, pid);
    let _ = std::fs::remove_file(&socket);
    let listener = UnixListener::bind(&socket)?;
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o600))?;
    let record = Record {
        version: WARM_VERSION,
        pid,
        started: start_ticks(pid),
        root: std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf()),
    };
    pid_record::write(&dir, &format!("lsp-{pid}.json"), &record)?;
    Ok(listener)
}

/// Removes the record and socket of `pid`.
pub fn remove(home: &Path, pid: u32) {
    let _ = std::fs::remove_file(record_path(home, pid));
    let _ = std::fs::remove_file(socket_path(home, pid));
}

fn is_live(record: &Record) -> bool {
    pid_record::still_running(record.pid, record.started)
}

/// Every record under `home`: its pid (from its name) and what it says.
fn records(home: &Path) -> Vec<(u32, Option<Record>)> {
    let Ok(entries) = std::fs::read_dir(home.join(DIR)) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let pid = name
                .strip_prefix("lsp-")?
                .strip_suffix(".json")?
                .parse()
                .ok()?;
            Some((pid, pid_record::read::<Record>(&e.path())))
        })
        .collect()
}

/// Removes the records and sockets of servers that are gone, and
/// unreadable records.
pub fn remove_stale(home: &Path) {
    for (pid, record) in records(home) {
        if !record.as_ref().is_some_and(|r| r.pid == pid && is_live(r)) {
            remove(home, pid);
        }
    }
}

/// The live servers of the repository whose main checkout is `root`.
pub fn servers(home: &Path, root: &Path) -> Vec<Record> {
    let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    records(home)
        .into_iter()
        .filter_map(|(pid, record)| record.filter(|r| r.pid == pid))
        .filter(|r| r.root == root && is_live(r))
        .collect()
}

/// Answers one client: refuses another user, reads its request and
/// writes the answer, `report`'s when the request is good.
pub fn serve_one(
    mut stream: UnixStream,
    report: impl FnOnce() -> Result<GuardReport, String>,
) -> std::io::Result<()> {
    let answer = if !crate::platform::socket::peer_is_this_user(&stream) {
        tracing::warn!("refused a guard query of another user");
        Err("this owt lsp belongs to another user".to_string())
    } else {
        stream.set_read_timeout(Some(REQUEST_TIMEOUT))?;
        read_request(&stream).and_then(|()| report())
    };
    let answer = match answer {
        Ok(report) => WarmAnswer {
            version: WARM_VERSION,
            report: Some(report),
            error: None,
        },
        Err(error) => WarmAnswer {
            version: WARM_VERSION,
            report: None,
            error: Some(error),
        },
    };
    let mut line = serde_json::to_vec(&answer).map_err(std::io::Error::other)?;
    line.push(b'\n');
    stream.write_all(&line)
}

/// Reads one request line (at most [`MAX_REQUEST`] bytes) and checks it.
fn read_request(stream: &UnixStream) -> Result<(), String> {
    let mut line = Vec::new();
    BufReader::new(stream.take(MAX_REQUEST))
        .read_until(b'\n', &mut line)
        .map_err(|e| format!("reading the request: {e}"))?;
    if line.last() != Some(&b'\n') {
        return Err(format!(
            "a request is one line of JSON of at most {MAX_REQUEST} bytes"
        ));
    }
    let request: WarmRequest =
        serde_json::from_slice(&line).map_err(|e| format!("a bad request: {e}"))?;
    if request.version != WARM_VERSION {
        return Err(format!(
            "this owt lsp answers version {WARM_VERSION}, not {}",
            request.version
        ));
    }
    Ok(())
}

/// The report of a live server of the repository whose main checkout is
/// `root`, within `timeout` in all, with the server's pid; why not
/// otherwise (none runs, none answered in time, an error).
pub fn ask(home: &Path, root: &Path, timeout: Duration) -> Result<(u32, GuardReport), String> {
    let deadline = Instant::now() + timeout;
    let mut why = "no owt lsp serves this repository".to_string();
    for server in servers(home, root) {
        match ask_one(home, server.pid, deadline) {
            Ok(report) => return Ok((server.pid, report)),
            Err(e) => why = format!("owt lsp {}: {e}", server.pid),
        }
    }
    Err(why)
}

fn ask_one(home: &Path, pid: u32, deadline: Instant) -> Result<GuardReport, String> {
    let left = || {
        let left = deadline.saturating_duration_since(Instant::now());
        (!left.is_zero()).then_some(left).ok_or("timed out")
    };
    let mut stream = UnixStream::connect(socket_path(home, pid)).map_err(|e| e.to_string())?;
    stream
        .set_write_timeout(Some(left()?))
        .map_err(|e| e.to_string())?;
    let mut request = serde_json::to_vec(&WarmRequest {
        version: WARM_VERSION,
    })
    .map_err(|e| e.to_string())?;
    request.push(b'\n');
    stream.write_all(&request).map_err(|e| e.to_string())?;
    let mut line = Vec::new();
    let mut reader = BufReader::new((&stream).take(MAX_ANSWER));
    loop {
        stream
            .set_read_timeout(Some(left()?))
            .map_err(|e| e.to_string())?;
        let n = reader
            .read_until(b'\n', &mut line)
            .map_err(|e| e.to_string())?;
        if n == 0 || line.last() == Some(&b'\n') {
            break;
        }
    }
    let answer: WarmAnswer =
        serde_json::from_slice(&line).map_err(|e| format!("a bad answer: {e}"))?;
    if answer.version != WARM_VERSION {
        return Err(format!("it answers version {}", answer.version));
    }
    match (answer.report, answer.error) {
        (Some(report), _) => Ok(report),
        (None, error) => Err(error.unwrap_or_else(|| "no report".into())),
    }
}
