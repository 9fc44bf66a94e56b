//! The checks of the `acp_framing` fuzz target (see `crate::fuzzing`):
//! the bytes an ACP peer sends, through the line reader, the JSON-RPC
//! decoder and the readers of ACP messages, into a transcript.

use std::io::BufReader;

use serde_json::Value;

use super::rpc::{self, Line, LineReader, Message};
use super::schema;
use super::transcript::{self, Transcript};

/// Limit of a line in the fuzz target (small, so long lines are reached).
const FUZZ_LINE: usize = 4096;

/// Invariants: nothing panics; the reader conserves bytes (every byte is
/// in a line, a skipped line or a newline); every line decodes to a message
/// that re-encodes as one line decoding to the same message, or to an
/// error whose response is a well-formed error response; updates,
/// permission requests, prompt and initialize results are read without
/// panicking, and the transcript stays bounded and renders.
pub fn acp_framing(data: &[u8]) {
    // The first byte picks the reader's buffer size (how reads split).
    let (split, body) = match data.split_first() {
        Some((b, rest)) => (usize::from(*b % 64) + 1, rest),
        None => (1, data),
    };
    let mut lines = LineReader::with_limit(BufReader::with_capacity(split, body), FUZZ_LINE);
    let mut seen = 0usize;
    let mut newlines = 0usize;
    let mut transcript = Transcript::new();
    loop {
        let line = match lines.next_line().expect("reading from a slice") {
            Line::End => break,
            Line::TooLong(n) => {
                assert!(n > FUZZ_LINE, "a line of {n} bytes skipped as too long");
                seen += n;
                newlines += 1;
                continue;
            }
            Line::Line(line) => line,
        };
        assert!(line.len() <= FUZZ_LINE);
        assert!(!line.contains(&b'\n'));
        seen += line.len();
        newlines += 1;
        match rpc::decode(&line) {
            Ok(msg) => {
                let encoded = rpc::encode(&msg);
                assert_eq!(encoded.iter().filter(|b| **b == b'\n').count(), 1);
                let again = rpc::decode(&encoded[..encoded.len() - 1]).expect("re-decoding");
                assert_eq!(again, msg, "a message does not survive encoding");
                read_message(&msg, &mut transcript);
            }
            Err(e) => {
                let response = rpc::encode(&e.response());
                match rpc::decode(&response[..response.len() - 1]) {
                    Ok(Message::Response {
                        result: Err(err), ..
                    }) => {
                        assert!(
                            err.code == rpc::code::PARSE_ERROR
                                || err.code == rpc::code::INVALID_REQUEST
                        )
                    }
                    other => panic!("an error response that reads as {other:?}"),
                }
            }
        }
    }
    // Every byte: in a line, a skipped line, or a newline (the last line
    // may lack one).
    assert!(seen + newlines >= body.len() && seen + newlines <= body.len() + 1);
    assert!(transcript.len() <= transcript::MAX_ENTRIES);
    let view = transcript.view();
    let _ = transcript::render(&view.entries);
    let _ = transcript::replay_updates(&view.entries);
}

fn read_message(msg: &Message, transcript: &mut Transcript) {
    match msg {
        Message::Notification { params, .. } => {
            transcript.apply(&schema::read_update(&params["update"]), false);
        }
        Message::Request { params, .. } => {
            if let Ok(p) = schema::read_permission(params, 1) {
                transcript.permission(&p);
                let option = params["answer"].as_str();
                if let Ok(chosen) = schema::choose_option(&p.options, option, false) {
                    transcript.answered(chosen.map_or("cancelled", |o| o.name.as_str()));
                }
                let _ = schema::choose_option(&p.options, None, true);
            }
            let _ = schema::prompt_text(&params["prompt"]);
        }
        Message::Response { result: Ok(v), .. } => {
            let _ = schema::read_prompt_result(v);
            let _ = schema::read_initialize(v);
            if let Value::String(s) = &v["stopReason"] {
                transcript.turn_ended(s);
            }
        }
        Message::Response { result: Err(e), .. } => {
            let _ = e.describe();
        }
    }
}
