//! `owt review NAME [--mark [PATH…]]`: where the agent's changes are, one
//! `file:line` location per hunk (for editors without a diff view: Helix's
//! goto-file and pickers read them), which files are reviewed, and the
//! open comments; `--mark` marks files reviewed as they are now.

use std::path::Path;
use std::process::ExitCode;

use owt_protocol::review::{DiffFile, FileStatus};

use crate::ops;

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Each hunk is printed as WORKTREE/PATH:LINE (the first line the agent wrote there, or the line \
after what it removed), so an editor opens the agent's copy at the change. A file is reviewed \
once marked with --mark and until the agent changes it again; `owt ship` warns about files \
that are not ([ship] require_review = true makes it refuse).")]
pub struct Args {
    /// The session.
    pub name: String,
    /// Mark these changed files (every changed file when none is given) reviewed as they are now.
    #[arg(long, num_args = 0.., value_name = "PATH")]
    pub mark: Option<Vec<String>>,
    /// With --mark: mark the files as they were in the diff you read, named by its `snapshot`
    /// (`owt --json diff NAME`); a file the agent changed since stays not reviewed.
    #[arg(long, value_name = "TREE", requires = "mark")]
    pub snapshot: Option<String>,
}

pub fn run(dir: Option<&Path>, out: &super::Out, args: Args) -> anyhow::Result<ExitCode> {
    let ctx = ops::Context::open(dir)?;
    if let Some(paths) = &args.mark {
        let state = ops::review::mark_reviewed(&ctx, &args.name, paths, args.snapshot.as_deref())?;
        out.emit(&state, || {
            let n = state.reviewed.len();
            let mut text = format!(
                "{n} file{} of {} reviewed.",
                if n == 1 { "" } else { "s" },
                state.session
            );
            if !state.unreviewed.is_empty() {
                text.push_str(&format!(" Not reviewed: {}.", state.unreviewed.join(", ")));
            }
            text
        })?;
        return Ok(ExitCode::SUCCESS);
    }
    let report = ops::review::diff(&ctx, &args.name, None)?;
    let comments = ops::review::comments(&ctx, &args.name, false)?;
    if out.json {
        out.emit(&report, String::new)?;
        return Ok(ExitCode::SUCCESS);
    }
    let root = Path::new(&report.worktree);
    let mut text = String::new();
    if report.files.is_empty() {
        text.push_str(&format!(
            "{} has no changes against {}.\n",
            report.session, report.base
        ));
    }
    for f in &report.files {
        file_locations(root, f, &mut text);
    }
    for c in &comments.comments {
        text.push_str(&format!(
            "{}:{}: comment {}: {}\n",
            crate::printable::path(&root.join(&c.path)),
            c.start_line,
            c.id,
            crate::printable::line(&c.text)
        ));
    }
    out.emit(&report, || text)?;
    Ok(ExitCode::SUCCESS)
}

/// A file's `file:line` locations, one per hunk (the first one saying what
/// changed, how much and whether it is reviewed).
fn file_locations(root: &Path, f: &DiffFile, text: &mut String) {
    let mark = if f.reviewed {
        "reviewed"
    } else {
        "not reviewed"
    };
    let what = match f.status {
        FileStatus::Added => "added".to_string(),
        FileStatus::Deleted => "deleted".to_string(),
        FileStatus::Renamed => {
            format!("renamed from {}", f.old_path.as_deref().unwrap_or_default())
        }
        FileStatus::ModeChanged => "mode changed".to_string(),
        FileStatus::TypeChanged => "type changed".to_string(),
        FileStatus::Modified => "modified".to_string(),
    };
    let counts = if f.binary {
        "binary".to_string()
    } else {
        format!("+{} -{}", f.additions, f.deletions)
    };
    let file = root.join(&f.path);
    if f.hunks.is_empty() || f.status == FileStatus::Deleted {
        text.push_str(&format!(
            "{}:1: {what}, {counts}, {mark}\n",
            crate::printable::path(&file)
        ));
        return;
    }
    for (i, h) in f.hunks.iter().enumerate() {
        // The first line the agent wrote, or the line after what it
        // removed.
        let mut line = h.new_start.max(1);
        for l in &h.lines {
            match (l.origin.as_str(), l.new_line) {
                (" ", Some(n)) => line = n + 1,
                ("+", Some(n)) => {
                    line = n;
                    break;
                }
                ("-", _) => break,
                _ => {}
            }
        }
        let added = h.lines.iter().filter(|l| l.origin == "+").count();
        let removed = h.lines.iter().filter(|l| l.origin == "-").count();
        let head = if i == 0 {
            format!(" ({what}, {counts}, {mark})")
        } else {
            String::new()
        };
        text.push_str(&format!(
            "{}:{line}: +{added} -{removed}{head}\n",
            crate::printable::path(&file)
        ));
    }
}
