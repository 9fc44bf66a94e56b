//! The checks of the `lsp_framing` fuzz target (see
//! `owt::fuzzing::lsp_framing`): the input guard, then JSON-RPC, params
//! and position decoding as the server does them. Here because only this
//! module knows LSP types.

use std::collections::HashMap;

use tower_lsp_server::jsonrpc;
use tower_lsp_server::ls_types::{
    CodeActionParams, DidChangeTextDocumentParams, DidCloseTextDocumentParams,
    DidOpenTextDocumentParams, InitializeParams, Position, Uri,
};

use super::convert;
use super::framing::{FrameScanner, Scanned};
use super::requests::code_action;

/// Inputs up to this long must give the same frames however they are split
/// into reads. (Longer ones may not: a header still unterminated after
/// 4 KiB is dropped, and whether it is depends on what has arrived.)
const SPLIT_INDEPENDENT_LEN: usize = 4096;

/// See `owt::fuzzing::lsp_framing`.
pub fn lsp_framing(data: &[u8]) {
    let Some((&seed, input)) = data.split_first() else {
        return;
    };
    let frames = scan_frames(input, seed);
    if seed != 0 && input.len() <= SPLIT_INDEPENDENT_LEN {
        assert_eq!(
            frames,
            scan_frames(input, 0),
            "the frames depend on how the input was split into reads"
        );
    }
    let mut docs = HashMap::new();
    for frame in &frames {
        let body = check_forwarded_frame(frame);
        if let Ok(request) = serde_json::from_str::<jsonrpc::Request>(body) {
            apply_request(&request, &mut docs);
        }
    }
}

/// Feeds `input` to a scanner in reads whose sizes `seed` chooses and
/// returns the forwarded frames.
fn scan_frames(input: &[u8], seed: u8) -> Vec<Vec<u8>> {
    let mut scanner = FrameScanner::default();
    let mut frames = Vec::new();
    let (mut forwarded, mut dropped) = (0, 0);
    let mut rng = u32::from(seed) | 0x100;
    let mut rest = input;
    while !rest.is_empty() {
        let n = if seed == 0 {
            rest.len()
        } else {
            // xorshift32: deterministic read sizes of 1..=64 bytes.
            rng ^= rng << 13;
            rng ^= rng >> 17;
            rng ^= rng << 5;
            1 + (rng as usize % 64).min(rest.len() - 1)
        };
        let (read, tail) = rest.split_at(n);
        rest = tail;
        scanner.push(read);
        loop {
            let before = scanner.pending_len();
            let consumed = match scanner.next_scanned() {
                Scanned::NeedMore => break,
                Scanned::Frame { frame, consumed } => {
                    assert!(consumed > 0, "a frame of no input bytes");
                    forwarded += consumed;
                    frames.push(frame);
                    consumed
                }
                Scanned::Dropped(n, why) => {
                    assert!(n > 0, "dropped nothing ({why}): no progress");
                    dropped += n;
                    n
                }
            };
            assert_eq!(
                before - scanner.pending_len(),
                consumed,
                "the scanner consumed other bytes than it reported"
            );
        }
    }
    assert_eq!(
        forwarded + dropped + scanner.pending_len(),
        input.len(),
        "bytes lost or invented"
    );
    frames
}

/// Checks a forwarded frame against what tower-lsp-server's decoder reads
/// and returns its body.
fn check_forwarded_frame(frame: &[u8]) -> &str {
    let header_end = frame
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a forwarded frame has a header");
    let (header, body) = (&frame[..header_end], &frame[header_end + 4..]);
    assert_eq!(
        header,
        format!("Content-Length: {}", body.len()).as_bytes(),
        "a forwarded frame's header is not the canonical one: {:?}",
        String::from_utf8_lossy(header)
    );
    let body = std::str::from_utf8(body).expect("a forwarded frame's body is not UTF-8");
    let is_message = serde_json::from_str::<jsonrpc::Request>(body).is_ok()
        || serde_json::from_str::<jsonrpc::Response>(body).is_ok();
    assert!(
        is_message,
        "a forwarded frame's body is not a JSON-RPC message: {body:?}"
    );
    body
}

/// What the server does with the params of the methods that carry
/// positions or document text (`lsp::state`): documents keyed by URI,
/// changes applied through [`convert`].
fn apply_request(request: &jsonrpc::Request, docs: &mut HashMap<Uri, String>) {
    fn params<T: serde::de::DeserializeOwned>(request: &jsonrpc::Request) -> Option<T> {
        serde_json::from_value(request.params()?.clone()).ok()
    }
    match request.method() {
        "initialize" => {
            let _ = params::<InitializeParams>(request);
        }
        "textDocument/didOpen" => {
            if let Some(p) = params::<DidOpenTextDocumentParams>(request) {
                let _ = convert::uri_to_path(&p.text_document.uri);
                docs.insert(p.text_document.uri, p.text_document.text);
            }
        }
        "textDocument/didChange" => {
            if let Some(p) = params::<DidChangeTextDocumentParams>(request) {
                // Unknown documents change a sample text, to reach the
                // conversions without a didOpen first.
                let text = docs
                    .entry(p.text_document.uri)
                    .or_insert_with(|| "ab\n€x😀y\r\n\nlast".to_string());
                for change in &p.content_changes {
                    if let Some(range) = change.range {
                        check_offset(text, range.start);
                        check_offset(text, range.end);
                    }
                    convert::apply_change(text, change);
                }
            }
        }
        "textDocument/didClose" => {
            if let Some(p) = params::<DidCloseTextDocumentParams>(request) {
                docs.remove(&p.text_document.uri);
            }
        }
        "textDocument/codeAction" => {
            if let Some(p) = params::<CodeActionParams>(request) {
                let _ = convert::uri_to_path(&p.text_document.uri);
                if let Some(text) = docs.get(&p.text_document.uri) {
                    check_offset(text, p.range.start);
                    check_offset(text, p.range.end);
                }
                if let Some((first, last)) = code_action::selection_lines(p.range) {
                    let (start, end) = (p.range.start, p.range.end);
                    if (start.line, start.character) <= (end.line, end.character) {
                        assert!(first <= last, "{:?} → lines {first}..={last}", p.range);
                    }
                }
            }
        }
        _ => {}
    }
}

fn check_offset(text: &str, pos: Position) {
    let offset = convert::offset(text, pos);
    assert!(
        text.is_char_boundary(offset),
        "{pos:?} converted to {offset}, not a char boundary of {text:?}"
    );
}
