//! The control plane: `owt` in a terminal, a live, keyboard-driven board
//! of the sessions (NEEDS YOU, READY TO SHIP, IN FLIGHT, READY TO CLEAN,
//! QUEUED) with a preview of the focused one and the keys that apply to
//! it. A layer above owt-core's use cases: every action calls the same
//! `ops` function as its CLI verb, every row shows the server's `actions`
//! (`owt_core::actions`).
//!
//! Parts: [`app`] (the state, pure), [`view`] (drawing it, pure, one
//! component per pane), [`keys`] (the one key map), [`input`] and
//! [`commands`] (keys to actions), [`jobs`] (long actions — new, ship,
//! merge, delete — off the drawing thread, so the board stays live while
//! they run), [`live`] (the facts, as they change),
//! [`terminal`] (raw mode, the alternate screen, bell and title).
//! See docs/control-plane.md.

#![forbid(unsafe_code)]

pub mod app;
pub mod commands;
pub mod form;
pub mod input;
pub mod jobs;
pub mod keys;
pub mod live;
pub mod preview_text;
pub mod terminal;
pub mod view;

#[cfg(test)]
mod tests;

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use crossterm::event::{self, Event, KeyEventKind};
use owt_core::config::UiBell;

use app::App;
use input::After;
use live::Live;

/// How long the loop waits for a key before it looks at the facts again:
/// a status change reaches the screen within this and one read.
const POLL: Duration = Duration::from_millis(100);

/// Whether `owt` with no verb (in a terminal) shows the control plane:
/// `[ui] control_plane`, on by default.
pub fn wanted(config: &owt_core::config::Config) -> bool {
    config.ui.control_plane
}

/// Runs the control plane on this terminal until `q`.
pub fn run(dir: Option<&Path>) -> anyhow::Result<()> {
    let mut live = Live::open(dir)?;
    let colour = std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let mut app = App::new(live.repo_name(), colour);
    live.read_all(&mut app);
    let bell = live.ctx.config.config.ui.bell;
    terminal::divert_stderr(&live.ctx.home.join("logs/control-plane.log"));
    let result =
        terminal::enter().and_then(|mut term| event_loop(&mut app, &mut live, &mut term, bell));
    terminal::leave();
    terminal::restore_stderr();
    result
}

fn event_loop(
    app: &mut App,
    live: &mut Live,
    term: &mut terminal::Term,
    bell: UiBell,
) -> anyhow::Result<()> {
    let mut needing = None;
    let mut draw = true;
    let mut jobs = jobs::Jobs::new(&live.ctx);
    loop {
        if draw {
            live.refresh_preview(app, false);
            let started = std::time::Instant::now();
            term.draw(|frame| view::render(app, frame))?;
            tracing::debug!(
                sessions = app.sessions.len(),
                micros = started.elapsed().as_micros() as u64,
                "drew the control plane"
            );
            announce(app, &mut needing, bell);
        }
        draw = false;
        if event::poll(POLL)? {
            match event::read()? {
                Event::Key(key) if key.kind != KeyEventKind::Release => {
                    match input::on_key(app, live, key) {
                        // A ship or delete cut short by leaving would
                        // leave its work half done: wait for it.
                        After::Quit if jobs.running > 0 => app.fail(format!(
                            "{} action{} still running: q once it ends (its result shows here)",
                            jobs.running,
                            if jobs.running == 1 { "" } else { "s" }
                        )),
                        After::Quit => return Ok(()),
                        After::Attach(name) => attach(app, live, term, &name)?,
                        After::Run(command, name) => {
                            let (what, body) = commands::confirmed(command, &name);
                            jobs.spawn(what, body);
                        }
                        After::Start(form) => match commands::start(&form) {
                            Ok((what, body)) => {
                                app.say("Starting the session…");
                                jobs.spawn(what, body);
                            }
                            Err(e) => app.fail(e),
                        },
                        After::Draw => {}
                    }
                    draw = true;
                }
                Event::Resize(..) => {
                    term.autoresize()?;
                    draw = true;
                }
                Event::Paste(text) => {
                    input::on_paste(app, &text);
                    draw = true;
                }
                _ => {}
            }
        }
        for said in jobs.poll() {
            match said {
                jobs::Said::Progress(line) => app.say(owt_core::printable::line(&line)),
                jobs::Said::Done {
                    what,
                    result,
                    focus,
                } => commands::ended(app, live, what, result, focus),
            }
            draw = true;
        }
        draw |= live.tick(app);
    }
}

/// The title with the count; the bell (or OSC 9) when a session entered
/// NEEDS YOU since the last draw (`None`: the first draw, which never
/// rings).
fn announce(app: &App, needing: &mut Option<BTreeSet<String>>, bell: UiBell) {
    let now = app.needing_you();
    if let Some(before) = needing.as_ref() {
        let entered: Vec<&str> = now.difference(before).map(String::as_str).collect();
        if !entered.is_empty() {
            terminal::ring(
                bell,
                &format!(
                    "owt: {} need{} you",
                    entered.join(", "),
                    if entered.len() == 1 { "s" } else { "" }
                ),
            );
        }
    }
    if needing.as_ref().map(BTreeSet::len) != Some(now.len()) {
        let n = now.len();
        let mut title = format!("owt · {}", app.repo_name);
        if n > 0 {
            let needs = if n == 1 { "needs" } else { "need" };
            title.push_str(&format!(" · {n} session{} {needs} you", view::plural(n)));
        }
        terminal::set_title(&title);
    }
    *needing = Some(now);
}

/// `a`: the terminal handed to the session's host as `owt attach` does;
/// back here, where we were, after Ctrl-\ d.
fn attach(
    app: &mut App,
    live: &mut Live,
    term: &mut terminal::Term,
    name: &str,
) -> anyhow::Result<()> {
    terminal::leave();
    let result = commands::attach(live, name);
    *term = terminal::take()?;
    match result {
        Ok(line) => app.say(line),
        Err(e) => app.fail(format!("attach: {e:#}")),
    }
    live.read_all(app);
    Ok(())
}
