//! A client of the host: its socket (or a direct attach's terminal) and
//! the queue of frames the writer thread (or the PTY reader, writing
//! directly when the queue is empty) sends it, cut when it falls
//! [`CLIENT_QUEUE_LIMIT`] behind. A client cut is in a flood ([`Flood`]):
//! it gets the screen redrawn at most every [`FLOOD_FRAME`] instead of the
//! output, as tmux does, until the output calms down. A direct attach that asked for notices
//! has its terminal's stream followed ([`Splicer`]): a `Notice` goes in
//! between two of the agent's escape sequences, never inside one.

use std::collections::VecDeque;
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use owt_protocol::host as proto;

use super::{lock, send_now, Term, CLIENT_QUEUE_LIMIT};
use crate::session::notice::Splicer;

pub(super) struct ClientQueue {
    /// The unwritten rest of a frame a direct write cut short: it goes out
    /// before anything else and is never dropped (the stream would tear).
    pub(super) head: Vec<u8>,
    pub(super) frames: VecDeque<Arc<[u8]>>,
    pub(super) bytes: usize,
    /// Someone (the writer thread, or the reader with a direct write) is
    /// writing to the socket; nobody else may.
    pub(super) writing: bool,
    /// A redraw is coming from the parser; hold everything until then.
    pub(super) awaiting_redraw: bool,
    /// Where that redraw goes in `frames`.
    pub(super) redraw_at: usize,
    pub(super) closed: bool,
    /// Cut during a flood of output: redrawn, not sent the output.
    pub(super) flood: Option<Flood>,
    /// A direct terminal that takes notices: where its stream is, and the
    /// notices waiting for a ground state. Fed every output frame in
    /// stream order, under this lock.
    pub(super) splicer: Option<Splicer>,
}

/// Redraws, at most one per this interval, stand for the output sent to a
/// client in a flood.
pub(super) const FLOOD_FRAME: Duration = Duration::from_millis(20);
/// A flood is over when less output than this came in a [`FLOOD_FRAME`]
/// (3 MB/s, which any terminal keeps up with), or none at all.
const FLOOD_CALM_BYTES: usize = 64 * 1024;

/// A client in a flood: it fell [`CLIENT_QUEUE_LIMIT`] behind, so the
/// output it would not keep up with is not queued for it; the screen is
/// redrawn instead (after the chunk that asks for it, at most every
/// [`FLOOD_FRAME`]), and once more when the output stops
/// ([`Client::end_flood`]). Sending it everything, the host would spend its
/// time writing what the terminal shows for a moment, and the reader of the
/// agent's output would wait for the writes.
#[derive(Debug)]
pub(super) struct Flood {
    /// When the last redraw was asked for.
    since: Instant,
    /// Output since then.
    bytes: usize,
    /// Some output since then is in no redraw asked for.
    unsent: bool,
}

/// What a client asks for after an output chunk ([`Client::push_output`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Fanned {
    /// Nothing: the chunk was sent or queued (or, in a flood, left out).
    Nothing,
    /// A redraw of the screen after this chunk ([`wait_for_redraw`] with
    /// the chunks fanned out so far, this one included).
    Redraw,
}

/// What [`Client::end_flood`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum FloodEnd {
    /// Not in a flood, or ended with the screen it has.
    Over,
    /// Ended: it waits for a redraw of everything fanned out so far.
    Redraw,
    /// Still waiting for the last redraw: try again later.
    Later,
}

pub(super) struct Client {
    pub(super) id: u64,
    pub(super) queue: Mutex<ClientQueue>,
    pub(super) ready: Condvar,
    /// The client's socket, written by the writer thread or, when its queue
    /// is empty, directly by the PTY reader (one thread hop less per echo).
    pub(super) stream: UnixStream,
    /// A direct attach's terminal: output and redraws go there (their
    /// bytes, not frames), other frames to `stream`.
    pub(super) term: Option<Arc<Term>>,
}

impl Client {
    /// `notices`: a direct terminal that takes `Notice` frames.
    pub(super) fn new(
        id: u64,
        stream: UnixStream,
        term: Option<Arc<Term>>,
        notices: bool,
    ) -> Arc<Client> {
        let splicer = (notices && term.is_some()).then(Splicer::new);
        Arc::new(Client {
            id,
            queue: Mutex::new(ClientQueue {
                head: Vec::new(),
                frames: VecDeque::new(),
                bytes: 0,
                writing: false,
                awaiting_redraw: false,
                redraw_at: 0,
                closed: false,
                flood: None,
                splicer,
            }),
            ready: Condvar::new(),
            stream,
            term,
        })
    }

    /// What a direct write of `frame` (an `Output` frame) sends: the frame
    /// on a socket, its payload on a terminal.
    pub(super) fn direct_bytes<'a>(&self, frame: &'a [u8]) -> &'a [u8] {
        match self.term {
            Some(_) => &frame[proto::HEADER_LEN..],
            None => frame,
        }
    }

    /// Queues a reply or control frame (never dropped).
    pub(super) fn push(&self, frame: Vec<u8>) {
        let mut q = lock(&self.queue);
        q.bytes += frame.len();
        q.frames.push_back(frame.into());
        drop(q);
        self.ready.notify_one();
    }

    /// Queues output, or sends it at once when nothing is ahead of it. A
    /// client too far behind loses the output queued and is in a flood
    /// ([`Flood`]); the caller asks for the redraw it returns.
    pub(super) fn push_output(&self, frame: &Arc<[u8]>) -> Fanned {
        self.push_output_at(frame, Instant::now())
    }

    /// [`Client::push_output`] at `now`.
    fn push_output_at(&self, frame: &Arc<[u8]>, now: Instant) -> Fanned {
        if self.term.as_ref().is_some_and(|term| !term.is_open()) {
            // A direct attach that ended: nothing more to write.
            return Fanned::Nothing;
        }
        let mut q = lock(&self.queue);
        if q.closed {
            return Fanned::Nothing;
        }
        if let Some(fanned) = q.flood_or_cut(frame, now) {
            drop(q);
            self.ready.notify_one();
            return fanned;
        }
        let spliced: Arc<[u8]>;
        let frame = match q
            .splicer
            .as_mut()
            .map(|s| s.pass(&frame[proto::HEADER_LEN..]))
        {
            Some(std::borrow::Cow::Owned(bytes)) => {
                spliced = proto::encode(proto::FrameKind::Output, &bytes).into();
                &spliced
            }
            _ => frame,
        };
        if !q.awaiting_redraw && !q.writing && q.head.is_empty() && q.frames.is_empty() {
            // Nothing is ahead of this frame: try the socket (or the
            // terminal) right away.
            q.writing = true;
            drop(q);
            let bytes = self.direct_bytes(frame);
            let sent = match &self.term {
                Some(term) => term.write_now(bytes),
                None => send_now(&self.stream, bytes),
            };
            let mut q = lock(&self.queue);
            q.writing = false;
            let mut gone = false;
            match sent {
                Ok(n) if n < bytes.len() => {
                    q.head.extend_from_slice(&bytes[n..]);
                    q.bytes += bytes.len() - n;
                }
                Ok(_) => {}
                Err(e) if self.term.is_some() => {
                    tracing::debug!("terminal write: {e}");
                    gone = true;
                }
                Err(e) => {
                    tracing::debug!("client write: {e}");
                    q.closed = true;
                    let _ = self.stream.shutdown(std::net::Shutdown::Both);
                }
            }
            let wake = q.closed || !q.head.is_empty() || !q.frames.is_empty();
            drop(q);
            if gone {
                self.end_direct();
            }
            if wake {
                self.ready.notify_one();
            }
            return Fanned::Nothing;
        }
        q.bytes += frame.len();
        q.frames.push_back(frame.clone());
        drop(q);
        self.ready.notify_one();
        Fanned::Nothing
    }

    /// The output has stopped (for a [`FLOOD_FRAME`]): a client in a flood
    /// is out of it, with a last redraw when it has not seen all of it.
    pub(super) fn end_flood(&self) -> FloodEnd {
        let mut q = lock(&self.queue);
        let Some(flood) = &q.flood else {
            return FloodEnd::Over;
        };
        if q.awaiting_redraw {
            return FloodEnd::Later;
        }
        let unsent = flood.unsent;
        q.flood = None;
        if unsent {
            q.ask_redraw();
            return FloodEnd::Redraw;
        }
        FloodEnd::Over
    }

    /// A notification for a direct terminal that takes them: queued in
    /// the stream now if it is at the ground state, else at its next
    /// ground point (see [`Splicer`]); `key`: what it is about.
    pub(super) fn notice(&self, key: &str, bytes: Vec<u8>) {
        let mut q = lock(&self.queue);
        if q.closed {
            return;
        }
        let flooding = q.flood.is_some();
        let Some(now) = q.splicer.as_mut().and_then(|s| {
            let now = s.offer(key, bytes);
            // In a flood the terminal gets redraws, each ending at the
            // ground state: the notice goes after the next (or the last).
            now.or_else(|| flooding.then(|| s.take_waiting()))
        }) else {
            return;
        };
        let frame: Arc<[u8]> = proto::encode(proto::FrameKind::Output, &now).into();
        q.bytes += frame.len();
        q.frames.push_back(frame);
        drop(q);
        self.ready.notify_one();
    }

    /// Holds the queue until a redraw arrives (placed after what is queued).
    pub(super) fn await_redraw(&self) {
        lock(&self.queue).ask_redraw();
    }

    /// Puts the awaited redraw in place and releases the queue.
    pub(super) fn deliver_redraw(&self, redraw: Vec<u8>) {
        let mut q = lock(&self.queue);
        let at = q.redraw_at.min(q.frames.len());
        q.bytes += redraw.len();
        q.frames.insert(at, redraw.into());
        q.awaiting_redraw = false;
        drop(q);
        self.ready.notify_one();
    }

    pub(super) fn close(&self) {
        lock(&self.queue).closed = true;
        self.ready.notify_one();
    }
}

impl ClientQueue {
    /// Holds the queue until a redraw arrives (placed after what is queued).
    fn ask_redraw(&mut self) {
        self.awaiting_redraw = true;
        self.redraw_at = self.frames.len();
    }

    /// `frame` (output) for a client in a flood, or one that falls
    /// [`CLIENT_QUEUE_LIMIT`] behind with it: cut off, it is in a flood
    /// from now on. Either way the frame is left out (a redraw will show
    /// it); what the client then asks for. `None` for a frame to send.
    fn flood_or_cut(&mut self, frame: &[u8], now: Instant) -> Option<Fanned> {
        let cut = self.flood.is_none()
            && !self.awaiting_redraw
            && self.bytes + frame.len() > CLIENT_QUEUE_LIMIT;
        if self.flood.is_none() && !cut {
            return None;
        }
        // The notices follow the stream's state, not splice into it: the
        // output with them in would be left out.
        let payload = &frame[proto::HEADER_LEN..];
        let notices = self.splicer.as_mut().map(|s| {
            s.follow(payload);
            s.take_waiting()
        });
        if !cut {
            let fanned = self.flooded(payload.len(), now);
            self.queue_notices(notices);
            return Some(fanned);
        }
        // The screen's bytes go (a redraw replaces them); the frames
        // `push` queued (the welcome, replies, the exit) are never dropped.
        // The queue may hold a welcome still: output piles up behind a new
        // client's first redraw until it comes.
        self.frames.retain(|f| !is_screen_frame(f));
        self.bytes = self.head.len() + self.frames.iter().map(|f| f.len()).sum::<usize>();
        self.ask_redraw();
        self.flood = Some(Flood {
            since: now,
            bytes: 0,
            unsent: false,
        });
        self.queue_notices(notices);
        Some(Fanned::Redraw)
    }

    /// Notices for a client in a flood: after the redraw it waits for, or
    /// after the last one (a redraw leaves the terminal at the ground
    /// state).
    fn queue_notices(&mut self, notices: Option<Vec<u8>>) {
        let Some(notices) = notices.filter(|n| !n.is_empty()) else {
            return;
        };
        let frame: Arc<[u8]> = proto::encode(proto::FrameKind::Output, &notices).into();
        self.bytes += frame.len();
        self.frames.push_back(frame);
    }

    /// `bytes` of output for a client in a flood: left out, and a redraw
    /// asked for after them when the last was asked a [`FLOOD_FRAME`] ago
    /// (and has come); the flood ends there when the output has calmed.
    fn flooded(&mut self, bytes: usize, now: Instant) -> Fanned {
        let waiting = self.awaiting_redraw;
        let Some(flood) = self.flood.as_mut() else {
            return Fanned::Nothing;
        };
        flood.bytes += bytes;
        flood.unsent = true;
        if waiting || now.saturating_duration_since(flood.since) < FLOOD_FRAME {
            return Fanned::Nothing;
        }
        if flood.bytes < FLOOD_CALM_BYTES {
            self.flood = None;
        } else {
            *flood = Flood {
                since: now,
                bytes: 0,
                unsent: false,
            };
        }
        self.ask_redraw();
        Fanned::Redraw
    }
}

/// An `Output` or `Redraw` frame: the screen's bytes, which a redraw can
/// replace.
fn is_screen_frame(frame: &[u8]) -> bool {
    matches!(
        frame.first().copied().and_then(proto::FrameKind::from_u8),
        Some(proto::FrameKind::Output | proto::FrameKind::Redraw)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(client: &Client) -> Vec<proto::FrameKind> {
        lock(&client.queue)
            .frames
            .iter()
            .map(|f| proto::FrameKind::from_u8(f[0]).unwrap())
            .collect()
    }

    /// Regression: output piled up behind a new client's first redraw, and
    /// the first frame after it overran the limit and cut the queue: the
    /// welcome went with the output, and the client saw output before any
    /// welcome (`faults::a_flooding_agent…` failed "client 2: no welcome"
    /// in CI, and here with `OWT_FLOOD_CHURN_S=120`).
    #[test]
    fn cutting_a_queue_keeps_its_welcome_and_replies() {
        let (stream, _peer) = UnixStream::pair().unwrap();
        let client = Client::new(1, stream, None, false);
        client.push(proto::encode(proto::FrameKind::Welcome, b"{}"));
        client.await_redraw();
        let chunk: Arc<[u8]> = proto::encode(proto::FrameKind::Output, &[b'x'; 64 * 1024]).into();
        for _ in 0..(CLIENT_QUEUE_LIMIT / chunk.len() + 1) {
            assert_eq!(
                client.push_output(&chunk),
                Fanned::Nothing,
                "no cut while a redraw is awaited"
            );
        }
        client.deliver_redraw(proto::encode(proto::FrameKind::Redraw, b"screen"));
        client.push(proto::encode(proto::FrameKind::Error, b"{}"));
        assert_eq!(
            client.push_output(&chunk),
            Fanned::Redraw,
            "over the limit: cut"
        );
        assert_eq!(
            kinds(&client),
            [proto::FrameKind::Welcome, proto::FrameKind::Error]
        );
        let q = lock(&client.queue);
        assert!(q.awaiting_redraw);
        assert!(q.flood.is_some(), "a cut client is in a flood");
        assert_eq!(q.redraw_at, 2, "the new redraw goes after what was kept");
        assert_eq!(q.bytes, q.frames.iter().map(|f| f.len()).sum::<usize>());
    }

    /// A client in a flood gets no output: a redraw at most every
    /// FLOOD_FRAME while it keeps coming (after the redraw before has
    /// come), none once it calms down, and a last one when it stops with
    /// output no redraw has shown.
    #[test]
    fn a_client_in_a_flood_is_redrawn_a_frame_at_a_time_until_the_output_stops() {
        let (stream, _peer) = UnixStream::pair().unwrap();
        let client = Client::new(1, stream, None, false);
        let chunk: Arc<[u8]> = proto::encode(proto::FrameKind::Output, &[b'x'; 64 * 1024]).into();
        let cut = Instant::now();
        let mut pushed = 0;
        while client.push_output_at(&chunk, cut) != Fanned::Redraw {
            pushed += 1;
            // A socket takes some at once; the rest queues up to the limit.
            assert!(pushed <= CLIENT_QUEUE_LIMIT / chunk.len() + 16, "never cut");
        }
        assert_eq!(client.end_flood(), FloodEnd::Later, "its redraw is awaited");
        client.deliver_redraw(proto::encode(proto::FrameKind::Redraw, b"screen 1"));
        // Within the frame: left out, nothing asked.
        let within = cut + FLOOD_FRAME / 2;
        assert_eq!(client.push_output_at(&chunk, within), Fanned::Nothing);
        assert_eq!(kinds(&client), [proto::FrameKind::Redraw]);
        // A frame later: a redraw after this chunk.
        let next = cut + FLOOD_FRAME;
        assert_eq!(client.push_output_at(&chunk, next), Fanned::Redraw);
        // Left out while that redraw is awaited, however long it takes.
        let late = next + FLOOD_FRAME * 3;
        assert_eq!(client.push_output_at(&chunk, late), Fanned::Nothing);
        assert_eq!(client.end_flood(), FloodEnd::Later);
        client.deliver_redraw(proto::encode(proto::FrameKind::Redraw, b"screen 2"));
        // The output stops: out of the flood, with a redraw of that chunk.
        assert_eq!(client.end_flood(), FloodEnd::Redraw);
        assert!(lock(&client.queue).flood.is_none());
        assert!(lock(&client.queue).awaiting_redraw);
        client.deliver_redraw(proto::encode(proto::FrameKind::Redraw, b"screen 3"));
        assert_eq!(client.end_flood(), FloodEnd::Over);
        // Out of it, output is sent again (queued here: the redraws are
        // not read).
        assert_eq!(client.push_output_at(&chunk, late), Fanned::Nothing);
        assert_eq!(kinds(&client).last(), Some(&proto::FrameKind::Output));
    }

    /// Output calmer than FLOOD_CALM_BYTES a frame ends the flood at the
    /// next redraw: later output is sent again.
    #[test]
    fn a_flood_ends_when_the_output_calms_down() {
        let (stream, _peer) = UnixStream::pair().unwrap();
        let client = Client::new(1, stream, None, false);
        let chunk: Arc<[u8]> = proto::encode(proto::FrameKind::Output, &[b'x'; 64 * 1024]).into();
        let cut = Instant::now();
        while client.push_output_at(&chunk, cut) != Fanned::Redraw {}
        client.deliver_redraw(proto::encode(proto::FrameKind::Redraw, b"screen"));
        let small: Arc<[u8]> = proto::encode(proto::FrameKind::Output, b"tick").into();
        assert!(lock(&client.queue).flood.is_some());
        assert_eq!(
            client.push_output_at(&small, cut + FLOOD_FRAME),
            Fanned::Redraw
        );
        assert!(
            lock(&client.queue).flood.is_none(),
            "calm: out of the flood"
        );
    }
}
