//! `owt list` (`ls`).

use std::path::Path;
use std::process::ExitCode;

use owt_protocol::{SessionList, SessionView};

use crate::ops::{self, list};
use crate::store::now_ms;

#[path = "list_table.rs"]
mod table;

#[derive(Debug, clap::Args)]
#[command(after_help = "\
The table fits the terminal's width (COLUMNS, else the terminal's size):
columns go, empty ones first, in the order RSS, TOKENS, AGE, PR, CHECKS,
PORTS, WORKTREE, AGENT, BRANCH, then a long status is shortened with `…`,
then OVERLAPS, CHANGED, AHEAD go; worktree paths are relative to the
repository. Piped, with no COLUMNS, the whole table is printed; scripts should use
`owt --json list`.")]
pub struct Args {
    /// The whole table, whatever the terminal's width (absolute worktree paths).
    #[arg(long)]
    pub wide: bool,
}

pub fn run(dir: Option<&Path>, out: &super::Out, args: Args) -> anyhow::Result<ExitCode> {
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
    let width = (!args.wide).then(table_width).flatten();
    let root = Path::new(&doc.repository);
    let fit = width.map(|width| table::Fit { width, root });
    out.emit(&doc, || table::render(&doc.sessions, now_ms(), fit))?;
    Ok(ExitCode::SUCCESS)
}

/// The width to fit the table in: `COLUMNS`, else stdout's terminal's;
/// `None` (the whole table) when stdout is not a terminal.
fn table_width() -> Option<usize> {
    if let Some(columns) = std::env::var("COLUMNS").ok().and_then(|c| c.parse().ok()) {
        return Some(columns);
    }
    crate::session::attach::terminal_size(std::io::stdout()).map(|(_, cols)| usize::from(cols))
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
/// this machine) says it can be resumed (`owt resume`), as the board's
/// `resume` action does.
pub fn status_cell(s: &SessionView) -> String {
    let text = crate::printable::line(&s.status_text).into_owned();
    if s.can(owt_protocol::SessionAction::Resume) {
        format!("{text}, resumable")
    } else {
        text
    }
}

/// `20000-20003` for a block, `-` for none.
pub(crate) fn ports_text(ports: &[u16]) -> String {
    match (ports.first(), ports.last()) {
        (Some(first), Some(last)) if first == last => first.to_string(),
        (Some(first), Some(last)) => format!("{first}-{last}"),
        _ => "-".to_string(),
    }
}
