//! `owt acp`: owt as an ACP agent on stdio. An editor that runs `owt acp`
//! as its agent gets the owt sessions of its workspace behind one
//! connection:
//!
//! - `session/new` creates an owt ACP session (worktree, branch, the chosen
//!   agent's ACP server: `_meta.owt.agent`, `owt acp --ai-tool`, the
//!   configured default, or the first installed) and returns its short id;
//! - `session/prompt` goes to that session's host, and everything the
//!   agent says comes back as `session/update`s; the response comes when
//!   the turn ends;
//! - `session/request_permission` from the agent is passed on to the
//!   editor, and its answer back (unless someone answered first, e.g. with
//!   `owt approve`);
//! - `session/list` lists the workspace's ACP sessions; `session/load`
//!   replays one's transcript, starting its agent again (with the agent's
//!   own `session/load`) when it had exited;
//! - at the end of each turn, Conflict Guard runs for the session and an
//!   overlap with another session (or your checkout) is added as an agent
//!   message.
//!
//! Invariants: stdout carries only the protocol (logs go to stderr); a
//! request never blocks the reader (each runs on its own thread); nothing
//! the editor sends can end the server except the end of its input.

use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc, Mutex};

use owt_protocol::host::{self as proto, AcpEvent, FrameKind, PermissionAnswer};
use serde_json::{json, Value};

use crate::acp::conn::{Conn, Incoming};
use crate::acp::rpc::RpcError;
use crate::acp::schema::{self, method, PROTOCOL_VERSION};
use crate::acp::transcript;
use crate::ops::{self, Context};
use crate::session::{self, HostConn};

/// How `owt acp` was started.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `-C DIR`: the workspace when the editor gives no `cwd`.
    pub dir: Option<PathBuf>,
    /// `--ai-tool`: the agent of new sessions.
    pub ai_tool: Option<String>,
}

/// How a turn the editor started ended.
enum TurnEnd {
    Stopped(String),
    Failed(String),
}

/// One owt session the editor has open.
struct Proxy {
    short_id: String,
    name: String,
    worktree: PathBuf,
    socket: PathBuf,
    /// The prompts this editor sent, oldest first, with who waits for each.
    sent: Mutex<VecDeque<(String, mpsc::Sender<TurnEnd>)>>,
    /// Who waits for the turn running now (`None`: not the editor's turn).
    current: Mutex<Option<mpsc::Sender<TurnEnd>>>,
    /// The event stream, to close it when the editor closes the session.
    events: Mutex<Option<std::os::unix::net::UnixStream>>,
}

struct Server {
    conn: Arc<Conn>,
    options: Options,
    proxies: Mutex<HashMap<String, Arc<Proxy>>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Serves ACP on `input` / `output` until `input` ends.
pub fn serve(options: Options, input: impl BufRead, output: Box<dyn Write + Send>) {
    let server = Arc::new(Server {
        conn: Arc::new(Conn::new(output)),
        options,
        proxies: Mutex::new(HashMap::new()),
    });
    let conn = server.conn.clone();
    conn.read_loop(input, |incoming| match incoming {
        Incoming::Request { id, method, params } => {
            let server = server.clone();
            std::thread::spawn(move || {
                let result = server.handle(&method, params);
                if let Err(e) = &result {
                    tracing::info!("{method}: {e}");
                }
                server.conn.respond(id, result);
            });
        }
        Incoming::Notification { method, params } => server.notified(&method, &params),
        Incoming::Malformed(e) => {
            tracing::warn!("the editor sent a line that is not JSON-RPC: {e}");
            server.conn.send(&e.response());
        }
    });
    for proxy in lock(&server.proxies).values() {
        proxy.close();
    }
}

impl Proxy {
    fn close(&self) {
        if let Some(s) = lock(&self.events).take() {
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
        self.fail_all("the editor closed the connection");
    }

    fn fail_all(&self, why: &str) {
        for (_, tx) in lock(&self.sent).drain(..) {
            let _ = tx.send(TurnEnd::Failed(why.to_string()));
        }
        if let Some(tx) = lock(&self.current).take() {
            let _ = tx.send(TurnEnd::Failed(why.to_string()));
        }
    }
}

fn params_error(e: impl std::fmt::Display) -> RpcError {
    RpcError::invalid_params(format!("{e:#}"))
}

impl Server {
    fn handle(self: &Arc<Self>, method: &str, params: Value) -> Result<Value, RpcError> {
        match method {
            method::INITIALIZE => Ok(self.initialize(&params)),
            method::AUTHENTICATE => Ok(Value::Null),
            method::SESSION_NEW => self.new_session(&params),
            method::SESSION_LOAD => self.load_session(&params),
            method::SESSION_LIST => self.list_sessions(&params),
            method::SESSION_PROMPT => self.prompt(&params),
            other => Err(RpcError::method_not_found(other)),
        }
    }

    fn notified(self: &Arc<Self>, method: &str, params: &Value) {
        if method != method::SESSION_CANCEL {
            tracing::debug!("ignoring the editor's notification {method}");
            return;
        }
        let Some(proxy) = self.proxy(params) else {
            return;
        };
        if let Err(e) = HostConn::connect(&proxy.socket, proto::Role::Control, 0, 0)
            .and_then(|mut c| c.cancel())
        {
            tracing::info!("cancelling {}: {e}", proxy.name);
        }
    }

    fn initialize(&self, params: &Value) -> Value {
        let theirs = params["protocolVersion"].as_u64();
        if theirs != Some(PROTOCOL_VERSION) {
            // ACP: answer with the version owt speaks; the client decides.
            tracing::info!(
                "the editor asked for ACP protocol version {theirs:?}; owt speaks {PROTOCOL_VERSION}"
            );
        }
        json!({
            "protocolVersion": PROTOCOL_VERSION,
            "agentCapabilities": {
                "loadSession": true,
                "promptCapabilities": {"image": false, "audio": false, "embeddedContext": true},
                "mcpCapabilities": {"http": false, "sse": false},
                "sessionCapabilities": {"list": {}},
            },
            "agentInfo": {"name": "owt", "title": "owt", "version": env!("CARGO_PKG_VERSION")},
            "authMethods": [],
        })
    }

    fn context(&self, params: &Value) -> Result<Context, RpcError> {
        let dir = params["cwd"]
            .as_str()
            .map(PathBuf::from)
            .or_else(|| self.options.dir.clone());
        Context::open(dir.as_deref()).map_err(params_error)
    }

    fn proxy(&self, params: &Value) -> Option<Arc<Proxy>> {
        let id = params["sessionId"].as_str()?;
        lock(&self.proxies).get(id).cloned()
    }

    fn new_session(self: &Arc<Self>, params: &Value) -> Result<Value, RpcError> {
        let mut ctx = self.context(params)?;
        let meta = &params["_meta"]["owt"];
        let agent = ops::acp::pick_agent(
            &ctx,
            meta["agent"].as_str().or(self.options.ai_tool.as_deref()),
        )
        .map_err(params_error)?;
        let task = meta["task"]
            .as_str()
            .unwrap_or("a conversation from the editor (owt acp)");
        let mcp: Vec<Value> = params["mcpServers"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter(|s| s["command"].is_string())
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        let created = ops::acp::start(&mut ctx, &agent, meta["name"].as_str(), task, mcp)
            .map_err(|e| RpcError::internal(format!("{e:#}")))?;
        for warning in &created.warnings {
            tracing::warn!("{warning}");
        }
        if !created.agent_started {
            return Err(RpcError::internal(format!(
                "the agent of {} did not start: {}",
                created.session.name,
                created.warnings.join("; ")
            )));
        }
        let row = created.session;
        self.open(&ctx, &row, false)?;
        Ok(json!({
            "sessionId": row.short_id,
            "_meta": {"owt": {
                "session": row.name,
                "branch": row.branch,
                "worktree": row.worktree_path,
                "agent": row.provider,
            }},
        }))
    }

    fn find(&self, ctx: &Context, params: &Value) -> Result<crate::store::SessionRow, RpcError> {
        let id = params["sessionId"]
            .as_str()
            .ok_or_else(|| RpcError::invalid_params("no sessionId"))?;
        ctx.store
            .session_by_short_id(id)
            .map_err(params_error)?
            .filter(|row| row.repo_id == ctx.repo_row.id)
            .ok_or_else(|| RpcError::not_found(format!("no owt session {id} in this workspace")))
    }

    fn load_session(self: &Arc<Self>, params: &Value) -> Result<Value, RpcError> {
        let ctx = self.context(params)?;
        let row = self.find(&ctx, params)?;
        if session::transport(&ctx.store, &row).map_err(params_error)?
            != owt_protocol::host::Transport::Acp
        {
            return Err(RpcError::invalid_params(format!(
                "{} runs its agent in a terminal, not through ACP (owt attach {})",
                row.name, row.name
            )));
        }
        ops::acp::reopen(&ctx, &row).map_err(|e| RpcError::internal(format!("{e:#}")))?;
        self.open(&ctx, &row, true)?;
        Ok(Value::Null)
    }

    fn list_sessions(&self, params: &Value) -> Result<Value, RpcError> {
        let ctx = self.context(params)?;
        let sessions = ops::acp::sessions(&ctx).map_err(params_error)?;
        let list: Vec<Value> = sessions
            .iter()
            .map(|(row, view)| {
                let first_line = row.task.lines().next().unwrap_or("");
                json!({
                    "sessionId": row.short_id,
                    "cwd": row.worktree_path,
                    "title": format!("{} — {first_line}", row.name),
                    "updatedAt": ops::acp::rfc3339(ops::acp::updated_at(&ctx, row)),
                    "_meta": {"owt": {
                        "session": row.name,
                        "status": view.status_text,
                        "branch": row.branch,
                        "agent": row.provider,
                    }},
                })
            })
            .collect();
        Ok(json!({"sessions": list}))
    }

    /// Connects to the session's host and streams its events to the
    /// editor; with `replay`, its transcript so far first.
    fn open(
        self: &Arc<Self>,
        ctx: &Context,
        row: &crate::store::SessionRow,
        replay: bool,
    ) -> Result<(), RpcError> {
        let socket = session::socket_path(&ctx.home, &row.short_id);
        let (conn, view) = HostConn::events(&socket)
            .map_err(|e| RpcError::internal(format!("connecting to {}: {e}", row.name)))?;
        let proxy = Arc::new(Proxy {
            short_id: row.short_id.clone(),
            name: row.name.clone(),
            worktree: row.worktree_path.clone(),
            socket,
            sent: Mutex::new(VecDeque::new()),
            current: Mutex::new(None),
            events: Mutex::new(conn.stream.try_clone().ok()),
        });
        if let Some(old) = lock(&self.proxies).insert(row.short_id.clone(), proxy.clone()) {
            old.close();
        }
        if replay {
            for update in transcript::replay_updates(&view.entries) {
                self.update(&proxy, update);
            }
        }
        if let Some(pending) = view.pending {
            // A question asked before the editor came: ask the editor too.
            let options: Vec<Value> = pending
                .options
                .iter()
                .map(|o| json!({"optionId": o.id, "name": o.name, "kind": o.kind}))
                .collect();
            let tool_call = json!({"toolCallId": format!("owt-permission-{}", pending.id),
                "title": pending.question, "kind": pending.tool_kind,
                "locations": pending.paths.iter().map(|p| json!({"path": p})).collect::<Vec<_>>()});
            self.ask(&proxy, pending, tool_call, Value::Array(options));
        }
        let server = self.clone();
        std::thread::spawn(move || server.pump(&proxy, conn));
        Ok(())
    }

    fn update(&self, proxy: &Proxy, update: Value) {
        self.conn.notify(
            method::SESSION_UPDATE,
            json!({"sessionId": proxy.short_id, "update": update}),
        );
    }

    fn message(&self, proxy: &Proxy, text: &str) {
        self.update(
            proxy,
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}),
        );
    }

    /// Passes the agent's question to the editor (on its own thread) and
    /// the editor's answer back.
    fn ask(
        self: &Arc<Self>,
        proxy: &Arc<Proxy>,
        pending: owt_protocol::host::PendingPermission,
        tool_call: Value,
        options: Value,
    ) {
        let server = self.clone();
        let proxy = proxy.clone();
        std::thread::spawn(move || {
            let asked = server.conn.request(
                method::REQUEST_PERMISSION,
                json!({"sessionId": proxy.short_id, "toolCall": tool_call, "options": options}),
                None,
            );
            let answer = match &asked {
                Ok(result) => match result["outcome"]["outcome"].as_str() {
                    Some("selected") => PermissionAnswer {
                        option: result["outcome"]["optionId"].as_str().map(str::to_string),
                        deny: false,
                        id: Some(pending.id),
                    },
                    _ => PermissionAnswer {
                        option: None,
                        deny: true,
                        id: Some(pending.id),
                    },
                },
                Err(e) => {
                    tracing::info!("the editor did not answer the permission request: {e}");
                    return;
                }
            };
            let sent = HostConn::connect(&proxy.socket, proto::Role::Control, 0, 0)
                .and_then(|mut c| c.answer(&answer));
            if let Err(e) = sent {
                // Answered meanwhile (owt approve), or the agent is gone.
                tracing::info!("passing the editor's answer to {}: {e}", proxy.name);
            }
        });
    }

    /// The host's events, to the editor, until the stream ends.
    fn pump(self: &Arc<Self>, proxy: &Arc<Proxy>, mut conn: HostConn) {
        let mut reader = std::io::BufReader::new(&conn.stream);
        let why = loop {
            let frame = match proto::read_frame(&mut reader) {
                Ok(Some(frame)) => frame,
                Ok(None) => break format!("{}'s session host went away", proxy.name),
                Err(e) => break format!("reading {}'s session host: {e}", proxy.name),
            };
            match frame.kind {
                FrameKind::Event => match frame.json::<AcpEvent>() {
                    Ok(event) => self.on_event(proxy, event),
                    Err(e) => tracing::warn!("an unreadable event: {e}"),
                },
                FrameKind::Exited => {
                    let exit: proto::AgentExit = frame.json().unwrap_or(proto::AgentExit {
                        code: None,
                        signal: None,
                    });
                    break match (exit.code, exit.signal) {
                        (Some(code), _) => {
                            format!("the agent of {} exited with code {code}", proxy.name)
                        }
                        (None, Some(s)) => format!("the agent of {} exited ({s})", proxy.name),
                        _ => format!("the agent of {} exited", proxy.name),
                    };
                }
                _ => {}
            }
        };
        tracing::info!("{why}");
        proxy.fail_all(&why);
        let _ = conn.stream.flush();
    }

    fn on_event(self: &Arc<Self>, proxy: &Arc<Proxy>, event: AcpEvent) {
        match event {
            AcpEvent::Update { update } => self.update(proxy, update),
            AcpEvent::Prompt { text } => {
                let mut sent = lock(&proxy.sent);
                let ours = sent.front().is_some_and(|(t, _)| *t == text);
                *lock(&proxy.current) = if ours {
                    sent.pop_front().map(|(_, tx)| tx)
                } else {
                    None
                };
                drop(sent);
                if !ours {
                    // Someone else prompted (owt send): show it.
                    self.update(
                        proxy,
                        json!({"sessionUpdate": "user_message_chunk",
                               "content": {"type": "text", "text": text}}),
                    );
                }
            }
            AcpEvent::Permission {
                pending,
                tool_call,
                options,
            } => self.ask(proxy, pending, tool_call, options),
            AcpEvent::Answered { .. } => {}
            AcpEvent::TurnEnded { stop_reason, .. } => {
                let waiter = lock(&proxy.current).take();
                if let Some(tx) = waiter {
                    if let Some(note) = guard_note(&proxy.worktree, &proxy.name) {
                        self.message(proxy, &note);
                    }
                    let _ = tx.send(TurnEnd::Stopped(stop_reason));
                }
            }
            AcpEvent::Note { text } => self.message(proxy, &format!("\n[owt] {text}\n")),
        }
    }

    fn prompt(self: &Arc<Self>, params: &Value) -> Result<Value, RpcError> {
        let id = params["sessionId"].as_str().unwrap_or("");
        let proxy = self.proxy(params).ok_or_else(|| {
            RpcError::not_found(format!(
                "session {id} is not open on this connection (session/new or session/load first)"
            ))
        })?;
        let text = schema::prompt_text(&params["prompt"]);
        if text.trim().is_empty() {
            return Err(RpcError::invalid_params("an empty prompt"));
        }
        let (tx, rx) = mpsc::channel();
        lock(&proxy.sent).push_back((text.clone(), tx));
        let sent = HostConn::connect(&proxy.socket, proto::Role::Control, 0, 0)
            .and_then(|mut c| c.send(&text, true));
        if let Err(e) = sent {
            lock(&proxy.sent).retain(|(t, _)| *t != text);
            return Err(RpcError::internal(format!("prompting {}: {e}", proxy.name)));
        }
        match rx.recv() {
            Ok(TurnEnd::Stopped(stop)) => {
                let stop = match stop.as_str() {
                    "end_turn" | "max_tokens" | "max_turn_requests" | "refusal" | "cancelled" => {
                        stop
                    }
                    _ => "end_turn".to_string(),
                };
                Ok(json!({"stopReason": stop}))
            }
            Ok(TurnEnd::Failed(why)) => Err(RpcError::internal(why)),
            Err(_) => Err(RpcError::internal(format!("{} went away", proxy.name))),
        }
    }
}

/// Conflict Guard for one session: a sentence naming who else changes the
/// same code, or nothing.
fn guard_note(worktree: &Path, name: &str) -> Option<String> {
    let ctx = Context::open(Some(worktree)).ok()?;
    let report = crate::ops::guard::report(&ctx, Some(name)).ok()?;
    let lines: Vec<String> = report
        .pairs
        .iter()
        .filter(|p| p.a == name || p.b == name)
        .map(|p| {
            let other = if p.a == name { &p.b } else { &p.a };
            let paths: Vec<&str> = p.paths.iter().map(|g| g.path.as_str()).take(5).collect();
            format!(
                "- {other}: {} in {}",
                serde_json::to_value(p.level)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default(),
                paths.join(", ")
            )
        })
        .collect();
    (!lines.is_empty()).then(|| {
        format!(
            "\n\n[owt] Conflict Guard: this session's changes overlap with other work:\n{}\n",
            lines.join("\n")
        )
    })
}
