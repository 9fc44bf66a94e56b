//! The rules of [`super::session_actions`] and [`super::lanes`], as tables.

use expect_test::{expect, Expect};
use owt_protocol::{Lane, SessionKind, SessionView, Status};

use super::*;

fn session(name: &str, status: Status, lane: Lane) -> SessionView {
    SessionView {
        name: name.into(),
        id: format!("id-{name}"),
        task: "task".into(),
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
    }
}

/// One line per action: `+name` (available) or `-name: reason`.
fn check(view: &SessionView, expect: Expect) {
    let text: String = session_actions(view)
        .iter()
        .map(|a| match &a.reason {
            None => format!("+{}\n", a.action.as_str()),
            Some(reason) => format!("-{}: {reason}\n", a.action.as_str()),
        })
        .collect();
    expect.assert_eq(&text);
}

#[test]
fn a_working_agent_with_nothing_changed_offers_its_terminal_only() {
    check(
        &session("a", Status::Working, Lane::InFlight),
        expect![[r#"
            +attach
            +peek
            +send
            -merge: no commits to merge
            -ship: nothing to ship: no commits and no changed files
            -delete: its agent is working (mid-turn)
            -conflicts: no file has unresolved conflicts
            -approve: no permission dialog is on its screen
            -deny: no permission dialog is on its screen
        "#]],
    );
}

/// Regression (#34 item 1): ship stopped an agent mid-turn. An agent at
/// work (or waiting on a dialog) with work to show can be shipped, merged
/// or deleted only with the verb's override; what the work itself lacks
/// (nothing to merge) is said first, and no flag overrides it.
#[test]
fn regression_an_agent_at_work_is_not_shipped_merged_or_deleted_without_override() {
    for status in [Status::Working, Status::Blocked] {
        let mut view = session("a", status, Lane::InFlight);
        view.changed_files = 2;
        let refused = |view: &SessionView, action| refusal(view, action);
        let busy = busy(&view).unwrap();
        for action in [SessionAction::Ship, SessionAction::Delete] {
            assert_eq!(
                refused(&view, action),
                Some(Refusal {
                    reason: busy.clone(),
                    overridable: true
                }),
                "{status:?} {action:?}"
            );
        }
        assert_eq!(
            refused(&view, SessionAction::Merge),
            Some(Refusal {
                reason: "no commits to merge yet (ship commits the changed files first)".into(),
                overridable: false
            })
        );
        view.ahead = 1;
        assert!(refused(&view, SessionAction::Merge).unwrap().overridable);
        for idle in [
            Status::NeedsInput,
            Status::Idle,
            Status::Done,
            Status::Starting,
        ] {
            view.status = idle;
            for action in [
                SessionAction::Ship,
                SessionAction::Merge,
                SessionAction::Delete,
            ] {
                assert_eq!(refused(&view, action), None, "{idle:?} {action:?}");
            }
        }
    }
}

#[test]
fn uncommitted_work_can_ship_but_not_merge() {
    let mut view = session("a", Status::Idle, Lane::InFlight);
    view.changed_files = 2;
    check(
        &view,
        expect![[r#"
            +attach
            +peek
            +send
            -merge: no commits to merge yet (ship commits the changed files first)
            +ship
            +delete
            -conflicts: no file has unresolved conflicts
            -approve: no permission dialog is on its screen
            -deny: no permission dialog is on its screen
        "#]],
    );
}

#[test]
fn an_exited_agent_with_commits_merges_and_shows_its_last_screen() {
    let mut view = session("a", Status::Exited, Lane::ReadyToShip);
    view.status_text = "exited with code 2".into();
    view.exit_code = Some(2);
    view.ahead = 3;
    check(
        &view,
        expect![[r#"
            -attach: the agent exited with code 2
            +peek
            -send: the agent exited with code 2
            +merge
            +ship
            +delete
            -conflicts: no file has unresolved conflicts
            -approve: the agent exited with code 2
            -deny: the agent exited with code 2
        "#]],
    );
}

#[test]
fn a_lost_host_leaves_only_what_needs_no_agent() {
    let mut view = session("a", Status::Exited, Lane::NeedsYou);
    view.status_text = "exited (host lost)".into();
    view.host_lost = true;
    view.ahead = 1;
    check(
        &view,
        expect![[r#"
            -attach: the session host is gone
            -peek: the session host is gone and saved no screen
            -send: the session host is gone
            +merge
            +ship
            +delete
            -conflicts: no file has unresolved conflicts
            -approve: the session host is gone
            -deny: the session host is gone
        "#]],
    );
}

#[test]
fn a_stopped_merge_blocks_merge_and_ship_until_resolved() {
    let mut view = session("a", Status::Conflict, Lane::NeedsYou);
    view.ahead = 2;
    view.conflicted_files = vec!["src/lib.rs".into()];
    check(
        &view,
        expect![[r#"
            +attach
            +peek
            +send
            -merge: a merge or rebase stopped on conflicts in its worktree; resolve them first
            -ship: a merge or rebase stopped on conflicts in its worktree; resolve them first
            +delete
            +conflicts
            -approve: no permission dialog is on its screen
            -deny: no permission dialog is on its screen
        "#]],
    );
}

#[test]
fn a_queued_session_has_no_agent_to_attach_to_yet() {
    check(
        &session("q", Status::Queued, Lane::InFlight),
        expect![[r#"
            -attach: the agent has not started: it waits for room on the machine (owt start starts it now)
            -peek: the agent has not started: it waits for room on the machine (owt start starts it now)
            -send: the agent has not started: it waits for room on the machine (owt start starts it now)
            -merge: no commits to merge
            -ship: nothing to ship: no commits and no changed files
            +delete
            -conflicts: no file has unresolved conflicts
            -approve: the agent has not started: it waits for room on the machine (owt start starts it now)
            -deny: the agent has not started: it waits for room on the machine (owt start starts it now)
        "#]],
    );
}

#[test]
fn a_remote_session_resolves_its_conflicts_over_there() {
    let mut view = session("devbox:a", Status::Conflict, Lane::NeedsYou);
    view.remote = Some("devbox".into());
    view.ahead = 2;
    view.conflicted_files = vec!["src/lib.rs".into()];
    check(
        &view,
        expect![[r#"
            +attach
            +peek
            +send
            -merge: a merge or rebase stopped on conflicts in its worktree; resolve them first
            -ship: a merge or rebase stopped on conflicts in its worktree; resolve them first
            +delete
            -conflicts: its files are on devbox (attach to resolve them)
            -approve: no permission dialog is on its screen
            -deny: no permission dialog is on its screen
        "#]],
    );
}

#[test]
fn an_unreachable_remote_session_offers_nothing_until_it_is_back() {
    let mut view = session("devbox:a", Status::Unreachable, Lane::InFlight);
    view.remote = Some("devbox".into());
    view.status_text = "unreachable (since 09:12 UTC)".into();
    view.ahead = 1;
    check(
        &view,
        expect![[r#"
            -attach: devbox is unreachable
            -peek: devbox is unreachable
            -send: devbox is unreachable
            -merge: devbox is unreachable
            -ship: devbox is unreachable
            -delete: devbox is unreachable
            -conflicts: its files are on devbox (attach to resolve them)
            -approve: devbox is unreachable
            -deny: devbox is unreachable
        "#]],
    );
}

#[test]
fn counts_put_each_session_in_one_bucket_and_lanes_keep_their_order() {
    let sessions = vec![
        session("w", Status::Working, Lane::InFlight),
        session("s", Status::Starting, Lane::InFlight),
        session("q", Status::Queued, Lane::InFlight),
        session("i", Status::Idle, Lane::InFlight),
        session("n", Status::NeedsInput, Lane::NeedsYou),
        session("d", Status::Done, Lane::ReadyToShip),
        session("m", Status::Merged, Lane::ReadyToClean),
    ];
    let (lanes, all_lanes, counts) = lanes(sessions);
    let text = format!(
        "{:?}\n{:?}\n{:?}",
        lanes
            .iter()
            .map(|l| (l.title.as_str(), l.count, l.sessions.len()))
            .collect::<Vec<_>>(),
        all_lanes
            .iter()
            .map(|l| (l.title.as_str(), l.count))
            .collect::<Vec<_>>(),
        counts
    );
    expect![[r#"
        [("NEEDS YOU", 1, 1), ("READY TO SHIP", 1, 1), ("IN FLIGHT", 4, 4), ("READY TO CLEAN", 1, 1)]
        [("NEEDS YOU", 1), ("READY TO SHIP", 1), ("IN FLIGHT", 4), ("READY TO CLEAN", 1)]
        BoardCounts { total: 7, working: 2, needs_you: 1, ready: 1, idle: 1, to_clean: 1, queued: 1, summary: "2 working · 1 needs you · 1 ready · 1 idle · 1 to clean · 1 queued" }"#]]
    .assert_eq(&text);
    let in_flight: Vec<&str> = lanes[2].sessions.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(in_flight, ["w", "s", "i", "q"], "queued sessions come last");
    let (lanes, all_lanes, counts) = super::lanes(Vec::new());
    assert!(lanes.is_empty());
    assert_eq!(
        all_lanes.len(),
        Lane::ALL.len(),
        "every lane, empty ones too"
    );
    assert_eq!(counts.summary, "");
}

/// `approve` / `deny`: only while an ACP session has a pending permission
/// request; a terminal agent's dialog is answered in its terminal.
#[test]
fn a_pending_acp_permission_request_can_be_approved_or_denied() {
    use owt_protocol::host::{PendingPermission, Transport};
    let permission_rules = |view: &SessionView| -> String {
        session_actions(view)
            .iter()
            .filter(|a| matches!(a.action, SessionAction::Approve | SessionAction::Deny))
            .map(|a| match &a.reason {
                None => format!("+{}\n", a.action.as_str()),
                Some(reason) => format!("-{}: {reason}\n", a.action.as_str()),
            })
            .collect()
    };
    let mut asking = session("a", Status::Blocked, Lane::NeedsYou);
    asking.transport = Transport::Acp;
    asking.permission = Some(PendingPermission {
        id: 1,
        question: "Write a.txt".into(),
        tool_kind: None,
        paths: Vec::new(),
        options: Vec::new(),
    });
    let mut answered = session("b", Status::NeedsInput, Lane::NeedsYou);
    answered.transport = Transport::Acp;
    let terminal = session("c", Status::Blocked, Lane::NeedsYou);
    let mut gone = asking.clone();
    gone.status = Status::Exited;
    gone.status_text = "exited".into();
    let text: String = [&asking, &answered, &terminal, &gone]
        .iter()
        .map(|v| format!("{}:\n{}", v.name, permission_rules(v)))
        .collect();
    expect![[r#"
        a:
        +approve
        +deny
        b:
        -approve: no permission request is pending
        -deny: no permission request is pending
        c:
        +approve
        +deny
        a:
        -approve: the agent exited
        -deny: the agent exited
    "#]]
    .assert_eq(&text);
}
