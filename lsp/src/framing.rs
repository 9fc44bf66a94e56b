//! A guard in front of the LSP transport: splits the input into
//! `Content-Length` frames, drops frames whose body is not a JSON-RPC
//! message and bytes that are not a frame (resynchronising on the next
//! `Content-Length:` header), and forwards only well-formed frames, each
//! with a canonical `Content-Length: N` header. tower-lsp-server stops
//! serving at the first message its decoder cannot read (a header name in
//! another case, more than two headers, a charset other than UTF-8, a body
//! that is not UTF-8 or not a request, notification or response); with this
//! in front, a client that sends garbage gets it ignored (and logged), never
//! a dead server.

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tower_lsp_server::jsonrpc;

const HEADER: &[u8] = b"Content-Length:";
/// Frames larger than this are dropped (a runaway client must not make the
/// server allocate without bound).
pub const MAX_FRAME: usize = 64 * 1024 * 1024;

/// What [`FrameScanner::next_scanned`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum Scanned {
    /// A complete frame whose body is a JSON-RPC message: the frame to
    /// forward (canonical header and body), and how many input bytes it took.
    Frame { frame: Vec<u8>, consumed: usize },
    /// Bytes dropped, and why.
    Dropped(usize, &'static str),
    /// More input is needed.
    NeedMore,
}

/// Incremental frame splitter over a byte buffer.
#[derive(Debug, Default)]
pub struct FrameScanner {
    buf: Vec<u8>,
}

impl FrameScanner {
    pub fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// Bytes pushed but not yet forwarded or dropped.
    pub fn pending_len(&self) -> usize {
        self.buf.len()
    }

    /// The next frame or drop decision.
    pub fn next_scanned(&mut self) -> Scanned {
        if self.buf.is_empty() {
            return Scanned::NeedMore;
        }
        // Resynchronise: the buffer must start with a header (the first
        // one, in any case: preferring an exact match further on would drop
        // a frame whose header is in another case).
        let start = find_ci(&self.buf, HEADER);
        match start {
            None => {
                // Keep a tail that may be the start of a header.
                let keep = HEADER.len().min(self.buf.len());
                let drop = self.buf.len() - keep;
                if drop > 0 {
                    self.buf.drain(..drop);
                    return Scanned::Dropped(drop, "bytes outside a frame");
                }
                return Scanned::NeedMore;
            }
            Some(0) => {}
            Some(n) => {
                self.buf.drain(..n);
                return Scanned::Dropped(n, "bytes outside a frame");
            }
        }
        let Some(header_end) = find(&self.buf, b"\r\n\r\n") else {
            if self.buf.len() > 4096 {
                self.buf.drain(..HEADER.len());
                return Scanned::Dropped(HEADER.len(), "an unterminated header");
            }
            return Scanned::NeedMore;
        };
        let header = String::from_utf8_lossy(&self.buf[..header_end]).into_owned();
        let length = header.lines().find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.trim()
                .eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse::<usize>().ok())
                .flatten()
        });
        let Some(length) = length.filter(|l| *l <= MAX_FRAME) else {
            self.buf.drain(..header_end + 4);
            return Scanned::Dropped(header_end + 4, "a header without a usable Content-Length");
        };
        let body_start = header_end + 4;
        if self.buf.len() < body_start + length {
            return Scanned::NeedMore;
        }
        let body = &self.buf[body_start..body_start + length];
        if !is_message(body) {
            // The length may be wrong: drop only the header, so a real frame
            // inside the claimed body is found again.
            self.buf.drain(..body_start);
            return Scanned::Dropped(body_start, "a frame whose body is not a JSON-RPC message");
        }
        // The client's header may be one the server's decoder refuses (see
        // the module doc): forward a canonical one.
        let mut frame = format!("Content-Length: {length}\r\n\r\n").into_bytes();
        frame.extend_from_slice(body);
        let consumed = body_start + length;
        self.buf.drain(..consumed);
        Scanned::Frame { frame, consumed }
    }
}

/// Whether tower-lsp-server can read `body`: UTF-8, and a request,
/// notification or response.
fn is_message(body: &[u8]) -> bool {
    std::str::from_utf8(body).is_ok_and(|text| {
        serde_json::from_str::<jsonrpc::Request>(text).is_ok()
            || serde_json::from_str::<jsonrpc::Response>(text).is_ok()
    })
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn find_ci(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|w| w.eq_ignore_ascii_case(needle))
}

/// Copies well-formed frames from `input` to `output` until `input` ends.
pub async fn pump(mut input: impl AsyncRead + Unpin, mut output: impl AsyncWrite + Unpin) {
    let mut scanner = FrameScanner::default();
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let n = match input.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        scanner.push(&chunk[..n]);
        loop {
            match scanner.next_scanned() {
                Scanned::Frame { frame, .. } => {
                    if output.write_all(&frame).await.is_err() {
                        return;
                    }
                }
                Scanned::Dropped(n, why) => tracing::warn!("ignored {n} bytes of input: {why}"),
                Scanned::NeedMore => break,
            }
        }
        let _ = output.flush().await;
    }
    let _ = output.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXIT: &str = r#"{"jsonrpc":"2.0","method":"exit"}"#;
    const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"initialized","params":{}}"#;

    fn frame(body: &str) -> Vec<u8> {
        format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
    }

    fn all(input: &[u8]) -> Vec<Scanned> {
        let mut s = FrameScanner::default();
        s.push(input);
        let mut out = Vec::new();
        loop {
            match s.next_scanned() {
                Scanned::NeedMore => return out,
                other => out.push(other),
            }
        }
    }

    /// The frames forwarded for `input` given in one read.
    fn forwarded(input: &[u8]) -> Vec<Vec<u8>> {
        all(input)
            .into_iter()
            .filter_map(|s| match s {
                Scanned::Frame { frame, .. } => Some(frame),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn passes_good_frames_split_anywhere() {
        let mut input = frame(r#"{"jsonrpc":"2.0","id":1,"result":null}"#);
        input.extend(frame(r#"{"jsonrpc":"2.0","method":"b","params":{"ü":1}}"#));
        for split in 0..input.len() {
            let mut s = FrameScanner::default();
            let mut frames = Vec::new();
            for part in [&input[..split], &input[split..]] {
                s.push(part);
                while let Scanned::Frame { frame, .. } = s.next_scanned() {
                    frames.push(frame);
                }
            }
            assert_eq!(frames.concat(), input, "split at {split}");
        }
    }

    #[test]
    fn drops_invalid_json_and_resyncs_after_a_wrong_length() {
        let mut input = b"Content-Length: 12\r\n\r\n{not json!!}".to_vec();
        input.extend(b"Content-Length: 5\r\n\r\n{\"jsonrpc\": \"2.0\"}");
        input.extend(frame(INITIALIZED));
        assert_eq!(forwarded(&input), vec![frame(INITIALIZED)]);
    }

    #[test]
    fn garbage_between_frames_is_dropped() {
        let mut input = b"hello there\r\n".to_vec();
        input.extend(frame(EXIT));
        let out = all(&input);
        assert!(matches!(out[0], Scanned::Dropped(..)));
        assert_eq!(
            out.last(),
            Some(&Scanned::Frame {
                frame: frame(EXIT),
                consumed: frame(EXIT).len()
            })
        );
    }

    #[test]
    fn oversized_lengths_are_refused() {
        let out = all(format!("Content-Length: {}\r\n\r\n{{}}", MAX_FRAME + 1).as_bytes());
        assert!(matches!(
            out[0],
            Scanned::Dropped(_, "a header without a usable Content-Length")
        ));
    }

    /// Found by the `lsp_framing` fuzz target (corpus file
    /// `crash-lowercase-header-then-exact-one`): with a `content-length:`
    /// frame and a later `Content-Length:` header in the same read, the
    /// scanner resynchronised on the exact-case one and dropped the frame
    /// before it; read in two parts, the same input kept it.
    #[test]
    fn regression_a_lowercase_header_frame_was_dropped_when_an_exact_one_followed() {
        let mut input = format!("content-length: {}\r\n\r\n{EXIT}", EXIT.len()).into_bytes();
        input.extend(frame(INITIALIZED));
        assert_eq!(forwarded(&input), vec![frame(EXIT), frame(INITIALIZED)]);
    }

    /// Found by the `lsp_framing` fuzz target (corpus files
    /// `seed-lowercase-header`, `seed-content-type`, `seed-json-not-a-message`
    /// and the fuzzer's own): the guard forwarded frames tower-lsp-server's
    /// decoder refuses, and `owt lsp` stopped serving at the first one.
    #[test]
    fn regression_frames_the_server_decoder_refuses_killed_the_server() {
        let n = INITIALIZED.len();
        // Headers the decoder refuses are replaced by the canonical one.
        for header in [
            format!("content-length: {n}"),
            format!("CONTENT-LENGTH:{n}  "),
            format!("Content-Length: {n}\r\nX-One: 1\r\nX-Two: 2"),
            format!("Content-Length: {n}\r\nContent-Type: text/plain; charset=latin1"),
        ] {
            let input = [
                format!("{header}\r\n\r\n").as_bytes(),
                INITIALIZED.as_bytes(),
            ]
            .concat();
            let out = all(&input);
            assert_eq!(
                out,
                vec![Scanned::Frame {
                    frame: frame(INITIALIZED),
                    consumed: input.len()
                }],
                "{header:?}"
            );
        }
        // Bodies that are JSON but not a message, or not UTF-8, are dropped.
        for body in [
            &b"[]"[..],
            b"{}",
            b"5",
            br#"{"jsonrpc":"1.0","method":"x"}"#,
            b"{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"unused\":\"\xff\"}",
        ] {
            let input = [
                format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes(),
                body,
            ]
            .concat();
            assert_eq!(forwarded(&input), Vec::<Vec<u8>>::new(), "{body:?}");
        }
    }
}
