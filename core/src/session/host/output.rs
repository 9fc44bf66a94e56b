//! The agent's output and input: the PTY reader (fans out to clients,
//! hands chunks to the parser), the parser thread, the PTY writer and
//! typing text into the agent.

use std::os::fd::AsRawFd;

use crate::platform::poll::{self, Interest, PollSet};

use super::*;

/// The PTY reader: the agent's output, fanned out to attached clients at
/// once, and the keys of directly attached terminals, on one thread (as
/// tmux's server does): a key and its echo wake one thread, never two.
/// The parser thread follows behind (bounded), so the screen model costs
/// throughput only when it is the bottleneck. Once the agent's output
/// ends, the thread serves the terminals' keys until the host exits.
pub(super) fn read_agent(shared: &Arc<Shared>, reader: Box<dyn Read + Send>) {
    let master_fd = shared.master_fd;
    let mut out = AgentOutput {
        reader,
        buf: vec![0u8; 64 * 1024],
        found: Vec::new(),
    };
    let mut directs: Vec<Direct> = Vec::new();
    let mut fds = PollSet::new();
    let mut agent_open = true;
    let mut echo = EchoWatch::default();
    loop {
        fds.clear();
        fds.push(if agent_open { master_fd } else { -1 }, Interest::Read);
        fds.push(shared.directs_wake.as_raw_fd(), Interest::Read);
        for direct in &directs {
            for fd in direct.poll_fds() {
                fds.push(fd, Interest::Read);
            }
        }
        if let Err(e) = fds.wait(None) {
            if e.kind() != std::io::ErrorKind::Interrupted {
                tracing::warn!("polling the pseudo-terminal and attached terminals: {e}");
                std::thread::sleep(Duration::from_millis(10));
            }
            continue;
        }
        let ready = |i: usize| fds.any(i);
        if agent_open && ready(0) {
            echo.output(Instant::now());
            if !out.read(shared) {
                agent_open = false;
                let _ = send_to_parser(shared, ToParser::End);
            }
        }
        let mut i = 0;
        let mut keystroke = false;
        directs.retain_mut(|direct| {
            let at = 2 + 2 * i;
            i += 1;
            if !(ready(at) || ready(at + 1)) {
                return true;
            }
            match direct.serve_keys(shared) {
                Served::Open { keystroke: typed } => {
                    keystroke |= typed;
                    true
                }
                Served::Ended => false,
            }
        });
        if keystroke && agent_open {
            echo.typed(master_fd);
        }
        if ready(1) {
            let mut drain = [0u8; 64];
            let _ = (&shared.directs_wake).read(&mut drain);
            directs.append(&mut lock(&shared.new_directs));
        }
    }
}

/// How long the PTY reader stays awake for a keystroke's echo.
const ECHO_WAIT: Duration = Duration::from_micros(200);

/// Staying awake for a keystroke's echo. Once the reader has written a
/// keystroke to the PTY, the kernel echoes it (a cooked terminal) or the
/// agent redraws; the reader waits for that up to [`ECHO_WAIT`] giving
/// its CPU to whatever else is ready ([`std::thread::yield_now`]: the
/// kernel's worker that moves the echo through the terminal often runs on
/// this very CPU) instead of going to sleep in `poll`: waking a sleeping
/// thread costs tens to hundreds of microseconds on a virtual machine,
/// often more than the echo itself (bench/results.md, "Echo (issue 22):
/// awake for the echo"). A busy loop that does not yield was slower, not faster: it
/// kept that worker off the CPU. When an echo takes longer than the wait
/// (an agent that redraws in its own time), the reader stops waiting for
/// the keystrokes after it until an echo comes back within the wait
/// again, so a slow agent costs one wait, not one per key.
#[derive(Debug, Default)]
struct EchoWatch {
    /// When the last keystroke went to the PTY, if no output came since.
    typed_at: Option<Instant>,
    /// The last echo took longer than [`ECHO_WAIT`]: do not wait.
    slow: bool,
}

impl EchoWatch {
    /// A keystroke just went to the PTY (`master_fd`): waits for output
    /// (up to [`ECHO_WAIT`]) unless echoes have been slow.
    fn typed(&mut self, master_fd: std::os::fd::RawFd) -> EchoWait {
        let at = Instant::now();
        self.typed_at = Some(at);
        if self.slow {
            return EchoWait::Skipped;
        }
        while !readable_now(master_fd) {
            if at.elapsed() >= ECHO_WAIT {
                self.slow = true;
                return EchoWait::TimedOut;
            }
            std::thread::yield_now();
        }
        EchoWait::Echoed
    }

    /// The agent's output was ready to read `now`: if a keystroke came
    /// before it, whether its echo was quick.
    fn output(&mut self, now: Instant) {
        if let Some(at) = self.typed_at.take() {
            self.slow = now.saturating_duration_since(at) > ECHO_WAIT;
        }
    }
}

/// How [`EchoWatch::typed`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EchoWait {
    /// Output is ready to read.
    Echoed,
    /// None came within [`ECHO_WAIT`].
    TimedOut,
    /// Echoes have been slow: no wait.
    Skipped,
}

/// The reader's side of the agent's output.
struct AgentOutput {
    reader: Box<dyn Read + Send>,
    buf: Vec<u8>,
    found: Vec<(usize, queries::Query)>,
}

impl AgentOutput {
    /// Reads what the agent wrote and hands it on; false once the output
    /// ended (or the parser is gone).
    fn read(&mut self, shared: &Arc<Shared>) -> bool {
        let buf = &mut self.buf;
        let n = match self.reader.read(buf) {
            Ok(0) => return false,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => return true,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return true,
            Err(e) => {
                tracing::debug!("pty read ended: {e}");
                return false;
            }
        };
        // A PTY hands out about 4 KiB per read: take what is already there
        // too, so a burst costs one frame, not sixteen.
        let mut n = n;
        while buf.len() - n >= 4096 && readable_now(shared.master_fd) {
            match self.reader.read(&mut buf[n..]) {
                Ok(0) | Err(_) => break,
                Ok(more) => n += more,
            }
        }
        let frame: Arc<[u8]> = proto::encode(FrameKind::Output, &buf[..n]).into();
        // The fan-out counts the chunks under `clients`: a client cut off
        // here (or joining) waits for the redraw of exactly the chunks
        // before this one.
        let clients = lock(&shared.clients);
        let before = shared.fanned.load(Ordering::SeqCst);
        for client in clients.iter() {
            if client.push_output(&frame) {
                wait_for_redraw(shared, client, before);
            }
        }
        shared.fanned.store(before + 1, Ordering::SeqCst);
        // A small chunk with nothing queued ahead of it (a key's echo, a
        // status line) and no redraw waiting is parsed right here: no
        // parser thread woken for it. Under `clients` no client can join
        // in between.
        let inline = n <= INLINE_PARSE_MAX
            && shared.redraws_waiting.load(Ordering::SeqCst) == 0
            && shared.parser_pending.load(Ordering::SeqCst) == 0;
        if inline {
            parse_chunk(shared, &frame[proto::HEADER_LEN..], &mut self.found);
        }
        drop(clients);
        // The parser's queue is bounded: the reader may wait here for it,
        // but never while it holds `clients` (a client joining would wait
        // with it).
        inline || send_to_parser(shared, ToParser::Chunk(frame))
    }
}

/// `client` waits for a redraw of the screen after the first `after`
/// chunks of output (see [`Redraws`]). Called under `clients`, with
/// `after` the chunks fanned out so far (before the one being fanned out).
/// Once the parser is gone the screen is final: the redraw is made now.
pub(super) fn wait_for_redraw(shared: &Shared, client: &Arc<Client>, after: u64) {
    let mut redraws = lock(&shared.redraws);
    if redraws.done {
        client.deliver_redraw(redraw_frame(&mut shared.state.lock()));
        return;
    }
    redraws.waiting.push((after, client.clone()));
    shared.redraws_waiting.fetch_add(1, Ordering::SeqCst);
}

/// The `Redraw` frame of the screen as it is.
fn redraw_frame(state: &mut State) -> Vec<u8> {
    proto::encode(FrameKind::Redraw, &redraw(state.parser.live().screen()))
}

/// Tells the parser that a redraw waits. No wait for room: a full queue
/// means messages the parser has yet to handle, and it looks at the
/// waiting redraws after each one.
pub(super) fn wake_parser(shared: &Shared) {
    shared.parser_pending.fetch_add(1, Ordering::SeqCst);
    if shared.to_parser.try_send(ToParser::Wake).is_err() {
        shared.parser_pending.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Makes the waiting redraws whose place in the stream is reached (all of
/// them once the output ended: `last`). Called by the parser only, so the
/// screen holds still meanwhile: the reader parses no chunk itself while
/// a redraw waits or a message for the parser does.
fn make_redraws(shared: &Shared, last: bool) {
    if !last && shared.redraws_waiting.load(Ordering::SeqCst) == 0 {
        return;
    }
    let mut redraws = lock(&shared.redraws);
    redraws.done |= last;
    let mut state = shared.state.lock();
    let parsed = state.output_seq;
    let mut bytes: Option<Vec<u8>> = None;
    redraws.waiting.retain(|(after, client)| {
        if *after > parsed && !last {
            return true;
        }
        if *after != parsed {
            tracing::warn!(
                after,
                parsed,
                "a redraw made away from its place in the stream"
            );
        }
        let bytes = bytes.get_or_insert_with(|| redraw_frame(&mut state));
        client.deliver_redraw(bytes.clone());
        shared.redraws_waiting.fetch_sub(1, Ordering::SeqCst);
        false
    });
}

/// Whether `fd` has input ready right now.
pub(super) fn readable_now(fd: std::os::fd::RawFd) -> bool {
    poll::wait_raw(fd, Interest::Read, Some(Duration::ZERO))
}

/// Feeds output into the screen model, answers terminal queries when
/// nobody is attached, and makes redraws at their place in the stream.
pub(super) fn parse_output(shared: &Arc<Shared>, rx: mpsc::Receiver<ToParser>) {
    let mut found = Vec::new();
    for msg in rx {
        match msg {
            ToParser::Chunk(frame) => {
                // A redraw waiting for the chunks before this one.
                make_redraws(shared, false);
                parse_chunk(shared, &frame[proto::HEADER_LEN..], &mut found);
                // One waiting for this very chunk, when no other follows.
                make_redraws(shared, false);
            }
            ToParser::Wake => make_redraws(shared, false),
            ToParser::End => break,
        }
        shared.parser_pending.fetch_sub(1, Ordering::SeqCst);
    }
    // The output ended (or the reader is gone): the screen is final.
    make_redraws(shared, true);
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
    let mut state = shared.state.lock();
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
    // Handed straight to a thread waiting for it (a client joining, the
    // monitor): released plainly, the parser would take it back for the
    // next chunk before a woken waiter runs, for seconds under a flood.
    parking_lot::MutexGuard::unlock_fair(state);
    if !replies.is_empty() {
        let _ = shared.to_agent.send(ToAgent::Bytes(replies));
    }
}

pub(super) fn write_agent(shared: &Shared, rx: mpsc::Receiver<ToAgent>) {
    for msg in rx {
        let result = match msg {
            ToAgent::Bytes(bytes) | ToAgent::Input(bytes) => write_pty(shared, &bytes),
            ToAgent::Keys(bytes) => {
                let result = write_pty(shared, &bytes);
                shared.keys_queued.fetch_sub(1, Ordering::SeqCst);
                result
            }
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

/// Writes all of `bytes` to the PTY, waiting for room (the agent reading
/// its input) as long as it takes; nobody else writes meanwhile.
pub(super) fn write_pty(shared: &Shared, bytes: &[u8]) -> std::io::Result<()> {
    let mut w = lock(&shared.pty_writer);
    write_pty_with(&mut w, shared.master_fd, bytes, true).map(drop)
}

/// Writes `bytes` to the PTY through `w`: all of them (`wait`: polling for
/// room whenever the PTY is full), or what it takes right now; how many.
fn write_pty_with(
    w: &mut Box<dyn Write + Send>,
    master_fd: std::os::fd::RawFd,
    mut bytes: &[u8],
    wait: bool,
) -> std::io::Result<usize> {
    let total = bytes.len();
    while !bytes.is_empty() {
        match w.write(bytes) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => bytes = &bytes[n..],
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock && wait => {
                poll::wait_raw(master_fd, Interest::Write, None);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
            Err(e) => return Err(e),
        }
    }
    Ok(total - bytes.len())
}

/// Forwards a direct terminal's keys to the PTY without ever waiting (the
/// caller is the PTY reader: waiting for an agent that is itself waiting
/// for its output to be read would hang both). What the PTY does not take
/// at once, or what would overtake keys still queued, goes to the PTY
/// writer, in order. Whether the PTY took all of them now.
pub(super) fn forward_keys(shared: &Shared, keys: &[u8]) -> bool {
    let mut written = 0;
    if shared.keys_queued.load(Ordering::SeqCst) == 0 {
        let writer = match shared.pty_writer.try_lock() {
            Ok(w) => Some(w),
            Err(std::sync::TryLockError::Poisoned(p)) => Some(p.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => None,
        };
        if let Some(mut w) = writer {
            match write_pty_with(&mut w, shared.master_fd, keys, false) {
                Ok(n) => written = n,
                Err(e) => {
                    tracing::debug!("pty write failed: {e}");
                    return false;
                }
            }
        }
    }
    if written == keys.len() {
        return true;
    }
    shared.keys_queued.fetch_add(1, Ordering::SeqCst);
    if shared
        .to_agent
        .send(ToAgent::Keys(keys[written..].to_vec()))
        .is_err()
    {
        shared.keys_queued.fetch_sub(1, Ordering::SeqCst);
    }
    false
}

/// Queues `bytes` as the human's input and notes when.
pub(super) fn type_input(shared: &Shared, bytes: Vec<u8>) {
    shared.state.lock().last_input_at = Some(now_ms());
    let _ = shared.to_agent.send(ToAgent::Input(bytes));
}

/// Types `text` as one input (see [`typed_bytes`], the only way text
/// reaches an agent's PTY), then Enter after a short pause.
pub(super) fn type_text(shared: &Shared, text: &str, enter: bool) {
    let _typing = lock(&shared.typing);
    let paste_mode = shared.state.lock().parser.bracketed_paste();
    type_input(shared, typed_bytes(&shared.spec.provider, text, paste_mode));
    if enter {
        let _ = shared
            .to_agent
            .send(ToAgent::Pause(Duration::from_millis(ENTER_DELAY_MS)));
        type_input(shared, b"\r".to_vec());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reader_waits_for_quick_echoes_and_stops_waiting_after_a_slow_one() {
        let (out, mut agent) = std::io::pipe().unwrap();
        let fd = out.as_raw_fd();
        let mut echo = EchoWatch::default();

        // The echo is there: the wait ends with it.
        agent.write_all(b"a").unwrap();
        assert_eq!(echo.typed(fd), EchoWait::Echoed);
        echo.output(Instant::now());
        (&out).read_exact(&mut [0u8; 1]).unwrap();
        assert!(!echo.slow);

        // No echo: the wait lasts ECHO_WAIT, and the next keystroke's is
        // skipped while the echo stays late.
        let before = Instant::now();
        assert_eq!(echo.typed(fd), EchoWait::TimedOut);
        assert!(before.elapsed() >= ECHO_WAIT);
        let typed_at = echo.typed_at.unwrap();
        echo.output(typed_at + ECHO_WAIT * 5);
        assert_eq!(echo.typed(fd), EchoWait::Skipped);
        let typed_at = echo.typed_at.unwrap();
        echo.output(typed_at + ECHO_WAIT * 2);
        assert_eq!(echo.typed(fd), EchoWait::Skipped);

        // An echo within ECHO_WAIT again: the next keystroke waits again.
        let typed_at = echo.typed_at.unwrap();
        echo.output(typed_at + ECHO_WAIT / 2);
        agent.write_all(b"b").unwrap();
        assert_eq!(echo.typed(fd), EchoWait::Echoed);

        // Output with no keystroke before it changes nothing.
        echo.output(Instant::now());
        echo.slow = true;
        echo.output(Instant::now() + ECHO_WAIT * 9);
        assert!(echo.slow);
    }
}
