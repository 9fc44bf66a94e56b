//! Starting the agent: its PTY, its process (in its own session and
//! process group) and the host's threads around it.

use super::*;

pub(super) fn start(spec: &HostSpec) -> Result<Started, SessionError> {
    let listener = listen(spec)?;
    let rows = if spec.rows == 0 { 40 } else { spec.rows };
    let cols = if spec.cols == 0 { 120 } else { spec.cols };
    let pty = portable_pty::native_pty_system()
        .openpty(PtySize {
            rows,
            cols,
            pixel_width: 0,
            pixel_height: 0,
        })
        .map_err(|e| host_err("opening a pseudo-terminal", e))?;
    let child = spawn_agent(spec, pty.slave)?;
    let agent_pid = child.process_id();
    let master_fd = pty
        .master
        .as_raw_fd()
        .ok_or_else(|| SessionError::Host("the pseudo-terminal has no descriptor".into()))?;
    set_nonblocking(master_fd)
        .map_err(|e| host_err("making the pseudo-terminal non-blocking", e))?;
    let (directs_wake, directs_wake_tx) =
        UnixStream::pair().map_err(|e| host_err("making the reader's wake pair", e))?;
    let reader = pty
        .master
        .try_clone_reader()
        .map_err(|e| host_err("reading the pseudo-terminal", e))?;
    let writer = pty
        .master
        .take_writer()
        .map_err(|e| host_err("writing the pseudo-terminal", e))?;
    let host_pid = std::process::id();
    let store = open_store(spec, host_pid, agent_pid);
    let journal = start_journal(&spec.cwd);
    let (to_agent, to_agent_rx) = mpsc::channel();
    let (to_parser, parser_rx) = mpsc::sync_channel(PARSER_BACKLOG);
    let shared = Arc::new(Shared {
        spec: spec.clone(),
        host_pid,
        agent_pid,
        started_at: now_ms(),
        state: parking_lot::Mutex::new(first_state(spec, rows, cols)),
        master: Mutex::new(pty.master),
        clients: Mutex::new(Vec::new()),
        n_attached: AtomicUsize::new(0),
        to_parser,
        fanned: AtomicU64::new(0),
        redraws: Mutex::default(),
        redraws_waiting: AtomicUsize::new(0),
        parser_pending: AtomicUsize::new(0),
        pty_writer: Mutex::new(writer),
        master_fd,
        keys_queued: AtomicUsize::new(0),
        to_agent,
        typing: Mutex::new(()),
        next_client: AtomicU64::new(1),
        exiting: AtomicBool::new(false),
        client_threads: Arc::default(),
        to_monitor: Mutex::new(None),
        journal,
        new_directs: Mutex::new(Vec::new()),
        directs_wake,
        directs_wake_tx,
    });
    tracing::info!(session = %spec.session_name, agent_pid = ?agent_pid, "host started");
    Ok(Started {
        shared,
        listener,
        agent_pid,
        child,
        reader,
        parser_rx,
        to_agent_rx,
        store,
    })
}

/// The work journal of the agent's checkout; none outside a repository or
/// when inotify refuses (the host runs without it).
fn start_journal(cwd: &Path) -> Option<crate::guard::journal::Journal> {
    crate::guard::journal::Journal::start(cwd)
        .map_err(|e| tracing::info!("no work journal for {}: {e}", cwd.display()))
        .ok()
}

/// Binds the session's socket (`$OWT_HOME/run/<short id>.sock`, 0600, in
/// a private folder); refused while another host serves it, a stale one
/// replaced. Shared with the ACP host.
pub(crate) fn listen(spec: &HostSpec) -> Result<UnixListener, SessionError> {
    let socket = crate::session::socket_path(&spec.home, &spec.short_id);
    let run_dir = socket.parent().unwrap_or(&spec.home).to_path_buf();
    ensure_private_dir(&run_dir)?;
    if socket.exists() {
        if UnixStream::connect(&socket).is_ok() {
            return Err(SessionError::Host(format!(
                "another host already serves {}",
                socket.display()
            )));
        }
        let _ = std::fs::remove_file(&socket);
    }
    let listener = UnixListener::bind(&socket)
        .map_err(|e| host_err(&format!("binding {}", socket.display()), e))?;
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| host_err("restricting the socket to its owner", e))?;
    Ok(listener)
}

/// Starts the agent on the PTY's `slave` (dropped after: it belongs to the
/// child then), with the session's environment.
fn spawn_agent(
    spec: &HostSpec,
    slave: Box<dyn portable_pty::SlavePty + Send>,
) -> Result<Box<dyn portable_pty::Child + Send + Sync>, SessionError> {
    if spec.argv.is_empty() {
        return Err(SessionError::Host("the agent's argv is empty".into()));
    }
    let mut cmd = CommandBuilder::from_argv(spec.argv.iter().map(Into::into).collect());
    cmd.cwd(&spec.cwd);
    // Not nested inside the agent owt may have been started from.
    for marker in crate::provider::nesting::markers_to_remove(spec.env.keys().map(String::as_str)) {
        cmd.env_remove(marker);
    }
    // Interactive in owt's terminal, whatever CI the user runs owt in.
    if !spec.headless {
        for marker in crate::provider::nesting::headless_markers(&spec.provider) {
            if !spec.env.contains_key(*marker) {
                cmd.env_remove(marker);
            }
        }
    }
    for (k, v) in &spec.env {
        cmd.env(k, v);
    }
    cmd.env("OWT_SESSION", &spec.short_id);
    cmd.env("OWT_HOME", &spec.home);
    cmd.env("TERM", "xterm-256color");
    let child = slave.spawn_command(cmd).map_err(|e| {
        host_err(
            &format!("starting `{}` in {}", spec.argv[0], spec.cwd.display()),
            e,
        )
    })?;
    // portable-pty's recipe: the slave belongs to the child now.
    drop(slave);
    Ok(child)
}

/// Opens the store and records the `host` fact; `None`, logged, when the
/// store cannot be opened: the host runs on without recording facts.
fn open_store(spec: &HostSpec, host_pid: u32, agent_pid: Option<u32>) -> Option<Store> {
    let store = open_store_logged(&spec.home)?;
    let socket = crate::session::socket_path(&spec.home, &spec.short_id);
    let fact = HostFact {
        host_pid,
        agent_pid,
        socket: socket.to_string_lossy().into_owned(),
        headless: spec.headless,
        transport: Default::default(),
    };
    if let Err(e) = store.record_fact(spec.session_id, kind::HOST, &fact) {
        tracing::warn!("recording the host fact: {e}");
    }
    Some(store)
}

/// The store a host records its facts in; `None`, logged, when it cannot
/// be opened: the host runs on without recording facts. Shared with the
/// ACP host.
pub(crate) fn open_store_logged(home: &Path) -> Option<Store> {
    match Store::open(home) {
        Ok(store) => Some(store),
        Err(e) => {
            tracing::warn!("opening the store: {e}; facts will not be recorded");
            None
        }
    }
}

/// The screen model and what is known before the agent wrote anything.
fn first_state(spec: &HostSpec, rows: u16, cols: u16) -> State {
    State {
        parser: ScreenModel::new(rows, cols, spec.scrollback),
        scanner: QueryScanner::new(),
        output_seq: 0,
        last_output: None,
        last_output_at: None,
        last_input_at: None,
        screen_signal: None,
        native: None,
        native_seq: 0,
        exit: None,
    }
}

/// Sets `O_NONBLOCK` on `fd`'s open file description.
fn set_nonblocking(fd: std::os::fd::RawFd) -> std::io::Result<()> {
    // `fd` is the PTY master, open for the host's whole life.
    crate::platform::fd::set_nonblocking_raw(fd)
}

/// Runs `body` on a named thread; a panic is logged instead of unwinding
/// into nothing.
pub(crate) fn spawn_guarded(
    name: &str,
    body: impl FnOnce() + Send + 'static,
) -> Option<std::thread::JoinHandle<()>> {
    let thread_name = name.to_string();
    std::thread::Builder::new()
        .name(name.to_string())
        .spawn(move || {
            if let Err(panic) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)) {
                let msg = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                tracing::error!("thread {thread_name} panicked: {msg}");
            }
        })
        .map_err(|e| tracing::error!("spawning thread {name}: {e}"))
        .ok()
}
