//! Each pane drawn: the lanes (one session per section), the preview's
//! tabs, the dialogs, 80×24, and no colour without `App::colour`.

use expect_test::expect;
use owt_protocol::guard::GuardReport;
use owt_protocol::host::{PendingPermission, PermissionOption, ScreenView};
use owt_protocol::review::{CommentsOutput, DiffReport};
use owt_protocol::{ChecksView, Status, TokenUsage};
use ratatui::style::Color;

use super::{app, check, ready, session, with_actions};
use crate::app::{App, Mode, Preview, Tab};
use crate::form::NewForm;
use crate::keys::Command;
use crate::preview_text;

fn every_lane() -> App {
    let mut working = session("parser", Status::Working);
    working.overlaps = 1;
    working.changed_files = 1;
    working.usage = Some(TokenUsage {
        input_tokens: 12_000,
        output_tokens: 345,
        ..Default::default()
    });
    with_actions(&mut working);
    let mut checks = ready("login");
    checks.checks = Some(ChecksView {
        state: "passed".into(),
        trigger: "turn-end".into(),
        attempt: 0,
        max_attempts: 3,
        exit_code: Some(0),
        timed_out: false,
        duration_ms: Some(1200),
        log: None,
        started_at: 0,
        current: true,
    });
    app(vec![
        working,
        session("docs", Status::NeedsInput),
        checks,
        session("old", Status::Merged),
        session("later", Status::Queued),
    ])
}

#[test]
fn every_lane_has_its_heading_and_rows_with_their_facts() {
    check(
        &every_lane(),
        100,
        16,
        expect![[r#"
            owt · demo · 5 sessions · 1 needs you
            NEEDS YOU (1)                                    │ [Screen] │ Diff │ Guard │ Activity ──────── docs
            › docs    needs-input 10m · claude               │Reading the screen of docs…
                                                             │
            READY TO SHIP (1)                                │
              login   done 10m · claude · +2 · 3 files · chec│
                                                             │
            IN FLIGHT (1)                                    │
              parser  working 10m · claude · 1 file · 1 overl│
                                                             │
            READY TO CLEAN (1)                               │
              old     merged 10m · claude                    │
                                                             │
            QUEUED (1)                                       │

            tab preview  a/⏎ attach  f fix  r reviewed  t type  d delete  · n N / ? q
        "#]],
    );
}

#[test]
fn an_empty_board_says_how_to_start() {
    check(
        &app(Vec::new()),
        80,
        6,
        expect![[r#"
            owt · demo · 0 sessions
            No sessions. Press n to start one.     │ [Screen] │ Diff │ Guard │ Activity ────
                                                   │No session is focused.
                                                   │

            n new  N note  / filter  ? help  q quit
        "#]],
    );
}

#[test]
fn eighty_by_twenty_four_fits_the_lanes_the_preview_and_the_footer() {
    check(
        &every_lane(),
        80,
        24,
        expect![[r#"
            owt · demo · 5 sessions · 1 needs you
            NEEDS YOU (1)                          │ [Screen] │ Diff │ Guard │ Activity ────
            › docs    needs-input 10m · claude     │Reading the screen of docs…
                                                   │
            READY TO SHIP (1)                      │
              login   done 10m · claude · +2 · 3 fi│
                                                   │
            IN FLIGHT (1)                          │
              parser  working 10m · claude · 1 file│
                                                   │
            READY TO CLEAN (1)                     │
              old     merged 10m · claude          │
                                                   │
            QUEUED (1)                             │
              later   queued 10m · claude          │
                                                   │
                                                   │
                                                   │
                                                   │
                                                   │
                                                   │
                                                   │

            tab preview  a/⏎ attach  f fix  r reviewed  t type  d delete  · n N / ? q
        "#]],
    );
}

fn with_preview(mut app: App, tab: Tab, lines: Vec<crate::app::Styled>) -> App {
    app.tab = tab;
    app.preview = Preview {
        session: app.focus.clone().unwrap(),
        tab: Some(tab),
        lines,
        anchors: Vec::new(),
    };
    app
}

#[test]
fn the_screen_tab_shows_the_agents_screen_bottom() {
    let screen = ScreenView {
        rows: 4,
        cols: 40,
        cursor: (2, 7),
        alternate_screen: false,
        lines: vec![
            "Claude Code".into(),
            "> fix the parser".into(),
            "ready> ".into(),
            String::new(),
        ],
        scrollback: Vec::new(),
        scrollback_next: None,
        formatted: None,
    };
    let app = with_preview(
        app(vec![session("parser", Status::Working)]),
        Tab::Screen,
        preview_text::screen_lines(&screen),
    );
    check(
        &app,
        80,
        8,
        expect![[r#"
            owt · demo · 1 session
            IN FLIGHT (1)                          │ [Screen] │ Diff │ Guard │ Activity ────
            › parser  working 10m · claude         │Claude Code
                                                   │> fix the parser
                                                   │ready>
                                                   │

            tab preview  a/⏎ attach  f fix  r reviewed  t type  · n N / ? q
        "#]],
    );
}

fn diff_report() -> DiffReport {
    serde_json::from_value(serde_json::json!({
        "session": "login", "worktree": "/w/login", "base": "main",
        "snapshot": "0".repeat(40), "additions": 1, "deletions": 1,
        "files": [{
            "path": "src/auth.rs", "status": "modified", "additions": 1, "deletions": 1,
            "reviewed": false,
            "hunks": [{
                "header": "@@ -10,2 +10,2 @@ fn login()",
                "old_start": 10, "old_lines": 2, "new_start": 10, "new_lines": 2,
                "lines": [
                    {"origin": " ", "text": "let user = find(name);", "old_line": 10, "new_line": 10},
                    {"origin": "-", "text": "check(user)", "old_line": 11},
                    {"origin": "+", "text": "check(user)?", "new_line": 11}
                ]
            }]
        }]
    }))
    .unwrap()
}

#[test]
fn the_diff_tab_shows_each_file_and_hunk_with_a_cursor_line_to_comment_on() {
    let (lines, anchors) = preview_text::diff_lines(&diff_report());
    let mut app = with_preview(app(vec![ready("login")]), Tab::Diff, lines);
    app.preview.anchors = anchors;
    app.cursor = 5;
    assert_eq!(app.diff_anchor(), Some(&("src/auth.rs".to_string(), 11)));
    check(
        &app,
        90,
        9,
        expect![[r#"
            owt · demo · 1 session
            READY TO SHIP (1)                           │ Screen │ [Diff] │ Guard │ Activity ── login
            › login  done 10m · claude · +2 · 3 files   │M src/auth.rs
                                                        │@@ -10,2 +10,2 @@ fn login()
                                                        │ let user = find(name);
                                                        │-check(user)
                                                        │+check(user)?

            tab a/⏎ s m f r c t d · n N / ? q (? help)
        "#]],
    );
}

#[test]
fn the_guard_tab_names_the_other_session_the_paths_and_both_sides_lines() {
    let report: GuardReport = serde_json::from_value(serde_json::json!({
        "repository": "/r", "participants": [], "computed_at": 0,
        "pairs": [{
            "a": "docs", "b": "login", "level": "conflict",
            "conflicting_paths": ["src/auth.rs"],
            "paths": [{
                "path": "src/auth.rs", "level": "conflict",
                "a_ranges": [{"start": 3, "lines": 4}],
                "b_ranges": [{"start": 5, "lines": 1}]
            }]
        }]
    }))
    .unwrap();
    let app = with_preview(
        app(vec![ready("login")]),
        Tab::Guard,
        preview_text::guard_lines(&report, "login"),
    );
    check(
        &app,
        90,
        6,
        expect![[r#"
            owt · demo · 1 session
            READY TO SHIP (1)                           │ Screen │ Diff │ [Guard] │ Activity ── login
            › login  done 10m · claude · +2 · 3 files   │conflict with docs
                                                        │  src/auth.rs  conflict  lines 5 here, 3-6 in

            tab preview  a/⏎ attach  s ship  m merge  f fix  r reviewed  t type  d delete  · n N / ? q
        "#]],
    );
}

#[test]
fn the_activity_tab_shows_the_permission_request_and_why_actions_are_refused() {
    let mut view = session("acp", Status::Blocked);
    view.transport = owt_protocol::host::Transport::Acp;
    view.permission = Some(PendingPermission {
        id: 1,
        question: "Write hello.txt".into(),
        tool_kind: Some("edit".into()),
        paths: vec!["hello.txt".into()],
        options: vec![
            PermissionOption {
                id: "allow".into(),
                name: "Allow once".into(),
                kind: "allow_once".into(),
            },
            PermissionOption {
                id: "reject".into(),
                name: "Reject".into(),
                kind: "reject_once".into(),
            },
        ],
    });
    with_actions(&mut view);
    let comments = CommentsOutput {
        session: "acp".into(),
        comments: Vec::new(),
    };
    let lines = preview_text::activity_lines(&view, &comments, None);
    let app = with_preview(app(vec![view]), Tab::Activity, lines);
    check(
        &app,
        100,
        12,
        expect![[r#"
            owt · demo · 1 session · 1 needs you
            NEEDS YOU (1)                                    │ Screen │ Diff │ Guard │ [Activity] ───────── acp
            › acp  blocked 10m · claude                      │Asks: Write hello.txt
                                                             │  1. Allow once (allow_once)
                                                             │  2. Reject (reject_once)
                                                             │  y approves, Y denies
                                                             │resume: its agent has not exited (see `owt list`):
                                                             │merge: no commits to merge
                                                             │ship: nothing to ship: no commits and no changed f
                                                             │delete: its agent waits on a permission dialog

            tab preview  a/⏎ attach  f fix  r reviewed  t type  y approve  Y deny  · n N / ? q
        "#]],
    );
}

#[test]
fn the_activity_tab_shows_the_end_of_a_failed_checks_run() {
    let mut view = session("tests", Status::ChecksFailed);
    let checks = ChecksView {
        state: "failed".into(),
        trigger: "turn-end".into(),
        attempt: 2,
        max_attempts: 3,
        exit_code: Some(1),
        timed_out: false,
        duration_ms: Some(900),
        log: Some("/owt/logs/checks/tests-2.log".into()),
        started_at: 0,
        current: true,
    };
    view.checks = Some(checks.clone());
    with_actions(&mut view);
    let comments = CommentsOutput {
        session: "tests".into(),
        comments: Vec::new(),
    };
    // An escape in the output is shown, never obeyed.
    let excerpt = (1..=14)
        .map(|i| format!("line {i}"))
        .chain(["FAILED test_login \u{1b}[31mboom".to_string()])
        .collect::<Vec<_>>()
        .join("\n");
    let output = owt_protocol::ChecksOutput {
        session: "tests".into(),
        command: Some("pytest".into()),
        when: "turn-end".into(),
        checks: Some(checks),
        excerpt: Some(excerpt),
        reason: None,
    };
    let lines = preview_text::activity_lines(&view, &comments, Some(&output));
    let app = with_preview(app(vec![view]), Tab::Activity, lines);
    check(
        &app,
        100,
        18,
        expect![[r#"
            owt · demo · 1 session · 1 needs you
            NEEDS YOU (1)                                    │ Screen │ Diff │ Guard │ [Activity] ─────── tests
            › tests  checks-failed 10m · claude · checks fail│Checks failed (turn-end), attempt 2 of 3
                                                             │  │ line 4
                                                             │  │ line 5
                                                             │  │ line 6
                                                             │  │ line 7
                                                             │  │ line 8
                                                             │  │ line 9
                                                             │  │ line 10
                                                             │  │ line 11
                                                             │  │ line 12
                                                             │  │ line 13
                                                             │  │ line 14
                                                             │  │ FAILED test_login \x1b[31mboom
                                                             │  /owt/logs/checks/tests-2.log

            tab preview  a/⏎ attach  f fix  r reviewed  t type  d delete  · n N / ? q
        "#]],
    );
}

#[test]
fn delete_asks_first_naming_what_goes_and_what_is_kept() {
    let mut app = app(vec![ready("login")]);
    crate::commands::ask(&mut app, Command::Delete, "login");
    check(
        &app,
        100,
        12,
        expect![[r#"
        owt · demo · 1 session
        RE┌ Confirm ─────────────────────────────────────────────────────────────────────────────────────┐n
        › │Delete login? Its agent stops; its worktree and branch owt/login are removed.                 │
          │3 changed files: a worktree with uncommitted or untracked work is kept (owt delete --force    │
          │discards it).                                                                                 │
          │Its 2 commits not in main are kept under refs/owt/backup/login.                               │
          │Files git does not keep (ignored: .env, build output) are moved to the trash.                 │
          │                                                                                              │
          │y: yes · any other key: no                                                                    │
          │                                                                                              │
          └──────────────────────────────────────────────────────────────────────────────────────────────┘
        y confirms · any other key cancels
    "#]],
    );
}

#[test]
fn the_new_form_shows_the_task_the_agent_the_mode_and_the_equivalent_command() {
    let mut app = app(Vec::new());
    let mut form = NewForm::new(vec!["claude".into(), "codex".into()], Vec::new());
    form.task = "Add JWT auth\nwith refresh tokens".into();
    form.next_field();
    form.cycle(true);
    form.cycle(true);
    form.next_field();
    form.cycle(true);
    app.mode = Mode::New(form);
    check(
        &app,
        90,
        14,
        expect![[r#"
            owt · demo · 0 sessions
            No sessions. Press n to start one.          │ [Screen] │ Diff │ Guard │ Activity ─────────
              ┌ New session ───────────────────────────────────────────────────────────────────────┐
              │  Task:                                                                             │
              │    Add JWT auth                                                                    │
              │    with refresh tokens▏                                                            │
              │  Agent: ‹ codex › of claude, codex                                                 │
              │› Mode:  ‹ in place ›                                                               │
              │                                                                                    │
              │owt new --ai-tool codex --in-place $'Add JWT auth\nwith refresh tokens'             │
              └────────────────────────────────────────────────────────────────────────────────────┘
                                                        │

            Enter starts · Ctrl-J new line · Tab next field · ←/→ change · Esc cancels
        "#]],
    );
}

#[test]
fn the_help_lists_every_key_of_the_key_map() {
    let mut app = app(vec![session("parser", Status::Working)]);
    app.mode = Mode::Help;
    let drawn = super::draw(&app, 100, 30);
    for binding in crate::keys::KEYS {
        assert!(
            drawn.contains(binding.help),
            "the help lacks {}:\n{drawn}",
            binding.keys
        );
    }
}

#[test]
fn no_colour_draws_no_colour_and_colour_does() {
    let colours = |colour: bool| {
        let mut app = every_lane();
        app.colour = colour;
        let mut terminal =
            ratatui::Terminal::new(ratatui::backend::TestBackend::new(100, 16)).unwrap();
        terminal
            .draw(|frame| crate::view::render(&app, frame))
            .unwrap();
        terminal
            .backend()
            .buffer()
            .content()
            .iter()
            .filter(|cell| cell.fg != Color::Reset || cell.bg != Color::Reset)
            .count()
    };
    assert_eq!(colours(false), 0);
    assert!(colours(true) > 0);
}

#[test]
fn a_long_error_takes_two_rows_of_the_status_line() {
    let mut app = app(vec![session("parser", Status::Working)]);
    app.fail("delete: session `parser` has uncommitted work in /w/parser (1 file: a.txt); commit it, or delete anyway with `owt delete parser --force`");
    check(
        &app,
        80,
        7,
        expect![[r#"
            owt · demo · 1 session
            IN FLIGHT (1)                          │ [Screen] │ Diff │ Guard │ Activity ────
            › parser  working 10m · claude         │Reading the screen of parser…
                                                   │
            delete: session `parser` has uncommitted work in /w/parser (1 file: a.txt);
            commit it, or delete anyway with `owt delete parser --force`
            tab preview  a/⏎ attach  f fix  r reviewed  t type  · n N / ? q
        "#]],
    );
}

#[test]
fn the_screen_tab_keeps_the_agents_colours_and_no_colour_keeps_only_attributes() {
    let screen = ScreenView {
        rows: 3,
        cols: 30,
        cursor: (1, 0),
        alternate_screen: false,
        lines: vec!["error: it broke".into(), "ok".into()],
        scrollback: Vec::new(),
        scrollback_next: None,
        formatted: Some("\x1b[1;31merror:\x1b[0m it broke\r\n\x1b[7mok\x1b[0m".into()),
    };
    let lines = preview_text::screen_lines(&screen);
    assert_eq!(lines.len(), 2, "{lines:?}");
    let cell = |colour: bool, x: u16, y: u16| {
        let mut app = with_preview(
            app(vec![session("parser", Status::Working)]),
            Tab::Screen,
            lines.clone(),
        );
        app.colour = colour;
        let mut terminal =
            ratatui::Terminal::new(ratatui::backend::TestBackend::new(80, 6)).unwrap();
        terminal
            .draw(|frame| crate::view::render(&app, frame))
            .unwrap();
        terminal.backend().buffer()[(x, y)].clone()
    };
    // The preview starts at column 41 (the lanes take half, and a border).
    let drawn = super::draw(
        &with_preview(
            app(vec![session("parser", Status::Working)]),
            Tab::Screen,
            lines.clone(),
        ),
        80,
        6,
    );
    assert!(drawn.contains("│error: it broke"), "{drawn}");
    let x = drawn
        .lines()
        .nth(2)
        .unwrap()
        .chars()
        .position(|c| c == '│')
        .unwrap() as u16
        + 1;
    let red = cell(true, x, 2);
    assert_eq!(red.symbol(), "e");
    assert_eq!(red.fg, Color::Indexed(1));
    assert!(red.modifier.contains(ratatui::style::Modifier::BOLD));
    let plain = cell(false, x, 2);
    assert_eq!(plain.fg, Color::Reset);
    assert!(plain.modifier.contains(ratatui::style::Modifier::BOLD));
    assert!(cell(false, x, 3)
        .modifier
        .contains(ratatui::style::Modifier::REVERSED));
}

#[test]
fn a_conductors_child_says_whose_it_is() {
    let mut child = session("kid", Status::Working);
    child.parent = Some("boss".into());
    let screen = super::draw(&app(vec![session("boss", Status::Working), child]), 120, 16);
    let row = |name: &str| {
        screen
            .lines()
            .find(|l| l.contains(&format!(" {name} ")))
            .unwrap_or_else(|| panic!("no {name} row:\n{screen}"))
            .to_string()
    };
    assert!(row("kid").contains("· ↳ child of boss"), "{screen}");
    assert!(!row("boss").contains('↳'), "{screen}");
}
