//! The unix socket: each client's reader and writer, the frames it sends
//! (decoded by pure functions before the host acts on them) and the
//! replies.

use super::*;

/// Accepts the socket's connections, each served by `serve` on its own
/// thread, for as long as the host runs. Shared with the ACP host.
/// `threads` gets each connection's thread, for someone to [`reap`] once
/// it ended (finished threads are reaped here too, at each connection).
pub(crate) fn accept_clients(
    listener: &UnixListener,
    threads: &Mutex<Vec<std::thread::JoinHandle<()>>>,
    serve: impl Fn(UnixStream) + Send + Sync + Clone + 'static,
) {
    for conn in listener.incoming() {
        match conn {
            Ok(stream) => {
                reap(threads);
                let serve = serve.clone();
                if let Some(thread) = spawn_guarded("client", move || serve(stream)) {
                    lock(threads).push(thread);
                }
            }
            Err(e) => {
                tracing::warn!("accepting a client: {e}");
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
}

/// Joins the threads of `threads` that ended: an ended thread's stack
/// stays mapped (its top pages resident) until it is joined.
pub(crate) fn reap(threads: &Mutex<Vec<std::thread::JoinHandle<()>>>) {
    let mut threads = lock(threads);
    let mut i = 0;
    while i < threads.len() {
        if threads[i].is_finished() {
            let _ = threads.swap_remove(i).join();
        } else {
            i += 1;
        }
    }
}

pub(super) fn serve_client(shared: &Arc<Shared>, mut stream: UnixStream) {
    let Some((hello, passed)) = accept_hello(&mut stream) else {
        return;
    };
    if hello.role == Role::Events {
        let _ = proto::write_json(
            &mut stream,
            FrameKind::Error,
            &HostError {
                message: format!(
                    "{} runs in a terminal, not through ACP: attach to it (owt attach {})",
                    shared.spec.session_name, shared.spec.session_name
                ),
            },
        );
        return;
    }
    let write_half = match stream.try_clone() {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!("cloning a client socket: {e}");
            return;
        }
    };
    // A direct attach: the host takes the terminal the hello passed.
    let term = match (hello.role, hello.direct, passed) {
        (Role::Attach, Some(_), Some(fd)) => Term::open(fd),
        _ => None,
    };
    let notices = term.is_some() && hello.direct.is_some_and(|d| d.notices);
    let client = Client::new(
        shared.next_client.fetch_add(1, Ordering::Relaxed),
        write_half,
        term.clone(),
        notices,
    );
    client.push(welcome(shared, term.is_some(), notices));
    let writer = {
        let client = client.clone();
        spawn_guarded("client-writer", move || write_client(&client))
    };
    if hello.role == Role::Attach {
        attach_client(shared, &client, hello.rows, hello.cols);
    }
    if let (Some(term), Some(direct)) = (&term, hello.direct) {
        // The PTY reader reads its keys: one thread for keys and echo.
        lock(&shared.new_directs).push(Direct::new(
            client.clone(),
            term.clone(),
            direct.detach_prefix,
        ));
        let _ = (&shared.directs_wake_tx).write_all(b"d");
    }
    serve_requests(shared, &client, &stream);
    // Not one more byte to a terminal whose client is gone (or killed).
    if let Some(term) = &term {
        term.shut();
    }
    {
        let mut clients = lock(&shared.clients);
        let before = clients.len();
        clients.retain(|c| c.id != client.id);
        shared
            .n_attached
            .fetch_sub(before - clients.len(), Ordering::SeqCst);
    }
    client.close();
    if let Some(writer) = writer {
        let _ = writer.join();
    }
}

/// The `Welcome` frame: `direct`, the host took the terminal; `notices`,
/// it takes `Notice` frames for it.
fn welcome(shared: &Shared, direct: bool, notices: bool) -> Vec<u8> {
    proto::encode_json(
        FrameKind::Welcome,
        &Welcome {
            version: HOST_PROTOCOL_VERSION,
            host_pid: shared.host_pid,
            agent_pid: shared.agent_pid,
            session_name: shared.spec.session_name.clone(),
            short_id: shared.spec.short_id.clone(),
            direct,
            notices,
        },
    )
}

/// Answers a client's frames until it hangs up, detaches or errs.
fn serve_requests(shared: &Arc<Shared>, client: &Arc<Client>, stream: &UnixStream) {
    // Buffered: a frame costs one read, not two (header, then payload).
    let mut incoming = std::io::BufReader::with_capacity(16 * 1024, stream);
    loop {
        let frame = match proto::read_frame(&mut incoming) {
            Ok(Some(frame)) => frame,
            Ok(None) => return,
            Err(e) => {
                tracing::debug!("client read: {e}");
                return;
            }
        };
        match handle_request(shared, &frame) {
            Reply::None => {}
            Reply::Frame(bytes) => client.push(bytes),
            Reply::Notice(notice) => {
                client.notice(&notice.title, crate::session::notice::encode(&notice));
            }
            Reply::Close => {
                // A direct client hears that the terminal is its own again.
                client.end_direct();
                return;
            }
        }
    }
}

/// An `Attach` client joins: the PTY takes its size (when it gave one),
/// it gets the screen as it is where it joined the stream (a redraw the
/// parser makes once it has parsed the chunks fanned out before; see
/// [`Redraws`]) and the exit if the agent is gone.
fn attach_client(shared: &Arc<Shared>, client: &Arc<Client>, rows: u16, cols: u16) {
    if rows > 0 && cols > 0 {
        resize(shared, rows, cols);
    }
    let mut clients = lock(&shared.clients);
    client.await_redraw();
    clients.push(client.clone());
    shared.n_attached.fetch_add(1, Ordering::SeqCst);
    wait_for_redraw(shared, client, shared.fanned.load(Ordering::SeqCst));
    drop(clients);
    wake_parser(shared);
    if let Some(exit) = &shared.state.lock().exit {
        client.push(proto::encode_json(FrameKind::Exited, exit));
    }
}

pub(super) enum Reply {
    None,
    Frame(Vec<u8>),
    /// For the client's own terminal (a direct attach that takes notices).
    Notice(proto::TerminalNotice),
    Close,
}

pub(super) fn error_reply(message: String) -> Reply {
    Reply::Frame(proto::encode_json(FrameKind::Error, &HostError { message }))
}

/// A new client's first steps, shared by both kinds of host: refuses
/// another user, then reads its hello (10 s at most) and the descriptor
/// passed with it, if any (a direct attach's terminal). `None`: the client
/// was answered with an error, or went away.
pub(crate) fn accept_hello(
    stream: &mut UnixStream,
) -> Option<(proto::Hello, Option<std::os::fd::OwnedFd>)> {
    if !crate::platform::socket::peer_is_this_user(stream) {
        tracing::warn!("refused a client of another user");
        let _ = proto::write_json(
            stream,
            FrameKind::Error,
            &HostError {
                message: "this session host belongs to another user".into(),
            },
        );
        return None;
    }
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let mut with_fds = WithFds {
        stream,
        fds: Vec::new(),
    };
    let read = proto::read_frame(&mut with_fds);
    // One descriptor at most is meant; any others close here.
    let passed = with_fds.fds.into_iter().next();
    let hello = match read {
        Ok(Some(frame)) => match decode_hello(&frame) {
            Ok(hello) => hello,
            Err(message) => {
                let _ = proto::write_json(stream, FrameKind::Error, &HostError { message });
                return None;
            }
        },
        Ok(None) | Err(_) => return None,
    };
    let _ = stream.set_read_timeout(None);
    Some((hello, passed))
}

/// Reads a socket keeping the descriptors passed along (`SCM_RIGHTS`);
/// exactly as much as asked, so nothing after the hello is read early.
struct WithFds<'a> {
    stream: &'a UnixStream,
    fds: Vec<std::os::fd::OwnedFd>,
}

impl Read for WithFds<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        crate::platform::socket::recv_with_fds(self.stream, buf, &mut self.fds)
    }
}

/// The first frame of a connection, checked (pure: no I/O), its size
/// clamped like a resize. `Err` is the message of the `Error` frame the
/// host answers before hanging up.
pub fn decode_hello(frame: &proto::Frame) -> Result<proto::Hello, String> {
    if frame.kind != FrameKind::Hello {
        return Err(format!(
            "expected a hello frame first, got {:?}",
            frame.kind
        ));
    }
    // Check the version before the rest of the hello: another version may
    // shape it differently.
    let version = serde_json::from_slice::<serde_json::Value>(&frame.payload)
        .ok()
        .and_then(|v| v.get("version").and_then(|v| v.as_u64()));
    if version != Some(u64::from(HOST_PROTOCOL_VERSION)) {
        let theirs = version.map_or("an unknown version".to_string(), |v| format!("version {v}"));
        return Err(format!(
            "protocol mismatch: this session host speaks owt host protocol version {HOST_PROTOCOL_VERSION}, \
             the client speaks {theirs}; use the owt that started the session (or restart the session)"
        ));
    }
    let hello: proto::Hello = frame.json().map_err(|e| format!("bad hello: {e}"))?;
    Ok(proto::Hello {
        rows: hello.rows.min(MAX_ROWS),
        cols: hello.cols.min(MAX_COLS),
        ..hello
    })
}

/// What a client asked for, decoded from one frame after the hello (pure:
/// no I/O; [`handle_request`] carries it out). Sizes are clamped to
/// [`MAX_ROWS`] × [`MAX_COLS`].
#[derive(Debug, PartialEq)]
pub enum Request<'a> {
    /// Keys for the PTY.
    Input(&'a [u8]),
    Resize {
        rows: u16,
        cols: u16,
    },
    Send(SendText),
    Peek(PeekRequest),
    Status,
    /// Hang up the agent; kill it after the grace time.
    Terminate(Duration),
    Detach,
    Journal,
    /// A notification for the client's terminal (direct attach).
    Notice(proto::TerminalNotice),
    /// Answered with an `Error` frame carrying this message.
    Invalid(String),
}

pub fn decode_request(frame: &proto::Frame) -> Request<'_> {
    match frame.kind {
        FrameKind::Input => Request::Input(&frame.payload),
        FrameKind::Resize => match frame.json::<Resize>() {
            Ok(r) if r.rows > 0 && r.cols > 0 => Request::Resize {
                rows: r.rows.min(MAX_ROWS),
                cols: r.cols.min(MAX_COLS),
            },
            Ok(r) => Request::Invalid(format!("bad size {}x{}", r.cols, r.rows)),
            Err(e) => Request::Invalid(e.to_string()),
        },
        FrameKind::Send => match frame.json::<SendText>() {
            Ok(send) => Request::Send(send),
            Err(e) => Request::Invalid(e.to_string()),
        },
        FrameKind::Peek => Request::Peek(frame.json::<PeekRequest>().unwrap_or_default()),
        FrameKind::StatusRequest => Request::Status,
        FrameKind::Terminate => {
            let grace = frame.json::<Terminate>().map_or(3_000, |t| t.grace_ms);
            Request::Terminate(Duration::from_millis(grace))
        }
        FrameKind::Detach => Request::Detach,
        FrameKind::JournalRequest => Request::Journal,
        FrameKind::Notice => match frame.json::<proto::TerminalNotice>() {
            Ok(notice) => Request::Notice(notice),
            Err(e) => Request::Invalid(e.to_string()),
        },
        other => Request::Invalid(format!("unexpected {other:?} frame from a client")),
    }
}

pub(super) fn handle_request(shared: &Arc<Shared>, frame: &proto::Frame) -> Reply {
    match decode_request(frame) {
        Request::Input(bytes) => {
            // Keys go straight to the PTY: the shortest echo path.
            shared.state.lock().last_input_at = Some(now_ms());
            if let Err(e) = write_pty(shared, bytes) {
                tracing::debug!("pty write failed: {e}");
            }
            Reply::None
        }
        Request::Resize { rows, cols } => {
            resize(shared, rows, cols);
            Reply::None
        }
        Request::Send(send) => {
            type_text(shared, &send.text, send.enter);
            let (ack_tx, ack_rx) = mpsc::channel();
            let asked = lock(&shared.to_monitor)
                .as_ref()
                .is_some_and(|m| m.send(ToMonitor::Flush(ack_tx)).is_ok());
            if asked {
                let _ = ack_rx.recv_timeout(Duration::from_secs(2));
            }
            Reply::Frame(proto::encode(FrameKind::Ok, b""))
        }
        Request::Peek(req) => Reply::Frame(peek_reply(shared.state.lock().parser.live(), req)),
        Request::Status => Reply::Frame(proto::encode_json(FrameKind::Status, &status(shared))),
        Request::Terminate(grace) => {
            terminate(shared, grace);
            Reply::Frame(proto::encode(FrameKind::Ok, b""))
        }
        Request::Detach => Reply::Close,
        Request::Journal => {
            let view = shared
                .journal
                .as_ref()
                .map_or_else(JournalView::not_ready, |journal| journal.view());
            Reply::Frame(proto::encode_json(FrameKind::Journal, &view))
        }
        Request::Notice(notice) => Reply::Notice(notice),
        Request::Invalid(message) => error_reply(message),
    }
}

pub(super) fn status(shared: &Shared) -> HostStatus {
    let state = shared.state.lock();
    let (rows, cols) = state.parser.size();
    HostStatus {
        host_pid: shared.host_pid,
        agent_pid: shared.agent_pid,
        exit: state.exit.clone(),
        attached_clients: shared.n_attached.load(Ordering::SeqCst) as u32,
        rows,
        cols,
        started_at: shared.started_at,
        last_output_at: state.last_output_at,
        last_input_at: state.last_input_at,
        screen_signal: state.screen_signal.map(|s| {
            serde_json::to_value(s)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default()
        }),
    }
}

pub(super) fn resize(shared: &Shared, rows: u16, cols: u16) {
    // The screen model first, so output drawn for the new size lands right.
    shared
        .state
        .lock()
        .parser
        .live()
        .screen_mut()
        .set_size(rows, cols);
    let size = PtySize {
        rows,
        cols,
        pixel_width: 0,
        pixel_height: 0,
    };
    if let Err(e) = lock(&shared.master).resize(size) {
        tracing::warn!("resizing the pseudo-terminal: {e}");
    }
}

/// Hangs up the agent's process group; kills it after `grace`.
pub(super) fn terminate(shared: &Arc<Shared>, grace: Duration) {
    let Some(pid) = shared.agent_pid else { return };
    use crate::platform::process::{signal_group, signal_process, Signal};
    tracing::info!("hanging up the agent");
    signal_group(pid, Signal::HUP);
    signal_process(pid, Signal::HUP);
    let shared = shared.clone();
    spawn_guarded("terminate", move || {
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if shared.state.lock().exit.is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        tracing::info!("the agent ignored the hang-up; killing it");
        signal_group(pid, Signal::KILL);
        signal_process(pid, Signal::KILL);
    });
}

pub(super) fn write_client(client: &Client) {
    let mut stream = &client.stream;
    let mut batch: Vec<Arc<[u8]>> = Vec::new();
    let mut head = Vec::new();
    loop {
        {
            let mut q = lock(&client.queue);
            // What a direct write left unfinished goes first, even past an
            // awaited redraw (it is the end of a frame already begun).
            let idle = |q: &ClientQueue| {
                q.writing || (q.head.is_empty() && (q.frames.is_empty() || q.awaiting_redraw))
            };
            while idle(&q) && !q.closed {
                q = client.ready.wait(q).unwrap_or_else(|e| e.into_inner());
            }
            if q.closed && idle(&q) {
                return;
            }
            std::mem::swap(&mut head, &mut q.head);
            if !q.awaiting_redraw {
                batch.extend(q.frames.drain(..));
            }
            q.bytes = q.frames.iter().map(|f| f.len()).sum();
            q.writing = true;
        }
        let mut result = match &client.term {
            Some(term) => {
                to_terminal(client, term, &[&head]);
                Ok(())
            }
            None => stream.write_all(&head),
        };
        head.clear();
        for frame in batch.drain(..) {
            if result.is_err() {
                break;
            }
            result = match &client.term {
                Some(term) => write_direct(client, term, &frame),
                None => stream.write_all(&frame),
            };
        }
        let mut q = lock(&client.queue);
        q.writing = false;
        if let Err(e) = result {
            tracing::debug!("client write: {e}");
            q.closed = true;
            drop(q);
            let _ = stream.shutdown(std::net::Shutdown::Both);
            return;
        }
    }
}

/// Writes a frame for a direct client: its bytes to the terminal (output
/// and redraws), or the frame to the socket (the rest).
fn write_direct(client: &Client, term: &Term, frame: &[u8]) -> std::io::Result<()> {
    let payload = &frame[proto::HEADER_LEN..];
    match FrameKind::from_u8(frame[0]) {
        Some(FrameKind::Output) => to_terminal(client, term, &[payload]),
        // A redraw repaints from scratch: reset what the terminal may hold
        // from the dropped bytes.
        Some(FrameKind::Redraw) => to_terminal(client, term, &[b"\x1b[0m\x1b[H\x1b[2J", payload]),
        Some(FrameKind::Exited) => {
            // The client restores its terminal on this: nothing may follow.
            term.shut();
            return (&client.stream).write_all(frame);
        }
        _ => return (&client.stream).write_all(frame),
    }
    Ok(())
}

/// Writes `parts` to a direct client's terminal; a terminal that fails
/// ends the direct attach (the client hears `Detached`).
fn to_terminal(client: &Client, term: &Term, parts: &[&[u8]]) {
    for part in parts {
        if let Err(e) = term.write_all(part) {
            if term.is_open() {
                tracing::debug!("terminal write: {e}");
            }
            client.end_direct();
            return;
        }
    }
}

/// Writes what the socket takes right now (never blocks); how much.
pub(super) fn send_now(stream: &UnixStream, bytes: &[u8]) -> std::io::Result<usize> {
    crate::platform::socket::send_nonblocking(stream, bytes)
}
