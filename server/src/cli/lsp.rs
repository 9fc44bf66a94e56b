//! `owt lsp`: the LSP sidecar on stdio.

use std::process::ExitCode;

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Editors start this themselves (Neovim: editor-plugins/neovim, Helix: `owt editor helix`, VS Code: editor-plugins/vscode). It speaks LSP on stdin/stdout and logs to stderr."
)]
pub struct Args {
    /// Accepted for editors that pass it; stdio is the only transport.
    #[arg(long, hide = true)]
    pub stdio: bool,
}

pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    crate::lsp::run()?;
    Ok(ExitCode::SUCCESS)
}
