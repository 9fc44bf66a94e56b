//! `owt trust [--show | --revoke]`.

use std::path::Path;
use std::process::ExitCode;

use owt_protocol::{TrustFile, TrustOutput};

use crate::ops::{self, trust};
use crate::printable;

#[derive(Debug, clap::Args)]
#[command(after_help = "\
A repository's own files can make owt run programs: `.owt.toml` (or the seed's \
`.worktreerc`) through [tools.*], [agent] default_tool and env, \
[environment] auto_install_deps and a [worktree] base_directory outside the \
repository's parent folder, and `.owt/setup.sh`. owt ignores those (and says \
so) until you trust the files as they are now; a changed file needs trust \
again. A repository may never redefine a built-in agent (claude, codex, …).

Examples:
  owt trust --show     what the files would make owt run, and their state
  owt trust            trust them as they are now
  owt trust --revoke   stop trusting them")]
pub struct Args {
    /// Print what the repository's files would make owt run, without trusting them.
    #[arg(long, conflicts_with = "revoke")]
    pub show: bool,
    /// Stop trusting the repository's files.
    #[arg(long)]
    pub revoke: bool,
}

pub fn run(dir: Option<&Path>, out: &super::Out, args: Args) -> anyhow::Result<ExitCode> {
    let ctx = ops::Context::open(dir)?;
    let report = if args.show {
        trust::report(&ctx, "show")?
    } else if args.revoke {
        trust::revoke(&ctx)?
    } else {
        trust::trust(&ctx)?
    };
    out.emit(&report, || render(&report))?;
    Ok(ExitCode::SUCCESS)
}

fn state_text(state: &str) -> &str {
    match state {
        "trusted" => "trusted",
        "changed" => "NOT trusted: changed since you trusted it",
        "untrusted" => "NOT trusted",
        _ => "needs no trust",
    }
}

/// The report as sentences.
pub fn render(report: &TrustOutput) -> String {
    let needing: Vec<_> = report
        .files
        .iter()
        .filter(|f| f.state != "not-needed")
        .collect();
    let mut lines = Vec::new();
    match report.action.as_str() {
        "trusted" if needing.is_empty() => lines.push(format!(
            "Nothing to trust in {}: its files set nothing that runs programs or writes outside the repository.",
            report.repository
        )),
        "trusted" => lines.push(format!(
            "Trusted {} as {} now; owt uses {} until {} change{}.",
            needing.iter().map(|f| f.path.as_str()).collect::<Vec<_>>().join(" and "),
            if needing.len() == 1 { "it is" } else { "they are" },
            if needing.len() == 1 { "it" } else { "them" },
            if needing.len() == 1 { "it" } else { "they" },
            if needing.len() == 1 { "s" } else { "" },
        )),
        "revoked" => lines.push(format!(
            "owt no longer trusts the files of {}.",
            report.repository
        )),
        _ if report.files.is_empty() => lines.push(format!(
            "{} has no .owt.toml, .worktreerc or .owt/setup.sh: nothing of it runs.",
            report.repository
        )),
        _ => {}
    }
    if report.action != "show" {
        return lines.join("\n");
    }
    for file in &report.files {
        file_lines(file, &mut lines);
    }
    if report
        .files
        .iter()
        .any(|f| f.state == "untrusted" || f.state == "changed")
    {
        lines.push("Trust these files as they are now with: owt trust".into());
    }
    lines.join("\n")
}

/// A file of `owt trust` (show): its state, the keys and programs that
/// apply only when trusted, its setup script, what is never applied.
fn file_lines(file: &TrustFile, lines: &mut Vec<String>) {
    lines.push(format!(
        "{} ({}, sha256 {})",
        file.path,
        state_text(&file.state),
        &file.sha256[..16]
    ));
    if !file.keys.is_empty() {
        lines.push("  keys that apply only when trusted:".into());
        for key in &file.keys {
            lines.push(format!(
                "    {} = {}",
                printable::line(&key.key),
                printable::line(&key.value)
            ));
        }
    }
    if !file.runs.is_empty() {
        lines.push("  owt would run:".into());
        for run in &file.runs {
            lines.push(format!("    {}", printable::line(run)));
        }
    }
    if let Some(script) = &file.script {
        for script_line in printable::text(script).lines() {
            lines.push(format!("    | {script_line}"));
        }
    }
    if !file.refused.is_empty() {
        lines.push(format!(
            "  never applied (a repository may not redefine a built-in agent): {}",
            file.refused
                .iter()
                .map(|k| printable::line(k).into_owned())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
}
