//! JSON-RPC 2.0 as ACP frames it on stdio: one message per line (UTF-8
//! JSON, no embedded newline), in both directions.
//!
//! Pure decoding ([`decode`]) and encoding ([`encode`]), a line reader that
//! bounds what one line may cost ([`LineReader`]), and the error codes
//! owt answers with ([`code`]). No I/O besides the reader given.
//!
//! Invariants: a line that is not a JSON-RPC message is a [`DecodeError`]
//! carrying what the peer should be told, never a panic; a line longer than
//! [`MAX_LINE`] is skipped whole (its bytes are read and dropped, never
//! held); every encoded message is one line.

use std::io::{self, BufRead};

use serde_json::{json, Map, Value};

/// Longest line kept (a file's content in `fs/write_text_file` travels in
/// one line); longer ones are dropped with [`Line::TooLong`].
pub const MAX_LINE: usize = 64 * 1024 * 1024;

/// JSON-RPC and ACP error codes (the one place they are chosen).
pub mod code {
    pub const PARSE_ERROR: i64 = -32700;
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INVALID_PARAMS: i64 = -32602;
    pub const INTERNAL_ERROR: i64 = -32603;
    /// ACP: the agent needs the client to authenticate first.
    pub const AUTH_REQUIRED: i64 = -32000;
    /// ACP: a file, session or terminal that does not exist.
    pub const RESOURCE_NOT_FOUND: i64 = -32002;
}

/// A request id: a number or a string, echoed back exactly as received.
#[derive(Debug, Clone, PartialEq)]
pub struct Id(pub Value);

impl Id {
    pub fn num(n: i64) -> Id {
        Id(Value::from(n))
    }

    /// A key for maps of pending requests (`1` and `"1"` differ).
    pub fn key(&self) -> String {
        self.0.to_string()
    }
}

/// An error object of a response.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> RpcError {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    pub fn invalid_params(message: impl Into<String>) -> RpcError {
        RpcError::new(code::INVALID_PARAMS, message)
    }

    pub fn not_found(message: impl Into<String>) -> RpcError {
        RpcError::new(code::RESOURCE_NOT_FOUND, message)
    }

    pub fn internal(message: impl Into<String>) -> RpcError {
        RpcError::new(code::INTERNAL_ERROR, message)
    }

    pub fn method_not_found(method: &str) -> RpcError {
        RpcError::new(
            code::METHOD_NOT_FOUND,
            format!("method not found: {method}"),
        )
    }

    fn to_json(&self) -> Value {
        let mut obj = Map::new();
        obj.insert("code".into(), Value::from(self.code));
        obj.insert("message".into(), Value::from(self.message.clone()));
        if let Some(data) = &self.data {
            obj.insert("data".into(), data.clone());
        }
        Value::Object(obj)
    }

    /// The message, with the `data.details` agents put the cause in.
    pub fn describe(&self) -> String {
        let details = self
            .data
            .as_ref()
            .and_then(|d| d.get("details").or_else(|| d.get("message")))
            .and_then(Value::as_str);
        match details {
            Some(d) if !d.is_empty() && d != self.message => format!("{} ({d})", self.message),
            _ => self.message.clone(),
        }
    }
}

impl std::fmt::Display for RpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (code {})", self.describe(), self.code)
    }
}

/// One JSON-RPC message.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    Request {
        id: Id,
        method: String,
        params: Value,
    },
    Notification {
        method: String,
        params: Value,
    },
    Response {
        id: Id,
        result: Result<Value, RpcError>,
    },
}

/// Why a line is not a message, and what to answer (a request's `id` when
/// one could be read, for an `Invalid Request` error).
#[derive(Debug, Clone, PartialEq)]
pub enum DecodeError {
    /// Not UTF-8 or not JSON: answer a parse error with id `null`.
    Parse(String),
    /// JSON, but not a JSON-RPC 2.0 message.
    Invalid { id: Option<Id>, why: String },
}

impl DecodeError {
    /// The error response the peer should get (JSON-RPC: parse errors and
    /// invalid requests are answered; `id` null when unknown).
    pub fn response(&self) -> Message {
        let (id, error) = match self {
            DecodeError::Parse(why) => (
                Id(Value::Null),
                RpcError::new(code::PARSE_ERROR, format!("parse error: {why}")),
            ),
            DecodeError::Invalid { id, why } => (
                id.clone().unwrap_or(Id(Value::Null)),
                RpcError::new(code::INVALID_REQUEST, format!("invalid request: {why}")),
            ),
        };
        Message::Response {
            id,
            result: Err(error),
        }
    }
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DecodeError::Parse(why) => write!(f, "not JSON: {why}"),
            DecodeError::Invalid { why, .. } => write!(f, "not a JSON-RPC message: {why}"),
        }
    }
}

fn valid_id(v: &Value) -> bool {
    v.is_string() || v.is_i64() || v.is_u64()
}

/// Decodes one line (without its newline; a trailing `\r` is allowed).
pub fn decode(line: &[u8]) -> Result<Message, DecodeError> {
    let text = std::str::from_utf8(line).map_err(|e| DecodeError::Parse(e.to_string()))?;
    let value: Value = serde_json::from_str(text.trim_end_matches('\r'))
        .map_err(|e| DecodeError::Parse(e.to_string()))?;
    decode_value(value)
}

/// Decodes one JSON value as a message.
pub fn decode_value(value: Value) -> Result<Message, DecodeError> {
    let Value::Object(mut obj) = value else {
        return Err(DecodeError::Invalid {
            id: None,
            why: "not a JSON object (batches are not used by ACP)".into(),
        });
    };
    let raw_id = obj.remove("id");
    let id = match raw_id {
        None => None,
        Some(v) if valid_id(&v) => Some(Id(v)),
        Some(Value::Null) if !obj.contains_key("method") => Some(Id(Value::Null)),
        Some(other) => {
            return Err(DecodeError::Invalid {
                id: None,
                why: format!("bad id {other}"),
            })
        }
    };
    let error_id = id.clone().filter(|i| !i.0.is_null());
    let invalid = |why: String| DecodeError::Invalid {
        id: error_id.clone(),
        why,
    };
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(invalid("`jsonrpc` is not \"2.0\"".into()));
    }
    if let Some(method) = obj.remove("method") {
        let Value::String(method) = method else {
            return Err(invalid("`method` is not a string".into()));
        };
        let params = obj.remove("params").unwrap_or(Value::Null);
        if !(params.is_object() || params.is_array() || params.is_null()) {
            return Err(invalid("`params` is neither an object nor an array".into()));
        }
        return Ok(match id {
            Some(id) => Message::Request { id, method, params },
            None => Message::Notification { method, params },
        });
    }
    let Some(id) = id else {
        return Err(invalid(
            "neither a request (no `method`) nor a response (no `id`)".into(),
        ));
    };
    match (obj.remove("result"), obj.remove("error")) {
        (Some(result), None) => Ok(Message::Response {
            id,
            result: Ok(result),
        }),
        (None, Some(Value::Object(e))) => {
            let code = e.get("code").and_then(Value::as_i64);
            let message = e.get("message").and_then(Value::as_str);
            match (code, message) {
                (Some(code), Some(message)) => Ok(Message::Response {
                    id,
                    result: Err(RpcError {
                        code,
                        message: message.to_string(),
                        data: e.get("data").cloned(),
                    }),
                }),
                _ => Err(invalid(
                    "an error without a numeric `code` and a `message`".into(),
                )),
            }
        }
        (None, Some(_)) => Err(invalid("`error` is not an object".into())),
        (Some(_), Some(_)) => Err(invalid("a response with both `result` and `error`".into())),
        (None, None) => Err(invalid(
            "a response with neither `result` nor `error`".into(),
        )),
    }
}

/// The message as JSON.
pub fn to_value(msg: &Message) -> Value {
    match msg {
        Message::Request { id, method, params } => {
            json!({"jsonrpc": "2.0", "id": id.0, "method": method, "params": params})
        }
        Message::Notification { method, params } => {
            json!({"jsonrpc": "2.0", "method": method, "params": params})
        }
        Message::Response { id, result } => match result {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id.0, "result": result}),
            Err(error) => json!({"jsonrpc": "2.0", "id": id.0, "error": error.to_json()}),
        },
    }
}

/// One line: the message as compact JSON (which never contains a raw
/// newline) and `\n`.
pub fn encode(msg: &Message) -> Vec<u8> {
    let mut out = serde_json::to_vec(&to_value(msg)).unwrap_or_default();
    out.push(b'\n');
    out
}

/// What [`LineReader::next_line`] read.
#[derive(Debug, PartialEq)]
pub enum Line {
    /// One line, without its `\n`.
    Line(Vec<u8>),
    /// A line longer than the limit was skipped; its length.
    TooLong(usize),
    /// The stream ended (a last line without `\n` is returned first).
    End,
}

/// Reads lines from a buffered reader, holding at most `limit` bytes of
/// one line.
pub struct LineReader<R> {
    inner: R,
    limit: usize,
}

impl<R: BufRead> LineReader<R> {
    pub fn new(inner: R) -> LineReader<R> {
        LineReader::with_limit(inner, MAX_LINE)
    }

    pub fn with_limit(inner: R, limit: usize) -> LineReader<R> {
        LineReader { inner, limit }
    }

    pub fn next_line(&mut self) -> io::Result<Line> {
        let mut line = Vec::new();
        let mut skipped = 0usize;
        loop {
            let (done, used) = {
                let buf = match self.inner.fill_buf() {
                    Ok(buf) => buf,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(e),
                };
                if buf.is_empty() {
                    if skipped > 0 {
                        return Ok(Line::TooLong(skipped));
                    }
                    return Ok(if line.is_empty() {
                        Line::End
                    } else {
                        Line::Line(line)
                    });
                }
                match buf.iter().position(|b| *b == b'\n') {
                    Some(i) => {
                        if skipped == 0 && line.len() + i <= self.limit {
                            line.extend_from_slice(&buf[..i]);
                        } else {
                            skipped += line.len() + i;
                            line = Vec::new();
                        }
                        (true, i + 1)
                    }
                    None => {
                        if skipped == 0 && line.len() + buf.len() <= self.limit {
                            line.extend_from_slice(buf);
                        } else {
                            skipped += line.len() + buf.len();
                            line = Vec::new();
                        }
                        (false, buf.len())
                    }
                }
            };
            self.inner.consume(used);
            if done {
                return Ok(if skipped > 0 {
                    Line::TooLong(skipped)
                } else {
                    Line::Line(line)
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_notifications_and_responses_round_trip() {
        let messages = [
            Message::Request {
                id: Id::num(1),
                method: "initialize".into(),
                params: json!({"protocolVersion": 1}),
            },
            Message::Request {
                id: Id(json!("52453897-892d")),
                method: "session/request_permission".into(),
                params: json!({}),
            },
            Message::Notification {
                method: "session/update".into(),
                params: json!({"update": {"sessionUpdate": "plan", "entries": []}}),
            },
            Message::Response {
                id: Id::num(3),
                result: Ok(json!({"stopReason": "end_turn"})),
            },
            Message::Response {
                id: Id(json!("x")),
                result: Ok(Value::Null),
            },
            Message::Response {
                id: Id::num(4),
                result: Err(RpcError {
                    code: -32002,
                    message: "Resource not found".into(),
                    data: Some(json!({"path": "a\nb"})),
                }),
            },
        ];
        for msg in messages {
            let line = encode(&msg);
            assert_eq!(line.iter().filter(|b| **b == b'\n').count(), 1);
            assert_eq!(line.last(), Some(&b'\n'));
            assert_eq!(decode(&line[..line.len() - 1]).unwrap(), msg);
        }
    }

    #[test]
    fn malformed_lines_say_what_to_answer() {
        let parse = decode(b"{\"jsonrpc\": \"2.0\", ").unwrap_err();
        assert!(matches!(parse, DecodeError::Parse(_)));
        let Message::Response { id, result } = parse.response() else {
            panic!()
        };
        assert_eq!(id, Id(Value::Null));
        assert_eq!(result.unwrap_err().code, code::PARSE_ERROR);

        assert!(matches!(decode(b"\xff\xfe"), Err(DecodeError::Parse(_))));
        for (line, id) in [
            (&br#"[1, 2]"#[..], None),
            (
                br#"{"jsonrpc": "1.0", "id": 7, "method": "x"}"#,
                Some(Id::num(7)),
            ),
            (
                br#"{"jsonrpc": "2.0", "id": 7, "method": 3}"#,
                Some(Id::num(7)),
            ),
            (
                br#"{"jsonrpc": "2.0", "id": {"a": 1}, "method": "x"}"#,
                None,
            ),
            (
                br#"{"jsonrpc": "2.0", "id": 7, "method": "x", "params": 5}"#,
                Some(Id::num(7)),
            ),
            (br#"{"jsonrpc": "2.0", "id": 7}"#, Some(Id::num(7))),
            (
                br#"{"jsonrpc": "2.0", "id": 7, "error": {"code": "x"}}"#,
                Some(Id::num(7)),
            ),
            (br#"{"jsonrpc": "2.0"}"#, None),
        ] {
            match decode(line) {
                Err(DecodeError::Invalid { id: got, .. }) => {
                    assert_eq!(got, id, "{}", String::from_utf8_lossy(line))
                }
                other => panic!("{}: {other:?}", String::from_utf8_lossy(line)),
            }
        }
        // A response to an unreadable request has id null.
        assert!(matches!(
            decode(
                br#"{"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "bad"}}"#
            ),
            Ok(Message::Response { .. })
        ));
    }

    #[test]
    fn long_lines_are_skipped_whole() {
        let input = b"short\nthis line is far too long\nok\nend-without-newline";
        let mut r = LineReader::with_limit(std::io::BufReader::with_capacity(4, &input[..]), 8);
        assert_eq!(r.next_line().unwrap(), Line::Line(b"short".to_vec()));
        assert_eq!(r.next_line().unwrap(), Line::TooLong(25));
        assert_eq!(r.next_line().unwrap(), Line::Line(b"ok".to_vec()));
        assert_eq!(r.next_line().unwrap(), Line::TooLong(19));
        assert_eq!(r.next_line().unwrap(), Line::End);
        let mut r = LineReader::with_limit(&b"a\nlast"[..], 8);
        assert_eq!(r.next_line().unwrap(), Line::Line(b"a".to_vec()));
        assert_eq!(r.next_line().unwrap(), Line::Line(b"last".to_vec()));
        assert_eq!(r.next_line().unwrap(), Line::End);
    }
}
