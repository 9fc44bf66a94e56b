//! `workspace/executeCommand`: the owt commands. Quick ones (attach, send,
//! peek, open the agent's file) run on the owner thread; long ones (spawn,
//! merge, ship, delete) on a worker thread that reports `$/progress`, ends
//! with `window/showMessage`, and replies when done.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context as _};
use owt_protocol::lsp::{
    commands, CommandArgs, OpenTerminalParams, OpenTerminalResult, METHOD_OPEN_TERMINAL,
};
use serde_json::Value;
use tower_lsp_server::ls_types::*;

use super::convert::{failed, invalid_params, line_range, path_to_uri, uri_to_path};
use super::state::{reply_json, Event, Progress, Reply, State};
use super::terminal;
use crate::ops::{self, merge::MergeOptions, new::NewRequest, Context};
use crate::session;

pub fn execute(state: &mut State, params: ExecuteCommandParams, reply: Reply<Option<Value>>) {
    let args: CommandArgs = match params.arguments.first() {
        None => CommandArgs::default(),
        Some(value) => match serde_json::from_value(value.clone()) {
            Ok(args) => args,
            Err(e) => {
                let _ = reply.send(Err(invalid_params(format!(
                    "{}: the argument must be an object like {{\"session\": \"name\"}}: {e}",
                    params.command
                ))));
                return;
            }
        },
    };
    let Some(root) = state.root.clone().filter(|_| state.ctx.is_some()) else {
        let _ = reply.send(Err(failed(&anyhow!("{}", state.no_repo_reason()))));
        return;
    };
    let command = params.command.as_str();
    let session = || {
        args.session
            .clone()
            .ok_or_else(|| invalid_params(format!("{command} needs {{\"session\": \"name\"}}")))
    };
    match command {
        commands::ATTACH => match session() {
            Err(e) => {
                let _ = reply.send(Err(e));
            }
            Ok(name) => match attach(state, &name) {
                Ok(value) => reply_json(reply, &value),
                Err(e) => {
                    let _ = reply.send(Err(failed(&e)));
                }
            },
        },
        commands::SEND => match session() {
            Err(e) => {
                let _ = reply.send(Err(e));
            }
            Ok(name) => {
                let text = args.text.clone().or(args.task.clone()).unwrap_or_default();
                let result = state
                    .ctx
                    .as_ref()
                    .ok_or_else(|| anyhow!("no repository"))
                    .and_then(|ctx| {
                        let row = ctx.session(&name)?;
                        session::send(&ctx.home, &row, &text, true)?;
                        Ok(())
                    });
                match result {
                    Ok(()) => reply_json(reply, &serde_json::json!({"sent": true})),
                    Err(e) => {
                        let _ = reply.send(Err(failed(&e)));
                    }
                }
            }
        },
        commands::PEEK => match session() {
            Err(e) => {
                let _ = reply.send(Err(e));
            }
            Ok(name) => {
                let result = state
                    .ctx
                    .as_ref()
                    .ok_or_else(|| anyhow!("no repository"))
                    .and_then(|ctx| {
                        let row = ctx.session(&name)?;
                        Ok(session::peek(&ctx.home, &row, false)?)
                    });
                match result {
                    Ok(view) => reply_json(reply, &view),
                    Err(e) => {
                        let _ = reply.send(Err(failed(&e)));
                    }
                }
            }
        },
        commands::OPEN_AGENT_FILE => match session() {
            Err(e) => {
                let _ = reply.send(Err(e));
            }
            Ok(name) => match open_agent_file(state, &name, &args) {
                Ok(()) => reply_json(reply, &serde_json::json!({"opened": true})),
                Err(e) => {
                    let _ = reply.send(Err(failed(&e)));
                }
            },
        },
        commands::SPAWN | commands::MERGE | commands::SHIP | commands::DELETE => {
            if command != commands::SPAWN && args.session.is_none() {
                let _ = reply.send(Err(invalid_params(format!(
                    "{command} needs {{\"session\": \"name\"}}"
                ))));
                return;
            }
            let task = if command == commands::SPAWN {
                match spawn_task(state, &args) {
                    Ok(task) => Some(task),
                    Err(e) => {
                        let _ = reply.send(Err(invalid_params(format!("{e:#}"))));
                        return;
                    }
                }
            } else {
                None
            };
            let token = state.next_token();
            let worker = Worker {
                client: state.client.clone(),
                rt: state.rt.clone(),
                tx: state.tx.clone(),
                root,
                progress_supported: state.progress_supported,
            };
            let command = command.to_string();
            let spawned = std::thread::Builder::new()
                .name(format!("owt-lsp-{command}"))
                .spawn(move || worker.run(&command, args, task, token, reply));
            if let Err(e) = spawned {
                tracing::error!("cannot start a worker thread: {e}");
            }
        }
        other => {
            let _ = reply.send(Err(invalid_params(format!(
                "unknown command `{other}`; owt's commands are {}",
                commands::ALL.join(", ")
            ))));
        }
    }
}

/// Opens a terminal attached to the session: through the editor if it
/// announced `openTerminal`, else through tmux / WezTerm / Zellij / kitty,
/// else a message with the command to run.
fn attach(state: &State, name: &str) -> anyhow::Result<Value> {
    let ctx = state.ctx.as_ref().ok_or_else(|| anyhow!("no repository"))?;
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
        return Ok(serde_json::json!({"opened": "editor"}));
    }
    match terminal::open_external(&argv, &cwd, &title) {
        terminal::Opened::Launched(via) => Ok(serde_json::json!({"opened": via})),
        terminal::Opened::Manual(command) => {
            state.show_message(
                MessageType::INFO,
                format!(
                    "owt: to attach to {}, run in a terminal: {command}",
                    row.name
                ),
            );
            Ok(serde_json::json!({"opened": false, "command": command}))
        }
    }
}

fn open_agent_file(state: &State, name: &str, args: &CommandArgs) -> anyhow::Result<()> {
    let ctx = state.ctx.as_ref().ok_or_else(|| anyhow!("no repository"))?;
    let row = ctx.session(name)?;
    let relative = args
        .path
        .clone()
        .or_else(|| {
            let uri: Uri = args.uri.as_deref()?.parse().ok()?;
            let path = uri_to_path(&uri)?;
            relative_to_checkout(state, &path)
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
    Ok(())
}

/// `path` relative to the checkout it is in (the main checkout or a
/// session's worktree).
pub fn relative_to_checkout(state: &State, path: &Path) -> Option<String> {
    if let Some(session) = state.session_of_path(path) {
        return path
            .strip_prefix(&session.worktree)
            .ok()
            .map(|p| p.to_string_lossy().into_owned());
    }
    let root = state.ctx.as_ref()?.repo.main_root().to_path_buf();
    let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    path.strip_prefix(&root)
        .ok()
        .map(|p| p.to_string_lossy().into_owned())
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
    let ctx = state.ctx.as_ref().ok_or_else(|| anyhow!("no repository"))?;
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
fn spawn_task(state: &State, args: &CommandArgs) -> anyhow::Result<String> {
    let mut task = args.task.clone().unwrap_or_default();
    if task.contains('\0') {
        anyhow::bail!("owt.spawn: the task contains a NUL character, which no program can receive as an argument; remove it");
    }
    if let (Some(uri), Some(start)) = (&args.uri, args.start_line) {
        let uri: Uri = uri.parse().map_err(|_| anyhow!("`{uri}` is not a URI"))?;
        let end = args.end_line.unwrap_or(start).max(start);
        let real = selection_path(state, &uri)?;
        let text = match state.docs.get(&uri) {
            Some(doc) => doc.text.clone(),
            None => std::fs::read_to_string(&real)
                .with_context(|| format!("reading {}", real.display()))?,
        };
        let selected: Vec<&str> = text
            .lines()
            .skip(start.saturating_sub(1) as usize)
            .take((end - start.max(1) + 1) as usize)
            .collect();
        let file = uri_to_path(&uri)
            .and_then(|p| relative_to_checkout(state, &p))
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
        anyhow::bail!("owt.spawn needs {{\"task\": \"what to do\"}} (or a selection: uri, start_line, end_line)");
    }
    Ok(task)
}

/// A long command on its own thread.
struct Worker {
    client: tower_lsp_server::Client,
    rt: tokio::runtime::Handle,
    tx: std::sync::mpsc::Sender<Event>,
    root: PathBuf,
    progress_supported: bool,
}

impl Worker {
    fn run(
        self,
        command: &str,
        args: CommandArgs,
        task: Option<String>,
        token: ProgressToken,
        reply: Reply<Option<Value>>,
    ) {
        let title = match command {
            commands::SPAWN => "owt: starting an agent".to_string(),
            commands::MERGE => format!("owt: merging {}", args.session.as_deref().unwrap_or("")),
            commands::SHIP => format!("owt: shipping {}", args.session.as_deref().unwrap_or("")),
            _ => format!("owt: deleting {}", args.session.as_deref().unwrap_or("")),
        };
        let progress = Progress::begin(
            self.client.clone(),
            self.rt.clone(),
            token,
            self.progress_supported,
            &title,
        );
        let mut report = |line: &str| progress.report(line);
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.perform(command, &args, task, &mut report)
        }))
        .unwrap_or_else(|_| Err(anyhow!("owt hit an internal error running {command}")));
        match result {
            Ok((value, message)) => {
                progress.end(&message);
                self.message(MessageType::INFO, message);
                let _ = reply.send(Ok(Some(value)));
            }
            Err(e) => {
                progress.end("failed");
                self.message(MessageType::ERROR, format!("owt: {e:#}"));
                let _ = reply.send(Err(failed(&e)));
            }
        }
        let _ = self.tx.send(Event::Refresh);
    }

    fn perform(
        &self,
        command: &str,
        args: &CommandArgs,
        task: Option<String>,
        report: &mut dyn FnMut(&str),
    ) -> anyhow::Result<(Value, String)> {
        let mut ctx = Context::open(Some(&self.root))?;
        let name = args.session.clone().unwrap_or_default();
        match command {
            commands::SPAWN => {
                let req = NewRequest {
                    task: task.unwrap_or_default(),
                    ai_tool: args.ai_tool.clone(),
                    size: (40, 120),
                    ..NewRequest::default()
                };
                let created = ops::new::new_session(&mut ctx, &req, report)?;
                let view = ops::list::session_view(&ctx, &created.session)?;
                let mut message = format!("owt: started {} ({})", view.name, view.provider);
                for warning in &created.warnings {
                    message.push_str(&format!("; warning: {warning}"));
                }
                Ok((
                    serde_json::to_value(owt_protocol::NewOutput {
                        session: view,
                        warnings: created.warnings,
                    })?,
                    message,
                ))
            }
            commands::MERGE => {
                let opts = MergeOptions {
                    rebase: args.rebase.unwrap_or(false),
                    ..MergeOptions::default()
                };
                let out = ops::merge::merge_session(&mut ctx, &name, opts, report)?;
                let message = format!("owt: merged {} into {}", out.branch, out.base);
                Ok((serde_json::to_value(out)?, message))
            }
            commands::SHIP => {
                let out = ops::checks::ship_checked(
                    &mut ctx,
                    &name,
                    None,
                    MergeOptions::default(),
                    false,
                    report,
                )?;
                let message = format!("owt: shipped {} into {}", out.merge.name, out.merge.base);
                Ok((serde_json::to_value(out)?, message))
            }
            _ => {
                let out = ops::delete::delete_session(
                    &mut ctx,
                    &name,
                    args.force.unwrap_or(false),
                    "deleted",
                    report,
                )?;
                let message = format!("owt: deleted {}", out.name);
                Ok((serde_json::to_value(out)?, message))
            }
        }
    }

    fn message(&self, typ: MessageType, text: String) {
        let client = self.client.clone();
        self.rt
            .spawn(async move { client.show_message(typ, text).await });
    }
}

/// `owt/openTerminal` (server → client).
pub enum OpenTerminal {}

impl tower_lsp_server::ls_types::request::Request for OpenTerminal {
    type Params = OpenTerminalParams;
    type Result = OpenTerminalResult;
    const METHOD: &'static str = METHOD_OPEN_TERMINAL;
}
