//! `owt guard [NAME]`: Conflict Guard's report — every pair of participants
//! that touched the same code, with level, paths and line ranges.

use std::path::Path;
use std::process::ExitCode;

use owt_protocol::guard::{GuardPair, GuardReport, Level, LineRange};

use crate::ops;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only the pairs this session (or `you`) is part of.
    pub name: Option<String>,
}

pub fn run(dir: Option<&Path>, out: &super::Out, args: Args) -> anyhow::Result<ExitCode> {
    let ctx = ops::Context::open(dir)?;
    let report = ops::guard::report(&ctx, args.name.as_deref())?;
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

fn sentence(pair: &GuardPair) -> String {
    let mut out = String::new();
    let verb = match pair.level {
        Level::Conflict => "would conflict",
        Level::HunkOverlap => "changed nearby lines",
        Level::Overlap => "changed the same files",
    };
    out.push_str(&format!("{} and {} {}:\n", pair.a, pair.b, verb));
    for path in &pair.paths {
        let what = match path.level {
            Level::Conflict => "conflict",
            Level::HunkOverlap => "lines meet",
            Level::Overlap => "same file, other lines",
        };
        let detail = path
            .detail
            .as_ref()
            .map(|d| format!(", {d}"))
            .unwrap_or_default();
        out.push_str(&format!(
            "  {} ({what}{detail}): {}: {}; {}: {}.\n",
            path.path,
            pair.a,
            lines(&path.a_ranges),
            pair.b,
            lines(&path.b_ranges)
        ));
    }
    if pair.level == Level::Conflict && pair.paths.iter().all(|p| p.level != Level::Conflict) {
        out.push_str(
            "  A merge of the two reports a conflict (a file moved by a folder rename).\n",
        );
    }
    out
}

/// The text report.
pub fn render(report: &GuardReport, name: Option<&str>) -> String {
    let n = report.participants.len();
    if report.pairs.is_empty() {
        return match name {
            Some(name) => format!("{name} overlaps nobody."),
            None => format!(
                "No overlaps among {n} participant{}.",
                if n == 1 { "" } else { "s" }
            ),
        };
    }
    report
        .pairs
        .iter()
        .map(sentence)
        .collect::<Vec<_>>()
        .join("\n")
}
