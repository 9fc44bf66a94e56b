//! The `owt` command line (host-branch wiring of the session verbs only;
//! the full CLI lives on main and takes these verb modules as they are).

pub mod attach;
pub mod hook;
pub mod host;
pub mod peek;
pub mod send;
pub mod wait;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

#[derive(Debug, Parser)]
#[command(name = "owt", version, about = "Supervise parallel AI coding agents")]
struct Cli {
    /// Run as if started in DIR.
    #[arg(short = 'C', global = true)]
    dir: Option<PathBuf>,
    /// Machine-readable output.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, clap::Subcommand)]
enum Command {
    /// Attach this terminal to an agent (detach: Ctrl-\ d).
    Attach(attach::Args),
    /// Type text (then Enter) into agents.
    Send(send::Args),
    /// Print an agent's screen.
    Peek(peek::Args),
    /// Wait until an agent is done, needs input or exited.
    Wait(wait::Args),
    #[command(hide = true)]
    Hook(hook::Args),
    #[command(name = "__host", hide = true)]
    Host(host::Args),
}

/// Parses the command line and runs the verb.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let dir = cli.dir.as_deref();
    let result = match cli.command {
        Command::Attach(a) => attach::run(dir, cli.json, a),
        Command::Send(a) => send::run(dir, cli.json, a),
        Command::Peek(a) => peek::run(dir, cli.json, a),
        Command::Wait(a) => wait::run(dir, cli.json, a),
        Command::Hook(a) => hook::run(dir, cli.json, a),
        Command::Host(a) => host::run(dir, cli.json, a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("Error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
