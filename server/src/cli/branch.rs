//! `owt branch "task"`: a session on a new branch in your own checkout
//! (`owt new --in-place`).

use std::path::Path;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Your checkout is switched to the new branch (uncommitted changes come along, as with \
`git switch`) and the agent works in it. `owt delete` switches it back to the base branch; \
`owt ship` commits, merges and switches back. One branch session per checkout.")]
pub struct Args {
    #[command(flatten)]
    pub session: super::new::SessionArgs,
}

pub fn run(dir: Option<&Path>, out: &super::Out, args: Args) -> anyhow::Result<ExitCode> {
    super::new::run(
        dir,
        out,
        super::new::Args {
            session: args.session,
            headless: false,
            plan_mode: false,
            in_place: true,
            template: None,
            raw: false,
            acp: false,
            on: None,
            conductor: false,
        },
    )
}
