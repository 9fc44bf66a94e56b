//! `owt acp`: an Agent Client Protocol agent on stdio (see docs/acp.md).

use std::path::Path;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Editors start this themselves. In Zed's settings.json:
  \"agent_servers\": {\"owt\": {\"command\": \"owt\", \"args\": [\"acp\"]}}
Each new conversation becomes an owt session with its own worktree and branch,
running the agent's ACP server (--ai-tool, else [agent] default_tool, else the
first installed of claude, codex, opencode, gemini). Its permission requests
show in the editor; `owt list`, `owt approve`, `owt ship` work on it as on any
session. It speaks ACP (JSON-RPC, one message per line) on stdin/stdout and
logs to stderr.")]
pub struct Args {
    /// The agent of new sessions.
    #[arg(long, value_name = "TOOL")]
    pub ai_tool: Option<String>,
}

pub fn run(dir: Option<&Path>, args: Args) -> anyhow::Result<ExitCode> {
    let options = crate::acp_agent::Options {
        dir: dir.map(Path::to_path_buf),
        ai_tool: args.ai_tool,
    };
    crate::acp_agent::serve(
        options,
        std::io::stdin().lock(),
        Box::new(std::io::stdout()),
    );
    Ok(ExitCode::SUCCESS)
}
