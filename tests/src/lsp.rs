//! An LSP client for end-to-end tests: spawns the real `owt lsp` over stdio.
//!
//! `LspClient::start(env, root, init_options)` initializes it; `request`
//! waits for the response; `await_notification` / `await_request` wait for
//! server messages with a deadline that fails loudly. Server requests the
//! harness knows (`window/workDoneProgress/create`, `window/showDocument`,
//! `owt/openTerminal`) are answered automatically and recorded; any other
//! server request is answered "method not found" (as Helix does) and
//! recorded. Dropping the client sends shutdown/exit and checks the server
//! exits.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::TestEnv;

/// A message from the server.
#[derive(Debug, Clone)]
pub enum Incoming {
    Response {
        id: i64,
        result: Result<Value, Value>,
    },
    Notification {
        method: String,
        params: Value,
    },
    Request {
        id: Value,
        method: String,
        params: Value,
    },
}

pub struct LspClient {
    child: Child,
    stdin: ChildStdin,
    rx: Receiver<Value>,
    next_id: i64,
    /// Notifications and server requests seen, in order.
    pub seen: VecDeque<Incoming>,
    pub stderr_path: std::path::PathBuf,
    answer_custom: bool,
    /// Server requests the harness leaves to the test to answer
    /// ([`LspClient::await_held_request`], [`LspClient::reply`]).
    pub held: Vec<&'static str>,
}

/// Reads LSP frames from `reader` and sends each JSON body; stops at EOF.
fn read_frames(mut reader: impl BufRead, tx: mpsc::Sender<Value>) {
    loop {
        let mut length = None;
        loop {
            let mut line = String::new();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some(v) = line.strip_prefix("Content-Length: ") {
                length = v.parse::<usize>().ok();
            }
        }
        let Some(length) = length else { return };
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        match serde_json::from_slice(&body) {
            Ok(value) => {
                if tx.send(value).is_err() {
                    return;
                }
            }
            Err(e) => panic!(
                "the server sent invalid JSON: {e}: {}",
                String::from_utf8_lossy(&body)
            ),
        }
    }
}

impl LspClient {
    /// Spawns `owt lsp` in `root` and runs initialize/initialized.
    /// `capabilities` are the client capabilities; `answer_custom` says
    /// whether this client handles `owt/openTerminal` (Helix does not).
    pub fn start(
        env: &TestEnv,
        root: &Path,
        init_options: Value,
        capabilities: Value,
        answer_custom: bool,
    ) -> LspClient {
        let stderr_path = env
            .path()
            .join(format!("lsp-stderr-{}.log", std::process::id()));
        let stderr = std::fs::File::create(&stderr_path).unwrap();
        let mut cmd = env.owt_cmd(root, ["lsp"]);
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr);
        let mut child = cmd.spawn().expect("spawning owt lsp");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || read_frames(BufReader::new(stdout), tx));
        let mut client = LspClient {
            child,
            stdin,
            rx,
            next_id: 0,
            seen: VecDeque::new(),
            stderr_path,
            answer_custom,
            held: Vec::new(),
        };
        let root_uri = format!("file://{}", root.display());
        let result = client.request(
            "initialize",
            json!({
                "processId": std::process::id(),
                "rootUri": root_uri,
                "workspaceFolders": [{"uri": root_uri, "name": "root"}],
                "capabilities": capabilities,
                "initializationOptions": init_options,
            }),
        );
        assert!(
            result["capabilities"]["executeCommandProvider"]["commands"].is_array(),
            "{result}"
        );
        client.notify("initialized", json!({}));
        client
    }

    /// Capabilities of a typical client (Neovim-like).
    pub fn default_capabilities() -> Value {
        json!({
            "window": {"workDoneProgress": true, "showDocument": {"support": true}},
            "textDocument": {"publishDiagnostics": {"relatedInformation": true}},
        })
    }

    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.stdin.write_all(bytes).unwrap();
        self.stdin.flush().unwrap();
    }

    fn send(&mut self, value: &Value) {
        let body = serde_json::to_vec(value).unwrap();
        let mut frame = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
        frame.extend(body);
        self.send_raw(&frame);
    }

    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Sends a request; returns its id.
    pub fn send_request(&mut self, method: &str, params: Value) -> i64 {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// Sends a request and waits for its result; panics on an error response.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        match self.request_result(method, params) {
            Ok(v) => v,
            Err(e) => panic!("{method} failed: {e}"),
        }
    }

    /// Sends a request and waits for its result or error.
    pub fn request_result(&mut self, method: &str, params: Value) -> Result<Value, Value> {
        let id = self.send_request(method, params);
        self.await_response(id, Duration::from_secs(60))
    }

    pub fn await_response(&mut self, id: i64, timeout: Duration) -> Result<Value, Value> {
        let deadline = Instant::now() + timeout;
        loop {
            match self.next_message(deadline, &format!("the response to request {id}")) {
                Incoming::Response { id: got, result } if got == id => return result,
                other => self.seen.push_back(other),
            }
        }
    }

    /// Waits for the next message; answers known server requests.
    fn next_message(&mut self, deadline: Instant, what: &str) -> Incoming {
        let timeout = deadline.saturating_duration_since(Instant::now());
        let value = match self.rx.recv_timeout(timeout) {
            Ok(v) => v,
            Err(RecvTimeoutError::Timeout) => panic!(
                "timed out waiting for {what}; seen: {:#?}\nserver stderr: {}",
                self.seen,
                std::fs::read_to_string(&self.stderr_path).unwrap_or_default()
            ),
            Err(RecvTimeoutError::Disconnected) => panic!(
                "the server closed its output while we waited for {what}; stderr: {}",
                std::fs::read_to_string(&self.stderr_path).unwrap_or_default()
            ),
        };
        let incoming = if let Some(method) = value.get("method").and_then(Value::as_str) {
            let params = value.get("params").cloned().unwrap_or(Value::Null);
            match value.get("id") {
                Some(id) => Incoming::Request {
                    id: id.clone(),
                    method: method.to_string(),
                    params,
                },
                None => Incoming::Notification {
                    method: method.to_string(),
                    params,
                },
            }
        } else {
            let id = value["id"].as_i64().unwrap_or(-1);
            let result = match value.get("error") {
                Some(err) => Err(err.clone()),
                None => Ok(value.get("result").cloned().unwrap_or(Value::Null)),
            };
            Incoming::Response { id, result }
        };
        if let Incoming::Request { id, method, .. } = &incoming {
            if self.held.contains(&method.as_str()) {
                return incoming;
            }
            let reply = match method.as_str() {
                "window/workDoneProgress/create" => {
                    json!({"jsonrpc": "2.0", "id": id, "result": null})
                }
                "window/showDocument" => {
                    json!({"jsonrpc": "2.0", "id": id, "result": {"success": true}})
                }
                "owt/openTerminal" if self.answer_custom => {
                    json!({"jsonrpc": "2.0", "id": id, "result": {"opened": true}})
                }
                _ => {
                    json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "method not found"}})
                }
            };
            self.send(&reply);
        }
        incoming
    }

    /// The params of notifications `method` received so far that no await
    /// consumed.
    pub fn notifications(&self, method: &str) -> Vec<Value> {
        self.seen
            .iter()
            .filter_map(|m| match m {
                Incoming::Notification { method: m2, params } if m2 == method => {
                    Some(params.clone())
                }
                _ => None,
            })
            .collect()
    }

    /// Waits for a notification `method` whose params satisfy `pred`
    /// (earlier ones seen are checked first and consumed).
    pub fn await_notification(
        &mut self,
        method: &str,
        timeout: Duration,
        mut pred: impl FnMut(&Value) -> bool,
    ) -> Value {
        if let Some(pos) = self.seen.iter().position(
            |m| matches!(m, Incoming::Notification { method: m2, params } if m2 == method && pred(params)),
        ) {
            if let Some(Incoming::Notification { params, .. }) = self.seen.remove(pos) {
                return params;
            }
        }
        let deadline = Instant::now() + timeout;
        loop {
            match self.next_message(deadline, &format!("notification {method}")) {
                Incoming::Notification { method: m, params } if m == method && pred(&params) => {
                    return params
                }
                other => self.seen.push_back(other),
            }
        }
    }

    /// Waits for a server request `method` (already answered by the harness).
    pub fn await_request(&mut self, method: &str, timeout: Duration) -> Value {
        if let Some(pos) = self
            .seen
            .iter()
            .position(|m| matches!(m, Incoming::Request { method: m2, .. } if m2 == method))
        {
            if let Some(Incoming::Request { params, .. }) = self.seen.remove(pos) {
                return params;
            }
        }
        let deadline = Instant::now() + timeout;
        loop {
            match self.next_message(deadline, &format!("server request {method}")) {
                Incoming::Request {
                    method: m, params, ..
                } if m == method => return params,
                other => self.seen.push_back(other),
            }
        }
    }

    /// Waits for a server request `method` that the harness holds
    /// ([`LspClient::held`]): its id and params, for [`LspClient::reply`].
    pub fn await_held_request(&mut self, method: &str, timeout: Duration) -> (Value, Value) {
        if let Some(pos) = self
            .seen
            .iter()
            .position(|m| matches!(m, Incoming::Request { method: m2, .. } if m2 == method))
        {
            if let Some(Incoming::Request { id, params, .. }) = self.seen.remove(pos) {
                return (id, params);
            }
        }
        let deadline = Instant::now() + timeout;
        loop {
            match self.next_message(deadline, &format!("server request {method}")) {
                Incoming::Request {
                    id,
                    method: m,
                    params,
                } if m == method => return (id, params),
                other => self.seen.push_back(other),
            }
        }
    }

    /// Answers the held server request `id` with `result`.
    pub fn reply(&mut self, id: Value, result: Value) {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "result": result}));
    }

    /// Waits for `publishDiagnostics` for `uri` whose diagnostics satisfy `pred`.
    pub fn await_diagnostics(
        &mut self,
        uri: &str,
        timeout: Duration,
        mut pred: impl FnMut(&[Value]) -> bool,
    ) -> Vec<Value> {
        let params = self.await_notification("textDocument/publishDiagnostics", timeout, |p| {
            p["uri"] == uri
                && pred(
                    p["diagnostics"]
                        .as_array()
                        .map(Vec::as_slice)
                        .unwrap_or(&[]),
                )
        });
        params["diagnostics"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Kills the server with SIGKILL (crash tests).
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        std::mem::forget(self);
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for LspClient {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let _ = self.child.kill();
            return;
        }
        let id = self.send_request("shutdown", Value::Null);
        let result = self.await_response(id, Duration::from_secs(30));
        assert!(result.is_ok(), "shutdown failed: {result:?}");
        self.notify("exit", Value::Null);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match self.child.try_wait() {
                Ok(Some(_)) => break,
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                _ => {
                    let _ = self.child.kill();
                    panic!("owt lsp did not exit after shutdown/exit");
                }
            }
        }
        let unhandled: Vec<&Incoming> = self
            .seen
            .iter()
            .filter(|m| {
                matches!(m, Incoming::Request { method, .. } if !matches!(method.as_str(),
                "window/workDoneProgress/create" | "window/showDocument" | "owt/openTerminal"))
            })
            .collect();
        assert!(
            unhandled.is_empty(),
            "server requests the client could not handle: {unhandled:?}"
        );
    }
}
