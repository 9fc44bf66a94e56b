//! `owt config show|validate`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use owt_protocol::ConfigShow;

use crate::{config, git::Repo};

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Print the effective configuration and the files it came from.
    Show,
    /// Check the configuration files; exits non-zero on the first error.
    Validate,
}

fn repo_root(dir: Option<&Path>) -> Option<PathBuf> {
    let dir = dir
        .map(Path::to_path_buf)
        .or_else(|| std::env::current_dir().ok())?;
    Repo::discover(&dir)
        .ok()
        .map(|r| r.main_root().to_path_buf())
}

pub fn run(dir: Option<&Path>, out: &super::Out, cmd: Command) -> anyhow::Result<ExitCode> {
    let root = repo_root(dir);
    let loaded = config::load(root.as_deref())?;
    let sources: Vec<String> = loaded
        .sources
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    match cmd {
        Command::Show => {
            let doc = ConfigShow {
                sources: sources.clone(),
                config: serde_json::to_value(&loaded.config)?,
            };
            let toml =
                toml::to_string_pretty(&loaded.config).context("formatting the configuration")?;
            out.emit(&doc, || {
                let from = if sources.is_empty() {
                    "# no configuration files found; these are the defaults".to_string()
                } else {
                    format!("# from (highest priority first): {}", sources.join(", "))
                };
                format!("{from}\n{toml}")
            })?;
        }
        Command::Validate => {
            let doc = ConfigShow {
                sources: sources.clone(),
                config: serde_json::to_value(&loaded.config)?,
            };
            out.emit(&doc, || {
                if sources.is_empty() {
                    "No configuration files found; the defaults are valid.".into()
                } else {
                    format!("Configuration is valid: {}.", sources.join(", "))
                }
            })?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
