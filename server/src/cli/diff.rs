//! `owt diff NAME [PATH] [--stat]`: the agent's whole working state
//! against its merge base, as `git diff` prints it (coloured and paged on a
//! terminal), or the `DiffReport` with `--json`.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::process::{ExitCode, Stdio};

use owt_protocol::review::{DiffFile, DiffReport, FileStatus};

use crate::ops;

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Shows everything the agent has — commits on its branch, staged, unstaged and untracked files \
(not ignored ones, nor the files owt put in its worktree) — against the commit its branch \
started from on the base: exactly what `owt ship` would commit and merge. On a terminal the \
diff is coloured and paged ($GIT_PAGER, $PAGER or `less -FRX`); NO_COLOR turns colour off. \
Piped or redirected, it is the same text, as `git diff` prints it, without colour or pager. \
For scripts and tools, `--json` prints the DiffReport: per file, status, modes, blob ids \
(`git cat-file blob ID`), counts and hunks with both sides' line numbers, and the `snapshot` \
`owt review NAME --mark --snapshot` takes.")]
pub struct Args {
    /// The session.
    pub name: String,
    /// Only this file (relative to the worktree's root).
    pub path: Option<String>,
    /// Only the changed files with their counts of added and removed lines.
    #[arg(long)]
    pub stat: bool,
}

pub fn run(dir: Option<&Path>, out: &super::Out, args: Args) -> anyhow::Result<ExitCode> {
    let ctx = ops::Context::open(dir)?;
    let mut report = ops::review::diff(&ctx, &args.name, args.path.as_deref())?;
    if args.stat {
        for file in &mut report.files {
            file.hunks.clear();
        }
    }
    if out.json {
        out.emit(&report, String::new)?;
        return Ok(ExitCode::SUCCESS);
    }
    let terminal = std::io::stdout().is_terminal();
    let colour = terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let text = if report.files.is_empty() {
        match &args.path {
            Some(path) => format!("{} did not change {path}.\n", report.session),
            None => format!(
                "{} has no changes against {}.\n",
                report.session, report.base
            ),
        }
    } else if args.stat {
        stat(&report)
    } else {
        render(&report, colour)
    };
    if terminal {
        page(&text)?;
    } else {
        out.emit(&report, || text)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes `text` through the pager (stdout when none can run).
fn page(text: &str) -> anyhow::Result<()> {
    let pager = std::env::var("GIT_PAGER")
        .ok()
        .or_else(|| std::env::var("PAGER").ok())
        .filter(|p| !p.trim().is_empty())
        .unwrap_or_else(|| "less".into());
    let words = shlex::split(&pager).unwrap_or_else(|| vec![pager.clone()]);
    if let Some((program, rest)) = words.split_first().filter(|_| pager != "cat") {
        let mut cmd = std::process::Command::new(program);
        cmd.args(rest).stdin(Stdio::piped());
        if std::env::var_os("LESS").is_none() {
            cmd.env("LESS", "FRX");
        }
        if let Ok(mut child) = cmd.spawn() {
            if let Some(mut stdin) = child.stdin.take() {
                // The pager quit early (`q`): not an error.
                let _ = stdin.write_all(text.as_bytes());
            }
            child.wait()?;
            return Ok(());
        }
    }
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(text.as_bytes())?;
    Ok(())
}

/// `git diff --stat`'s form.
pub fn stat(report: &DiffReport) -> String {
    let width = report
        .files
        .iter()
        .map(|f| stat_name(f).chars().count())
        .max()
        .unwrap_or(0);
    let most = report
        .files
        .iter()
        .map(|f| f.additions + f.deletions)
        .max()
        .unwrap_or(0)
        .max(1);
    let digits = most.to_string().len();
    let mut out = String::new();
    for f in &report.files {
        let name = stat_name(f);
        let pad = width - name.chars().count();
        if f.binary {
            out.push_str(&format!(
                " {name}{} | {:>digits$}\n",
                " ".repeat(pad),
                "Bin"
            ));
            continue;
        }
        let total = f.additions + f.deletions;
        // At most 50 marks, in proportion.
        let scale = |n: u32| {
            if most > 50 {
                (n * 50).div_ceil(most)
            } else {
                n
            }
        };
        let line = format!(
            " {name}{} | {total:>digits$} {}{}",
            " ".repeat(pad),
            "+".repeat(scale(f.additions) as usize),
            "-".repeat(scale(f.deletions) as usize)
        );
        out.push_str(line.trim_end());
        out.push('\n');
    }
    let n = report.files.len();
    out.push_str(&format!(
        " {n} file{} changed, {} insertion{}(+), {} deletion{}(-)\n",
        if n == 1 { "" } else { "s" },
        report.additions,
        if report.additions == 1 { "" } else { "s" },
        report.deletions,
        if report.deletions == 1 { "" } else { "s" },
    ));
    out
}

fn stat_name(f: &DiffFile) -> String {
    let path = crate::printable::name(&f.path);
    match &f.old_path {
        Some(old) => format!("{} => {path}", crate::printable::name(old)),
        None => path.into_owned(),
    }
}

fn short(id: Option<&str>) -> &str {
    id.map_or("0000000", |id| &id[..7.min(id.len())])
}

/// The unified diff, as `git diff` prints it.
pub fn render(report: &DiffReport, colour: bool) -> String {
    let (bold, cyan, red, green, reset) = if colour {
        ("\x1b[1m", "\x1b[36m", "\x1b[31m", "\x1b[32m", "\x1b[m")
    } else {
        ("", "", "", "", "")
    };
    let mut out = String::new();
    for f in &report.files {
        let head = file_header(f);
        for line in head.lines() {
            out.push_str(&format!("{bold}{}{reset}\n", crate::printable::line(line)));
        }
        for h in &f.hunks {
            out.push_str(&format!(
                "{cyan}{}{reset}\n",
                crate::printable::line(&h.header)
            ));
            for l in &h.lines {
                let paint = match l.origin.as_str() {
                    "+" => green,
                    "-" => red,
                    _ => "",
                };
                let end = if paint.is_empty() { "" } else { reset };
                out.push_str(&format!(
                    "{paint}{}{}{end}\n",
                    l.origin,
                    crate::printable::text(&l.text)
                ));
                if l.no_newline {
                    out.push_str("\\ No newline at end of file\n");
                }
            }
        }
    }
    out
}

/// The `diff --git` header of a file, as git writes it: modes, rename,
/// blob ids, and the `---`/`+++` (or binary) lines.
fn file_header(f: &DiffFile) -> String {
    let old = f.old_path.as_deref().unwrap_or(&f.path);
    let mut head = format!("diff --git a/{old} b/{}\n", f.path);
    match f.status {
        FileStatus::Added => {
            head.push_str(&format!(
                "new file mode {}\n",
                f.new_mode.as_deref().unwrap_or("100644")
            ));
        }
        FileStatus::Deleted => {
            head.push_str(&format!(
                "deleted file mode {}\n",
                f.old_mode.as_deref().unwrap_or("100644")
            ));
        }
        _ => {
            if f.old_mode != f.new_mode {
                head.push_str(&format!(
                    "old mode {}\nnew mode {}\n",
                    f.old_mode.as_deref().unwrap_or("-"),
                    f.new_mode.as_deref().unwrap_or("-")
                ));
            }
            if f.status == FileStatus::Renamed {
                head.push_str(&format!("rename from {old}\nrename to {}\n", f.path));
            }
        }
    }
    if f.base_blob != f.agent_blob {
        let mode = match (&f.old_mode, &f.new_mode) {
            (Some(a), Some(b)) if a == b => format!(" {a}"),
            _ => String::new(),
        };
        head.push_str(&format!(
            "index {}..{}{mode}\n",
            short(f.base_blob.as_deref()),
            short(f.agent_blob.as_deref())
        ));
    }
    let from = match f.status {
        FileStatus::Added => "/dev/null".to_string(),
        _ => format!("a/{old}"),
    };
    let to = match f.status {
        FileStatus::Deleted => "/dev/null".to_string(),
        _ => format!("b/{}", f.path),
    };
    if f.binary {
        head.push_str(&format!("Binary files {from} and {to} differ\n"));
    } else if !f.hunks.is_empty() {
        head.push_str(&format!("--- {from}\n+++ {to}\n"));
    }
    head
}
