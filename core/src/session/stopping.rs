//! Stopping a session: its agent and host, proven to be this session's
//! (by their command lines), never found by a process name.

use std::path::Path;
use std::time::{Duration, Instant};

use owt_protocol::host::Role;

use super::{pid_alive, socket_path, HostConn, SessionError};
use crate::platform::process::{signal_group, signal_process, Signal};
use crate::status::{kind, HostFact};
use crate::store::{SessionRow, Store};

/// Time between hang-up and kill when stopping an agent.
pub const STOP_GRACE: Duration = Duration::from_secs(3);

/// Stops the agent (hang-up, then kill after a grace period), its host,
/// and whatever the agent left running for this session outside its
/// process group (a daemon it detached, see [`stop_leftovers`]).
pub fn stop(home: &Path, session: &SessionRow) -> Result<(), SessionError> {
    stop_agent_and_host(home, session)?;
    stop_leftovers(home, &session.short_id);
    Ok(())
}

/// Processes started for the session `short_id` of `home` that are still
/// running: every process of this user whose environment carries both
/// `OWT_SESSION=<short id>` and `OWT_HOME=<home>` (the host gives them to
/// the agent, and a daemon the agent detaches inherits them), this process
/// excepted.
pub fn session_processes(home: &Path, short_id: &str) -> Vec<u32> {
    let session = format!("OWT_SESSION={short_id}");
    let owt_home = format!("OWT_HOME={}", home.display());
    let me = std::process::id();
    crate::platform::procs::pids()
        .into_iter()
        .filter(|pid| *pid != me)
        .filter(|pid| {
            crate::platform::procs::environment(*pid).is_some_and(|env| {
                let mut vars = env.split(|b| *b == 0);
                let (mut has_session, mut has_home) = (false, false);
                for var in &mut vars {
                    has_session |= var == session.as_bytes();
                    has_home |= var == owt_home.as_bytes();
                }
                has_session && has_home
            })
        })
        .filter(|pid| pid_alive(*pid))
        .collect()
}

/// Ends what the session left running once its agent and host are gone
/// (e.g. a background server the agent detached with `setsid`): hang-up
/// and terminate, then kill after [`STOP_GRACE`]. Nothing else is touched.
pub fn stop_leftovers(home: &Path, short_id: &str) {
    let left = session_processes(home, short_id);
    if left.is_empty() {
        return;
    }
    tracing::info!(?left, "stopping what the session left running");
    for pid in &left {
        kill(*pid, Signal::HUP);
        kill(*pid, Signal::TERM);
    }
    let deadline = Instant::now() + STOP_GRACE;
    while left.iter().any(|p| pid_alive(*p)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    for pid in session_processes(home, short_id) {
        kill(pid, Signal::KILL);
    }
}

fn stop_agent_and_host(home: &Path, session: &SessionRow) -> Result<(), SessionError> {
    let store = Store::open(home)?;
    let host = store
        .fact::<HostFact>(session.id, kind::HOST)?
        .map(|(h, _)| h);
    let socket = socket_path(home, &session.short_id);
    if let Ok(mut conn) = HostConn::connect(&socket, Role::Control, 0, 0) {
        conn.terminate(STOP_GRACE)?;
        let host_pid = conn.welcome.host_pid;
        drop(conn);
        let deadline = Instant::now() + STOP_GRACE + Duration::from_secs(5);
        while pid_alive(host_pid) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        if pid_alive(host_pid) {
            return Err(SessionError::Host(format!(
                "the session host (pid {host_pid}) of {} did not exit after its agent was stopped",
                session.name
            )));
        }
        return Ok(());
    }
    // The socket is dead: kill what is left, if it is still ours.
    let Some(host) = host else { return Ok(()) };
    if let Some(agent) = host
        .agent_pid
        .filter(|p| pid_alive(*p) && is_agent_of(*p, &session.short_id))
    {
        kill_group(agent, Signal::HUP);
        let deadline = Instant::now() + STOP_GRACE;
        while pid_alive(agent) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        if pid_alive(agent) {
            kill_group(agent, Signal::KILL);
        }
    }
    if pid_alive(host.host_pid) && is_host_of(host.host_pid, &session.short_id) {
        kill(host.host_pid, Signal::KILL);
    }
    Ok(())
}

/// Sends `signal` to process `pid` (best effort: it may be gone).
pub(super) fn kill(pid: u32, signal: Signal) {
    signal_process(pid, signal);
}

/// Sends `signal` to the process group led by `pid` (best effort).
fn kill_group(pid: u32, signal: Signal) {
    signal_group(pid, signal);
}

/// Whether `pid`'s environment names this session (`OWT_SESSION`).
fn is_agent_of(pid: u32, short_id: &str) -> bool {
    crate::platform::procs::environment(pid)
        .map(|env| {
            env.split(|b| *b == 0)
                .any(|kv| kv == format!("OWT_SESSION={short_id}").as_bytes())
        })
        .unwrap_or(false)
}

/// Whether `pid` is an owt host for this session (its spec file is named
/// after the short id).
pub(super) fn is_host_of(pid: u32, short_id: &str) -> bool {
    crate::platform::procs::command_line(pid)
        .map(|cmd| {
            let args: Vec<&[u8]> = cmd.split(|b| *b == 0).collect();
            args.contains(&&b"__host"[..])
                && args
                    .iter()
                    .any(|a| String::from_utf8_lossy(a).ends_with(&format!("{short_id}.spec.json")))
        })
        .unwrap_or(false)
}
