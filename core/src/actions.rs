//! What can be done to a session now, and the board's counts: the one
//! place these are decided. Every surface shows what comes out of here
//! (`owt --json`, the LSP's code actions and board, the Neovim board, the
//! VS Code tree), so no plugin keeps rules of its own.
//!
//! Invariant: pure — a function of the [`SessionView`] fields (themselves
//! derived by [`crate::status::derive_status`]); no clock, store, git or
//! process access.

use owt_protocol::{
    ActionState, BoardCounts, BoardLane, Lane, LaneCount, SessionAction, SessionView, Status,
};

/// Every [`SessionAction`], in menu order, with whether `view` allows it
/// now and why not.
pub fn session_actions(view: &SessionView) -> Vec<ActionState> {
    SessionAction::ALL
        .iter()
        .map(|&action| {
            let reason = refusal(view, action).map(|r| r.reason);
            ActionState {
                action,
                available: reason.is_none(),
                reason,
            }
        })
        .collect()
}

/// Why an action cannot be done now, and whether the verb's override flag
/// (`--now` for ship and merge, `--force` for delete) may do it anyway.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub reason: String,
    /// Only the agent being at work stands in the way: the override stops
    /// it.
    pub overridable: bool,
}

/// Why `action` cannot be done to `view` now (`None`: it can). What every
/// verb checks before it acts (`ops::allowed`), and what the board shows.
pub fn refusal(view: &SessionView, action: SessionAction) -> Option<Refusal> {
    if let Some(reason) = why_not(view, action) {
        return Some(Refusal {
            reason,
            overridable: false,
        });
    }
    let stops_the_agent = matches!(
        action,
        SessionAction::Ship | SessionAction::Merge | SessionAction::Delete
    );
    busy(view)
        .filter(|_| stops_the_agent)
        .map(|reason| Refusal {
            reason,
            overridable: true,
        })
}

/// Why the agent of `view` is in the middle of something that shipping,
/// merging or deleting it would cut short (`None`: it is not).
pub fn busy(view: &SessionView) -> Option<String> {
    match view.status {
        Status::Working => Some("its agent is working (mid-turn)".to_string()),
        Status::Blocked => Some("its agent waits on a permission dialog".to_string()),
        _ => None,
    }
}

/// Why `action` cannot be done to `view` now, whatever the agent is doing
/// (`None`: it can).
fn why_not(view: &SessionView, action: SessionAction) -> Option<String> {
    let gone = if view.status == Status::Queued {
        Some(
            "the agent has not started: it waits for room on the machine (owt start starts it now)"
                .to_string(),
        )
    } else if view.host_lost {
        Some("the session host is gone".to_string())
    } else if view.status == Status::Exited {
        // `the agent exited`, `the agent exited with code 2`
        Some(format!("the agent {}", view.status_text))
    } else {
        None
    };
    // A remote that cannot be reached: nothing can be done to its
    // sessions until it is back (owt reconnects on its own).
    let unreachable = (view.status == Status::Unreachable).then(|| {
        format!(
            "{} is unreachable",
            view.remote.as_deref().unwrap_or("its remote")
        )
    });
    let gone = unreachable.clone().or(gone);
    let conflicted = (view.status == Status::Conflict).then(|| {
        "a merge or rebase stopped on conflicts in its worktree; resolve them first".to_string()
    });
    match action {
        SessionAction::Attach | SessionAction::Send => gone,
        // An exited agent's host saved its last screen.
        SessionAction::Peek if view.status == Status::Queued => gone,
        SessionAction::Peek => unreachable.or_else(|| {
            view.host_lost
                .then(|| "the session host is gone and saved no screen".to_string())
        }),
        SessionAction::Merge => unreachable.or(conflicted).or_else(|| {
            (view.ahead == 0).then(|| {
                if view.changed_files > 0 {
                    "no commits to merge yet (ship commits the changed files first)".to_string()
                } else {
                    "no commits to merge".to_string()
                }
            })
        }),
        SessionAction::Ship => unreachable.or(conflicted).or_else(|| {
            (view.ahead == 0 && view.changed_files == 0)
                .then(|| "nothing to ship: no commits and no changed files".to_string())
        }),
        SessionAction::Delete => unreachable,
        SessionAction::Resume if view.status == Status::Queued => gone,
        SessionAction::Resume => resume_why_not(view),
        SessionAction::Approve | SessionAction::Deny => gone.or_else(|| permission_why_not(view)),
        SessionAction::Conflicts => match &view.remote {
            // Its files are over there: attach and resolve them there.
            Some(remote) => Some(format!(
                "its files are on {remote} (attach to resolve them)"
            )),
            None => view
                .conflicted_files
                .is_empty()
                .then(|| "no file has unresolved conflicts".to_string()),
        },
    }
}

/// Why `view`'s agent cannot be resumed (`owt resume`; `None`: it is
/// gone, here, not a headless run, and can be).
fn resume_why_not(view: &SessionView) -> Option<String> {
    if view.headless {
        return Some(
            "it was a headless run: start it again with `owt new --headless` (its conversation is not resumed)"
                .to_string(),
        );
    }
    if let Some(remote) = &view.remote {
        return Some(format!(
            "it runs on {remote}: resume it there (`owt resume` on that machine)"
        ));
    }
    (view.status != Status::Exited).then(|| {
        format!(
            "its agent has not exited (see `owt list`): attach to it with `owt attach {}`",
            view.name
        )
    })
}

/// Why a permission request of `view` cannot be answered (`None`: one is
/// pending, answer it).
fn permission_why_not(view: &SessionView) -> Option<String> {
    // A terminal agent's dialog is answered with its own key (`owt
    // approve` checks its screen first).
    let pty = view.transport == owt_protocol::host::Transport::Pty;
    if view.permission.is_some() || (pty && view.status == Status::Blocked) {
        return None;
    }
    Some(match view.transport {
        owt_protocol::host::Transport::Pty => "no permission dialog is on its screen".to_string(),
        owt_protocol::host::Transport::Acp => "no permission request is pending".to_string(),
    })
}

/// Whether `view` is in `owt queue` (and what `owt queue --ship` ships):
/// exactly the sessions in READY TO SHIP, whose lane `status` derived.
pub fn in_ship_queue(view: &SessionView) -> bool {
    view.lane == Lane::ReadyToShip
}

/// Groups sessions into lanes: the non-empty lanes (with their sessions),
/// every lane's title and count, and the status line's counts.
pub fn lanes(sessions: Vec<SessionView>) -> (Vec<BoardLane>, Vec<LaneCount>, BoardCounts) {
    let mut counts = BoardCounts::default();
    for session in &sessions {
        counts.total += 1;
        match session.lane {
            Lane::NeedsYou => counts.needs_you += 1,
            Lane::ReadyToShip => counts.ready += 1,
            Lane::InFlight if matches!(session.status, Status::Working | Status::Starting) => {
                counts.working += 1
            }
            Lane::InFlight if session.status == Status::Queued => counts.queued += 1,
            Lane::InFlight => counts.idle += 1,
            Lane::ReadyToClean => counts.to_clean += 1,
        }
    }
    counts.summary = [
        (counts.working, "working"),
        (counts.needs_you, "needs you"),
        (counts.ready, "ready"),
        (counts.idle, "idle"),
        (counts.to_clean, "to clean"),
        (counts.queued, "queued"),
    ]
    .iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, what)| format!("{n} {what}"))
    .collect::<Vec<_>>()
    .join(" · ");
    let mut all_lanes = Vec::new();
    let mut lanes = Vec::new();
    for lane in Lane::ALL {
        let mut in_lane: Vec<SessionView> = sessions
            .iter()
            .filter(|s| s.lane == lane)
            .cloned()
            .collect();
        // Sessions waiting for room come last (IN FLIGHT's QUEUED part).
        in_lane.sort_by_key(|s| s.status == Status::Queued);
        let count = in_lane.len() as u32;
        all_lanes.push(LaneCount {
            lane,
            title: lane.title().to_string(),
            count,
        });
        if count > 0 {
            lanes.push(BoardLane {
                lane,
                title: lane.title().to_string(),
                count,
                sessions: in_lane,
            });
        }
    }
    (lanes, all_lanes, counts)
}

#[cfg(test)]
mod tests;
