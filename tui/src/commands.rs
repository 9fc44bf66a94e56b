//! The actions, each through the same `ops` function as its CLI verb
//! (`owt new`, `delete`, `ship`, `merge`, `send`, `note`, `comment`,
//! `review --mark`, `approve`, `deny`, `resume`): no second implementation. The
//! result or the error goes to the status line; the board is re-read.

use owt_core::ops::agent::{self, SendTo};
use owt_core::ops::{self, merge::MergeOptions, new::NewRequest};
use owt_core::{provider, session};
use owt_protocol::host::PermissionAnswer;

use crate::app::{App, Mode, Prompt};
use crate::form::{Mode as RunMode, NewForm};
use crate::jobs::Body;
use crate::keys::Command;
use crate::live::Live;

/// Shows `result`'s error in the status line (and re-reads the board).
fn report(app: &mut App, live: &mut Live, what: &str, result: anyhow::Result<String>) {
    match result {
        Ok(line) => app.say(line),
        Err(e) => app.fail(format!("{what}: {e:#}")),
    }
    live.read_all(app);
}

/// Asks before `command` (delete, ship, merge) on `name`: what it does and
/// what would be discarded, as the CLI says it.
pub fn ask(app: &mut App, command: Command, name: &str) {
    let Some(view) = app.focused() else { return };
    let question = match command {
        Command::Delete => delete_question(view),
        Command::Ship => vec![
            format!("Ship {name}?"),
            format!(
                "Its work is committed (behind the [checks]), merged into {} and the session deleted.",
                view.base
            ),
        ],
        _ => vec![
            format!("Merge {name}?"),
            format!("{} is brought into {}, then {} is fast-forwarded to it; the session is deleted.", view.base, view.branch, view.base),
        ],
    };
    let mut question = question;
    question.push(String::new());
    question.push("y: yes · any other key: no".to_string());
    app.mode = Mode::Confirm {
        command,
        session: name.to_string(),
        question,
    };
}

/// The delete confirmation: what goes, what is kept, as `owt delete`'s
/// help says it.
pub fn delete_question(view: &owt_protocol::SessionView) -> Vec<String> {
    let mut lines = vec![format!(
        "Delete {}? Its agent stops; its worktree and branch {} are removed.",
        view.name, view.branch
    )];
    if view.changed_files > 0 {
        lines.push(format!(
            "{} changed file{}: a worktree with uncommitted or untracked work is kept (owt delete --force discards it).",
            view.changed_files,
            if view.changed_files == 1 { "" } else { "s" }
        ));
    }
    if view.ahead > 0 {
        lines.push(format!(
            "Its {} commit{} not in {} are kept under refs/owt/backup/{}.",
            view.ahead,
            if view.ahead == 1 { "" } else { "s" },
            view.base,
            view.name
        ));
    }
    lines.push(
        "Files git does not keep (ignored: .env, build output) are moved to the trash.".to_string(),
    );
    lines
}

/// What the status line says while `command` runs on `name`.
pub fn doing(command: Command, name: &str) -> String {
    match command {
        Command::Delete => format!("Deleting {name}…"),
        Command::Ship => format!("Shipping {name} (its [checks] first)…"),
        _ => format!("Merging {name}…"),
    }
}

/// A confirmed `command` to `name`, as a job (see [`crate::jobs`]).
pub fn confirmed(command: Command, name: &str) -> (&'static str, Body) {
    let name = name.to_string();
    // As the CLI without --now: refused while the agent works.
    let opts = MergeOptions {
        rebase: false,
        strategy: None,
        leave_conflicts: false,
        keep: false,
        now: false,
    };
    match command {
        Command::Delete => (
            "delete",
            Box::new(move |ctx, progress| {
                ops::delete::delete_session(ctx, &name, false, "deleted", progress)
                    .map(|out| (format!("Deleted session {}.", out.name), None))
            }),
        ),
        Command::Ship => (
            "ship",
            Box::new(move |ctx, progress| {
                ops::checks::ship_checked(ctx, &name, None, opts, false, progress)
                    .map(|_| (format!("Shipped {name}."), None))
            }),
        ),
        _ => (
            "merge",
            Box::new(move |ctx, progress| {
                ops::merge::merge_session(ctx, &name, opts, progress)
                    .map(|_| (format!("Merged {name}."), None))
            }),
        ),
    }
}

/// A job's end: its line or error in the status line, the session it
/// names focused, the board re-read.
pub fn ended(
    app: &mut App,
    live: &mut Live,
    what: &str,
    result: anyhow::Result<String>,
    focus: Option<String>,
) {
    if result.is_ok() && focus.is_some() {
        app.focus = focus;
    }
    report(app, live, what, result);
}

/// `f`: the guard's conflict notes for `name`, typed into its agent.
pub fn fix(app: &mut App, live: &mut Live, name: &str) {
    let result = (|| {
        let report = ops::guard::report(&live.ctx, Some(name))?;
        let notices: Vec<_> = ops::conflicts::notices(&report.pairs)
            .into_iter()
            .filter(|n| n.session == name)
            .collect();
        if notices.is_empty() {
            anyhow::bail!("{name} has no conflict with another session");
        }
        for notice in &notices {
            send_one(live, name, &notice.message())?;
        }
        Ok(format!(
            "Sent {} conflict note{} to {name}.",
            notices.len(),
            if notices.len() == 1 { "" } else { "s" }
        ))
    })();
    report(app, live, "fix", result);
}

fn send_one(live: &Live, name: &str, text: &str) -> anyhow::Result<()> {
    let sent = agent::send(&live.ctx, &SendTo::Session(name.to_string()), text, true)?;
    if let Some((_, e)) = sent.failed.into_iter().next() {
        return Err(e);
    }
    Ok(())
}

/// `r`: every changed file of `name` marked reviewed as it is now.
pub fn review(app: &mut App, live: &mut Live, name: &str) {
    let result = ops::review::mark_reviewed(&live.ctx, name, &[], None).map(|state| {
        format!(
            "{} file{} of {name} reviewed.",
            state.reviewed.len(),
            if state.reviewed.len() == 1 { "" } else { "s" }
        )
    });
    report(app, live, "review", result);
}

/// `y` / `Y`: answers the ACP permission request of `name`.
pub fn answer(app: &mut App, live: &mut Live, name: &str, deny: bool) {
    let result = (|| {
        let row = live.ctx.session(name)?;
        let answer = PermissionAnswer {
            option: None,
            deny,
            id: None,
        };
        let done = session::answer_permission(&live.ctx.store, &live.ctx.home, &row, &answer)?;
        Ok(format!("{name}: {}", done.name))
    })();
    report(app, live, if deny { "deny" } else { "approve" }, result);
}

/// `R`: starts `name`'s gone agent again, its conversation resumed where
/// the agent can (`owt resume`).
pub fn resume(app: &mut App, live: &mut Live, name: &str) {
    let result = ops::resume::resume(&mut live.ctx, name)
        .map(|(session, how)| format!("Resumed session {}: {how}.", session.name));
    report(app, live, "resume", result);
}

/// A prompt's text sent: to the agent, to every agent, or as a comment.
pub fn prompted(app: &mut App, live: &mut Live, prompt: Prompt, text: &str) {
    if text.trim().is_empty() {
        app.say("Nothing to send.");
        return;
    }
    let name = app.focus.clone().unwrap_or_default();
    let (what, result) = match prompt {
        Prompt::Send => (
            "type",
            send_one(live, &name, text).map(|_| format!("Sent to {name}.")),
        ),
        Prompt::Note => (
            "note",
            ops::notes::note(&mut live.ctx, Some(text), false, false)
                .map(|_| "The note goes to every agent.".to_string()),
        ),
        Prompt::Comment => ("comment", comment(app, live, &name, text)),
    };
    report(app, live, what, result);
}

fn comment(app: &App, live: &Live, name: &str, text: &str) -> anyhow::Result<String> {
    let Some((path, line)) = app.diff_anchor().cloned() else {
        anyhow::bail!("no diff line under the cursor");
    };
    let new = ops::review::NewComment {
        path: path.clone(),
        start_line: line,
        end_line: line,
        text: text.to_string(),
    };
    ops::review::comment(&live.ctx, name, &[new], ops::review::BATCH_WINDOW)?;
    Ok(format!("Commented on {path}:{line} of {name}."))
}

/// The `n` form, with the agents installed and the configured remotes.
pub fn new_form(live: &Live) -> NewForm {
    let config = &live.ctx.config.config;
    let agents = provider::all(config)
        .unwrap_or_default()
        .into_iter()
        .filter(|p| p.find_binary().is_some())
        .map(|p| p.name)
        .collect();
    let hosts = config.remotes.keys().cloned().collect();
    NewForm::new(agents, hosts)
}

/// The session the form describes (`owt new …`), as a job; an error
/// when the form cannot start one.
pub fn start(form: &NewForm) -> Result<(&'static str, Body), String> {
    if form.task.trim().is_empty() {
        return Err("new: the task is empty (type what the agent should do)".into());
    }
    let size = crossterm::terminal::size()
        .map(|(cols, rows)| (rows, cols))
        .unwrap_or((40, 120));
    let req = NewRequest {
        task: form.task.clone(),
        name: None,
        branch: None,
        base: None,
        ai_tool: form.agent_name().map(str::to_string),
        headless: form.mode == RunMode::Headless,
        plan: form.mode == RunMode::Plan,
        in_place: form.mode == RunMode::InPlace,
        template: None,
        raw: false,
        size,
        acp: form.mode == RunMode::Acp,
        no_prompt: false,
        acp_mcp_servers: Vec::new(),
        now: false,
        fork: None,
        parent: None,
        conductor: false,
    };
    let remote = form.host_name().map(str::to_string);
    Ok((
        "new",
        Box::new(move |ctx, progress| match remote {
            Some(remote) => ops::remote::new_on(ctx, &remote, &req, progress).map(|made| {
                let line = format!("Started session {} on {remote}.", made.session.name);
                (line, Some(made.session.name))
            }),
            None => ops::new::new_session(ctx, &req, progress).map(|made| {
                let name = made.session.name;
                let line = match &made.queued {
                    Some(why) => format!("Queued session {name}: {why}."),
                    None if !made.agent_started => {
                        format!("Created session {name}, but its agent did not start.")
                    }
                    None => format!("Started session {name}."),
                };
                (line, Some(name))
            }),
        }),
    ))
}

/// `a`: this terminal handed to the session's host, as `owt attach`
/// (an ACP session: its transcript and a prompt line); what ended it.
pub fn attach(live: &Live, name: &str) -> anyhow::Result<String> {
    use owt_core::session::acp_attach::{self, AcpAttachEnd};
    use owt_core::session::attach::AttachEnd;
    if let Some((name, socket)) = agent::acp_socket(&live.ctx, name)? {
        let end = acp_attach::attach(
            &socket,
            &name,
            std::io::BufReader::new(std::io::stdin()),
            std::io::stdout(),
        )?;
        return Ok(match end {
            AcpAttachEnd::Detached => format!("Back from {name}; the agent keeps running."),
            AcpAttachEnd::Exited(_) => format!("{name} exited."),
            AcpAttachEnd::HostGone => format!("The session host of {name} went away."),
        });
    }
    let (name, end) = agent::attach(&live.ctx, name, true)?;
    Ok(match end {
        AttachEnd::Detached => format!("Back from {name}; the agent keeps running."),
        AttachEnd::Exited(_) => format!("{name} exited."),
        AttachEnd::HostGone => format!("The session host of {name} went away."),
    })
}
