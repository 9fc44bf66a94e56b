//! An in-process LSP test harness (ruff_server's `TestServer`): the real
//! server — transport, input guard, owner thread, live guard — spoken to
//! over in-memory pipes, with the store under the test's own `OWT_HOME`.
//!
//! `TestServer::start` runs initialize/initialized; `request` waits for the
//! response; `flush` waits until everything the server decided so far
//! reached the client (a marker notification after the buffers it holds
//! went to the guard); `await_notification` waits with a deadline that
//! fails loudly. Server requests the harness knows
//! (`window/workDoneProgress/create`, `window/showDocument`,
//! `owt/openTerminal`) are answered and recorded. Dropping it sends
//! shutdown and exit, waits for the transport and the owner thread to
//! end, and checks that no server request went unanswered.
//!
//! The out-of-process end-to-end suite (`tests/tests/lsp*.rs`) spawns the
//! built binary over stdio; this one is for library-level behaviour,
//! about a hundred times faster.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, DuplexStream};

const DEADLINE: Duration = Duration::from_secs(20);

/// Server requests the harness answers, by method.
const ANSWERED: &[&str] = &[
    "window/workDoneProgress/create",
    "window/showDocument",
    "owt/openTerminal",
];

pub struct TestServer {
    rt: tokio::runtime::Runtime,
    to_server: Option<DuplexStream>,
    from_server: Receiver<Value>,
    serve: Option<tokio::task::JoinHandle<Option<std::thread::JoinHandle<()>>>>,
    next_id: i64,
    /// Notifications and server requests seen and not yet taken.
    pub seen: VecDeque<Value>,
    /// Server requests the harness could not answer.
    unanswered: Vec<Value>,
}

/// Reads frames from the server and sends each body; ends at EOF.
async fn read_frames(output: DuplexStream, tx: mpsc::Sender<Value>) {
    let mut reader = BufReader::new(output);
    loop {
        let mut length = None;
        loop {
            let mut line = String::new();
            match reader.read_line(&mut line).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some(n) = line.strip_prefix("Content-Length: ") {
                length = n.parse::<usize>().ok();
            }
        }
        let Some(length) = length else { return };
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).await.is_err() {
            return;
        }
        let value: Value = serde_json::from_slice(&body).expect("the server sent invalid JSON");
        if tx.send(value).is_err() {
            return;
        }
    }
}

impl TestServer {
    /// Starts a server whose store lives under `owt_home`, initialized on
    /// the workspace `root` with `init_options` and `capabilities`.
    pub fn start(owt_home: &Path, root: &Path, init_options: Value, capabilities: Value) -> Self {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a runtime for the test server");
        let (client_end, server_in) = tokio::io::duplex(1 << 20);
        let (server_out, client_read) = tokio::io::duplex(1 << 20);
        let (tx, from_server) = mpsc::channel();
        let home = owt_home.to_path_buf();
        let serve = rt.spawn(async move {
            let (guarded, reader) = tokio::io::duplex(1 << 20);
            tokio::spawn(super::framing::pump(server_in, guarded));
            super::serve(reader, server_out, Ok(home)).await
        });
        rt.spawn(read_frames(client_read, tx));
        let mut server = TestServer {
            rt,
            to_server: Some(client_end),
            from_server,
            serve: Some(serve),
            next_id: 0,
            seen: VecDeque::new(),
            unanswered: Vec::new(),
        };
        let uri = uri(root);
        let initialized = server.request(
            "initialize",
            json!({
                "processId": null,
                "rootUri": uri,
                "workspaceFolders": [{"uri": uri, "name": "root"}],
                "capabilities": capabilities,
                "initializationOptions": init_options,
            }),
        );
        assert!(initialized.is_ok(), "initialize failed: {initialized:?}");
        server.notify("initialized", json!({}));
        server
    }

    fn write(&mut self, message: Value) {
        let body = message.to_string();
        let frame = format!("Content-Length: {}\r\n\r\n{body}", body.len());
        let pipe = self.to_server.as_mut().expect("the server is running");
        self.rt
            .block_on(pipe.write_all(frame.as_bytes()))
            .expect("writing to the server");
    }

    pub fn notify(&mut self, method: &str, params: Value) {
        self.write(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Sends a request and waits for its response (`Err`: the error object).
    pub fn request(&mut self, method: &str, params: Value) -> Result<Value, Value> {
        self.next_id += 1;
        let id = self.next_id;
        self.write(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let message = self.next_matching(&format!("the response to {method}"), |m| {
            m.get("id") == Some(&json!(id)) && m.get("method").is_none()
        });
        match message.get("error") {
            Some(error) => Err(error.clone()),
            None => Ok(message.get("result").cloned().unwrap_or(Value::Null)),
        }
    }

    /// Receives until `want` matches a message (the others are kept in
    /// [`TestServer::seen`], server requests answered on the way).
    fn next_matching(&mut self, what: &str, want: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + DEADLINE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let message = match self.from_server.recv_timeout(left) {
                Ok(message) => message,
                Err(RecvTimeoutError::Timeout) => {
                    panic!(
                        "timed out after {DEADLINE:?} waiting for {what}; seen: {:#?}",
                        self.seen
                    )
                }
                Err(RecvTimeoutError::Disconnected) => panic!("the server ended before {what}"),
            };
            if message.get("method").is_some() && message.get("id").is_some() {
                self.answer(&message);
            }
            if want(&message) {
                return message;
            }
            if message.get("method").is_some() {
                self.seen.push_back(message);
            }
        }
    }

    fn answer(&mut self, request: &Value) {
        let method = request["method"].as_str().unwrap_or_default();
        let id = request["id"].clone();
        if !ANSWERED.contains(&method) {
            self.unanswered.push(request.clone());
            self.write(json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "method not found"}}));
            return;
        }
        let result = match method {
            "window/showDocument" => json!({"success": true}),
            "owt/openTerminal" => json!({"opened": true}),
            _ => Value::Null,
        };
        self.write(json!({"jsonrpc": "2.0", "id": id, "result": result}));
    }

    /// Waits until everything the server decided before this call (the
    /// unsaved buffers it holds handed to the guard included) has reached
    /// the client; what arrived is in [`TestServer::seen`].
    pub fn flush(&mut self) {
        self.next_id += 1;
        let marker = format!("flush-{}", self.next_id);
        self.notify("$/owt/flush", json!(marker));
        self.next_matching("the flush marker", |m| {
            m["method"] == "$/owt/flushed" && m["params"] == json!(marker)
        });
    }

    /// Takes the first notification (seen or to come) of `method` for which
    /// `want` holds.
    pub fn await_notification(&mut self, method: &str, want: impl Fn(&Value) -> bool) -> Value {
        if let Some(i) = self
            .seen
            .iter()
            .position(|m| m["method"] == method && want(&m["params"]))
        {
            return self
                .seen
                .remove(i)
                .map(|m| m["params"].clone())
                .unwrap_or_default();
        }
        self.next_matching(&format!("a {method} notification"), |m| {
            m["method"] == method && want(&m["params"])
        })["params"]
            .clone()
    }

    /// The diagnostics last published for each document, among the
    /// messages seen so far (which are consumed).
    pub fn published(&mut self) -> std::collections::BTreeMap<String, Vec<Value>> {
        let mut out = std::collections::BTreeMap::new();
        self.seen.retain(|m| {
            if m["method"] != "textDocument/publishDiagnostics" {
                return true;
            }
            let uri = m["params"]["uri"].as_str().unwrap_or_default().to_string();
            let diagnostics = m["params"]["diagnostics"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            out.insert(uri, diagnostics);
            false
        });
        out
    }

    pub fn open(&mut self, path: &Path, text: &str) {
        self.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri(path), "languageId": "text", "version": 1, "text": text}}),
        );
    }

    /// Replaces the whole text of an open document.
    pub fn change(&mut self, path: &Path, version: i32, text: &str) {
        self.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri(path), "version": version}, "contentChanges": [{"text": text}]}),
        );
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if std::thread::panicking() {
            // Leave the runtime to be torn down; the assertion that failed
            // is the message that matters.
            return;
        }
        let shutdown = self.request("shutdown", Value::Null);
        assert!(shutdown.is_ok(), "shutdown failed: {shutdown:?}");
        self.notify("exit", Value::Null);
        self.to_server = None;
        let serve = self.serve.take().expect("the server task");
        let owner = self
            .rt
            .block_on(async { tokio::time::timeout(DEADLINE, serve).await })
            .expect("the server did not end after exit")
            .expect("the server task panicked");
        if let Some(owner) = owner {
            let deadline = Instant::now() + DEADLINE;
            while !owner.is_finished() {
                assert!(
                    Instant::now() < deadline,
                    "the owner thread did not end after shutdown"
                );
                std::thread::sleep(Duration::from_millis(5));
            }
            owner.join().expect("the owner thread panicked");
        }
        assert!(
            self.unanswered.is_empty(),
            "the server sent requests the harness does not answer: {:#?}",
            self.unanswered
        );
    }
}

pub use owt_e2e::uri;

/// The path of a `file://` URI.
pub fn path_of(uri: &str) -> PathBuf {
    PathBuf::from(uri.strip_prefix("file://").unwrap_or(uri))
}
