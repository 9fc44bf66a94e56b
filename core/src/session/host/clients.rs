//! A client of the host: its socket (or a direct attach's terminal) and
//! the queue of frames the writer thread (or the PTY reader, writing
//! directly when the queue is empty) sends it, cut when it falls
//! [`CLIENT_QUEUE_LIMIT`] behind. A direct attach that asked for notices
//! has its terminal's stream followed ([`Splicer`]): a `Notice` goes in
//! between two of the agent's escape sequences, never inside one.

use std::collections::VecDeque;
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Condvar, Mutex};

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
    /// A direct terminal that takes notices: where its stream is, and the
    /// notices waiting for a ground state. Fed every output frame in
    /// stream order, under this lock.
    pub(super) splicer: Option<Splicer>,
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

    /// Queues output. A client too far behind loses its queue and gets a
    /// redraw of the screen as it was before this frame instead; returns
    /// whether the caller must ask for that redraw ([`wait_for_redraw`]).
    pub(super) fn push_output(&self, frame: &Arc<[u8]>) -> bool {
        if self.term.as_ref().is_some_and(|term| !term.is_open()) {
            // A direct attach that ended: nothing more to write.
            return false;
        }
        let mut q = lock(&self.queue);
        if q.closed {
            return false;
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
            return false;
        }
        let cut = !q.awaiting_redraw && q.bytes + frame.len() > CLIENT_QUEUE_LIMIT;
        if cut {
            // The screen's bytes go (a redraw replaces them); the frames
            // `push` queued (the welcome, replies, the exit) are never
            // dropped. The queue may hold a welcome still: output piles up
            // behind a new client's first redraw until it comes.
            q.frames.retain(|f| !is_screen_frame(f));
            q.bytes = q.head.len() + q.frames.iter().map(|f| f.len()).sum::<usize>();
            q.awaiting_redraw = true;
            q.redraw_at = q.frames.len();
        }
        q.bytes += frame.len();
        q.frames.push_back(frame.clone());
        drop(q);
        self.ready.notify_one();
        cut
    }

    /// A notification for a direct terminal that takes them: queued in
    /// the stream now if it is at the ground state, else at its next
    /// ground point (see [`Splicer`]); `key`: what it is about.
    pub(super) fn notice(&self, key: &str, bytes: Vec<u8>) {
        let mut q = lock(&self.queue);
        if q.closed {
            return;
        }
        let Some(now) = q.splicer.as_mut().and_then(|s| s.offer(key, bytes)) else {
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
        let mut q = lock(&self.queue);
        q.awaiting_redraw = true;
        q.redraw_at = q.frames.len();
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
            assert!(
                !client.push_output(&chunk),
                "no cut while a redraw is awaited"
            );
        }
        client.deliver_redraw(proto::encode(proto::FrameKind::Redraw, b"screen"));
        client.push(proto::encode(proto::FrameKind::Error, b"{}"));
        assert!(client.push_output(&chunk), "over the limit: cut");
        assert_eq!(
            kinds(&client),
            [
                proto::FrameKind::Welcome,
                proto::FrameKind::Error,
                proto::FrameKind::Output
            ]
        );
        let q = lock(&client.queue);
        assert!(q.awaiting_redraw);
        assert_eq!(q.redraw_at, 2, "the new redraw goes after what was kept");
        assert_eq!(q.bytes, q.frames.iter().map(|f| f.len()).sum::<usize>());
    }
}
