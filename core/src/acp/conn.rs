//! One JSON-RPC connection over a byte stream pair, on std threads: send
//! requests and wait for their responses from any thread, send
//! notifications and responses, and hand what the peer sends to a handler.
//!
//! Used both ways: the ACP session host is the client of an agent's ACP
//! server (the agent's stdin and stdout), and `owt acp` is an ACP agent for
//! an editor (owt's own stdin and stdout).
//!
//! Invariants: one writer at a time, one whole line per message; a response
//! reaches only the caller that waits on its id; when the stream ends every
//! waiting caller gets [`CallError::Closed`]; nothing the peer sends can
//! panic the reader (malformed lines go to the handler as
//! [`Incoming::Malformed`]).

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{mpsc, Mutex};
use std::time::Duration;

use serde_json::Value;

use super::rpc::{self, DecodeError, Id, Line, LineReader, Message, RpcError};

/// Why a call got no result.
#[derive(Debug, Clone, PartialEq)]
pub enum CallError {
    /// The peer answered with an error.
    Rpc(RpcError),
    /// The connection ended before the answer.
    Closed,
    TimedOut,
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::Rpc(e) => write!(f, "{e}"),
            CallError::Closed => write!(f, "the connection closed before the answer"),
            CallError::TimedOut => write!(f, "no answer in time"),
        }
    }
}

/// What the peer sent that is not a response.
#[derive(Debug)]
pub enum Incoming {
    Request {
        id: Id,
        method: String,
        params: Value,
    },
    Notification {
        method: String,
        params: Value,
    },
    /// A line that is not a JSON-RPC message (or a too-long line).
    Malformed(DecodeError),
}

type Reply = mpsc::Sender<Result<Value, RpcError>>;

/// The sending half of a connection; share it with `Arc`.
pub struct Conn {
    writer: Mutex<Box<dyn Write + Send>>,
    pending: Mutex<HashMap<String, Reply>>,
    next_id: AtomicI64,
    closed: AtomicBool,
}

impl Conn {
    pub fn new(writer: Box<dyn Write + Send>) -> Conn {
        Conn {
            writer: Mutex::new(writer),
            pending: Mutex::new(HashMap::new()),
            next_id: AtomicI64::new(0),
            closed: AtomicBool::new(false),
        }
    }

    /// Writes one message; false when the stream is gone.
    pub fn send(&self, msg: &Message) -> bool {
        let line = rpc::encode(msg);
        let mut w = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        let ok = w.write_all(&line).and_then(|()| w.flush()).is_ok();
        if !ok {
            tracing::debug!("writing to the peer failed");
        }
        ok
    }

    pub fn notify(&self, method: &str, params: Value) -> bool {
        self.send(&Message::Notification {
            method: method.to_string(),
            params,
        })
    }

    pub fn respond(&self, id: Id, result: Result<Value, RpcError>) -> bool {
        self.send(&Message::Response { id, result })
    }

    /// Sends a request; the receiver gets its answer (or nothing, if the
    /// connection closes: the sender is dropped).
    pub fn start_request(
        &self,
        method: &str,
        params: Value,
    ) -> (Id, mpsc::Receiver<Result<Value, RpcError>>) {
        let id = Id::num(self.next_id.fetch_add(1, Ordering::SeqCst));
        let (tx, rx) = mpsc::channel();
        if !self.closed.load(Ordering::SeqCst) {
            self.lock_pending().insert(id.key(), tx);
        }
        let sent = self.send(&Message::Request {
            id: id.clone(),
            method: method.to_string(),
            params,
        });
        if !sent {
            self.lock_pending().remove(&id.key());
        }
        (id, rx)
    }

    /// Sends a request and waits for its answer (`None`: no deadline).
    pub fn request(
        &self,
        method: &str,
        params: Value,
        timeout: Option<Duration>,
    ) -> Result<Value, CallError> {
        let (id, rx) = self.start_request(method, params);
        let got = match timeout {
            Some(t) => rx.recv_timeout(t).map_err(|e| match e {
                mpsc::RecvTimeoutError::Timeout => CallError::TimedOut,
                mpsc::RecvTimeoutError::Disconnected => CallError::Closed,
            }),
            None => rx.recv().map_err(|_| CallError::Closed),
        };
        if got.is_err() {
            self.lock_pending().remove(&id.key());
        }
        got?.map_err(CallError::Rpc)
    }

    fn lock_pending(&self) -> std::sync::MutexGuard<'_, HashMap<String, Reply>> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether the reader saw the end of the stream.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// Reads the peer's messages until the stream ends: responses go to
    /// their callers, everything else to `handle` (on this thread, in
    /// order). Then every waiting caller is told the connection closed.
    pub fn read_loop(&self, reader: impl BufRead, mut handle: impl FnMut(Incoming)) {
        let mut lines = LineReader::new(reader);
        loop {
            let line = match lines.next_line() {
                Ok(Line::Line(line)) => line,
                Ok(Line::TooLong(n)) => {
                    handle(Incoming::Malformed(DecodeError::Parse(format!(
                        "a line of {n} bytes, over the {} MiB limit",
                        rpc::MAX_LINE / (1024 * 1024)
                    ))));
                    continue;
                }
                Ok(Line::End) => break,
                Err(e) => {
                    tracing::debug!("reading from the peer: {e}");
                    break;
                }
            };
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match rpc::decode(&line) {
                Ok(Message::Response { id, result }) => {
                    let waiter = self.lock_pending().remove(&id.key());
                    match waiter {
                        Some(tx) => {
                            let _ = tx.send(result);
                        }
                        None => tracing::debug!("a response to no request of ours: {}", id.key()),
                    }
                }
                Ok(Message::Request { id, method, params }) => {
                    handle(Incoming::Request { id, method, params })
                }
                Ok(Message::Notification { method, params }) => {
                    handle(Incoming::Notification { method, params })
                }
                Err(e) => handle(Incoming::Malformed(e)),
            }
        }
        self.closed.store(true, Ordering::SeqCst);
        self.lock_pending().clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::Arc;

    /// A pipe pair: what one side writes, the other reads.
    fn pipe() -> (std::fs::File, std::fs::File) {
        let (read, write) = crate::platform::pipe::cloexec().unwrap();
        (read.into(), write.into())
    }

    #[test]
    fn calls_get_their_own_answers_and_a_closed_stream_ends_them() {
        let (to_peer_r, to_peer_w) = pipe();
        let (from_peer_r, mut from_peer_w) = pipe();
        let conn = Arc::new(Conn::new(Box::new(to_peer_w)));
        let reader = {
            let conn = conn.clone();
            std::thread::spawn(move || {
                let mut seen = Vec::new();
                conn.read_loop(std::io::BufReader::new(from_peer_r), |m| {
                    seen.push(format!("{m:?}"))
                });
                seen
            })
        };
        // The "peer": answers request 1 before request 0, sends a
        // notification and garbage, then hangs up.
        let peer = std::thread::spawn(move || {
            let mut lines = LineReader::new(std::io::BufReader::new(to_peer_r));
            let mut ids = Vec::new();
            for _ in 0..2 {
                let Line::Line(l) = lines.next_line().unwrap() else {
                    panic!()
                };
                let Message::Request { id, .. } = rpc::decode(&l).unwrap() else {
                    panic!()
                };
                ids.push(id);
            }
            for (id, v) in [(ids[1].clone(), 1), (ids[0].clone(), 0)] {
                from_peer_w
                    .write_all(&rpc::encode(&Message::Response {
                        id,
                        result: Ok(json!(v)),
                    }))
                    .unwrap();
            }
            from_peer_w
                .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"note\",\"params\":{}}\nnot json\n")
                .unwrap();
            // The third request is never answered.
            let _ = lines.next_line();
        });
        let a = {
            let conn = conn.clone();
            std::thread::spawn(move || conn.request("a", json!({}), None))
        };
        std::thread::sleep(Duration::from_millis(50));
        let b = conn.request("b", json!({}), Some(Duration::from_secs(10)));
        assert_eq!(b, Ok(json!(1)));
        assert_eq!(a.join().unwrap(), Ok(json!(0)));
        let c = {
            let conn = conn.clone();
            std::thread::spawn(move || conn.request("c", json!({}), None))
        };
        peer.join().unwrap();
        assert_eq!(c.join().unwrap(), Err(CallError::Closed));
        let seen = reader.join().unwrap();
        assert_eq!(seen.len(), 2, "{seen:?}");
        assert!(seen[0].contains("Notification"));
        assert!(seen[1].contains("Malformed"));
        assert!(conn.is_closed());
    }
}
