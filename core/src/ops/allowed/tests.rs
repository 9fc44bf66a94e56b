//! The property the board rests on (#34): for every session state the
//! store can hold, each verb's check ([`super::decide`]) allows exactly
//! what the board's `actions` allow, and the lane, `owt queue`'s
//! eligibility and the overlap counts agree. Hand-rolled: every
//! combination of the facts that decide a status, lane and action, with
//! the rarer facts (queued, unreachable, a stopped merge, ACP, checks, a
//! pull request) drawn for each from a fixed pseudo-random sequence.

use owt_protocol::{Lane, SessionAction, SessionKind, SessionView, Status};

use super::decide;
use crate::actions::{self, in_ship_queue};
use crate::ops::guard::ship_queue_steps;
use crate::ops::list::view;
use crate::status::feedback::{ChecksFact, ChecksState, PrFact, PrState};
use crate::status::{
    AcpFact, AcpState, AgentSignal, ConflictFact, ExitFact, GitFact, HostFact, SessionFacts,
    UnreachableFact,
};
use crate::store::SessionRow;

const NOW: i64 = 1_000_000_000;

/// A xorshift sequence: the same draws on every run.
struct Draws(u64);

impl Draws {
    fn pick(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }

    fn chance(&mut self, one_in: u64) -> bool {
        self.pick(one_in) == 0
    }
}

/// The exhaustive dimensions, as indexes: hook, screen, output, exit, host
/// lost, host, work (ahead × changed), overlaps, base conflict, conflict
/// with another session, remote.
const DIMS: [usize; 11] = [6, 4, 3, 3, 2, 3, 4, 2, 2, 2, 2];

fn signal(i: usize) -> Option<AgentSignal> {
    [
        None,
        Some(AgentSignal::Working),
        Some(AgentSignal::Waiting),
        Some(AgentSignal::Blocked),
        Some(AgentSignal::Idle),
        Some(AgentSignal::Done),
    ][i]
}

fn host(headless: bool) -> HostFact {
    HostFact {
        host_pid: 1,
        agent_pid: Some(2),
        socket: "s".into(),
        headless,
        transport: Default::default(),
    }
}

/// The facts of combination `ix` (one index per [`DIMS`]), the rarer facts
/// from `draws`.
fn facts_of(ix: &[usize], draws: &mut Draws) -> SessionFacts {
    let mut f = SessionFacts {
        created_at: NOW - 600_000,
        ..SessionFacts::default()
    };
    f.hook = signal(ix[0]).map(|s| (s, NOW - 3_000));
    f.screen = [None, Some(AgentSignal::Blocked), Some(AgentSignal::Waiting)]
        .get(ix[1])
        .copied()
        .unwrap_or(Some(AgentSignal::Working))
        .map(|s| (s, NOW - 2_000));
    f.last_output_at = [None, Some(NOW - 1_000), Some(NOW - 60_000)][ix[2]];
    f.exit = [None, Some(0), Some(1)][ix[3]].map(|code| {
        (
            ExitFact {
                code: Some(code),
                signal: None,
            },
            NOW - 500,
        )
    });
    f.host_lost_at = (ix[4] == 1).then_some(NOW - 500);
    f.host = match ix[5] {
        0 => None,
        1 => Some((host(false), NOW - 500_000)),
        _ => Some((host(true), NOW - 500_000)),
    };
    f.git = GitFact {
        ahead: (ix[6] & 1) as u32,
        changed_files: (ix[6] >> 1) as u32 * 2,
    };
    f.overlaps = ix[7] as u32 * 2;
    if ix[8] == 1 {
        f.base_conflicts = vec!["README.md".into()];
    }
    if ix[9] == 1 {
        f.conflicts_with = vec!["other".into()];
    }
    rare_facts(&mut f, draws);
    f
}

/// The facts few sessions hold, drawn.
fn rare_facts(f: &mut SessionFacts, draws: &mut Draws) {
    if draws.chance(8) {
        f.queued_at = Some(NOW - 10_000);
    }
    if draws.chance(8) {
        let fact = UnreachableFact {
            remote: "devbox".into(),
            reason: None,
        };
        f.unreachable = Some((fact, NOW - 10_000));
    }
    if draws.chance(8) {
        f.conflict = Some(ConflictFact {
            files: vec!["a.txt".into()],
        });
    }
    if draws.chance(4) {
        let states = [
            AcpState::Starting,
            AcpState::Working,
            AcpState::Blocked,
            AcpState::Waiting,
            AcpState::Failed,
        ];
        let state = states[draws.pick(5) as usize];
        let fact = AcpFact {
            state,
            stop_reason: None,
            error: None,
        };
        f.acp = Some((fact, NOW - 1_000));
    }
    if draws.chance(4) {
        let state = [
            ChecksState::Running,
            ChecksState::Passed,
            ChecksState::Failed,
        ][draws.pick(3) as usize];
        let checks: ChecksFact = serde_json::from_value(serde_json::json!({
            "state": state, "command": "make test", "trigger": "turn-end",
            "started_at": NOW - 900, "checked_at": NOW - 800,
            "attempt": draws.pick(4), "max_attempts": 2, "fixing": draws.chance(2),
        }))
        .expect("a checks fact");
        f.feedback.checks = Some(checks);
    }
    if draws.chance(4) {
        f.feedback.pr = Some(PrFact {
            number: 7,
            state: [PrState::Open, PrState::Merged, PrState::Closed][draws.pick(3) as usize],
            ..PrFact::default()
        });
    }
}

fn row(remote: bool) -> SessionRow {
    SessionRow {
        id: 1,
        repo_id: 1,
        name: "s".into(),
        short_id: "abcd1234".into(),
        task: "task".into(),
        branch: "owt/s".into(),
        base_branch: "main".into(),
        worktree_path: if remote {
            crate::store::remote_location("devbox", "/w/s").into()
        } else {
            "/w/s".into()
        },
        provider: "claude".into(),
        kind: SessionKind::Worktree,
        created_at: NOW - 600_000,
    }
}

/// Every action: the verb's check agrees with the board's action (the
/// override lets through exactly the overridable refusals, which only an
/// agent at work causes); a conflicting or unfinished session is never in
/// READY TO SHIP.
fn check_one(facts: &SessionFacts, view: &SessionView) {
    let context = || format!("{facts:#?}\n{view:#?}");
    assert_eq!(
        view.actions,
        actions::session_actions(view),
        "{}",
        context()
    );
    for action in SessionAction::ALL {
        let shown = view.can(action);
        assert_eq!(
            decide(view, action, false).is_ok(),
            shown,
            "{action:?} {}",
            context()
        );
        let refusal = actions::refusal(view, action);
        let overridable = refusal.as_ref().is_some_and(|r| r.overridable);
        assert_eq!(decide(view, action, true).is_ok(), shown || overridable);
        if overridable {
            assert!(actions::busy(view).is_some(), "{action:?} {}", context());
        }
        if let Err(refused) = decide(view, action, false) {
            assert_eq!(refused.hint.is_some(), overridable);
            assert!(refused.message.contains(&refusal.unwrap().reason));
        }
    }
    // A terminal agent's dialog is looked for on its screen by its host:
    // the board's only other reason is the one the host gives too.
    if super::screen_decides(view) {
        for action in [SessionAction::Approve, SessionAction::Deny] {
            if let Some(refusal) = actions::refusal(view, action) {
                assert_eq!(
                    refusal.reason,
                    "no permission dialog is on its screen",
                    "{}",
                    context()
                );
            }
        }
    }
    assert_eq!(view.overlaps, facts.overlaps, "{}", context());
    if view.lane == Lane::ReadyToShip {
        assert!(
            !facts.conflicts(),
            "a conflict is ready to ship: {}",
            context()
        );
        assert!(
            facts.git.ahead > 0 || facts.git.changed_files > 0,
            "READY TO SHIP without work: {}",
            context()
        );
        assert!(
            !matches!(
                view.status,
                Status::Working | Status::Blocked | Status::Starting | Status::Conflict
            ),
            "READY TO SHIP while {:?}: {}",
            view.status,
            context()
        );
    }
}

/// The board's lanes and counts, and `owt queue`'s steps, of `views`: each
/// session in the lane its view says, the queue exactly READY TO SHIP,
/// with the board's overlap counts.
fn check_board(views: &[SessionView]) {
    let (lanes, all_lanes, counts) = actions::lanes(views.to_vec());
    for view in views {
        let in_lanes: Vec<Lane> = lanes
            .iter()
            .filter(|l| l.sessions.iter().any(|s| s == view))
            .map(|l| l.lane)
            .collect();
        assert_eq!(in_lanes, vec![view.lane]);
    }
    let ready: Vec<SessionView> = views.iter().filter(|v| in_ship_queue(v)).cloned().collect();
    let ready_lane = all_lanes
        .iter()
        .find(|l| l.lane == Lane::ReadyToShip)
        .unwrap();
    assert_eq!(ready_lane.count as usize, ready.len());
    assert_eq!(counts.ready as usize, ready.len());
    let steps = ship_queue_steps(Vec::new(), &ready);
    assert_eq!(steps.len(), ready.len());
    for (step, view) in steps.iter().zip(&ready) {
        assert_eq!((&step.session, step.overlaps), (&view.name, view.overlaps));
    }
}

#[test]
fn every_verb_is_allowed_exactly_when_the_board_shows_it_and_lanes_queue_and_overlaps_agree() {
    let mut draws = Draws(0x9e37_79b9_7f4a_7c15);
    let mut ix = [0usize; DIMS.len()];
    let mut board = Vec::new();
    let mut n = 0u32;
    let mut seen_lanes = std::collections::BTreeSet::new();
    loop {
        let facts = facts_of(&ix, &mut draws);
        let mut view = view(&row(ix[10] == 1), &facts, NOW);
        check_one(&facts, &view);
        seen_lanes.insert(view.lane.title());
        n += 1;
        // Boards of 7 sessions, each checked as a whole.
        view.name = format!("s{n}");
        board.push(view);
        if board.len() == 7 {
            check_board(&board);
            board.clear();
        }
        // The next combination (mixed radix).
        let mut d = 0;
        loop {
            if d == DIMS.len() {
                assert_eq!(n as usize, DIMS.iter().product::<usize>());
                assert_eq!(seen_lanes.len(), 4, "{seen_lanes:?}");
                return;
            }
            ix[d] += 1;
            if ix[d] < DIMS[d] {
                break;
            }
            ix[d] = 0;
            d += 1;
        }
    }
}
