//! Configuration: `.owt.toml` at the repository root, then the user's
//! `~/.config/owt/config.toml` (`$XDG_CONFIG_HOME/owt/config.toml`).
//!
//! Values in the repository file win over the user's; tables merge key by
//! key. Unknown keys and wrong types are errors that name the file, the key
//! and the line. Invariant: loading never writes anything.
//!
//! A repository is not trusted until the user says so (`owt trust`): the
//! keys of its file that run programs, set an agent's environment or choose
//! where owt writes outside the repository's parent folder ([`gated_keys`])
//! take effect only when [`Trust`] vouches for the exact bytes read, and a
//! repository may never redefine a built-in agent.
//!
//! Parts: `sections` (the tables and their defaults), `bytesize` (memory
//! amounts written with a unit), `load` (reading, parsing with errors that
//! point into the file, merging the layers), `seed` (the seed's
//! `.worktreerc` format), `trust` (the keys a repository needs trust for,
//! withheld until it has it), `paths` (`~` and relative paths).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

mod bytesize;
mod load;
mod paths;
mod sections;
mod seed;
mod trust;

pub use bytesize::{human_bytes, ByteSize};
pub use load::{
    load, load_files, parse_file, read_config_file, repo_config_file, repo_config_path,
    user_config_path, ConfigFile, Loaded,
};
pub use paths::{expand_home, normalize, resolve_base_directory};
pub use sections::{
    AgentConfig, AttachConfig, ChecksConfig, ChecksWhen, CommentAuthors, ConflictFeedback,
    EnvironmentConfig, FeedbackConfig, ForgeKind, GuardConfig, McpConfig, NotifyConfig, OnLimit,
    OnMerged, PrConfig, PreEdit, PromptMode, RemoteConfig, ShipConfig, TemplateConfig,
    TerminalNotify, ToolConfig, UiBell, UiConfig, WorktreeConfig,
};
pub use seed::{translate_seed, SEED_FILES};
pub use trust::{
    dotted, gated_keys, value_at, Gated, Trust, TrustNothing, Withheld, BUILTIN_TOOLS,
};

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {error}")]
    Read {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{path}:{line}: {message}")]
    Invalid {
        path: PathBuf,
        line: usize,
        /// Dotted key, when known.
        key: Option<String>,
        message: String,
    },
    #[error("invalid configuration: {0}")]
    Merged(String),
    /// Not a regular file, too large, or a link out of the repository.
    #[error(transparent)]
    File(#[from] crate::safe_fs::SafeFsError),
}

/// The whole configuration. Every section and key is optional.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub worktree: WorktreeConfig,
    pub agent: AgentConfig,
    /// Custom agents (and overrides of built-in ones), by name.
    pub tools: BTreeMap<String, ToolConfig>,
    pub guard: GuardConfig,
    pub ship: ShipConfig,
    pub attach: AttachConfig,
    pub environment: EnvironmentConfig,
    /// Custom task templates for `owt new --template NAME`.
    pub templates: BTreeMap<String, TemplateConfig>,
    /// Local checks run on an agent's work (`owt checks`).
    pub checks: ChecksConfig,
    /// What owt tells agents on its own (conflicts).
    pub feedback: FeedbackConfig,
    /// Pull requests (`owt pr`, `owt watch`).
    pub pr: PrConfig,
    /// Machines agents may run on (`owt new --on NAME`), reached over SSH.
    pub remotes: BTreeMap<String, RemoteConfig>,
    /// The control plane (`owt` in a terminal).
    pub ui: UiConfig,
    /// Notifications out (`[notify]`).
    pub notify: NotifyConfig,
    /// owt's MCP server (`[mcp]`): conductor sessions.
    pub mcp: McpConfig,
}

impl Config {
    /// Whether `rel` (a path in a worktree; a folder may end in `/`) is a
    /// cache `[worktree] disposable` lets owt remove without a copy.
    pub fn is_disposable(&self, rel: &str) -> bool {
        let rel = rel.trim_end_matches('/');
        let name = rel.rsplit('/').next().unwrap_or(rel);
        self.worktree.disposable.iter().any(|pattern| {
            let pattern = pattern.trim_end_matches('/');
            let subject = if pattern.contains('/') { rel } else { name };
            globset::Glob::new(pattern.trim_start_matches('/'))
                .map(|g| g.compile_matcher().is_match(subject))
                .unwrap_or(false)
        })
    }

    /// Where worktrees of the repository at `repo_root` go.
    pub fn base_directory(&self, repo_root: &Path) -> PathBuf {
        match &self.worktree.base_directory {
            Some(dir) => resolve_base_directory(dir, repo_root),
            None => crate::names::worktrees_folder(
                repo_root,
                crate::git::outermost_enclosing_checkout(repo_root).as_deref(),
            ),
        }
    }

    /// The configured detach prefix as a byte.
    pub fn detach_byte(&self) -> Result<u8, String> {
        parse_ctrl_key(&self.attach.detach_key)
    }
}

/// `ctrl-\` → 0x1c, `ctrl-]` → 0x1d, `ctrl-a` → 0x01.
pub fn parse_ctrl_key(key: &str) -> Result<u8, String> {
    let lower = key.to_ascii_lowercase();
    let Some(rest) = lower.strip_prefix("ctrl-") else {
        return Err(format!(
            "detach key `{key}` must look like `ctrl-\\` or `ctrl-a`"
        ));
    };
    match rest.as_bytes() {
        [c @ b'a'..=b'z'] => Ok(c - b'a' + 1),
        [b'\\'] => Ok(0x1c),
        [b']'] => Ok(0x1d),
        [b'^'] => Ok(0x1e),
        [b'_'] => Ok(0x1f),
        _ => Err(format!(
            "detach key `{key}` must look like `ctrl-\\` or `ctrl-a`"
        )),
    }
}

#[cfg(test)]
mod tests;
