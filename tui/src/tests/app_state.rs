//! The board's order and focus while the facts change: rows keep their
//! place in a lane, the focus follows its session across lanes, the
//! filter narrows the rows.

use owt_protocol::{Lane, Status};

use super::{app, ready, session, with_actions};

fn names(app: &crate::app::App) -> Vec<String> {
    app.visible().iter().map(|s| s.name.clone()).collect()
}

#[test]
fn rows_keep_their_order_inside_a_lane_while_statuses_change() {
    let mut app = app(vec![
        session("a", Status::Working),
        session("b", Status::Idle),
        session("c", Status::Working),
    ]);
    assert_eq!(names(&app), ["a", "b", "c"]);
    // The same sessions listed in another order, statuses changed within
    // the lane: the rows stay where they were.
    app.set_sessions(
        vec![
            session("c", Status::Idle),
            session("b", Status::Working),
            session("a", Status::Starting),
        ],
        1,
    );
    assert_eq!(names(&app), ["a", "b", "c"]);
}

#[test]
fn the_focus_follows_its_session_when_it_changes_lane() {
    let mut app = app(vec![
        session("a", Status::Working),
        session("b", Status::Working),
        session("c", Status::Working),
    ]);
    app.move_focus(1);
    assert_eq!(app.focus.as_deref(), Some("b"));
    let mut b = ready("b");
    b.lane = Lane::ReadyToShip;
    with_actions(&mut b);
    app.set_sessions(
        vec![
            session("a", Status::Working),
            b,
            session("c", Status::Working),
        ],
        1,
    );
    assert_eq!(names(&app), ["b", "a", "c"]);
    assert_eq!(app.focus.as_deref(), Some("b"));
    assert_eq!(app.focused().unwrap().lane, Lane::ReadyToShip);
}

#[test]
fn a_deleted_focused_session_hands_the_focus_to_the_row_in_its_place() {
    let mut app = app(vec![
        session("a", Status::Working),
        session("b", Status::Working),
        session("c", Status::Working),
    ]);
    app.move_focus(1);
    app.set_sessions(
        vec![session("a", Status::Working), session("c", Status::Working)],
        1,
    );
    assert_eq!(app.focus.as_deref(), Some("c"));
}

#[test]
fn the_filter_matches_name_status_and_agent() {
    let mut codex = session("parser", Status::Working);
    codex.provider = "codex".into();
    let mut app = app(vec![
        codex,
        session("login", Status::NeedsInput),
        session("docs", Status::Working),
    ]);
    app.set_filter("codex".into());
    assert_eq!(names(&app), ["parser"]);
    app.set_filter("needs".into());
    assert_eq!(names(&app), ["login"]);
    app.set_filter("DOC".into());
    assert_eq!(names(&app), ["docs"]);
    assert_eq!(app.focus.as_deref(), Some("docs"));
    app.set_filter(String::new());
    assert_eq!(names(&app), ["login", "parser", "docs"]);
}

#[test]
fn the_equivalent_command_quotes_the_task_and_names_the_choices() {
    let mut form = crate::form::NewForm::new(vec!["claude".into()], vec!["devbox".into()]);
    form.task = "it's done".into();
    assert_eq!(form.command_line(), r"owt new 'it'\''s done'");
    form.next_field();
    form.cycle(true);
    form.next_field();
    form.cycle(false);
    form.next_field();
    form.cycle(true);
    assert_eq!(
        form.command_line(),
        r"owt new --ai-tool claude --acp --on devbox 'it'\''s done'"
    );
}
