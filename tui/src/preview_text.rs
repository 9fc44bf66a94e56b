//! The preview tabs' text, pure: a screen, a diff, the guard's pairs and a
//! session's activity, as toned lines (what [`crate::view`] draws). The
//! facts come from the same `ops` calls as `owt peek`, `owt diff`,
//! `owt guard NAME` and `owt comments`.

use owt_core::printable;
use owt_protocol::guard::{GuardReport, LineRange};
use owt_protocol::host::ScreenView;
use owt_protocol::review::{CommentsOutput, DiffReport};
use owt_protocol::ChecksOutput;
use owt_protocol::SessionView;

use crate::app::{Anchor, Styled, TermColour, TermStyle, Tone};

fn plain(text: impl Into<String>) -> Styled {
    vec![(Tone::Plain, text.into())]
}

fn toned(tone: Tone, text: impl Into<String>) -> Styled {
    vec![(tone, text.into())]
}

/// The agent's screen as `owt peek` reads it, trailing blank lines cut;
/// with its colours when the host sent them (`formatted`).
pub fn screen_lines(screen: &ScreenView) -> Vec<Styled> {
    if let Some(formatted) = &screen.formatted {
        return coloured_lines(screen.rows, screen.cols, formatted.as_bytes());
    }
    let end = screen
        .lines
        .iter()
        .rposition(|l| !l.trim().is_empty())
        .map_or(0, |i| i + 1);
    screen.lines[..end]
        .iter()
        .map(|l| plain(printable::line(l).into_owned()))
        .collect()
}

/// The rows a terminal of `rows`×`cols` shows after `bytes`, each a run
/// of pieces of one look; trailing blank rows cut.
pub fn coloured_lines(rows: u16, cols: u16, bytes: &[u8]) -> Vec<Styled> {
    let mut parser = vt100::Parser::new(rows.max(1), cols.max(1), 0);
    parser.process(bytes);
    let screen = parser.screen();
    let mut lines: Vec<Styled> = (0..rows)
        .map(|row| coloured_row(screen, row, cols))
        .collect();
    while lines
        .last()
        .is_some_and(|l| l.iter().all(|(_, t)| t.trim().is_empty()))
    {
        lines.pop();
    }
    lines
}

fn coloured_row(screen: &vt100::Screen, row: u16, cols: u16) -> Styled {
    let mut pieces: Styled = Vec::new();
    for col in 0..cols {
        let Some(cell) = screen.cell(row, col) else {
            continue;
        };
        if cell.is_wide_continuation() {
            continue;
        }
        let look = Tone::Term(TermStyle {
            fg: colour(cell.fgcolor()),
            bg: colour(cell.bgcolor()),
            bold: cell.bold(),
            italic: cell.italic(),
            underline: cell.underline(),
            inverse: cell.inverse(),
        });
        let text = if cell.has_contents() {
            printable::line(cell.contents()).into_owned()
        } else {
            " ".to_string()
        };
        match pieces.last_mut() {
            Some((tone, piece)) if *tone == look => piece.push_str(&text),
            _ => pieces.push((look, text)),
        }
    }
    // Trailing blanks of the default look go.
    if let Some((Tone::Term(look), piece)) = pieces.last_mut() {
        if *look == TermStyle::default() {
            piece.truncate(piece.trim_end().len());
        }
    }
    pieces
}

fn colour(c: vt100::Color) -> TermColour {
    match c {
        vt100::Color::Default => TermColour::Default,
        vt100::Color::Idx(i) => TermColour::Indexed(i),
        vt100::Color::Rgb(r, g, b) => TermColour::Rgb(r, g, b),
    }
}

/// What ship would commit, per file, coloured; with each line's place in
/// the agent's file (for `c`).
pub fn diff_lines(report: &DiffReport) -> (Vec<Styled>, Vec<Anchor>) {
    let mut lines = Vec::new();
    let mut anchors = Vec::new();
    if report.files.is_empty() {
        lines.push(plain(format!(
            "{} has no changes against {}.",
            report.session, report.base
        )));
        anchors.push(None);
        return (lines, anchors);
    }
    lines.push(toned(
        Tone::Dim,
        format!(
            "{} file{} · +{} −{} against {}",
            report.files.len(),
            if report.files.len() == 1 { "" } else { "s" },
            report.additions,
            report.deletions,
            report.base
        ),
    ));
    anchors.push(None);
    for file in &report.files {
        let path = printable::line(&file.path).into_owned();
        lines.push(toned(
            Tone::Heading,
            format!("{} {path}", file.status.letter()),
        ));
        anchors.push(None);
        if file.binary {
            lines.push(toned(Tone::Dim, "  (binary)"));
            anchors.push(None);
        }
        for hunk in &file.hunks {
            lines.push(toned(
                Tone::Hunk,
                printable::line(&hunk.header).into_owned(),
            ));
            anchors.push(Some((file.path.clone(), hunk.new_start.max(1))));
            for line in &hunk.lines {
                let tone = match line.origin.as_str() {
                    "+" => Tone::Added,
                    "-" => Tone::Removed,
                    _ => Tone::Plain,
                };
                lines.push(toned(
                    tone,
                    format!("{}{}", line.origin, printable::line(&line.text)),
                ));
                let at = line
                    .new_line
                    .or(line.old_line.map(|_| hunk.new_start.max(1)));
                anchors.push(at.map(|n| (file.path.clone(), n)));
            }
        }
    }
    (lines, anchors)
}

fn ranges(ranges: &[LineRange]) -> String {
    ranges
        .iter()
        .map(|r| {
            if r.lines <= 1 {
                r.start.to_string()
            } else {
                format!("{}-{}", r.start, r.start + r.lines - 1)
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// The guard's verdicts for `name`: each other session (or you) it
/// overlaps, per path with both sides' line ranges; its base conflicts.
pub fn guard_lines(report: &GuardReport, name: &str) -> Vec<Styled> {
    let mut lines = Vec::new();
    for conflict in report.base_conflicts.iter().filter(|c| c.name == name) {
        lines.push(toned(
            Tone::Warn,
            format!("conflicts with {} (the base moved)", conflict.base),
        ));
        for path in &conflict.paths {
            lines.push(plain(format!(
                "  {}  lines {} here, {} on {}",
                printable::line(&path.path),
                ranges(&path.a_ranges),
                ranges(&path.b_ranges),
                conflict.base
            )));
        }
    }
    for pair in report.pairs.iter().filter(|p| p.a == name || p.b == name) {
        let mine_is_a = pair.a == name;
        let other = if mine_is_a { &pair.b } else { &pair.a };
        let tone = match pair.level.as_str() {
            "conflict" | "semantic" => Tone::Warn,
            "same-change" => Tone::Dim,
            _ => Tone::Plain,
        };
        lines.push(toned(tone, format!("{} with {other}", pair.level.as_str())));
        for path in &pair.paths {
            let (mine, theirs) = if mine_is_a {
                (&path.a_ranges, &path.b_ranges)
            } else {
                (&path.b_ranges, &path.a_ranges)
            };
            lines.push(plain(format!(
                "  {}  {}  lines {} here, {} in {other}",
                printable::line(&path.path),
                path.level.as_str(),
                ranges(mine),
                ranges(theirs)
            )));
        }
    }
    if lines.is_empty() {
        lines.push(plain(format!("{name} overlaps no other session.")));
    }
    lines
}

/// How many of the last lines of a failed checks run the Activity tab
/// shows (the whole log is named under them).
const CHECKS_LINES: usize = 12;

/// The permission request, checks (the end of a failed run's output,
/// from `owt checks NAME`), pull request and review comments.
pub fn activity_lines(
    view: &SessionView,
    comments: &CommentsOutput,
    checks_output: Option<&ChecksOutput>,
) -> Vec<Styled> {
    let mut lines = Vec::new();
    if let Some(permission) = &view.permission {
        lines.push(toned(Tone::Warn, format!("Asks: {}", permission.question)));
        for (i, option) in permission.options.iter().enumerate() {
            lines.push(plain(format!(
                "  {}. {} ({})",
                i + 1,
                option.name,
                option.kind
            )));
        }
        lines.push(toned(Tone::Dim, "  y approves, Y denies"));
    }
    if let Some(checks) = &view.checks {
        let tone = if checks.state == "failed" {
            Tone::Warn
        } else {
            Tone::Plain
        };
        let mut text = format!("Checks {} ({})", checks.state, checks.trigger);
        if checks.attempt > 1 {
            text.push_str(&format!(
                ", attempt {} of {}",
                checks.attempt, checks.max_attempts
            ));
        }
        lines.push(toned(tone, text));
        let said = checks_output.and_then(|c| c.reason.as_deref().or(c.excerpt.as_deref()));
        if let Some(said) = said.filter(|_| checks.state == "failed") {
            let all: Vec<&str> = said.lines().collect();
            for line in &all[all.len().saturating_sub(CHECKS_LINES)..] {
                lines.push(toned(Tone::Dim, format!("  │ {}", printable::line(line))));
            }
        }
        if let Some(log) = &checks.log {
            lines.push(toned(Tone::Dim, format!("  {log}")));
        }
    }
    if let Some(pr) = &view.pr {
        lines.push(plain(format!(
            "PR #{} {} · CI {} · review {}",
            pr.number, pr.state, pr.ci, pr.review
        )));
        if let Some(error) = &pr.error {
            lines.push(toned(Tone::Warn, format!("  {error}")));
        }
    }
    for comment in &comments.comments {
        lines.push(plain(format!(
            "Comment {} on {}:{} ({})",
            comment.id,
            printable::line(&comment.path),
            comment.start_line,
            comment.state
        )));
        for text in comment.text.lines() {
            lines.push(toned(Tone::Dim, format!("  {}", printable::line(text))));
        }
    }
    for action in view.actions.iter().filter(|a| !a.available) {
        if let Some(reason) = &action.reason {
            lines.push(toned(
                Tone::Dim,
                format!("{}: {reason}", action.action.as_str()),
            ));
        }
    }
    if lines.is_empty() {
        lines.push(plain("Nothing yet."));
    }
    lines
}
