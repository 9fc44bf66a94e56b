//! `owt pr NAME`: push the session's branch and open a pull request.

use std::path::Path;
use std::process::ExitCode;

use crate::ops;

#[derive(Debug, clap::Args)]
#[command(after_help = "\
The forge path of shipping (`owt ship` is the local one). Commits what the worktree has not \
committed (your commit hooks run), runs the [checks] (refusing red work unless --no-checks), \
pushes the branch to its remote (never forced) and opens a pull request through the forge's own \
CLI, which you have logged in already: `gh` for GitHub, `glab` for GitLab, told from the \
remote's URL ([pr] forge and [pr] cli to choose). Draft by default ([pr] draft). The title is \
the task's first line; the body the task, the commits and the session.

Run it again to push new commits to the same pull request. `owt watch` (or `owt lsp`, in an \
editor) then watches it: a failed CI run, new review comments and a conflict with the base are \
typed into the agent; a merged pull request is cleaned up per [pr] on_merged.")]
pub struct Args {
    /// The session.
    pub name: String,
    /// Open it ready for review (default: [pr] draft, true).
    #[arg(long, conflicts_with = "draft")]
    pub ready: bool,
    /// Open it as a draft.
    #[arg(long)]
    pub draft: bool,
    /// Title (default: the task's first line).
    #[arg(long)]
    pub title: Option<String>,
    /// Commit message for the uncommitted work (default: the task's first line).
    #[arg(short, long)]
    pub message: Option<String>,
    /// Push even if the [checks] fail (they are not run).
    #[arg(long)]
    pub no_checks: bool,
}

pub fn run(dir: Option<&Path>, out: &super::Out, args: Args) -> anyhow::Result<ExitCode> {
    let mut ctx = ops::Context::open(dir)?;
    let opts = ops::pr::PrOptions {
        no_checks: args.no_checks,
        draft: match (args.ready, args.draft) {
            (true, _) => Some(false),
            (_, true) => Some(true),
            _ => None,
        },
        title: args.title,
        message: args.message,
    };
    let result = ops::pr::open_pr(&mut ctx, &args.name, &opts, &mut |l| out.progress(l))?;
    out.emit(&result, || {
        let mut text = String::new();
        if result.checks_skipped {
            text.push_str("The checks were skipped (--no-checks).\n");
        }
        let pushed = &result.pushed[..result.pushed.len().min(10)];
        if result.created {
            text.push_str(&format!(
                "Pushed {} ({pushed}) to {} and opened {}pull request #{}: {}",
                result.branch,
                result.remote,
                if result.pr.draft { "draft " } else { "" },
                result.pr.number,
                result.pr.url
            ));
        } else {
            text.push_str(&format!(
                "Pushed {} ({pushed}) to {}; pull request #{} has it: {}",
                result.branch, result.remote, result.pr.number, result.pr.url
            ));
        }
        text
    })?;
    Ok(ExitCode::SUCCESS)
}
