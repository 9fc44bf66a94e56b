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
    // Without a readable store nothing is trusted (and that is shown).
    let store = root
        .as_ref()
        .and_then(|_| crate::ops::owt_home().ok())
        .and_then(|home| crate::store::Store::open(&home).ok());
    let loaded = match &store {
        Some(store) => config::load(root.as_deref(), &crate::ops::trust::StoreTrust(store))?,
        None => config::load(root.as_deref(), &config::TrustNothing)?,
    };
    let (untrusted, refused) = loaded
        .withheld
        .as_ref()
        .map(|w| (w.untrusted.clone(), w.refused.clone()))
        .unwrap_or_default();
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
                origins: loaded
                    .origins
                    .iter()
                    .map(|(k, v)| (k.clone(), v.display().to_string()))
                    .collect(),
                ignored: loaded.ignored.clone(),
                untrusted: untrusted.clone(),
                refused: refused.clone(),
            };
            let toml =
                toml::to_string_pretty(&loaded.config).context("formatting the configuration")?;
            out.emit(&doc, || render_show(&doc, &toml))?;
        }
        Command::Validate => {
            let doc = ConfigShow {
                sources: sources.clone(),
                config: serde_json::to_value(&loaded.config)?,
                origins: Default::default(),
                ignored: loaded.ignored.clone(),
                untrusted,
                refused,
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

/// `owt config show` for a person: where each key comes from and what is
/// ignored, as TOML comments, then the configuration as `toml`.
fn render_show(doc: &ConfigShow, toml: &str) -> String {
    let mut text = if doc.sources.is_empty() {
        "# no configuration files found; these are the defaults\n".to_string()
    } else {
        format!(
            "# from (highest priority first): {}\n",
            doc.sources.join(", ")
        )
    };
    for (key, file) in &doc.origins {
        text.push_str(&format!("# {key} ← {file}\n"));
    }
    for key in &doc.ignored {
        text.push_str(&format!("# ignored (not used by owt): {key}\n"));
    }
    for key in &doc.untrusted {
        text.push_str(&format!(
            "# ignored until you trust the repository's file (owt trust --show): {key}\n"
        ));
    }
    for key in &doc.refused {
        text.push_str(&format!(
            "# ignored (a repository may not redefine a built-in agent): {key}\n"
        ));
    }
    text.push_str(toml);
    text
}
