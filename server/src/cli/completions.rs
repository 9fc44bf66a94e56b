//! `owt completions SHELL`.

use std::process::ExitCode;

use clap::CommandFactory;

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Example: owt completions bash > ~/.local/share/bash-completion/completions/owt"
)]
pub struct Args {
    /// bash, zsh, fish, elvish or powershell.
    pub shell: clap_complete::Shell,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let mut cmd = super::Cli::command();
    clap_complete::generate(args.shell, &mut cmd, "owt", &mut std::io::stdout());
    Ok(ExitCode::SUCCESS)
}
