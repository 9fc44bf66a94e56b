//! Table-driven specification of [`derive_status`].

use super::*;

const NOW: i64 = 1_000_000_000;

fn at(ago_ms: i64) -> i64 {
    NOW - ago_ms
}

struct Case {
    name: &'static str,
    facts: SessionFacts,
    status: Status,
    text: &'static str,
    lane: Lane,
}

fn base() -> SessionFacts {
    SessionFacts {
        created_at: at(600_000),
        host: Some((
            HostFact {
                host_pid: 10,
                agent_pid: Some(11),
                socket: "/run/x.sock".into(),
                headless: false,
                transport: Default::default(),
            },
            at(600_000),
        )),
        ..SessionFacts::default()
    }
}

fn with(f: impl FnOnce(&mut SessionFacts)) -> SessionFacts {
    let mut facts = base();
    f(&mut facts);
    facts
}

fn headless(f: &mut SessionFacts) {
    if let Some((host, _)) = &mut f.host {
        host.headless = true;
    }
}

fn exit(code: i32) -> Option<(ExitFact, i64)> {
    Some((
        ExitFact {
            code: Some(code),
            signal: None,
        },
        at(1),
    ))
}

fn acp(state: AcpState, error: Option<&str>) -> Option<(AcpFact, i64)> {
    Some((
        AcpFact {
            state,
            stop_reason: None,
            error: error.map(str::to_string),
        },
        at(5_000),
    ))
}

fn work(f: &mut SessionFacts) {
    f.git = GitFact {
        ahead: 2,
        changed_files: 3,
    };
}

#[test]
fn derive_status_table() {
    use AgentSignal::*;
    let cases = vec![
        Case {
            name: "no output yet",
            facts: base(),
            status: Status::Starting,
            text: "starting",
            lane: Lane::InFlight,
        },
        Case {
            name: "recent output, no hooks",
            facts: with(|f| f.last_output_at = Some(at(1_000))),
            status: Status::Working,
            text: "working",
            lane: Lane::InFlight,
        },
        Case {
            name: "old output, no hooks",
            facts: with(|f| f.last_output_at = Some(at(60_000))),
            status: Status::Idle,
            text: "idle",
            lane: Lane::InFlight,
        },
        // Regression (issue 16): `owt wait` on a headless Claude returned
        // needs-input from its Stop hook before the run was over (blank
        // screen, process still running); a finished run never read `done`.
        Case {
            name: "regression: a headless run is working until it exits",
            facts: with(|f| {
                headless(f);
                f.hook = Some((Waiting, at(50)));
                f.last_output_at = Some(at(20_000));
            }),
            status: Status::Working,
            text: "working",
            lane: Lane::InFlight,
        },
        Case {
            name: "a session owt new is still setting up says so (#34.2)",
            facts: SessionFacts {
                created_at: at(1_000),
                being_made: true,
                ..SessionFacts::default()
            },
            status: Status::Starting,
            text: "starting: setting up the worktree",
            lane: Lane::InFlight,
        },
        Case {
            name: "blocked says what the dialog on screen asks (#34.6)",
            facts: with(|f| {
                work(f);
                f.screen = Some((Blocked, at(50)));
                f.dialog = Some("Do you want to overwrite README.md?".into());
            }),
            status: Status::Blocked,
            text: "blocked: Do you want to overwrite README.md?",
            lane: Lane::NeedsYou,
        },
        Case {
            name: "a headless run that shows a permission dialog is blocked",
            facts: with(|f| {
                headless(f);
                f.screen = Some((Blocked, at(50)));
            }),
            status: Status::Blocked,
            text: "blocked",
            lane: Lane::NeedsYou,
        },
        Case {
            name: "regression: a headless run that exited 0 is done",
            facts: with(|f| {
                headless(f);
                work(f);
                f.exit = exit(0);
            }),
            status: Status::Done,
            text: "done",
            lane: Lane::ReadyToShip,
        },
        Case {
            name: "a headless run that failed exited",
            facts: with(|f| {
                headless(f);
                f.exit = exit(1);
            }),
            status: Status::Exited,
            text: "exited with code 1",
            lane: Lane::NeedsYou,
        },
        Case {
            name: "a dialog on screen after the agent said it waits is blocked",
            facts: with(|f| {
                f.hook = Some((Waiting, at(400)));
                f.screen = Some((Blocked, at(100)));
            }),
            status: Status::Blocked,
            text: "blocked",
            lane: Lane::NeedsYou,
        },
        Case {
            name: "the agent's own word beats an older dialog on screen",
            facts: with(|f| {
                f.hook = Some((Waiting, at(100)));
                f.screen = Some((Blocked, at(400)));
            }),
            status: Status::NeedsInput,
            text: "needs-input",
            lane: Lane::NeedsYou,
        },
        Case {
            name: "exit code 0 with commits is ready to ship",
            facts: with(|f| {
                work(f);
                f.exit = Some((
                    ExitFact {
                        code: Some(0),
                        signal: None,
                    },
                    at(1),
                ));
            }),
            status: Status::Exited,
            text: "exited",
            lane: Lane::ReadyToShip,
        },
        Case {
            name: "exit with error needs you",
            facts: with(|f| {
                work(f);
                f.exit = Some((
                    ExitFact {
                        code: Some(2),
                        signal: None,
                    },
                    at(1),
                ));
            }),
            status: Status::Exited,
            text: "exited with code 2",
            lane: Lane::NeedsYou,
        },
        Case {
            name: "killed by a signal",
            facts: with(|f| {
                f.exit = Some((
                    ExitFact {
                        code: None,
                        signal: Some("SIGKILL".into()),
                    },
                    at(1),
                ))
            }),
            status: Status::Exited,
            text: "exited (SIGKILL)",
            lane: Lane::NeedsYou,
        },
        Case {
            name: "host lost",
            facts: with(|f| {
                f.hook = Some((Working, at(10)));
                f.host_lost_at = Some(at(1));
            }),
            status: Status::Exited,
            text: "exited (host lost)",
            lane: Lane::NeedsYou,
        },
        Case {
            name: "exit beats host lost",
            facts: with(|f| {
                f.host_lost_at = Some(at(1));
                f.exit = Some((
                    ExitFact {
                        code: Some(1),
                        signal: None,
                    },
                    at(2),
                ));
            }),
            status: Status::Exited,
            text: "exited with code 1",
            lane: Lane::NeedsYou,
        },
        Case {
            name: "merge conflict in the worktree",
            facts: with(|f| {
                f.hook = Some((Working, at(10)));
                f.conflict = Some(ConflictFact {
                    files: vec!["a.rs".into(), "b.rs".into()],
                });
            }),
            status: Status::Conflict,
            text: "conflict in 2 files",
            lane: Lane::NeedsYou,
        },
        Case {
            name: "fresh hook working",
            facts: with(|f| f.hook = Some((Working, at(60_000)))),
            status: Status::Working,
            text: "working",
            lane: Lane::InFlight,
        },
        Case {
            name: "stale hook working, an unrecognised screen, quiet output: idle",
            facts: with(|f| {
                f.hook = Some((Working, at(HOOK_STALE_MS + 10)));
                f.screen = Some((Idle, at(5)));
                f.last_output_at = Some(at(OUTPUT_ACTIVE_MS + 1_000));
            }),
            status: Status::Idle,
            text: "idle",
            lane: Lane::InFlight,
        },
        // Regression (issue 16): OpenCode and Aider read `idle` for their
        // whole turn: a screen the rules do not recognise (judged while
        // they streamed) outranked the output still flowing.
        Case {
            name: "regression: an unrecognised screen does not outrank recent output",
            facts: with(|f| {
                f.screen = Some((Idle, at(5)));
                f.last_output_at = Some(at(1_000));
            }),
            status: Status::Working,
            text: "working",
            lane: Lane::InFlight,
        },
        Case {
            name: "stale hook working and a newer waiting screen",
            facts: with(|f| {
                f.hook = Some((Working, at(HOOK_STALE_MS + 10)));
                f.screen = Some((Waiting, at(5)));
            }),
            status: Status::NeedsInput,
            text: "needs-input",
            lane: Lane::NeedsYou,
        },
        Case {
            name: "stale hook working, silent screen, quiet output: idle",
            facts: with(|f| {
                f.hook = Some((Working, at(HOOK_STALE_MS + 10)));
                f.last_output_at = Some(at(HOOK_STALE_MS));
            }),
            status: Status::Idle,
            text: "idle",
            lane: Lane::InFlight,
        },
        Case {
            name: "blocked is sticky against later tool output",
            facts: with(|f| {
                f.screen = Some((Blocked, at(30_000)));
                f.last_output_at = Some(at(100));
            }),
            status: Status::Blocked,
            text: "blocked",
            lane: Lane::NeedsYou,
        },
        Case {
            name: "blocked hook is sticky against a later working screen",
            facts: with(|f| {
                f.hook = Some((Blocked, at(30_000)));
                f.screen = Some((Working, at(1_000)));
            }),
            status: Status::Blocked,
            text: "blocked",
            lane: Lane::NeedsYou,
        },
        Case {
            name: "input clears blocked",
            facts: with(|f| {
                f.screen = Some((Blocked, at(30_000)));
                f.last_input_at = Some(at(20_000));
                f.last_output_at = Some(at(100));
            }),
            status: Status::Working,
            text: "working",
            lane: Lane::InFlight,
        },
        Case {
            name: "a new turn (hook working) clears waiting",
            facts: with(|f| {
                f.screen = Some((Waiting, at(30_000)));
                f.hook = Some((Working, at(10_000)));
            }),
            status: Status::Working,
            text: "working",
            lane: Lane::InFlight,
        },
        Case {
            name: "waiting with work is ready to ship",
            facts: with(|f| {
                work(f);
                f.hook = Some((Waiting, at(10_000)));
            }),
            status: Status::NeedsInput,
            text: "needs-input",
            lane: Lane::ReadyToShip,
        },
        Case {
            name: "waiting without work needs you",
            facts: with(|f| f.screen = Some((Waiting, at(10_000)))),
            status: Status::NeedsInput,
            text: "needs-input",
            lane: Lane::NeedsYou,
        },
        Case {
            name: "agent reported done",
            facts: with(|f| {
                work(f);
                f.report = Some((
                    ReportFact {
                        kind: "done".into(),
                        text: "tests pass".into(),
                    },
                    at(5_000),
                ));
                f.last_output_at = Some(at(100));
            }),
            status: Status::Done,
            text: "done",
            lane: Lane::ReadyToShip,
        },
        Case {
            name: "a note report changes nothing",
            facts: with(|f| {
                f.report = Some((
                    ReportFact {
                        kind: "note".into(),
                        text: "fyi".into(),
                    },
                    at(5_000),
                ));
                f.last_output_at = Some(at(100));
            }),
            status: Status::Working,
            text: "working",
            lane: Lane::InFlight,
        },
        Case {
            name: "an explicit report outranks a newer waiting screen",
            facts: with(|f| {
                f.report = Some((
                    ReportFact {
                        kind: "blocked".into(),
                        text: "need a password".into(),
                    },
                    at(10_000),
                ));
                f.screen = Some((Waiting, at(5_000)));
            }),
            status: Status::Blocked,
            text: "blocked",
            lane: Lane::NeedsYou,
        },
        Case {
            name: "newest sticky signal wins",
            facts: with(|f| {
                f.screen = Some((Blocked, at(30_000)));
                f.hook = Some((Waiting, at(10_000)));
            }),
            status: Status::NeedsInput,
            text: "needs-input",
            lane: Lane::NeedsYou,
        },
        Case {
            name: "acp: connecting",
            facts: with(|f| f.acp = acp(AcpState::Starting, None)),
            status: Status::Starting,
            text: "starting",
            lane: Lane::InFlight,
        },
        Case {
            name: "waiting for room on the machine: queued, in flight",
            facts: SessionFacts {
                created_at: at(60_000),
                queued_at: Some(at(60_000)),
                ..SessionFacts::default()
            },
            status: Status::Queued,
            text: "queued",
            lane: Lane::InFlight,
        },
        Case {
            name: "a queued session whose host started is no longer queued",
            facts: with(|f| f.queued_at = Some(at(60_000))),
            status: Status::Starting,
            text: "starting",
            lane: Lane::InFlight,
        },
        Case {
            name: "acp: a started session that was queued follows the protocol",
            facts: with(|f| {
                f.queued_at = Some(at(60_000));
                f.acp = acp(AcpState::Waiting, None);
            }),
            status: Status::NeedsInput,
            text: "needs-input",
            lane: Lane::NeedsYou,
        },
        Case {
            name: "acp: a turn running is working, however old its last output",
            facts: with(|f| {
                f.acp = acp(AcpState::Working, None);
                f.last_output_at = Some(at(600_000));
            }),
            status: Status::Working,
            text: "working",
            lane: Lane::InFlight,
        },
        Case {
            name: "acp: a permission request is blocked, whatever a hook said after",
            facts: with(|f| {
                f.acp = acp(AcpState::Blocked, None);
                f.hook = Some((Working, at(1)));
            }),
            status: Status::Blocked,
            text: "blocked",
            lane: Lane::NeedsYou,
        },
        Case {
            name: "acp: a turn ended waits for the human, fresh output or not",
            facts: with(|f| {
                f.acp = acp(AcpState::Waiting, None);
                f.last_output_at = Some(at(10));
                work(f);
            }),
            status: Status::NeedsInput,
            text: "needs-input",
            lane: Lane::ReadyToShip,
        },
        Case {
            name: "acp: a failed connection names its error once the agent is gone",
            facts: with(|f| {
                f.acp = acp(
                    AcpState::Failed,
                    Some("the agent speaks ACP protocol version 2; owt speaks version 1"),
                );
                f.exit = Some((
                    ExitFact {
                        code: None,
                        signal: Some("SIGTERM".into()),
                    },
                    at(1),
                ));
            }),
            status: Status::Exited,
            text: "exited: the agent speaks ACP protocol version 2; owt speaks version 1",
            lane: Lane::NeedsYou,
        },
        Case {
            name: "acp: the exit wins",
            facts: with(|f| {
                f.acp = acp(AcpState::Working, None);
                f.exit = exit(1);
            }),
            status: Status::Exited,
            text: "exited with code 1",
            lane: Lane::NeedsYou,
        },
        Case {
            name: "a queued session that could not start shows its exit",
            facts: SessionFacts {
                queued_at: Some(at(60_000)),
                exit: Some((
                    ExitFact {
                        code: None,
                        signal: Some("not started: no agent".into()),
                    },
                    at(1),
                )),
                ..SessionFacts::default()
            },
            status: Status::Exited,
            text: "exited (not started: no agent)",
            lane: Lane::NeedsYou,
        },
        Case {
            name: "regression #34: work that conflicts with its base needs you, not shipping",
            facts: with(|f| {
                work(f);
                f.hook = Some((Waiting, at(100)));
                f.base_conflicts = vec!["README.md".into()];
            }),
            status: Status::NeedsInput,
            text: "needs-input",
            lane: Lane::NeedsYou,
        },
        Case {
            name: "regression #34: work that conflicts with another session's needs you",
            facts: with(|f| {
                work(f);
                f.exit = exit(0);
                f.conflicts_with = vec!["other".into()];
            }),
            status: Status::Exited,
            text: "exited",
            lane: Lane::NeedsYou,
        },
        Case {
            name: "a mere overlap with another session is still ready to ship",
            facts: with(|f| {
                work(f);
                f.hook = Some((Done, at(100)));
                f.overlaps = 1;
            }),
            status: Status::Done,
            text: "done",
            lane: Lane::ReadyToShip,
        },
    ];
    let mut failures = Vec::new();
    for case in &cases {
        let derived = derive_status(&case.facts, NOW);
        if (derived.status, derived.text.as_str(), derived.lane)
            != (case.status, case.text, case.lane)
        {
            failures.push(format!(
                "{}: expected {:?} {:?} {:?}, got {:?} {:?} {:?}",
                case.name,
                case.status,
                case.text,
                case.lane,
                derived.status,
                derived.text,
                derived.lane
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn unknown_fact_rows_are_ignored() {
    let rows = vec![
        FactRow {
            kind: "from-the-future".into(),
            value: serde_json::json!({"x": 1}),
            observed_at: 5,
        },
        FactRow {
            kind: kind::HOOK.into(),
            value: serde_json::json!("not-a-signal"),
            observed_at: 5,
        },
        FactRow {
            kind: kind::GIT.into(),
            value: serde_json::json!({"ahead": 3, "changed_files": 1}),
            observed_at: 5,
        },
    ];
    let facts = SessionFacts::from_rows(1, &rows);
    assert_eq!(facts.hook, None);
    assert_eq!(
        facts.git,
        GitFact {
            ahead: 3,
            changed_files: 1
        }
    );
}

fn unreachable(f: &mut SessionFacts, since: i64) {
    f.unreachable = Some((
        UnreachableFact {
            remote: "devbox".into(),
            reason: Some("ssh: connect to host devbox port 22: Connection refused".into()),
        },
        since,
    ));
}

/// A remote session whose bridge is down: never `exited` or lost, its
/// last known facts kept; a final fact it sent before (exit, host lost)
/// still wins.
#[test]
fn derive_status_of_unreachable_remote_sessions() {
    use AgentSignal::*;
    let cases = vec![
        Case {
            name: "working when the bridge went down",
            facts: with(|f| {
                f.hook = Some((Working, at(70_000)));
                unreachable(f, at(60_000));
            }),
            status: Status::Unreachable,
            text: "unreachable (since 13:45:40 UTC)",
            lane: Lane::InFlight,
        },
        Case {
            name: "blocked with work when the bridge went down",
            facts: with(|f| {
                work(f);
                f.screen = Some((Blocked, at(90_000)));
                unreachable(f, at(1_000));
            }),
            status: Status::Unreachable,
            text: "unreachable (since 13:46:39 UTC)",
            lane: Lane::InFlight,
        },
        Case {
            name: "no output long ago is still not exited",
            facts: with(|f| {
                f.last_output_at = Some(at(86_400_000));
                unreachable(f, at(3_600_000));
            }),
            status: Status::Unreachable,
            text: "unreachable (since 12:46:40 UTC)",
            lane: Lane::InFlight,
        },
        Case {
            name: "an exit seen before the bridge went down wins",
            facts: with(|f| {
                work(f);
                f.exit = Some((
                    ExitFact {
                        code: Some(0),
                        signal: None,
                    },
                    at(120_000),
                ));
                unreachable(f, at(60_000));
            }),
            status: Status::Exited,
            text: "exited",
            lane: Lane::ReadyToShip,
        },
        Case {
            name: "a host lost over there, seen before, wins",
            facts: with(|f| {
                f.host_lost_at = Some(at(120_000));
                unreachable(f, at(60_000));
            }),
            status: Status::Exited,
            text: "exited (host lost)",
            lane: Lane::NeedsYou,
        },
        Case {
            name: "unreachable beats a merge conflict (cannot be seen)",
            facts: with(|f| {
                f.conflict = Some(ConflictFact {
                    files: vec!["a.rs".into()],
                });
                unreachable(f, at(0));
            }),
            status: Status::Unreachable,
            text: "unreachable (since 13:46:40 UTC)",
            lane: Lane::InFlight,
        },
        Case {
            name: "since before the epoch's day boundary",
            facts: with(|f| unreachable(f, 86_400_000 - 1)),
            status: Status::Unreachable,
            text: "unreachable (since 23:59:59 UTC)",
            lane: Lane::InFlight,
        },
    ];
    for case in cases {
        let derived = derive_status(&case.facts, NOW);
        assert_eq!(derived.status, case.status, "{}: status", case.name);
        assert_eq!(derived.text, case.text, "{}: text", case.name);
        assert_eq!(derived.lane, case.lane, "{}: lane", case.name);
        assert!(
            !derived.host_lost || case.facts.host_lost_at.is_some(),
            "{}: host_lost",
            case.name
        );
    }
}

#[test]
fn unreachable_is_decoded_from_its_fact_row() {
    let rows = vec![crate::store::FactRow {
        kind: kind::UNREACHABLE.into(),
        value: serde_json::json!({"remote": "devbox", "reason": null}),
        observed_at: 42,
    }];
    let facts = SessionFacts::from_rows(1, &rows);
    assert_eq!(
        facts.unreachable,
        Some((
            UnreachableFact {
                remote: "devbox".into(),
                reason: None
            },
            42
        ))
    );
}

/// READY TO SHIP rows say `reviewed` only while the agent's state is the
/// snapshot every file was reviewed in; other lanes and remote sessions
/// say nothing. The facts come from their stored rows.
#[test]
fn derive_review_from_the_guard_and_reviewed_facts() {
    let facts = |guard: Option<&str>, reviewed: Option<&str>| {
        let mut rows = Vec::new();
        if let Some(tree) = guard {
            rows.push(FactRow {
                kind: kind::GUARD.into(),
                value: serde_json::json!({"snapshot": tree, "changes": []}),
                observed_at: 5,
            });
        }
        if let Some(tree) = reviewed {
            rows.push(FactRow {
                kind: kind::REVIEWED.into(),
                value: serde_json::json!({"files": {"a.rs": "b1:100644"}, "snapshot": tree}),
                observed_at: 6,
            });
        }
        SessionFacts::from_rows(1, &rows)
    };
    let ready = Lane::ReadyToShip;
    let cases = [
        (
            "never reviewed",
            facts(Some("t1"), None),
            ready,
            false,
            Some(ReviewState::NotReviewed),
        ),
        (
            "reviewed, unchanged since",
            facts(Some("t1"), Some("t1")),
            ready,
            false,
            Some(ReviewState::Reviewed),
        ),
        (
            "the agent changed since",
            facts(Some("t2"), Some("t1")),
            ready,
            false,
            Some(ReviewState::NotReviewed),
        ),
        (
            "no snapshot known",
            facts(None, Some("t1")),
            ready,
            false,
            Some(ReviewState::NotReviewed),
        ),
        (
            "not every file reviewed",
            facts(Some("t1"), None),
            ready,
            false,
            Some(ReviewState::NotReviewed),
        ),
        (
            "in flight",
            facts(Some("t1"), Some("t1")),
            Lane::InFlight,
            false,
            None,
        ),
        (
            "needs you",
            facts(Some("t1"), None),
            Lane::NeedsYou,
            false,
            None,
        ),
        ("remote", facts(Some("t1"), Some("t1")), ready, true, None),
    ];
    for (name, facts, lane, remote, want) in cases {
        assert_eq!(derive_review(&facts, lane, remote), want, "{name}");
    }
    // A reviewed fact written before it had a snapshot (files only).
    let old = SessionFacts::from_rows(
        1,
        &[FactRow {
            kind: kind::REVIEWED.into(),
            value: serde_json::json!({"files": {"a.rs": "b1:100644"}}),
            observed_at: 6,
        }],
    );
    assert_eq!(old.reviewed_snapshot, None);
}
