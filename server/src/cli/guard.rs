//! `owt guard [NAME]`: Conflict Guard's report — every pair of participants
//! that touched the same code, with level, paths and line ranges —
//! answered by a running `owt lsp` of the repository when one answers,
//! computed here otherwise (or with `--cold`).

use std::path::Path;
use std::process::ExitCode;

use owt_protocol::guard::{BaseConflict, GuardPair, GuardPath, GuardReport, Level, LineRange};

use crate::ops;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only the pairs this session (or `you`) is part of.
    pub name: Option<String>,
    /// Compute the report here, even when a running `owt lsp` of the
    /// repository could answer it from its live guard (the same report,
    /// in milliseconds; `-v` says which answered).
    #[arg(long)]
    pub cold: bool,
}

/// `owt __commit-graph GIT_DIR COMMIT...`.
#[derive(Debug, clap::Args)]
pub struct GraphArgs {
    /// The repository's common git folder.
    pub git_dir: std::path::PathBuf,
    /// Commits the graph is to hold, with their history.
    #[arg(required = true, value_parser = parse_commit)]
    pub commits: Vec<String>,
}

fn parse_commit(text: &str) -> Result<String, String> {
    let hex = text.bytes().all(|b| b.is_ascii_hexdigit());
    if hex && (text.len() == 40 || text.len() == 64) {
        Ok(text.to_string())
    } else {
        Err(format!("not a full commit id: {text}"))
    }
}

/// `owt __commit-graph`: writes the graph at a low priority; quiet (what
/// goes wrong is logged).
pub fn write_graph(args: GraphArgs) -> anyhow::Result<ExitCode> {
    let home = ops::owt_home()?;
    if let Err(e) = owt_core::platform::process::lower_priority(10) {
        tracing::debug!("priority not lowered: {e}");
    }
    ops::guard::write_commit_graph(&home, &args.git_dir, &args.commits)?;
    Ok(ExitCode::SUCCESS)
}

pub fn run(dir: Option<&Path>, out: &super::Out, args: Args) -> anyhow::Result<ExitCode> {
    let ctx = ops::Context::open(dir)?;
    let (report, answered) = ops::guard::report_from(&ctx, args.name.as_deref(), args.cold)?;
    match answered {
        ops::guard::Answered::Warm(pid) => {
            tracing::debug!("guard report answered by the live guard of owt lsp (pid {pid})")
        }
        ops::guard::Answered::Cold(None) => tracing::debug!("guard report computed here (--cold)"),
        ops::guard::Answered::Cold(Some(why)) => {
            tracing::debug!("guard report computed here (no live owt lsp answered: {why})")
        }
    }
    out.emit(&report, || render(&report, args.name.as_deref()))?;
    Ok(ExitCode::SUCCESS)
}

fn lines(ranges: &[LineRange]) -> String {
    let parts: Vec<String> = ranges
        .iter()
        .map(|r| match r.lines {
            0 => format!("before {}", r.start),
            1 => r.start.to_string(),
            n => format!("{}-{}", r.start, r.start + n - 1),
        })
        .collect();
    if parts.is_empty() {
        "whole file".into()
    } else {
        format!("lines {}", parts.join(", "))
    }
}

/// What one side did to a path: its lines, or what happened to the file.
fn side_text(change: Option<&str>, ranges: &[LineRange], symbols: &[String]) -> String {
    let what = match change {
        Some("added") => "new file".to_string(),
        Some("deleted") => "deleted".to_string(),
        Some("renamed away") => "renamed it away".to_string(),
        Some("binary") => "binary".to_string(),
        Some("mode") if ranges.is_empty() => "file mode".to_string(),
        Some("type") => "file type".to_string(),
        _ => lines(ranges),
    };
    if symbols.is_empty() {
        what
    } else {
        format!("{what} (in {})", name(&symbols.join(", ")))
    }
}

/// Names and code that came from the worktrees (paths, symbols), escaped.
fn name(text: &str) -> std::borrow::Cow<'_, str> {
    crate::printable::name(text)
}

fn path_line(path: &GuardPath, a: &str, b: &str) -> String {
    let what = match path.level {
        Level::BaseConflict | Level::Conflict => "conflict",
        Level::Semantic => "uses a changed signature",
        Level::HunkOverlap => "lines meet",
        Level::Overlap => "same file, other lines",
        Level::SameChange => "same change",
    };
    let detail = path
        .detail
        .as_ref()
        .map(|d| format!(", {}", name(d)))
        .unwrap_or_default();
    format!(
        "  {} ({what}{detail}): {a}: {}; {b}: {}.\n",
        name(&path.path),
        side_text(path.a_change.as_deref(), &path.a_ranges, &path.a_symbols),
        side_text(path.b_change.as_deref(), &path.b_ranges, &path.b_symbols),
    )
}

fn sentence(pair: &GuardPair) -> String {
    let mut out = String::new();
    let verb = match pair.level {
        Level::Conflict | Level::BaseConflict => "would conflict",
        Level::Semantic => "merge cleanly, but one uses a signature the other changed",
        Level::HunkOverlap => "changed nearby lines",
        Level::Overlap => "changed the same files",
        Level::SameChange => "made the same changes",
    };
    out.push_str(&format!("{} and {} {}:\n", pair.a, pair.b, verb));
    for path in &pair.paths {
        out.push_str(&path_line(path, &pair.a, &pair.b));
    }
    for note in &pair.semantic {
        let inside = note
            .used_inside
            .as_ref()
            .map(|s| format!(" in {}", name(s)))
            .unwrap_or_default();
        out.push_str(&format!(
            "  {} changed {} ({}, {}): `{}` -> `{}`; {} uses it{inside} at {} of {}.\n",
            note.changed_by,
            name(&note.symbol),
            name(&note.path),
            lines(std::slice::from_ref(&note.lines)),
            name(&note.before),
            name(&note.after),
            note.used_by,
            lines(&note.used_at),
            name(&note.used_in),
        ));
    }
    if let [[first, second]] = pair.conflicting_orders.as_slice() {
        out.push_str(&format!(
            "  Only in this order: {second} merged after {first} ships.\n"
        ));
    }
    if !pair.not_merged.is_empty() {
        out.push_str(&format!(
            "  Not merged with each other while {} conflicts with its base.\n",
            pair.not_merged.join(" and ")
        ));
    }
    if pair.level == Level::Conflict && pair.paths.iter().all(|p| p.level != Level::Conflict) {
        out.push_str(
            "  A merge of the two reports a conflict (a file moved by a folder rename).\n",
        );
    }
    out
}

fn base_sentence(conflict: &BaseConflict) -> String {
    let mut out = format!(
        "{} no longer merges into {} ({} moved on):\n",
        conflict.name, conflict.base, conflict.base
    );
    for path in &conflict.paths {
        out.push_str(&path_line(path, &conflict.name, &conflict.base));
    }
    out
}

/// The text report.
pub fn render(report: &GuardReport, name: Option<&str>) -> String {
    let n = report.participants.len();
    let base: Vec<String> = report
        .base_conflicts
        .iter()
        .filter(|c| name.is_none_or(|name| c.name == name))
        .map(base_sentence)
        .collect();
    if report.pairs.is_empty() && !base.is_empty() {
        return base.join("\n");
    }
    if report.pairs.is_empty() {
        return match name {
            Some(name) => format!("{name} overlaps nobody."),
            None => format!(
                "No overlaps among {n} participant{}.",
                if n == 1 { "" } else { "s" }
            ),
        };
    }
    base.into_iter()
        .chain(report.pairs.iter().map(sentence))
        .collect::<Vec<_>>()
        .join("\n")
}
