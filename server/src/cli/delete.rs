//! `owt delete NAME` (`rm`).

use std::path::Path;
use std::process::ExitCode;

use crate::ops;

#[derive(Debug, clap::Args)]
#[command(after_help = "\
A worktree with uncommitted or untracked work, or an agent that is working or waits on a \
dialog, is kept unless you pass --force. \
Commits that are not in the base branch are kept under refs/owt/backup/NAME; \
restore them with: git branch NAME refs/owt/backup/NAME. \
Files git does not keep (ignored files such as .env, build output, logs; with \
--force also the uncommitted ones) are moved to $OWT_HOME/trash/REPO/NAME-TIME/, \
which `owt doctor` lists and `owt db purge` empties by age. Only owt's own files, \
files it copied that are unchanged, and caches you list in [worktree] disposable \
go without a copy.")]
pub struct Args {
    /// The session to delete.
    pub name: String,
    /// Delete even if the worktree has uncommitted or untracked work (a copy goes to the trash), or the agent is working or waits on a dialog (it is stopped).
    #[arg(long, short)]
    pub force: bool,
}

pub fn run(dir: Option<&Path>, out: &super::Out, args: Args) -> anyhow::Result<ExitCode> {
    let mut ctx = ops::Context::open(dir)?;
    let result = ops::delete::delete_checked(&mut ctx, &args.name, args.force, &mut |line| {
        out.progress(line)
    })?;
    for warning in &result.warnings {
        out.warn(warning);
    }
    out.emit(&result, || {
        let mut text = format!("Deleted session {}.", result.name);
        text.push_str(&describe_leftovers(&result));
        if let Some(backup) = &result.backup_ref {
            text.push_str(&format!(
                "\nIts unmerged commits are kept at {backup}; restore them with: git branch {} {backup}",
                result.name
            ));
        }
        text
    })?;
    Ok(ExitCode::SUCCESS)
}

/// What happened to the files git does not keep, as sentences (empty when
/// there were none).
pub fn describe_leftovers(result: &owt_protocol::DeleteOutput) -> String {
    let list = |paths: &[String]| {
        let mut shown: Vec<String> = paths
            .iter()
            .take(8)
            .map(|p| crate::printable::name(p).into_owned())
            .collect();
        if paths.len() > shown.len() {
            shown.push(format!("and {} more", paths.len() - shown.len()));
        }
        shown.join(", ")
    };
    let mut text = String::new();
    if !result.discarded.is_empty() {
        text.push_str(&format!(
            "\nDiscarded uncommitted work (--force): {}.",
            list(&result.discarded)
        ));
    }
    if let Some(trash) = &result.trash {
        text.push_str(&format!(
            "\nMoved {} to the trash: {trash}\n  ({}); copy back what you need, `owt db purge` empties the trash by age.",
            ops::delete::trashed_kinds(&result.trashed, &result.discarded),
            list(&result.trashed)
        ));
    }
    if !result.dropped.is_empty() {
        text.push_str(&format!(
            "\nRemoved without a copy (owt's own files, unchanged copies, [worktree] disposable): {}.",
            list(&result.dropped)
        ));
    }
    text
}
