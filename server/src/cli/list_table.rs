//! `owt list`'s text table, fitted to a width: columns dropped in a fixed
//! order (an empty one first), worktree paths relative to the repository,
//! and, last, the status and name shortened with `…`. Pure: sessions in,
//! text out.

use std::path::{Component, Path, PathBuf};

use owt_protocol::SessionView;

use super::{checks_cell, ports_text, pr_cell, status_cell};

/// The width to fit in, and the repository the worktree paths are shown
/// relative to.
#[derive(Debug, Clone, Copy)]
pub struct Fit<'a> {
    pub width: usize,
    pub root: &'a Path,
}

/// One column: its title, its cells, and when it is dropped to fit
/// (lower first; `None`: never).
struct Column {
    title: &'static str,
    cells: Vec<String>,
    drop_rank: Option<u8>,
    /// Its place in the whole table.
    order: usize,
}

impl Column {
    fn width(&self) -> usize {
        self.cells
            .iter()
            .map(|c| c.chars().count())
            .chain([self.title.len()])
            .max()
            .unwrap_or(0)
    }

    fn empty(&self) -> bool {
        self.cells.iter().all(|c| c == "-")
    }
}

/// The text table, fitted to `fit` (or whole). RSS is the agent's process
/// tree's resident memory (while it runs); PORTS shows only when a session
/// holds ports.
pub fn render(sessions: &[SessionView], now: i64, fit: Option<Fit>) -> String {
    if sessions.is_empty() {
        return "No sessions in this repository. Start one with: owt new \"describe the task\""
            .into();
    }
    let sessions = nested(sessions);
    let mut columns = columns(&sessions, now, fit.map(|f| f.root));
    if let Some(fit) = fit {
        fit_columns(&mut columns, fit.width);
    }
    lines(&columns)
}

/// The sessions in board order with each conductor's children right
/// under it, their names marked `↳ ` (a child whose conductor is gone
/// keeps its place, unmarked).
fn nested(sessions: &[SessionView]) -> Vec<SessionView> {
    let listed = |name: &str| sessions.iter().any(|s| s.name == name);
    let is_child = |s: &SessionView| s.parent.as_deref().is_some_and(listed);
    let mut out = Vec::with_capacity(sessions.len());
    for s in sessions.iter().filter(|s| !is_child(s)) {
        out.push(s.clone());
        for child in sessions
            .iter()
            .filter(|c| is_child(c) && c.parent.as_deref() == Some(s.name.as_str()))
        {
            let mut child = child.clone();
            child.name = format!("↳ {}", child.name);
            out.push(child);
        }
    }
    out
}

/// Every column, in order.
fn columns(sessions: &[SessionView], now: i64, root: Option<&Path>) -> Vec<Column> {
    let cells = |f: &dyn Fn(&SessionView) -> String| sessions.iter().map(f).collect();
    let text = |s: &str| crate::printable::line(s).into_owned();
    let column = |title, drop_rank, cells| Column {
        title,
        cells,
        drop_rank,
        order: 0,
    };
    let mut all = vec![
        column("NAME", None, cells(&|s| s.name.clone())),
        column("STATUS", None, cells(&status_cell)),
        column("AGENT", Some(8), cells(&|s| text(&s.provider))),
        column("BRANCH", Some(9), cells(&|s| text(&s.branch))),
        column("AHEAD", Some(12), cells(&|s| s.ahead.to_string())),
        column("CHANGED", Some(11), cells(&|s| s.changed_files.to_string())),
        column("OVERLAPS", Some(10), cells(&|s| s.overlaps.to_string())),
        column("CHECKS", Some(5), cells(&checks_cell)),
        column("PR", Some(4), cells(&pr_cell)),
        column(
            "TOKENS",
            Some(2),
            cells(&|s| {
                s.usage
                    .as_ref()
                    .map_or_else(|| "-".to_string(), crate::cli::usage_figure)
            }),
        ),
        column(
            "RSS",
            Some(1),
            cells(&|s| {
                s.rss_bytes
                    .map_or_else(|| "-".to_string(), crate::config::human_bytes)
            }),
        ),
        column(
            "AGE",
            Some(3),
            cells(&|s| crate::cli::age(s.created_at, now)),
        ),
    ];
    if sessions.iter().any(|s| !s.ports.is_empty()) {
        all.push(column("PORTS", Some(6), cells(&|s| ports_text(&s.ports))));
    }
    let worktree = |s: &SessionView| match root {
        Some(root) => relative(Path::new(&s.worktree), root),
        None => text(&s.worktree),
    };
    all.push(column("WORKTREE", Some(7), cells(&worktree)));
    for (order, column) in all.iter_mut().enumerate() {
        column.order = order;
    }
    all
}

/// A status wider than this is shortened before any column is dropped.
const STATUS_FIRST_CUT: usize = 32;

/// Columns of a rank up to this go before a long status is shortened.
const LESSER_RANKS: u8 = 9;

/// Fits the table in `width`: empty columns go first, then the lesser
/// columns by rank (up to BRANCH); then a long status is shortened to
/// [`STATUS_FIRST_CUT`]; then the other columns go by rank; last, STATUS
/// and NAME are shortened further, with `…`.
fn fit_columns(columns: &mut Vec<Column>, width: usize) {
    let total = |columns: &[Column]| {
        columns.iter().map(Column::width).sum::<usize>() + 2 * columns.len().saturating_sub(1)
    };
    let mut dropped: Vec<Column> = Vec::new();
    let mut drop_next = |columns: &mut Vec<Column>, up_to: u8| {
        let next = columns
            .iter()
            .enumerate()
            .filter_map(|(i, c)| c.drop_rank.map(|rank| (!c.empty(), rank, i)))
            .filter(|(kept, rank, _)| !kept || *rank <= up_to)
            .min();
        next.map(|(_, _, i)| dropped.push(columns.remove(i)))
            .is_some()
    };
    while total(columns) > width && drop_next(columns, LESSER_RANKS) {}
    if total(columns) > width {
        let over = total(columns) - width;
        shorten(columns, "STATUS", over, STATUS_FIRST_CUT);
    }
    while total(columns) > width && drop_next(columns, u8::MAX) {}
    // Dropped in order, a column that still fits comes back (the most
    // needed first), where it was.
    while let Some(column) = dropped.pop() {
        if column.empty() {
            continue;
        }
        let at = columns
            .iter()
            .position(|c| c.order > column.order)
            .unwrap_or(columns.len());
        columns.insert(at, column);
        if total(columns) > width {
            columns.remove(at);
        }
    }
    for title in ["STATUS", "NAME"] {
        let over = total(columns).saturating_sub(width);
        shorten(columns, title, over, 8);
    }
}

/// Shortens the column `title` by `over` characters, to no less than
/// `floor` (nor its title).
fn shorten(columns: &mut [Column], title: &str, over: usize, floor: usize) {
    if over == 0 {
        return;
    }
    if let Some(column) = columns.iter_mut().find(|c| c.title == title) {
        let keep = column
            .width()
            .saturating_sub(over)
            .max(title.len())
            .max(floor);
        for cell in &mut column.cells {
            *cell = shortened(cell, keep);
        }
    }
}

/// `cell` in at most `keep` characters, ending in `…` when cut.
fn shortened(cell: &str, keep: usize) -> String {
    if cell.chars().count() <= keep {
        return cell.to_string();
    }
    let mut out: String = cell.chars().take(keep.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// `path` relative to `root` (`../app.worktrees/fix-login`).
fn relative(path: &Path, root: &Path) -> String {
    let path_parts: Vec<Component> = path.components().collect();
    let root_parts: Vec<Component> = root.components().collect();
    let common = path_parts
        .iter()
        .zip(&root_parts)
        .take_while(|(a, b)| a == b)
        .count();
    if common == 0 {
        return crate::printable::line(&path.to_string_lossy()).into_owned();
    }
    let mut rel = PathBuf::new();
    for _ in common..root_parts.len() {
        rel.push("..");
    }
    for part in &path_parts[common..] {
        rel.push(part);
    }
    if rel.as_os_str().is_empty() {
        rel.push(".");
    }
    crate::printable::line(&rel.to_string_lossy()).into_owned()
}

/// The columns as aligned lines (the last column unpadded).
fn lines(columns: &[Column]) -> String {
    let widths: Vec<usize> = columns.iter().map(Column::width).collect();
    let n_rows = columns.first().map_or(0, |c| c.cells.len());
    let line = |cell: &dyn Fn(&Column) -> &str| {
        let mut s = String::new();
        for (i, (column, w)) in columns.iter().zip(&widths).enumerate() {
            let text = cell(column);
            if i + 1 == columns.len() {
                s.push_str(text);
            } else {
                s.push_str(text);
                s.push_str(&" ".repeat(w.saturating_sub(text.chars().count()) + 2));
            }
        }
        s.trim_end().to_string()
    };
    let mut out = vec![line(&|c| c.title)];
    for row in 0..n_rows {
        out.push(line(&|c| c.cells[row].as_str()));
    }
    out.join("\n")
}

#[cfg(test)]
#[path = "list_table_tests.rs"]
mod tests;
