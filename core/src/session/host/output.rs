//! The agent's output and input: the PTY reader (fans out to clients,
//! hands chunks to the parser), the parser thread, the PTY writer and
//! typing text into the agent.

use super::*;

/// Reads the agent's output and fans it out to attached clients at once;
/// the parser thread follows behind (bounded), so the screen model costs
/// throughput only when it is the bottleneck.
pub(super) fn read_agent(
    shared: &Arc<Shared>,
    mut reader: Box<dyn Read + Send>,
    master_fd: Option<std::os::fd::RawFd>,
) {
    let mut buf = vec![0u8; 64 * 1024];
    let mut lagging = Vec::new();
    let mut found = Vec::new();
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                tracing::debug!("pty read ended: {e}");
                break;
            }
        };
        // A PTY hands out about 4 KiB per read: take what is already there
        // too, so a burst costs one frame, not sixteen.
        let mut n = n;
        while let Some(fd) = master_fd {
            if buf.len() - n < 4096 || !readable_now(fd) {
                break;
            }
            match reader.read(&mut buf[n..]) {
                Ok(0) | Err(_) => break,
                Ok(more) => n += more,
            }
        }
        let frame: Arc<[u8]> = proto::encode(FrameKind::Output, &buf[..n]).into();
        // Fan-out and the parser's queue in one order: a redraw request sits
        // exactly where the client's stream was cut.
        let clients = lock(&shared.clients);
        for client in clients.iter() {
            if client.push_output(&frame) {
                lagging.push(client.clone());
            }
        }
        // A small chunk with nothing queued ahead of it (a key's echo, a
        // status line) is parsed right here: no parser thread woken for it.
        // Under the clients lock no redraw request can slip in between.
        let sent = if n <= INLINE_PARSE_MAX
            && lagging.is_empty()
            && shared.parser_pending.load(Ordering::SeqCst) == 0
        {
            parse_chunk(shared, &frame[proto::HEADER_LEN..], &mut found);
            true
        } else {
            send_to_parser(shared, ToParser::Chunk(frame))
                && lagging
                    .drain(..)
                    .all(|c| send_to_parser(shared, ToParser::Redraw(c)))
        };
        drop(clients);
        if !sent {
            break;
        }
    }
    let _ = send_to_parser(shared, ToParser::End);
}

/// Whether `fd` has input ready right now.
pub(super) fn readable_now(fd: std::os::fd::RawFd) -> bool {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd, no timeout.
    unsafe { libc::poll(&mut pfd, 1, 0) == 1 && pfd.revents & libc::POLLIN != 0 }
}

/// Feeds output into the screen model, answers terminal queries when
/// nobody is attached, and makes redraws at their place in the stream.
pub(super) fn parse_output(shared: &Arc<Shared>, rx: mpsc::Receiver<ToParser>) {
    let mut found = Vec::new();
    for msg in rx {
        match msg {
            ToParser::Chunk(frame) => parse_chunk(shared, &frame[proto::HEADER_LEN..], &mut found),
            ToParser::Redraw(client) => {
                let bytes = proto::encode(
                    FrameKind::Redraw,
                    &redraw(lock(&shared.state).parser.live().screen()),
                );
                client.deliver_redraw(bytes);
            }
            ToParser::End => break,
        }
        shared.parser_pending.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Queues `msg` for the parser; false once the parser is gone.
pub(super) fn send_to_parser(shared: &Shared, msg: ToParser) -> bool {
    shared.parser_pending.fetch_add(1, Ordering::SeqCst);
    let sent = shared.to_parser.send(msg).is_ok();
    if !sent {
        shared.parser_pending.fetch_sub(1, Ordering::SeqCst);
    }
    sent
}

/// Feeds one chunk of output to the screen model and answers the terminal
/// queries in it when nobody attached will.
pub(super) fn parse_chunk(shared: &Shared, chunk: &[u8], found: &mut Vec<(usize, queries::Query)>) {
    let mut replies = Vec::new();
    let mut state = lock(&shared.state);
    found.clear();
    state.scanner.scan(chunk, found);
    for message in state.scanner.take_notifications() {
        if let Some(signal) = rules::notification_signal(&shared.spec.provider, &message) {
            tracing::info!(?signal, "the agent sent a notification");
            state.native = Some((signal, now_ms()));
            state.native_seq += 1;
        }
    }
    let parser = state.parser.live();
    if found.is_empty() || shared.n_attached.load(Ordering::SeqCst) > 0 {
        parser.process(chunk);
    } else {
        // Answer each query from the screen as it was when asked.
        let mut at = 0;
        for &(end, query) in found.iter() {
            parser.process(&chunk[at..end]);
            at = end;
            replies.extend(queries::answer(query, parser.screen()));
        }
        parser.process(&chunk[at..]);
    }
    state.output_seq += 1;
    state.last_output = Some(Instant::now());
    state.last_output_at = Some(now_ms());
    drop(state);
    if !replies.is_empty() {
        let _ = shared.to_agent.send(ToAgent::Bytes(replies));
    }
}

pub(super) fn write_agent(shared: &Shared, rx: mpsc::Receiver<ToAgent>) {
    for msg in rx {
        let result = match msg {
            ToAgent::Bytes(bytes) | ToAgent::Input(bytes) => write_pty(shared, &bytes),
            ToAgent::Pause(d) => {
                std::thread::sleep(d);
                Ok(())
            }
        };
        if let Err(e) = result {
            tracing::debug!("pty write failed: {e}");
        }
    }
}

pub(super) fn write_pty(shared: &Shared, bytes: &[u8]) -> std::io::Result<()> {
    let mut w = lock(&shared.pty_writer);
    w.write_all(bytes)?;
    w.flush()
}

/// Queues `bytes` as the human's input and notes when.
pub(super) fn type_input(shared: &Shared, bytes: Vec<u8>) {
    lock(&shared.state).last_input_at = Some(now_ms());
    let _ = shared.to_agent.send(ToAgent::Input(bytes));
}

/// Types `text` as one input (see [`typed_bytes`]), then Enter after a
/// short pause.
pub(super) fn type_text(shared: &Shared, text: &str, enter: bool) {
    let _typing = lock(&shared.typing);
    let paste_mode = lock(&shared.state).parser.bracketed_paste();
    type_input(shared, typed_bytes(&shared.spec.provider, text, paste_mode));
    if enter {
        let _ = shared
            .to_agent
            .send(ToAgent::Pause(Duration::from_millis(ENTER_DELAY_MS)));
        type_input(shared, b"\r".to_vec());
    }
}

/// The bytes that type `text` into `provider` as one input, never as one
/// submission per line: one bracketed paste when the agent enabled paste
/// mode; else Aider's own multi-line form (`{owt` … `owt}`); else, for
/// programs with no known multi-line form, the lines joined by spaces.
pub fn typed_bytes(provider: &str, text: &str, paste_mode: bool) -> Vec<u8> {
    if !text.contains('\n') {
        return text.as_bytes().to_vec();
    }
    if paste_mode {
        let mut bytes = Vec::with_capacity(text.len() + 12);
        bytes.extend_from_slice(b"\x1b[200~");
        bytes.extend_from_slice(text.as_bytes());
        bytes.extend_from_slice(b"\x1b[201~");
        return bytes;
    }
    if provider == "aider" {
        return format!("{{owt\r{}\rowt}}", text.replace('\n', "\r")).into_bytes();
    }
    text.split('\n')
        .map(str::trim_end)
        .collect::<Vec<_>>()
        .join(" ")
        .into_bytes()
}
