//! The footer shows exactly the keys the server's `actions` allow for the
//! focused row (one source of truth), and a refused key says the server's
//! reason.

use expect_test::expect;
use owt_protocol::{SessionAction, Status};

use super::{app, ready, session, with_actions};
use crate::keys::{self, Needs, KEYS};
use crate::view::footer_keys;

const EVERY_STATUS: [Status; 16] = [
    Status::Starting,
    Status::Working,
    Status::Idle,
    Status::NeedsInput,
    Status::Blocked,
    Status::Done,
    Status::Exited,
    Status::Conflict,
    Status::ChecksRunning,
    Status::ChecksFailed,
    Status::CiFailed,
    Status::ChangesRequested,
    Status::PrOpen,
    Status::Merged,
    Status::Queued,
    Status::Unreachable,
];

#[test]
fn the_footers_keys_are_the_servers_actions_for_every_status() {
    for status in EVERY_STATUS {
        for with_work in [false, true] {
            let mut view = session("s", status);
            if with_work {
                view.ahead = 1;
                view.changed_files = 2;
            }
            if status == Status::Unreachable {
                view.remote = Some("devbox".into());
            }
            with_actions(&mut view);
            let allowed: Vec<SessionAction> = owt_core::actions::session_actions(&view)
                .into_iter()
                .filter(|a| a.available)
                .map(|a| a.action)
                .collect();
            let app = app(vec![view]);
            let shown = footer_keys(&app);
            for binding in KEYS {
                let Needs::Action(action) = binding.needs else {
                    continue;
                };
                assert_eq!(
                    shown.iter().any(|b| b.keys == binding.keys),
                    allowed.contains(&action),
                    "{status:?} (work: {with_work}): the footer and the server disagree on {} ({})",
                    binding.keys,
                    action.as_str()
                );
            }
        }
    }
}

fn footer(view: owt_protocol::SessionView) -> String {
    let app = app(vec![view]);
    crate::view::footer::footer_text(&footer_keys(&app), 200)
}

#[test]
fn the_footer_per_status_reads_as_expected() {
    let text: String = [
        ("working", session("s", Status::Working)),
        ("ready", ready("s")),
        ("exited", session("s", Status::Exited)),
        ("queued", session("s", Status::Queued)),
    ]
    .into_iter()
    .map(|(what, view)| format!("{what}: {}\n", footer(view)))
    .collect();
    expect![[r#"
        working: tab preview  a/⏎ attach  f fix  r reviewed  t type  n new  N note  / filter  ? help  q quit
        ready: tab preview  a/⏎ attach  s ship  m merge  f fix  r reviewed  t type  d delete  n new  N note  / filter  ? help  q quit
        exited: tab preview  r reviewed  R resume  d delete  n new  N note  / filter  ? help  q quit
        queued: tab preview  r reviewed  d delete  n new  N note  / filter  ? help  q quit
    "#]].assert_eq(&text);
}

#[test]
fn a_narrow_footer_keeps_the_session_keys_and_names_help() {
    let app = app(vec![ready("s")]);
    expect!["tab a/⏎ s m f r t d · n N / ? q (? help)"]
        .assert_eq(&crate::view::footer::footer_text(&footer_keys(&app), 80));
}

#[test]
fn a_refused_key_says_the_servers_reason() {
    let view = session("s", Status::Working);
    let merge = KEYS.iter().find(|b| b.keys == "m").unwrap();
    expect![["merge: no commits to merge"]].assert_eq(&keys::why_not(merge, Some(&view)).unwrap());
    let queued = session("q", Status::Queued);
    let attach = KEYS.iter().find(|b| b.keys == "a/⏎").unwrap();
    expect!["attach: the agent has not started: it waits for room on the machine (owt start starts it now)"].assert_eq(&keys::why_not(attach, Some(&queued)).unwrap());
}
