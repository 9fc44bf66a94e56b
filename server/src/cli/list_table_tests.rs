//! `owt list`'s table at 80 and 160 columns and whole (#34.8: it was ~230
//! columns wide and wrapped).

use std::path::Path;

use expect_test::{expect, Expect};
use owt_protocol::{Lane, SessionView, Status, TokenUsage};

use super::{render, Fit};

const NOW: i64 = 1_800_000_000_000;

fn session(name: &str, status_text: &str, ahead: u32, changed: u32) -> SessionView {
    SessionView {
        worktree: format!("/home/me/src/app.worktrees/{name}"),
        status_text: status_text.into(),
        created_at: NOW - 3_600_000,
        ahead,
        changed_files: changed,
        overlaps: 1,
        rss_bytes: Some(312 * 1024 * 1024),
        usage: Some(TokenUsage {
            input_tokens: 120_000,
            output_tokens: 3_400,
            ..Default::default()
        }),
        ..SessionView::sample(name, Status::Working, Lane::InFlight)
    }
}

fn sessions() -> Vec<SessionView> {
    vec![
        session("add-a-changelog-entry-for-the-0-5-1", "working", 0, 3),
        session(
            "fix-login",
            "blocked: Do you want to overwrite src/auth/login_handler.py?",
            2,
            1,
        ),
    ]
}

fn check(width: Option<usize>, expect: Expect) {
    let root = Path::new("/home/me/src/app");
    let text = render(&sessions(), NOW, width.map(|width| Fit { width, root }));
    if let Some(width) = width {
        for line in text.lines() {
            assert!(
                line.chars().count() <= width,
                "{} > {width}: {line}",
                line.chars().count()
            );
        }
    }
    expect.assert_eq(&text);
}

#[test]
fn at_80_columns() {
    check(
        Some(80),
        expect![[r#"
        NAME                                 STATUS                            AHEAD
        add-a-changelog-entry-for-the-0-5-1  working                           0
        fix-login                            blocked: Do you want to overwri…  2"#]],
    );
}

#[test]
fn at_160_columns() {
    check(
        Some(160),
        expect![[r#"
        NAME                                 STATUS                                                        AGENT   AHEAD  CHANGED  OVERLAPS  TOKENS    RSS      AGE
        add-a-changelog-entry-for-the-0-5-1  working                                                       claude  0      3        1         123k tok  312 MiB  1h
        fix-login                            blocked: Do you want to overwrite src/auth/login_handler.py?  claude  2      1        1         123k tok  312 MiB  1h"#]],
    );
}

#[test]
fn wide_is_the_whole_table() {
    check(
        None,
        expect![[r#"
        NAME                                 STATUS                                                        AGENT   BRANCH                                   AHEAD  CHANGED  OVERLAPS  CHECKS  PR  TOKENS    RSS      AGE  WORKTREE
        add-a-changelog-entry-for-the-0-5-1  working                                                       claude  owt/add-a-changelog-entry-for-the-0-5-1  0      3        1         -       -   123k tok  312 MiB  1h   /home/me/src/app.worktrees/add-a-changelog-entry-for-the-0-5-1
        fix-login                            blocked: Do you want to overwrite src/auth/login_handler.py?  claude  owt/fix-login                            2      1        1         -       -   123k tok  312 MiB  1h   /home/me/src/app.worktrees/fix-login"#]],
    );
}

#[test]
fn a_conductors_children_are_nested_under_it() {
    let child = |name: &str| SessionView {
        parent: Some("conductor".into()),
        ..session(name, "working", 0, 0)
    };
    let sessions = vec![
        child("child-a"),
        session("solo", "working", 0, 0),
        session("conductor", "working", 0, 0),
        child("child-b"),
    ];
    let names: Vec<String> = render(&sessions, NOW, None)
        .lines()
        .map(|l| l.split("  ").next().unwrap_or_default().to_string())
        .collect();
    expect![[r#"
        [
            "NAME",
            "solo",
            "conductor",
            "↳ child-a",
            "↳ child-b",
        ]
    "#]]
    .assert_debug_eq(&names);
}
