//! `owt mcp`: the MCP peer tools on stdio, started by an agent from its MCP
//! configuration (see `docs/mcp.md`).

use std::path::Path;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Agents start this themselves (owt new registers it for Claude Code in the worktree's .mcp.json). It speaks MCP (JSON-RPC, one message per line) on stdin/stdout and logs to stderr. Tools: list_peers, send_message, check_messages, set_summary, get_peer_files, report_status."
)]
pub struct Args {
    /// The calling session's short id (or name); set by the session host in
    /// the agent's environment. Without it the caller is the human.
    #[arg(long, env = "OWT_SESSION", hide_env_values = true, value_name = "ID")]
    pub session: Option<String>,
}

pub fn run(dir: Option<&Path>, _out: &super::Out, args: Args) -> anyhow::Result<ExitCode> {
    crate::mcp::serve_stdio(dir, args.session.as_deref())?;
    Ok(ExitCode::SUCCESS)
}
