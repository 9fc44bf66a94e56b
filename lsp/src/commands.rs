//! The owt commands of `workspace/executeCommand`, one function each,
//! returning the JSON result (or why not). Quick ones (attach, send, peek,
//! open the agent's file) run on the owner thread; long ones (spawn, merge,
//! ship, delete, resume) on a worker thread ([`Worker`]) that reports `$/progress`
//! and ends with `window/showMessage`. Replying is
//! [`super::requests::execute_command`]'s job, in one place.

use std::path::PathBuf;

use anyhow::{anyhow, Context as _};
use owt_protocol::lsp::{commands, CommandArgs, OpenTerminalParams, OpenTerminalResult};
use serde_json::{json, Value};
use tower_lsp_server::ls_types::*;

use super::convert::{line_range, path_to_uri, uri_to_path};
use super::event::Event;
use super::progress::Progress;
use super::state::State;
use super::terminal;
use owt_core::ops::{self, merge::MergeOptions, new::NewRequest, Context};
use owt_core::session;

/// Why a command did not run.
#[derive(Debug)]
pub enum CommandError {
    /// The arguments are wrong (JSON-RPC `InvalidParams`).
    Invalid(String),
    /// It ran and failed for a reason a person can act on.
    Failed(anyhow::Error),
}

impl From<anyhow::Error> for CommandError {
    fn from(e: anyhow::Error) -> Self {
        CommandError::Failed(e)
    }
}

impl From<session::SessionError> for CommandError {
    fn from(e: session::SessionError) -> Self {
        CommandError::Failed(e.into())
    }
}

pub type CommandResult = Result<Value, CommandError>;

/// The `session` argument, which most commands need.
pub fn session_arg<'a>(command: &str, args: &'a CommandArgs) -> Result<&'a str, CommandError> {
    args.session
        .as_deref()
        .ok_or_else(|| CommandError::Invalid(format!("{command} needs {{\"session\": \"name\"}}")))
}

/// `owt.attach`: opens a terminal attached to the session — through the
/// editor if it announced `openTerminal`, else through tmux / WezTerm /
/// Zellij / kitty, else a message with the command to run.
pub fn attach(state: &State, args: &CommandArgs) -> CommandResult {
    let name = session_arg(commands::ATTACH, args)?;
    let ctx = state.ctx()?;
    let row = ctx.session(name)?;
    let argv = terminal::attach_argv(&row.name);
    let cwd = if row.worktree_path.is_dir() {
        row.worktree_path.clone()
    } else {
        ctx.repo.main_root().to_path_buf()
    };
    let title = format!("owt: {}", row.name);
    if state.options.open_terminal {
        let params = OpenTerminalParams {
            title,
            argv,
            cwd: cwd.to_string_lossy().into_owned(),
            session: row.name.clone(),
        };
        let client = state.client.clone();
        // Never awaited here: the editor answers whenever it likes.
        state.rt.spawn(async move {
            if let Err(e) = client.send_request::<OpenTerminal>(params).await {
                tracing::warn!("owt/openTerminal failed: {e}");
            }
        });
        return Ok(json!({"opened": "editor"}));
    }
    match terminal::open_external(&argv, &cwd, &title) {
        terminal::Opened::Launched(via) => Ok(json!({"opened": via})),
        terminal::Opened::Manual(command) => {
            state.outbox.show_message(
                MessageType::INFO,
                format!(
                    "owt: to attach to {}, run in a terminal: {command}",
                    row.name
                ),
            );
            Ok(json!({"opened": false, "command": command}))
        }
    }
}

/// `owt.send`: types `text` (or `task`) and Enter into the agent.
pub fn send(state: &State, args: &CommandArgs) -> CommandResult {
    let name = session_arg(commands::SEND, args)?;
    let text = args.text.clone().or(args.task.clone()).unwrap_or_default();
    let ctx = state.ctx()?;
    let row = ctx.session(name)?;
    session::send(&ctx.home, &row, &text, true)?;
    Ok(json!({"sent": true}))
}

/// `owt.peek`: the agent's screen.
pub fn peek(state: &State, args: &CommandArgs) -> CommandResult {
    let name = session_arg(commands::PEEK, args)?;
    let ctx = state.ctx()?;
    let row = ctx.session(name)?;
    let view = session::peek(&ctx.home, &row, false)?;
    Ok(serde_json::to_value(view).map_err(anyhow::Error::from)?)
}

/// `owt.openAgentFile`: shows the agent's copy of a file (`path`, or the
/// `uri` of this checkout's copy), at the given lines.
pub fn open_agent_file(state: &State, args: &CommandArgs) -> CommandResult {
    let name = session_arg(commands::OPEN_AGENT_FILE, args)?;
    let ctx = state.ctx()?;
    let row = ctx.session(name)?;
    let relative = args
        .path
        .clone()
        .or_else(|| {
            let uri: Uri = args.uri.as_deref()?.parse().ok()?;
            state.relative_to_checkout(&uri_to_path(&uri)?)
        })
        .ok_or_else(|| {
            anyhow!("owt.openAgentFile needs \"path\" (relative to the repository) or \"uri\"")
        })?;
    let target = row.worktree_path.join(&relative);
    let uri =
        path_to_uri(&target).ok_or_else(|| anyhow!("{} is not a file path", target.display()))?;
    let selection = args.start_line.map(|start| {
        line_range(
            start.saturating_sub(1),
            args.end_line.unwrap_or(start).saturating_sub(1),
        )
    });
    let client = state.client.clone();
    state.rt.spawn(async move {
        let params = ShowDocumentParams {
            uri,
            external: Some(false),
            take_focus: Some(true),
            selection,
        };
        if let Err(e) = client.show_document(params).await {
            tracing::warn!("window/showDocument failed: {e}");
        }
    });
    Ok(json!({"opened": true}))
}

/// Where a selection of `owt.spawn` may come from: the workspace's
/// checkout and the sessions' worktrees. The selection's file (links
/// resolved) must be inside one of them, so an editor command cannot put
/// any other file's text into a task, the store and an agent.
fn selection_path(state: &State, uri: &Uri) -> anyhow::Result<PathBuf> {
    let path = uri_to_path(uri).ok_or_else(|| anyhow!("`{}` is not a file", uri.as_str()))?;
    // A file not saved yet resolves through its folder.
    let real = std::fs::canonicalize(&path).or_else(|e| {
        match (path.parent().map(std::fs::canonicalize), path.file_name()) {
            (Some(Ok(dir)), Some(name)) => Ok(dir.join(name)),
            _ => Err(e),
        }
    });
    let real = real.with_context(|| format!("owt.spawn: cannot resolve {}", path.display()))?;
    let ctx = state.ctx()?;
    let mut roots = vec![ctx.repo.main_root().to_path_buf()];
    roots.extend(
        state
            .sessions
            .iter()
            .filter(|s| !s.worktree.is_empty())
            .filter_map(|s| std::fs::canonicalize(&s.worktree).ok()),
    );
    if !roots.iter().any(|root| real.starts_with(root)) {
        anyhow::bail!(
            "owt.spawn: {} is outside the workspace ({}) and the agents' worktrees; owt only sends text from files inside them to an agent",
            path.display(),
            ctx.repo.main_root().display()
        );
    }
    Ok(real)
}

/// The task of `owt.spawn`: the given text, plus the selection (file, lines
/// and text) when one is given — from a document the editor has open, or
/// a file the user can read, inside the workspace ([`selection_path`]).
pub fn spawn_task(state: &State, args: &CommandArgs) -> Result<String, CommandError> {
    let invalid = |e: anyhow::Error| CommandError::Invalid(format!("{e:#}"));
    let mut task = args.task.clone().unwrap_or_default();
    if task.contains('\0') {
        return Err(CommandError::Invalid("owt.spawn: the task contains a NUL character, which no program can receive as an argument; remove it".into()));
    }
    if let (Some(uri), Some(start)) = (&args.uri, args.start_line) {
        let uri: Uri = uri
            .parse()
            .map_err(|_| CommandError::Invalid(format!("`{uri}` is not a URI")))?;
        let end = args.end_line.unwrap_or(start).max(start);
        let real = selection_path(state, &uri).map_err(invalid)?;
        let text = match state.docs.get(&uri) {
            Some(doc) => doc.text.clone(),
            // A regular file of at most 16 MiB (a FIFO would hang the
            // sidecar, a link to /dev/zero fill it).
            None => owt_core::safe_fs::read_regular(&real, owt_core::guard::big::BIG_FILE, None)
                .map_err(anyhow::Error::from)
                .and_then(|bytes| {
                    let bytes = bytes.ok_or_else(|| anyhow::anyhow!("no such file"))?;
                    Ok(String::from_utf8(bytes)?)
                })
                .with_context(|| format!("reading {}", real.display()))
                .map_err(invalid)?,
        };
        let selected: Vec<&str> = text
            .lines()
            .skip(start.saturating_sub(1) as usize)
            .take((end - start.max(1) + 1) as usize)
            .collect();
        let file = uri_to_path(&uri)
            .and_then(|p| state.relative_to_checkout(&p))
            .unwrap_or_else(|| uri.as_str().to_string());
        if task.trim().is_empty() {
            task = format!("Work on {file} lines {start}-{end}");
        }
        task.push_str(&format!(
            "\n\nContext: {file}, lines {start}-{end}:\n```\n{}\n```",
            selected.join("\n")
        ));
    }
    if task.trim().is_empty() {
        return Err(CommandError::Invalid("owt.spawn needs {\"task\": \"what to do\"} (or a selection: uri, start_line, end_line)".into()));
    }
    Ok(task)
}

/// A long command, checked and ready for its worker.
pub struct Job {
    pub command: &'static str,
    pub args: CommandArgs,
    /// `owt.spawn`'s task.
    pub task: Option<String>,
}

impl Job {
    fn title(&self) -> String {
        let name = self.args.session.as_deref().unwrap_or("");
        match self.command {
            commands::SPAWN => "owt: starting an agent".to_string(),
            commands::MERGE => format!("owt: merging {name}"),
            commands::SHIP => format!("owt: shipping {name}"),
            commands::RESUME => format!("owt: resuming {name}"),
            _ => format!("owt: deleting {name}"),
        }
    }
}

/// A long command's result and the sentence that announces it.
pub struct Done {
    pub value: Value,
    pub message: String,
}

/// `owt.spawn`: a new session on the task.
fn spawn(ctx: &mut Context, job: &Job, report: &mut dyn FnMut(&str)) -> anyhow::Result<Done> {
    let req = NewRequest {
        task: job.task.clone().unwrap_or_default(),
        ai_tool: job.args.ai_tool.clone(),
        size: (40, 120),
        ..NewRequest::default()
    };
    let created = ops::new::new_session(ctx, &req, report)?;
    let view = ops::list::session_view(ctx, &created.session)?;
    let mut message = match &created.queued {
        Some(why) => format!(
            "owt: queued {} ({}): {why}; it starts when a running agent ends or frees memory",
            view.name, view.provider
        ),
        None => format!("owt: started {} ({})", view.name, view.provider),
    };
    for warning in &created.warnings {
        message.push_str(&format!("; warning: {warning}"));
    }
    let value = serde_json::to_value(owt_protocol::NewOutput {
        session: view,
        warnings: created.warnings,
    })?;
    Ok(Done { value, message })
}

/// `owt.merge`: the session's branch into its base.
fn merge(ctx: &mut Context, job: &Job, report: &mut dyn FnMut(&str)) -> anyhow::Result<Done> {
    let name = job.args.session.as_deref().unwrap_or_default();
    let opts = MergeOptions {
        rebase: job.args.rebase.unwrap_or(false),
        ..MergeOptions::default()
    };
    let out = ops::merge::merge_session(ctx, name, opts, report)?;
    let message = format!("owt: merged {} into {}", out.branch, out.base);
    Ok(Done {
        value: serde_json::to_value(out)?,
        message,
    })
}

/// `owt.ship`: commit, merge and delete (behind the `[checks]`).
fn ship(ctx: &mut Context, job: &Job, report: &mut dyn FnMut(&str)) -> anyhow::Result<Done> {
    let name = job.args.session.as_deref().unwrap_or_default();
    let out = ops::checks::ship_checked(ctx, name, None, MergeOptions::default(), false, report)?;
    let mut message = format!("owt: shipped {} into {}", out.merge.name, out.merge.base);
    if !out.unreviewed.is_empty() {
        // Said as a warning (the editor shows it; progress lines fade).
        message.push_str(&unreviewed_warning(&out.unreviewed));
    }
    Ok(Done {
        value: serde_json::to_value(out)?,
        message,
    })
}

/// What a ship's message adds when it shipped files nobody reviewed.
fn unreviewed_warning(files: &[String]) -> String {
    let n = files.len();
    format!(
        ", with {n} file{} not reviewed since {} last change ({})",
        if n == 1 { "" } else { "s" },
        if n == 1 { "its" } else { "their" },
        files.join(", ")
    )
}

/// `owt.delete`: stop the agent, remove its worktree and branch.
fn delete(ctx: &mut Context, job: &Job, report: &mut dyn FnMut(&str)) -> anyhow::Result<Done> {
    let name = job.args.session.as_deref().unwrap_or_default();
    let force = job.args.force.unwrap_or(false);
    let out = ops::delete::delete_checked(ctx, name, force, report)?;
    let message = format!("owt: deleted {}", out.name);
    Ok(Done {
        value: serde_json::to_value(out)?,
        message,
    })
}

/// `owt.resume`: restarts a session whose agent is gone, continuing its
/// conversation (refused with the board's reason, as `owt resume` is).
fn resume(ctx: &mut Context, job: &Job, report: &mut dyn FnMut(&str)) -> anyhow::Result<Done> {
    let name = job.args.session.as_deref().unwrap_or_default();
    report(&format!("restarting {name}'s agent"));
    let (session, how) = ops::resume::resume(ctx, name)?;
    let view = ops::list::session_view(ctx, &session)?;
    let message = format!("owt: resumed {} ({}): {how}", view.name, view.provider);
    Ok(Done {
        value: serde_json::to_value(view)?,
        message,
    })
}

/// Runs a long command on its own thread, then hands its result to
/// `respond` and asks the owner to re-read sessions.
pub struct Worker {
    client: tower_lsp_server::Client,
    rt: tokio::runtime::Handle,
    tx: std::sync::mpsc::Sender<Event>,
    outbox: super::outbox::Outbox,
    root: PathBuf,
    home: PathBuf,
    progress_supported: bool,
}

impl Worker {
    pub fn start(
        state: &mut State,
        root: PathBuf,
        job: Job,
        respond: impl FnOnce(CommandResult) + Send + 'static,
    ) {
        let token = state.next_token();
        let worker = Worker {
            client: state.client.clone(),
            rt: state.rt.clone(),
            tx: state.tx.clone(),
            outbox: state.outbox.clone(),
            home: state
                .ctx
                .as_ref()
                .map(|ctx| ctx.home.clone())
                .unwrap_or_default(),
            root,
            progress_supported: state.progress_supported,
        };
        let spawned = std::thread::Builder::new()
            .name(format!("owt-lsp-{}", job.command))
            .spawn(move || respond(worker.run(&job, token)));
        if let Err(e) = spawned {
            tracing::error!("cannot start a worker thread: {e}");
        }
    }

    fn run(self, job: &Job, token: ProgressToken) -> CommandResult {
        let progress = Progress::begin(
            self.client.clone(),
            self.rt.clone(),
            token,
            self.progress_supported,
            &job.title(),
        );
        let mut report = |line: &str| progress.report(line);
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut ctx = Context::open_in(Some(&self.root), &self.home)?;
            match job.command {
                commands::SPAWN => spawn(&mut ctx, job, &mut report),
                commands::MERGE => merge(&mut ctx, job, &mut report),
                commands::SHIP => ship(&mut ctx, job, &mut report),
                commands::RESUME => resume(&mut ctx, job, &mut report),
                _ => delete(&mut ctx, job, &mut report),
            }
        }))
        .unwrap_or_else(|_| Err(anyhow!("owt hit an internal error running {}", job.command)));
        let result = match result {
            Ok(done) => {
                progress.end(&done.message);
                // A ship of files nobody reviewed is a warning.
                let unreviewed = done.value.get("unreviewed").and_then(Value::as_array);
                let level = if unreviewed.is_some_and(|files| !files.is_empty()) {
                    MessageType::WARNING
                } else {
                    MessageType::INFO
                };
                self.outbox.show_message(level, done.message);
                Ok(done.value)
            }
            Err(e) => {
                progress.end("failed");
                self.outbox
                    .show_message(MessageType::ERROR, format!("owt: {e:#}"));
                Err(CommandError::Failed(e))
            }
        };
        let _ = self.tx.send(Event::Refresh);
        result
    }
}

/// `owt/openTerminal` (server → client).
pub enum OpenTerminal {}

impl tower_lsp_server::ls_types::request::Request for OpenTerminal {
    type Params = OpenTerminalParams;
    type Result = OpenTerminalResult;
    const METHOD: &'static str = owt_protocol::lsp::METHOD_OPEN_TERMINAL;
}
