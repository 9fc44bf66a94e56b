//! The control plane's state and drawing, as specifications: a fixture
//! of sessions in, the screen ratatui's `TestBackend` draws out.
//! `UPDATE_EXPECT=1` rewrites the expectations.

mod app_state;
mod footer;
mod panes;

use expect_test::Expect;
use owt_protocol::{Lane, SessionKind, SessionView, Status};
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::Terminal;

use crate::app::App;

/// A session `name` in `status` (lane as the derivation puts a session
/// without work there), with the server's actions.
pub fn session(name: &str, status: Status) -> SessionView {
    let lane = match status {
        Status::Conflict
        | Status::Blocked
        | Status::Exited
        | Status::Done
        | Status::NeedsInput
        | Status::ChecksFailed
        | Status::CiFailed => Lane::NeedsYou,
        Status::Merged => Lane::ReadyToClean,
        _ => Lane::InFlight,
    };
    let mut view = SessionView {
        name: name.into(),
        id: format!("id-{name}"),
        task: format!("the task of {name}"),
        branch: format!("owt/{name}"),
        base: "main".into(),
        worktree: format!("/w/{name}"),
        provider: "claude".into(),
        kind: SessionKind::Worktree,
        status,
        status_text: status.as_str().into(),
        lane,
        created_at: 0,
        exit_code: None,
        host_lost: false,
        ahead: 0,
        changed_files: 0,
        overlaps: 0,
        conflicted_files: Vec::new(),
        base_conflicts: Vec::new(),
        agent_pid: None,
        transport: Default::default(),
        permission: None,
        acp: None,
        checks: None,
        pr: None,
        remote: None,
        rss_bytes: None,
        ports: Vec::new(),
        actions: Vec::new(),
        usage: None,
        review: None,
        parent: None,
    };
    with_actions(&mut view);
    view
}

/// The actions as the server computes them for `view`.
pub fn with_actions(view: &mut SessionView) {
    view.actions = owt_core::actions::session_actions(view);
}

/// A session with committed work, ready to ship.
pub fn ready(name: &str) -> SessionView {
    let mut view = session(name, Status::Done);
    view.lane = Lane::ReadyToShip;
    view.ahead = 2;
    view.changed_files = 3;
    with_actions(&mut view);
    view
}

/// An app of `sessions` at 10 minutes past their creation.
pub fn app(sessions: Vec<SessionView>) -> App {
    let mut app = App::new("demo".into(), false);
    app.set_sessions(sessions, 600_000);
    app
}

/// The screen drawn for `app` at `width`×`height`, trailing blanks cut.
pub fn draw(app: &App, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal
        .draw(|frame| crate::view::render(app, frame))
        .unwrap();
    text(terminal.backend().buffer())
}

pub fn text(buffer: &Buffer) -> String {
    let area = buffer.area;
    let mut out = String::new();
    for y in 0..area.height {
        let line: String = (0..area.width)
            .map(|x| buffer[(x, y)].symbol().to_string())
            .collect();
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

pub fn check(app: &App, width: u16, height: u16, expect: Expect) {
    expect.assert_eq(&draw(app, width, height));
}
