//! `owt list` (`ls`).

use std::path::Path;
use std::process::ExitCode;

use owt_protocol::{SessionList, SessionView};

use crate::ops::{self, list};
use crate::store::now_ms;

#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(dir: Option<&Path>, out: &super::Out, _args: Args) -> anyhow::Result<ExitCode> {
    let mut ctx = ops::Context::open(dir)?;
    // Hosts that died are recorded first (they hold no room), then the
    // sessions waiting for room start when there is room now.
    list::reconcile_all(&ctx);
    ops::queue::admit_in(&mut ctx.store, &ctx.home, &mut |line| out.progress(line));
    let sessions = list::session_views_reconciled(&ctx)?;
    let doc = SessionList {
        repository: ctx.repo.main_root().to_string_lossy().into_owned(),
        sessions,
    };
    out.emit(&doc, || render(&doc.sessions, now_ms()))?;
    Ok(ExitCode::SUCCESS)
}

/// The CHECKS column: the last run's state (`-`: none), `(old)` when
/// input reached the agent since.
pub fn checks_cell(s: &SessionView) -> String {
    let Some(c) = &s.checks else {
        return "-".into();
    };
    let mut cell = match c.state.as_str() {
        "failed" if c.max_attempts > 0 && c.attempt > 0 => {
            format!(
                "failed {}/{}",
                c.attempt.min(c.max_attempts),
                c.max_attempts
            )
        }
        state => state.to_string(),
    };
    if !c.current && c.state != "running" {
        cell.push_str(" (old)");
    }
    cell
}

/// The PR column: `#12`, `#12 draft`, `#12 merged`, … (`-`: none).
pub fn pr_cell(s: &SessionView) -> String {
    let Some(pr) = &s.pr else {
        return "-".into();
    };
    match (pr.state.as_str(), pr.draft) {
        ("open", true) => format!("#{} draft", pr.number),
        ("open", false) => format!("#{}", pr.number),
        (state, _) => format!("#{} {state}", pr.number),
    }
}

/// A session's status as the table shows it: an agent that is gone (on
/// this machine) says it can be resumed (`owt resume`).
fn status_cell(s: &SessionView) -> String {
    let text = crate::printable::line(&s.status_text).into_owned();
    if s.status == owt_protocol::Status::Exited && s.remote.is_none() {
        format!("{text}, resumable")
    } else {
        text
    }
}

/// The text table. RSS is the agent's process tree's resident memory
/// (while it runs); PORTS shows only when a session holds ports.
pub fn render(sessions: &[SessionView], now: i64) -> String {
    if sessions.is_empty() {
        return "No sessions in this repository. Start one with: owt new \"describe the task\""
            .into();
    }
    let with_ports = sessions.iter().any(|s| !s.ports.is_empty());
    let mut header = vec![
        "NAME", "STATUS", "AGENT", "BRANCH", "AHEAD", "CHANGED", "OVERLAPS", "CHECKS", "PR",
        "TOKENS", "RSS", "AGE",
    ];
    if with_ports {
        header.push("PORTS");
    }
    header.push("WORKTREE");
    let rows: Vec<Vec<String>> = sessions
        .iter()
        .map(|s| {
            let mut row = vec![
                s.name.clone(),
                status_cell(s),
                crate::printable::line(&s.provider).into_owned(),
                crate::printable::line(&s.branch).into_owned(),
                s.ahead.to_string(),
                s.changed_files.to_string(),
                s.overlaps.to_string(),
                checks_cell(s),
                pr_cell(s),
                s.usage
                    .as_ref()
                    .map_or_else(|| "-".to_string(), super::usage_figure),
                s.rss_bytes
                    .map_or_else(|| "-".to_string(), crate::config::human_bytes),
                super::age(s.created_at, now),
            ];
            if with_ports {
                row.push(ports_text(&s.ports));
            }
            row.push(crate::printable::line(&s.worktree).into_owned());
            row
        })
        .collect();
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut s = String::new();
        for (i, (cell, w)) in cells.iter().zip(&widths).enumerate() {
            if i + 1 == cells.len() {
                s.push_str(cell);
            } else {
                s.push_str(&format!("{cell:<w$}  "));
            }
        }
        s.trim_end().to_string()
    };
    let mut lines = vec![line(header.clone())];
    for row in &rows {
        lines.push(line(row.iter().map(String::as_str).collect()));
    }
    lines.join("\n")
}

/// `20000-20003` for a block, `-` for none.
fn ports_text(ports: &[u16]) -> String {
    match (ports.first(), ports.last()) {
        (Some(first), Some(last)) if first == last => first.to_string(),
        (Some(first), Some(last)) => format!("{first}-{last}"),
        _ => "-".to_string(),
    }
}
