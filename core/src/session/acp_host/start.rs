//! Starting the host: its socket (bound as a terminal session's host
//! binds it), the agent's process on pipes, the facts that say the host
//! runs, and the host's first state.

use std::collections::{HashSet, VecDeque};
use std::fs::File;
use std::os::unix::net::UnixListener;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Condvar, Mutex};

use owt_protocol::host::Transport;
use owt_protocol::AcpView;

use crate::acp::conn::Conn;
use crate::acp::terminal::Terminals;
use crate::acp::transcript::Transcript;
use crate::session::host::{listen, open_store_logged};
use crate::session::{HostSpec, SessionError};
use crate::status::{kind, AcpFact, AcpState, HostFact};
use crate::store::{now_ms, Store};

use super::{host_err, Host, State};

/// The environment the agent (and its terminals) get on top of the host's.
fn agent_env(spec: &HostSpec) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = spec
        .env
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    env.push(("OWT_SESSION".into(), spec.short_id.clone()));
    env.push(("OWT_HOME".into(), spec.home.display().to_string()));
    env
}

type Started = (
    Arc<Host>,
    UnixListener,
    std::process::Child,
    std::process::ChildStdout,
);

pub(super) fn start(spec: &HostSpec) -> Result<Started, SessionError> {
    let listener = listen(spec)?;
    if spec.argv.is_empty() {
        return Err(SessionError::Host(
            "the agent's ACP command is empty".into(),
        ));
    }
    let env = agent_env(spec);
    let mut child = spawn_agent(spec, &env)?;
    let agent_pid = child.id();
    let stdin = child.stdin.take().expect("piped stdin");
    let stdout = child.stdout.take().expect("piped stdout");
    let host_pid = std::process::id();
    let store = open_store(spec, host_pid, agent_pid);
    let root = spec.cwd.canonicalize().unwrap_or_else(|_| spec.cwd.clone());
    let journal = match crate::guard::journal::Journal::start(&spec.cwd) {
        Ok(journal) => Some(journal),
        Err(e) => {
            tracing::info!("no work journal for {}: {e}", spec.cwd.display());
            None
        }
    };
    let host = Arc::new(Host {
        spec: spec.clone(),
        terminals: Terminals::new(&root, env),
        root,
        host_pid,
        agent_pid,
        started_at: now_ms(),
        conn: Arc::new(Conn::new(Box::new(stdin))),
        state: Mutex::new(first_state(spec)),
        prompt_ready: Condvar::new(),
        clients: Mutex::new(Vec::new()),
        store: Mutex::new(store),
        exiting: AtomicBool::new(false),
        malformed: AtomicU64::new(0),
        journal,
    });
    tracing::info!(session = %spec.session_name, agent_pid, "ACP host started");
    Ok((host, listener, child, stdout))
}

/// Starts the agent's ACP server on pipes, in the worktree, in its own
/// process group, its stderr appended to the session's log.
fn spawn_agent(
    spec: &HostSpec,
    env: &[(String, String)],
) -> Result<std::process::Child, SessionError> {
    let log = crate::session::log_path(&spec.home, &spec.short_id);
    let stderr = File::options()
        .create(true)
        .append(true)
        .open(&log)
        .map_err(|e| host_err(&format!("opening {}", log.display()), e))?;
    let mut cmd = Command::new(&spec.argv[0]);
    cmd.args(&spec.argv[1..])
        .current_dir(&spec.cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(stderr))
        // Its own process group: stopping the agent stops what it started.
        .process_group(0);
    // Not nested inside the agent owt may have been started from.
    for marker in crate::provider::nesting::markers_to_remove(env.iter().map(|(k, _)| k.as_str())) {
        cmd.env_remove(marker);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.spawn().map_err(|e| {
        host_err(
            &format!("starting `{}` in {}", spec.argv[0], spec.cwd.display()),
            e,
        )
    })
}

/// Opens the store and records that the host runs (`host`, `acp`
/// starting, no pending permission); `None`, logged, when the store
/// cannot be opened: the host runs on without recording facts.
fn open_store(spec: &HostSpec, host_pid: u32, agent_pid: u32) -> Option<Store> {
    let store = open_store_logged(&spec.home)?;
    let socket = crate::session::socket_path(&spec.home, &spec.short_id);
    let fact = HostFact {
        host_pid,
        agent_pid: Some(agent_pid),
        socket: socket.to_string_lossy().into_owned(),
        headless: false,
        transport: Transport::Acp,
    };
    let starting = AcpFact {
        state: AcpState::Starting,
        stop_reason: None,
        error: None,
    };
    for result in [
        store.record_fact(spec.session_id, kind::HOST, &fact),
        store.record_fact(spec.session_id, kind::ACP, &starting),
        store.clear_fact(spec.session_id, kind::ACP_PERMISSION),
    ] {
        if let Err(e) = result {
            tracing::warn!("recording the host facts: {e}");
        }
    }
    Some(store)
}

/// The conversation before the agent answered: starting, with the typed
/// prompt (if any) queued.
fn first_state(spec: &HostSpec) -> State {
    let mut prompts = VecDeque::new();
    if let Some(p) = spec.typed_prompt.clone().filter(|p| !p.is_empty()) {
        prompts.push_back(p);
    }
    State {
        transcript: Transcript::new(),
        acp_session: spec.acp_load.clone(),
        prompts,
        turn_running: false,
        pending: VecDeque::new(),
        next_permission: 1,
        usage: AcpView::default(),
        acp: AcpFact {
            state: AcpState::Starting,
            stop_reason: None,
            error: None,
        },
        echo_expected: false,
        last_output_at: None,
        last_input_at: None,
        recorded_output_at: None,
        unknown_kinds: HashSet::new(),
        exit: None,
    }
}
