//! `workspace/executeCommand`: parses the one argument, runs the command
//! ([`super::super::commands`]: quick ones here, long ones on a worker),
//! and replies — the one place a command's result becomes a JSON-RPC
//! response.

use owt_protocol::lsp::{commands, CommandArgs};
use serde_json::Value;
use tower_lsp_server::ls_types::ExecuteCommandParams;

use super::super::commands::{self as run, CommandError, CommandResult, Job, Worker};
use super::super::convert::{failed, invalid_params};
use super::super::event::Reply;
use super::super::owner::Owner;
use super::super::permission;
use super::super::review_live;

pub fn handle(owner: &mut Owner, params: ExecuteCommandParams, reply: Reply<Option<Value>>) {
    let state = &mut owner.state;
    let command = params.command.as_str();
    let args = match parse_args(command, params.arguments.first()) {
        Ok(args) => args,
        Err(e) => return respond(reply, Err(e)),
    };
    let Some(root) = state.root.clone().filter(|_| state.ctx.is_some()) else {
        let why = anyhow::anyhow!("{}", state.no_repo_reason());
        return respond(reply, Err(CommandError::Failed(why)));
    };
    let long = |command: &'static str, args: CommandArgs, task| Job {
        command,
        args,
        task,
    };
    let job = match command {
        commands::ATTACH => return respond(reply, run::attach(state, &args)),
        commands::SEND => return respond(reply, run::send(state, &args)),
        commands::PEEK => return respond(reply, run::peek(state, &args)),
        commands::OPEN_AGENT_FILE => return respond(reply, run::open_agent_file(state, &args)),
        commands::COMMENT => return respond(reply, owner.review.comment(state, &args)),
        commands::APPROVE | commands::DENY => {
            let result = match command {
                commands::APPROVE => permission::approve(state, &args),
                _ => permission::deny(state, &args),
            };
            // The board and the NEEDS YOU lane follow at once.
            owner.refresh_sessions(false);
            return respond(reply, result);
        }
        commands::SHOW_BASE => return respond(reply, review_live::show_base(state, &args)),
        commands::RESOLVE_COMMENT => return respond(reply, review_live::resolve(state, &args)),
        commands::MARK_REVIEWED => {
            let result = review_live::mark_reviewed(state, &args);
            // READY TO SHIP rows say whether the work is reviewed.
            owner.refresh_sessions(false);
            return respond(reply, result);
        }
        commands::SPAWN => match run::spawn_task(state, &args) {
            Ok(task) => long(commands::SPAWN, args, Some(task)),
            Err(e) => return respond(reply, Err(e)),
        },
        commands::MERGE | commands::SHIP | commands::DELETE | commands::RESUME => {
            if let Err(e) = run::session_arg(command, &args) {
                return respond(reply, Err(e));
            }
            let command = commands::ALL
                .iter()
                .find(|c| **c == command)
                .copied()
                .unwrap_or(commands::DELETE);
            long(command, args, None)
        }
        other => {
            let why = format!(
                "unknown command `{other}`; owt's commands are {}",
                commands::ALL.join(", ")
            );
            return respond(reply, Err(CommandError::Invalid(why)));
        }
    };
    Worker::start(state, root, job, move |result| respond(reply, result));
}

/// The one argument of every command (none: all defaults).
fn parse_args(command: &str, arg: Option<&Value>) -> Result<CommandArgs, CommandError> {
    let Some(value) = arg else {
        return Ok(CommandArgs::default());
    };
    // `:lsp-workspace-command owt.comment "text"` (Helix): the text alone.
    if let (commands::COMMENT, Value::String(text)) = (command, value) {
        return Ok(CommandArgs {
            text: Some(text.clone()),
            ..CommandArgs::default()
        });
    }
    let mut value = value.clone();
    // `"option": 2` (typed in Helix's `:lsp-workspace-command`): the
    // option's number, as `owt approve NAME 2` takes it.
    if let Some(n) = value.get("option").filter(|o| o.is_u64()).cloned() {
        value["option"] = Value::String(n.to_string());
    }
    serde_json::from_value(value).map_err(|e| {
        CommandError::Invalid(format!(
            "{command}: the argument must be an object like {{\"session\": \"name\"}}: {e}"
        ))
    })
}

/// Sends a command's result as the response.
fn respond(reply: Reply<Option<Value>>, result: CommandResult) {
    let _ = reply.send(match result {
        Ok(value) => Ok(Some(value)),
        Err(CommandError::Invalid(message)) => Err(invalid_params(message)),
        Err(CommandError::Failed(e)) => Err(failed(&e)),
    });
}
