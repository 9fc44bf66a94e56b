//! The owner thread: all of the server's mutable state, one event at a time.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use owt_protocol::lsp::{InitializationOptions, METHOD_BOARD_CHANGED};
use owt_protocol::{Board, SessionView, Status};
use serde_json::Value;
use tokio::runtime::Handle;
use tokio::sync::oneshot;
use tower_lsp_server::jsonrpc::{self, Result};
use tower_lsp_server::ls_types::*;
use tower_lsp_server::Client;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use super::convert::{apply_change, uri_to_path};
use super::diagnostics;
use crate::guard::engine::{GuardEngine, YOU};
use crate::guard::watch::GuardWatcher;
use crate::ops::{self, Context};

pub type Reply<T> = oneshot::Sender<Result<T>>;

/// Everything the owner thread reacts to, in arrival order.
pub enum Event {
    Initialize(Box<InitializeParams>, Reply<InitializeResult>),
    Initialized,
    Shutdown(Reply<()>),
    DidOpen(DidOpenTextDocumentParams),
    DidChange(DidChangeTextDocumentParams),
    /// A document was saved (its file on disk changed).
    DidSave(Uri),
    DidClose(DidCloseTextDocumentParams),
    CodeAction(Box<CodeActionParams>, Reply<Option<CodeActionResponse>>),
    ExecuteCommand(ExecuteCommandParams, Reply<Option<Value>>),
    Board(Reply<Board>),
    /// A worker finished something that changes sessions.
    Refresh,
    /// The Conflict Guard's watcher applied a batch of file changes.
    GuardChanged,
    /// The git refresher recorded fresh git facts (commits ahead, changed
    /// files) in the store.
    GitRefreshed,
}

/// How often the board and statuses are re-read.
const TICK: Duration = Duration::from_millis(500);
/// How often commits ahead and changed files of every session are re-read
/// from git while no Conflict Guard watches the worktrees (on the git
/// refresher thread: a workdir diff of every worktree takes seconds on large
/// repositories and must not hold up diagnostics).
const GIT_REFRESH: Duration = Duration::from_secs(5);
/// While the guard watches, only the sessions it saw change are re-read;
/// every session is re-read this often all the same.
const GIT_FULL_REFRESH: Duration = Duration::from_secs(60);
/// How long the refresher collects sessions that changed before re-reading.
const GIT_COALESCE: Duration = Duration::from_millis(500);

/// What the git refresher is told.
enum GitPoke {
    /// Re-read every session now.
    All,
    /// Whether a guard watches the worktrees (it then records git facts
    /// itself; everything is re-read only every [`GIT_FULL_REFRESH`]).
    Watched(bool),
}

/// An open document, as the editor has it.
pub struct Document {
    pub text: String,
    pub version: i32,
}

pub struct State {
    pub client: Client,
    pub rt: Handle,
    pub tx: Sender<Event>,
    pub root: Option<PathBuf>,
    pub ctx: Option<Context>,
    pub options: InitializationOptions,
    pub progress_supported: bool,
    /// The client shows `relatedInformation` (Helix does not).
    pub related_supported: bool,
    pub docs: HashMap<Uri, Document>,
    pub sessions: Vec<SessionView>,
    last_board: Option<Board>,
    last_status: HashMap<String, (Status, Option<i32>)>,
    /// Wakes the git refresher thread (started with the first refresh).
    git_refresher: Option<Sender<GitPoke>>,
    next_token: u64,
    initialized: bool,
    shut_down: bool,
    seen_once: bool,
    guard: Option<Guard>,
    /// Who "you" are: `you` (the main checkout) or the session whose
    /// worktree the editor opened.
    me: String,
    /// The checkout the editor shows.
    my_root: Option<PathBuf>,
    /// What was last published, per document, with the document version
    /// it was published for.
    published: HashMap<Uri, (Option<i32>, Vec<Diagnostic>)>,
    /// When the unsaved buffers are next handed to the guard.
    overrides_due: Option<Instant>,
    /// Time of the last agent report seen, per session.
    last_report: HashMap<String, i64>,
    /// Pairs known to conflict (`None` until the first computation).
    known_conflicts: Option<std::collections::BTreeSet<(String, String)>>,
    /// The last error about the store's file shown to the user (shown once).
    store_trouble: Option<String>,
    /// Memory pressure and room for queued sessions.
    machine: super::machine::MachineWatch,
}

/// The live Conflict Guard: engine, watcher, and who takes part.
struct Guard {
    engine: Arc<Mutex<GuardEngine>>,
    _watcher: GuardWatcher,
    members: Vec<(String, PathBuf)>,
}

/// Starts the owner thread.
pub fn spawn_owner(client: Client, rt: Handle, tx: Sender<Event>, rx: Receiver<Event>) {
    let spawned = std::thread::Builder::new()
        .name("owt-lsp-owner".into())
        .spawn(move || {
            let mut state = State {
                client,
                rt,
                tx,
                root: None,
                ctx: None,
                options: InitializationOptions::default(),
                progress_supported: false,
                related_supported: false,
                docs: HashMap::new(),
                sessions: Vec::new(),
                last_board: None,
                last_status: HashMap::new(),
                git_refresher: None,
                next_token: 0,
                initialized: false,
                shut_down: false,
                seen_once: false,
                guard: None,
                me: YOU.to_string(),
                my_root: None,
                published: HashMap::new(),
                overrides_due: None,
                last_report: HashMap::new(),
                known_conflicts: None,
                store_trouble: None,
                machine: super::machine::MachineWatch::default(),
            };
            state.run(rx);
        });
    if let Err(e) = spawned {
        tracing::error!("cannot start the owner thread: {e}");
    }
}

impl State {
    fn run(&mut self, rx: Receiver<Event>) {
        let mut next_tick = Instant::now() + TICK;
        // Every event but the tick is work (the watcher's and the git
        // refresher's work ends in an event too); the heap is trimmed once
        // it is over.
        let mut trimmer = crate::memory::Trimmer::new();
        loop {
            let wake = [self.overrides_due, trimmer.due()]
                .into_iter()
                .flatten()
                .fold(next_tick, Instant::min);
            let timeout = wake.saturating_duration_since(Instant::now());
            match rx.recv_timeout(timeout) {
                Ok(event) => {
                    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        self.handle(event)
                    }));
                    if outcome.is_err() {
                        tracing::error!("an LSP event handler panicked; the server keeps running");
                    }
                    trimmer.activity();
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return,
            }
            if self.overrides_due.is_some_and(|due| Instant::now() >= due) {
                self.overrides_due = None;
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    self.apply_overrides()
                }));
                trimmer.activity();
            }
            trimmer.poll();
            if Instant::now() >= next_tick {
                next_tick = Instant::now() + TICK;
                if self.initialized && !self.shut_down {
                    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.tick()));
                }
            }
        }
    }

    fn handle(&mut self, event: Event) {
        match event {
            Event::Initialize(params, reply) => {
                let _ = reply.send(Ok(self.initialize(*params)));
            }
            Event::Initialized => {
                self.initialized = true;
                self.refresh(true);
                self.publish_diagnostics();
            }
            Event::Shutdown(reply) => {
                self.shut_down = true;
                self.guard = None;
                for (uri, _) in std::mem::take(&mut self.published) {
                    let client = self.client.clone();
                    self.rt
                        .block_on(client.publish_diagnostics(uri, Vec::new(), None));
                }
                let _ = reply.send(Ok(()));
            }
            Event::GuardChanged => self.publish_diagnostics(),
            Event::DidOpen(params) => {
                let doc = params.text_document;
                self.docs.insert(
                    doc.uri,
                    Document {
                        text: doc.text,
                        version: doc.version,
                    },
                );
                self.buffers_changed();
            }
            Event::DidChange(params) => {
                if let Some(doc) = self.docs.get_mut(&params.text_document.uri) {
                    for change in &params.content_changes {
                        apply_change(&mut doc.text, change);
                    }
                    doc.version = params.text_document.version;
                }
                self.buffers_changed();
            }
            Event::DidSave(_uri) => {}
            Event::DidClose(params) => {
                self.docs.remove(&params.text_document.uri);
                self.buffers_changed();
            }
            Event::CodeAction(params, reply) => {
                let _ = reply.send(Ok(super::code_action::code_actions(self, &params)));
            }
            Event::ExecuteCommand(params, reply) => super::commands::execute(self, params, reply),
            Event::Board(reply) => {
                self.refresh(false);
                let board = self.board();
                let _ = reply.send(board.ok_or_else(|| {
                    super::convert::failed(&anyhow::anyhow!("{}", self.no_repo_reason()))
                }));
            }
            Event::Refresh => self.refresh(true),
            Event::GitRefreshed => self.refresh(false),
        }
    }

    fn initialize(&mut self, params: InitializeParams) -> InitializeResult {
        #[allow(deprecated)]
        let root = params
            .workspace_folders
            .as_ref()
            .and_then(|folders| folders.first())
            .and_then(|folder| uri_to_path(&folder.uri))
            .or_else(|| params.root_uri.as_ref().and_then(uri_to_path))
            .or_else(|| std::env::current_dir().ok());
        if let Some(options) = params.initialization_options {
            match serde_json::from_value::<InitializationOptions>(options) {
                Ok(options) => self.options = options,
                Err(e) => tracing::warn!("ignoring invalid initializationOptions: {e}"),
            }
        }
        self.progress_supported = params
            .capabilities
            .window
            .as_ref()
            .and_then(|w| w.work_done_progress)
            .unwrap_or(false);
        self.related_supported = params
            .capabilities
            .text_document
            .as_ref()
            .and_then(|t| t.publish_diagnostics.as_ref())
            .and_then(|p| p.related_information)
            .unwrap_or(false);
        if let Some(root) = &root {
            match Context::open(Some(root)) {
                Ok(ctx) => {
                    // What a cloned repository's own files were not allowed to do.
                    if let Some(notice) = crate::ops::trust::notice(&ctx) {
                        self.show_message(MessageType::WARNING, format!("owt: {notice}"));
                    }
                    self.ctx = Some(ctx)
                }
                Err(e) => tracing::warn!("{}: not an owt workspace: {e:#}", root.display()),
            }
        }
        self.root = root;
        InitializeResult {
            capabilities: ServerCapabilities {
                text_document_sync: Some(TextDocumentSyncCapability::Options(
                    TextDocumentSyncOptions {
                        open_close: Some(true),
                        change: Some(TextDocumentSyncKind::INCREMENTAL),
                        save: Some(TextDocumentSyncSaveOptions::Supported(true)),
                        ..TextDocumentSyncOptions::default()
                    },
                )),
                code_action_provider: Some(CodeActionProviderCapability::Simple(true)),
                execute_command_provider: Some(ExecuteCommandOptions {
                    commands: owt_protocol::lsp::commands::ALL
                        .iter()
                        .map(|c| c.to_string())
                        .collect(),
                    work_done_progress_options: WorkDoneProgressOptions::default(),
                }),
                ..ServerCapabilities::default()
            },
            server_info: Some(ServerInfo {
                name: "owt".into(),
                version: Some(env!("CARGO_PKG_VERSION").into()),
            }),
            offset_encoding: None,
        }
    }

    /// Why there is no repository to work with.
    pub fn no_repo_reason(&self) -> String {
        match &self.root {
            Some(root) => format!(
                "{} is not inside a git repository that owt can use",
                root.display()
            ),
            None => "the editor did not name a workspace folder".into(),
        }
    }

    /// Re-reads sessions; sends `owt/boardChanged` and one message per
    /// status transition when something changed. Git facts are re-read on
    /// the git refresher thread (every [`GIT_REFRESH`], or now when
    /// `force_git`), which sends [`Event::GitRefreshed`] when done.
    pub fn refresh(&mut self, force_git: bool) {
        self.reopen_replaced_store();
        let Some(ctx) = &self.ctx else { return };
        match &self.git_refresher {
            Some(poke) if force_git => {
                let _ = poke.send(GitPoke::All);
            }
            Some(_) => {}
            None => {
                self.git_refresher =
                    spawn_git_refresher(ctx.repo.main_root().to_path_buf(), self.tx.clone());
            }
        }
        let views = match ops::list::session_views_with(ctx, false) {
            Ok(views) => views,
            Err(e) => {
                tracing::warn!("reading sessions failed: {e:#}");
                return;
            }
        };
        self.notify_transitions(&views);
        let statuses_changed = self.sessions.len() != views.len()
            || self
                .sessions
                .iter()
                .zip(&views)
                .any(|(a, b)| a.name != b.name || a.status_text != b.status_text);
        self.sessions = views;
        self.ensure_guard();
        if statuses_changed {
            // Diagnostics name each agent's status.
            self.publish_diagnostics();
        }
        if let Some(board) = self.board() {
            if self.last_board.as_ref() != Some(&board) {
                self.last_board = Some(board.clone());
                let client = self.client.clone();
                self.rt.spawn(async move {
                    client.send_notification::<BoardChanged>(board).await;
                });
            }
        }
    }

    /// When the store's file was deleted, replaced or truncated under this
    /// server, opens the store at its path again (the git refresher too)
    /// and tells the user.
    fn reopen_replaced_store(&mut self) {
        let Some(how) = self.ctx.as_ref().and_then(|c| c.store.replaced()) else {
            return;
        };
        let Some(root) = self.root.clone() else {
            return;
        };
        let path = self.ctx.as_ref().map(|c| c.store.path().to_path_buf());
        let path = path.unwrap_or_default();
        match Context::open(Some(&root)) {
            Ok(ctx) => {
                self.ctx = Some(ctx);
                self.git_refresher = None;
                self.store_trouble = None;
                self.show_message(
                    MessageType::WARNING,
                    format!(
                        "owt: the status store {} {how} while this editor's owt was running; owt now reads the store at that path (sessions it does not know yet: run `owt doctor --fix` in a terminal to re-adopt the ones still running)",
                        path.display()
                    ),
                );
            }
            Err(e) => {
                // Keep the old store until the new one opens; say so once.
                let message = format!(
                    "owt: the status store {} {how} while this editor's owt was running, and opening it again failed: {e:#}",
                    path.display()
                );
                if self.store_trouble.as_ref() != Some(&message) {
                    self.show_message(MessageType::ERROR, message.clone());
                    self.store_trouble = Some(message);
                }
            }
        }
    }

    fn tick(&mut self) {
        self.refresh(false);
        if let Some(ctx) = &self.ctx {
            if let Some(warning) = self.machine.poll(ctx, &self.sessions) {
                self.show_message(MessageType::WARNING, warning);
            }
        }
    }

    /// The board from the sessions last read.
    pub fn board(&self) -> Option<Board> {
        let ctx = self.ctx.as_ref()?;
        Some(ops::list::board(
            ctx.repo.main_root().to_string_lossy().into_owned(),
            self.sessions.clone(),
        ))
    }

    fn notify_transitions(&mut self, views: &[SessionView]) {
        let first_read = !self.seen_once;
        for view in views {
            let now = (view.status, view.exit_code);
            let before = self.last_status.insert(view.name.clone(), now);
            if first_read || before == Some(now) {
                continue;
            }
            let message = match view.status {
                Status::NeedsInput => Some((
                    MessageType::INFO,
                    format!("owt: {} is waiting for your input", view.name),
                )),
                Status::Blocked => Some((
                    MessageType::WARNING,
                    format!("owt: {} is blocked on a permission prompt", view.name),
                )),
                Status::Done => Some((MessageType::INFO, format!("owt: {} is done", view.name))),
                Status::Exited if view.host_lost || view.exit_code.is_some_and(|c| c != 0) => {
                    Some((
                        MessageType::ERROR,
                        format!("owt: {} {}", view.name, view.status_text),
                    ))
                }
                Status::Conflict => Some((
                    MessageType::WARNING,
                    format!("owt: {} stopped on a merge conflict", view.name),
                )),
                _ => None,
            };
            if let Some((typ, text)) = message {
                self.show_message(typ, text);
            }
        }
        self.last_status
            .retain(|name, _| views.iter().any(|v| &v.name == name));
        self.notify_reports(views, first_read);
        self.seen_once = true;
    }

    /// One message per new agent report (MCP `report_status`).
    fn notify_reports(&mut self, views: &[SessionView], first_read: bool) {
        let Some(ctx) = &self.ctx else { return };
        let mut messages = Vec::new();
        for view in views {
            let Ok(row) = ctx.session(&view.name) else {
                continue;
            };
            let Ok(Some((report, at))) = ctx
                .store
                .fact::<crate::status::ReportFact>(row.id, crate::status::kind::REPORT)
            else {
                continue;
            };
            let before = self.last_report.insert(view.name.clone(), at);
            if first_read || before == Some(at) {
                continue;
            }
            let typ = match report.kind.as_str() {
                "blocked" => MessageType::WARNING,
                _ => MessageType::INFO,
            };
            messages.push((
                typ,
                format!(
                    "owt: {} reports {}: {}",
                    view.name, report.kind, report.text
                ),
            ));
        }
        for (typ, text) in messages {
            self.show_message(typ, text);
        }
    }

    pub fn show_message(&self, typ: MessageType, text: String) {
        let client = self.client.clone();
        self.rt
            .spawn(async move { client.show_message(typ, text).await });
    }

    pub fn next_token(&mut self) -> ProgressToken {
        self.next_token += 1;
        ProgressToken::String(format!("owt/{}/{}", std::process::id(), self.next_token))
    }

    /// The session whose worktree holds `path`, if any.
    pub fn session_of_path(&self, path: &Path) -> Option<&SessionView> {
        self.sessions
            .iter()
            .filter(|s| !s.worktree.is_empty() && path.starts_with(&s.worktree))
            .max_by_key(|s| s.worktree.len())
    }
}

impl State {
    /// Starts (or restarts, when sessions came or went) the Conflict Guard.
    fn ensure_guard(&mut self) {
        let Some(ctx) = &self.ctx else { return };
        let members: Vec<(String, PathBuf)> = self
            .sessions
            .iter()
            .filter(|s| Path::new(&s.worktree).is_dir())
            .map(|s| (s.name.clone(), PathBuf::from(&s.worktree)))
            .collect();
        if self.guard.as_ref().is_some_and(|g| g.members == members) {
            return;
        }
        // Who "you" are: the session whose worktree holds the workspace root.
        let root = self
            .root
            .clone()
            .map(|r| std::fs::canonicalize(&r).unwrap_or(r));
        let mine = root.as_ref().and_then(|root| {
            self.sessions
                .iter()
                .filter(|s| root.starts_with(&s.worktree))
                .max_by_key(|s| s.worktree.len())
        });
        (self.me, self.my_root) = match mine {
            Some(s) => (s.name.clone(), Some(PathBuf::from(&s.worktree))),
            None => (YOU.to_string(), Some(ctx.repo.main_root().to_path_buf())),
        };
        self.guard = None;
        let poke = self.git_refresher.clone();
        let watched = |on: bool| {
            if let Some(poke) = &poke {
                let _ = poke.send(GitPoke::Watched(on));
            }
        };
        watched(false);
        let engine = match crate::guard::ops::compute(ctx) {
            Ok(engine) => engine,
            Err(e) => {
                tracing::warn!("the conflict guard could not start: {e:#}");
                return;
            }
        };
        if let Err(e) = crate::guard::ops::record_facts(&ctx.store, &engine) {
            tracing::warn!("recording guard facts failed: {e:#}");
        }
        let engine = Arc::new(Mutex::new(engine));
        let tx = self.tx.clone();
        let mut store = crate::store::Store::open(&ctx.home).ok();
        // While the guard watches, it records commits ahead and changed
        // files with its facts (from the snapshot it just took); the git
        // refresher only does a slow full pass now and then.
        let watcher =
            GuardWatcher::start(engine.clone(), GUARD_DEBOUNCE, move |engine, _update| {
                if let Some(store) = store.as_mut() {
                    if let Err(e) = crate::guard::ops::record_facts(store, engine) {
                        tracing::warn!("recording guard facts failed: {e:#}");
                    }
                }
                let _ = tx.send(Event::GuardChanged);
            });
        match watcher {
            Ok(watcher) => {
                watched(true);
                self.guard = Some(Guard {
                    engine,
                    _watcher: watcher,
                    members,
                });
                self.apply_overrides();
            }
            Err(e) => {
                tracing::warn!("watching the worktrees failed: {e}");
                self.show_message(
                    MessageType::WARNING,
                    format!("owt: Conflict Guard is not live (watching the worktrees failed: {e}); `owt guard` still works"),
                );
            }
        }
    }

    /// A buffer opened, changed or closed: hand the unsaved text to the
    /// guard soon (coalescing bursts of keystrokes).
    fn buffers_changed(&mut self) {
        if self.overrides_due.is_none() {
            self.overrides_due = Some(Instant::now() + OVERRIDES_DELAY);
        }
    }

    /// The open documents of my checkout, by path.
    fn open_texts(&self) -> HashMap<PathBuf, String> {
        let Some(root) = &self.my_root else {
            return HashMap::new();
        };
        self.docs
            .iter()
            .filter_map(|(uri, doc)| {
                let path = uri_to_path(uri)?;
                let path = std::fs::canonicalize(&path).unwrap_or(path);
                path.starts_with(root).then(|| (path, doc.text.clone()))
            })
            .collect()
    }

    fn apply_overrides(&mut self) {
        let Some(guard) = &self.guard else { return };
        let overrides: BTreeMap<PathBuf, String> = self.open_texts().into_iter().collect();
        let applied = guard
            .engine
            .lock()
            .map_err(|_| "the guard engine lock is poisoned".to_string())
            .and_then(|mut engine| {
                engine
                    .set_overrides(&self.me, overrides)
                    .map_err(|e| e.to_string())
            });
        if let Err(e) = applied {
            tracing::warn!("handing unsaved buffers to the guard failed: {e}");
        }
        self.publish_diagnostics();
    }

    /// Publishes what changed since the last publication (empty lists for
    /// documents whose diagnostics went away).
    fn publish_diagnostics(&mut self) {
        let (Some(guard), Some(ctx), Some(my_root)) = (&self.guard, &self.ctx, &self.my_root)
        else {
            return;
        };
        let Ok(engine) = guard.engine.lock() else {
            return;
        };
        let report = engine.report(&ctx.repo.main_root().to_string_lossy());
        let conflicts: std::collections::BTreeSet<(String, String)> = report
            .pairs
            .iter()
            .filter(|p| p.level == owt_protocol::guard::Level::Conflict)
            .map(|p| (p.a.clone(), p.b.clone()))
            .collect();
        let new_conflicts: Vec<String> = match &self.known_conflicts {
            None => Vec::new(),
            Some(known) => report
                .pairs
                .iter()
                .filter(|p| {
                    p.level == owt_protocol::guard::Level::Conflict
                        && !known.contains(&(p.a.clone(), p.b.clone()))
                })
                .map(|p| {
                    format!(
                        "owt: {} and {} now conflict in {}",
                        p.a,
                        p.b,
                        p.conflicting_paths.join(", ")
                    )
                })
                .collect(),
        };
        self.known_conflicts = Some(conflicts);
        let open = self.open_texts();
        let mut next = diagnostics::diagnostics(&diagnostics::Inputs {
            engine: &engine,
            report: &report,
            me: &self.me,
            my_root,
            sessions: &self.sessions,
            open: &open,
            severities: self.options.severities.as_ref(),
            related: self.related_supported,
        });
        drop(engine);
        for text in new_conflicts {
            self.show_message(MessageType::WARNING, text);
        }
        let mut to_send: Vec<(Uri, Vec<Diagnostic>)> = Vec::new();
        for (uri, (_, old)) in &self.published {
            if !next.contains_key(uri) && !old.is_empty() {
                to_send.push((uri.clone(), Vec::new()));
            }
        }
        for (uri, diags) in next.drain() {
            let version = self.docs.get(&uri).map(|d| d.version);
            // Also when only the version moved: a client that checks
            // versions (Helix) drops a publication for an older version of
            // its buffer, and would never see the same diagnostics again.
            if self.published.get(&uri) != Some(&(version, diags.clone())) {
                to_send.push((uri.clone(), diags.clone()));
            }
            self.published.insert(uri, (version, diags));
        }
        self.published.retain(|_, (_, d)| !d.is_empty());
        for (uri, diags) in to_send {
            if diags.is_empty() {
                self.published.remove(&uri);
            }
            let version = self.docs.get(&uri).map(|d| d.version);
            let client = self.client.clone();
            self.rt
                .spawn(async move { client.publish_diagnostics(uri, diags, version).await });
        }
    }
}

/// Starts the thread that records git facts (its own store connection):
/// every session right away, then every [`GIT_REFRESH`] — or, while a guard
/// watches the worktrees, only the sessions it saw change (and every session
/// every [`GIT_FULL_REFRESH`]) — and every session when poked with
/// [`GitPoke::All`]. Sends [`Event::GitRefreshed`] after each pass; ends
/// with the owner.
fn spawn_git_refresher(root: PathBuf, tx: Sender<Event>) -> Option<Sender<GitPoke>> {
    let (poke, poked) = std::sync::mpsc::channel::<GitPoke>();
    let spawned = std::thread::Builder::new()
        .name("owt-lsp-git".into())
        .spawn(move || {
            let ctx = match Context::open(Some(&root)) {
                Ok(ctx) => ctx,
                Err(e) => {
                    tracing::warn!("the git refresher could not start: {e:#}");
                    return;
                }
            };
            let mut watched = false;
            let mut all = true;
            let mut changed: std::collections::BTreeSet<String> = Default::default();
            let mut last_full = Instant::now();
            loop {
                let only = (!all).then_some(&changed);
                if all || !changed.is_empty() {
                    if let Err(e) = ops::list::refresh_git_facts(&ctx, only) {
                        tracing::warn!("refreshing git facts failed: {e:#}");
                    }
                    if all {
                        last_full = Instant::now();
                    }
                    if tx.send(Event::GitRefreshed).is_err() {
                        return;
                    }
                }
                all = false;
                changed.clear();
                let period = if watched {
                    GIT_FULL_REFRESH
                } else {
                    GIT_REFRESH
                };
                let wait = (last_full + period).saturating_duration_since(Instant::now());
                let mut apply = |poke: GitPoke, all: &mut bool| match poke {
                    GitPoke::All => *all = true,
                    GitPoke::Watched(on) => watched = on,
                };
                match poked.recv_timeout(wait) {
                    Ok(first) => {
                        apply(first, &mut all);
                        std::thread::sleep(GIT_COALESCE);
                        while let Ok(next) = poked.try_recv() {
                            apply(next, &mut all);
                        }
                    }
                    Err(RecvTimeoutError::Timeout) => all = true,
                    Err(RecvTimeoutError::Disconnected) => return,
                }
            }
        });
    match spawned {
        Ok(_) => Some(poke),
        Err(e) => {
            tracing::warn!("cannot start the git refresher: {e}");
            None
        }
    }
}

/// How long the watcher collects file events before updating the guard.
const GUARD_DEBOUNCE: Duration = Duration::from_millis(20);
/// How long keystrokes are coalesced before the guard sees the buffers.
const OVERRIDES_DELAY: Duration = Duration::from_millis(25);

/// `owt/boardChanged`.
pub enum BoardChanged {}

impl tower_lsp_server::ls_types::notification::Notification for BoardChanged {
    type Params = Board;
    const METHOD: &'static str = METHOD_BOARD_CHANGED;
}

/// Reports `$/progress` for one long operation, from a worker thread.
pub struct Progress {
    client: Client,
    rt: Handle,
    token: Option<ProgressToken>,
}

impl Progress {
    pub fn begin(
        client: Client,
        rt: Handle,
        token: ProgressToken,
        supported: bool,
        title: &str,
    ) -> Progress {
        let token = supported.then_some(token);
        if let Some(token) = &token {
            let created = rt.block_on(client.create_work_done_progress(token.clone()));
            if created.is_ok() {
                let begin = WorkDoneProgress::Begin(WorkDoneProgressBegin {
                    title: title.to_string(),
                    cancellable: Some(false),
                    message: None,
                    percentage: None,
                });
                send_progress(&client, &rt, token.clone(), begin);
            } else {
                return Progress {
                    client,
                    rt,
                    token: None,
                };
            }
        }
        Progress { client, rt, token }
    }

    pub fn report(&self, message: &str) {
        if let Some(token) = &self.token {
            let report = WorkDoneProgress::Report(WorkDoneProgressReport {
                cancellable: Some(false),
                message: Some(message.to_string()),
                percentage: None,
            });
            send_progress(&self.client, &self.rt, token.clone(), report);
        }
    }

    pub fn end(&self, message: &str) {
        if let Some(token) = &self.token {
            let end = WorkDoneProgress::End(WorkDoneProgressEnd {
                message: Some(message.to_string()),
            });
            send_progress(&self.client, &self.rt, token.clone(), end);
        }
    }
}

fn send_progress(client: &Client, rt: &Handle, token: ProgressToken, value: WorkDoneProgress) {
    let params = ProgressParams {
        token,
        value: ProgressParamsValue::WorkDone(value),
    };
    rt.block_on(client.send_notification::<notification::Progress>(params));
}

pub fn reply_json<T: serde::Serialize>(reply: Reply<Option<Value>>, value: &T) {
    let _ = reply.send(
        serde_json::to_value(value)
            .map(Some)
            .map_err(|_| jsonrpc::Error::internal_error()),
    );
}
