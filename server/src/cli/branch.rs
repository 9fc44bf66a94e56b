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
    /// What the agent should do.
    pub task: String,
    #[arg(long)]
    pub name: Option<String>,
    #[arg(long)]
    pub branch: Option<String>,
    #[arg(long)]
    pub base: Option<String>,
    #[arg(long, value_name = "TOOL")]
    pub ai_tool: Option<String>,
    /// Start the agent now, even beyond [agent] max_running or min_free_memory.
    #[arg(long)]
    pub now: bool,
}

pub fn run(dir: Option<&Path>, out: &super::Out, args: Args) -> anyhow::Result<ExitCode> {
    super::new::run(
        dir,
        out,
        super::new::Args {
            task: args.task,
            name: args.name,
            branch: args.branch,
            base: args.base,
            ai_tool: args.ai_tool,
            headless: false,
            plan_mode: false,
            in_place: true,
            template: None,
            raw: false,
            acp: false,
            now: args.now,
            on: None,
        },
    )
}
