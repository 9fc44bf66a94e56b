//! `owt delete NAME` (`rm`).

use std::path::Path;
use std::process::ExitCode;

use crate::ops;

#[derive(Debug, clap::Args)]
#[command(after_help = "\
A worktree with uncommitted or untracked work is kept unless you pass --force. \
Commits that are not in the base branch are kept under refs/owt/backup/NAME; \
restore them with: git branch NAME refs/owt/backup/NAME")]
pub struct Args {
    /// The session to delete.
    pub name: String,
    /// Delete even if the worktree has uncommitted or untracked work.
    #[arg(long, short)]
    pub force: bool,
}

pub fn run(dir: Option<&Path>, out: &super::Out, args: Args) -> anyhow::Result<ExitCode> {
    let mut ctx = ops::Context::open(dir)?;
    let result =
        ops::delete::delete_session(&mut ctx, &args.name, args.force, "deleted", &mut |line| {
            out.progress(line)
        })?;
    out.emit(&result, || {
        let mut text = format!("Deleted session {}.", result.name);
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
