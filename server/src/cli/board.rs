//! `owt` with no verb: the control plane (`owt-tui`) when stdin and
//! stdout are a terminal, else — or with `--print`, `--json`, `[ui]
//! control_plane = false` — the static board.

use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;

use owt_protocol::Board;

use crate::ops::{self, list};
use crate::printable;
use crate::store::now_ms;

pub fn run(dir: Option<&Path>, out: &super::Out, print: bool) -> anyhow::Result<ExitCode> {
    let mut ctx = ops::Context::open(dir)?;
    let terminal = std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
    if !print && !out.json && terminal && owt_tui::wanted(&ctx.config.config) {
        drop(ctx);
        owt_tui::run(dir)?;
        return Ok(ExitCode::SUCCESS);
    }
    // Hosts that died are recorded first (they hold no room), then the
    // sessions waiting for room start when there is room now.
    list::reconcile_all(&ctx);
    ops::queue::admit_in(&mut ctx.store, &ctx.home, &mut |line| out.progress(line));
    let sessions = list::session_views_reconciled(&ctx)?;
    let board = list::board(
        ctx.repo.main_root().to_string_lossy().into_owned(),
        sessions,
    );
    out.emit(&board, || render(&board, &ctx.repo.name(), now_ms()))?;
    Ok(ExitCode::SUCCESS)
}

/// The board as text: one block per non-empty lane.
pub fn render(board: &Board, repo_name: &str, now: i64) -> String {
    let n: usize = board.lanes.iter().map(|l| l.sessions.len()).sum();
    if n == 0 {
        return format!(
            "owt · {repo_name} · no sessions\nStart one with: owt new \"describe the task\""
        );
    }
    let mut lines = vec![format!(
        "owt · {repo_name} · {n} session{}",
        if n == 1 { "" } else { "s" }
    )];
    let width = board
        .lanes
        .iter()
        .flat_map(|l| &l.sessions)
        .map(|s| s.name.chars().count())
        .max()
        .unwrap_or(0);
    for lane in &board.lanes {
        lines.push(format!("{} ({})", lane.title, lane.sessions.len()));
        let n_queued = lane
            .sessions
            .iter()
            .filter(|s| s.status == owt_protocol::Status::Queued)
            .count();
        let mut queued_titled = false;
        for s in &lane.sessions {
            // The queued ones come last in their lane, under their own title.
            if s.status == owt_protocol::Status::Queued && !queued_titled {
                lines.push(format!("  QUEUED ({n_queued})"));
                queued_titled = true;
            }
            let parts = session_parts(s, now);
            lines.push(format!("  {:<width$}  {}", s.name, parts.join(" · ")));
        }
    }
    lines.join("\n")
}

/// What the board says of one session after its name.
fn session_parts(s: &owt_protocol::SessionView, now: i64) -> Vec<String> {
    let mut parts = vec![
        printable::line(&s.status_text).into_owned(),
        super::age(s.created_at, now),
        printable::line(&s.provider).into_owned(),
    ];
    // A conductor's child: whose (its lane may differ from the
    // conductor's).
    if let Some(parent) = &s.parent {
        parts.push(format!("↳ child of {}", printable::line(parent)));
    }
    if s.ahead > 0 {
        parts.push(format!(
            "+{} commit{}",
            s.ahead,
            if s.ahead == 1 { "" } else { "s" }
        ));
    }
    if !s.base_conflicts.is_empty() {
        parts.push(format!(
            "conflicts with {} in {}",
            printable::line(&s.base),
            printable::line(&s.base_conflicts.join(", "))
        ));
    }
    if s.overlaps > 0 {
        parts.push(format!(
            "{} overlap{}",
            s.overlaps,
            if s.overlaps == 1 { "" } else { "s" }
        ));
    }
    if s.checks
        .as_ref()
        .is_some_and(|c| c.state == "passed" && c.current)
    {
        parts.push("checks passed".into());
    }
    if s.pr.is_some() && !s.status_text.contains('#') {
        parts.push(format!("PR {}", super::list::pr_cell(s)));
    }
    if let Some(usage) = &s.usage {
        parts.push(super::usage_figure(usage));
    }
    let task = s.task.lines().next().unwrap_or_default();
    let task: String = task.chars().take(60).collect();
    parts.push(printable::line(&task).into_owned());
    parts
}
