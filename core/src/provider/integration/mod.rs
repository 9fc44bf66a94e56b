//! Native status signals per agent: what owt adds to a session's launch so
//! the agent itself says when it works, waits or asks (faster and surer
//! than reading its screen), and which files each agent writes into its
//! checkout (kept out of commits and the guard like owt's own).
//!
//! Invariant: nothing here touches the user's own configuration. An
//! integration is command-line arguments and environment for this one
//! session, plus files under `$OWT_HOME` (and, for Claude Code and Droid,
//! owt's own entries merged into the worktree's settings). Each was
//! checked against the real CLI (versions in `docs/providers.md`):
//! - Codex ([`codex`]): its desktop notifications, written to the terminal
//!   as `OSC 9` (approval requested, turn complete), which the host reads;
//!   `--no-daemon`, so no shared app-server outlives the session.
//! - OpenCode ([`opencode`]): a plugin (loaded through
//!   `OPENCODE_CONFIG_CONTENT`) that reports session busy/idle and
//!   permission asked/replied to `owt hook`, and asks Conflict Guard
//!   before its edits (`owt hook --pre-edit`).
//! - Aider ([`aider`]): `--notifications-command`, run when it waits for
//!   the human.
//! - Pi ([`pi`]): an extension (`-e FILE`) that reports agent runs starting
//!   and ending to `owt hook`, and asks Conflict Guard before its edits.
//! - Gemini CLI ([`gemini`]): Conflict Guard's pre-edit hook
//!   (`BeforeTool`, `AfterTool`) merged into the worktree's
//!   `.gemini/settings.json` (by [`claude::install_hooks`]).
//! - Claude Code and Droid ([`claude`]): hooks in the worktree's settings,
//!   and Claude Code's registration of `owt mcp` — the only files an
//!   integration writes into a worktree (merged through the one JSON edit
//!   helper, [`json_file`]; `ops::owned` keeps them out of commits).

pub mod aider;
pub mod claude;
pub mod codex;
pub mod gemini;
pub mod json_file;
pub mod opencode;
pub mod pi;

use std::collections::BTreeMap;
use std::path::Path;

use super::LaunchMode;

#[derive(Debug, thiserror::Error)]
pub enum IntegrationError {
    #[error("{context}: {error}")]
    Io {
        context: String,
        error: std::io::Error,
    },
    #[error("{0}")]
    Invalid(String),
    /// A file in the worktree owt does not open (a link, not a regular
    /// file, too large), or could not.
    #[error(transparent)]
    File(#[from] crate::safe_fs::SafeFsError),
    /// An agent settings file owt leaves alone.
    #[error("{}: {problem}; not touching it", path.display())]
    Settings {
        path: std::path::PathBuf,
        problem: String,
    },
}

/// What a session's launch gains for owt to hear the agent.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Integration {
    /// Arguments after the agent's own, before the prompt.
    pub args: Vec<String>,
    /// Environment for the agent (over the configured one).
    pub env: BTreeMap<String, String>,
}

/// The integration of `provider` for a session started in `mode`. `owt` is
/// the owt binary the agent's signals call back (`owt hook`); `home` is
/// `$OWT_HOME`; `agent_env` the environment the agent gets otherwise (a
/// variable the integration extends is merged, not replaced).
pub fn prepare(
    provider: &str,
    mode: LaunchMode,
    owt: &Path,
    home: &Path,
    agent_env: &BTreeMap<String, String>,
) -> Result<Integration, IntegrationError> {
    match provider {
        "codex" => Ok(codex::integration(mode)),
        "opencode" => opencode::integration(owt, home, agent_env),
        "aider" => aider::integration(mode, owt),
        "pi" => pi::integration(mode, owt, home),
        _ => Ok(Integration::default()),
    }
}

/// Arguments `provider` needs in `mode` to work in `worktree` at all,
/// whatever happens to its status signals: `opencode run` started in a
/// linked worktree works in the main checkout (checked with opencode
/// 1.18.33: it takes the project from git's common directory) unless it is
/// given `--dir`.
pub fn placement_args(provider: &str, mode: LaunchMode, worktree: &Path) -> Vec<String> {
    match (provider, mode) {
        ("opencode", LaunchMode::Headless) => {
            vec!["--dir".into(), worktree.to_string_lossy().into_owned()]
        }
        _ => Vec::new(),
    }
}

/// Files `provider` writes into its checkout on its own (gitignore
/// patterns, relative to the checkout): excluded from commits and the guard
/// the way owt's own files are (`git::exclude_paths`).
pub fn own_files(provider: &str) -> &'static [&'static str] {
    match provider {
        // `.aider.chat.history.md`, `.aider.input.history`,
        // `.aider.tags.cache.v4/` (checked with aider 0.86.2).
        "aider" => &[".aider*"],
        _ => &[],
    }
}

/// `owt hook --event EVENT` as one shell word list, for agents that run a
/// command line through a shell.
fn hook_command(owt: &Path, event: &str) -> Result<String, IntegrationError> {
    let owt = owt.to_string_lossy();
    let quoted = shlex::try_quote(&owt)
        .map_err(|e| IntegrationError::Invalid(format!("quoting {owt}: {e}")))?;
    Ok(format!("{quoted} hook --event {event}"))
}

/// Writes `text` to `path` unless it already holds it (through a temporary
/// file and a rename, so a starting agent never reads half a file).
fn write_if_changed(path: &Path, text: &str) -> Result<(), IntegrationError> {
    if std::fs::read_to_string(path).is_ok_and(|t| t == text) {
        return Ok(());
    }
    let io = |context: String| move |error| IntegrationError::Io { context, error };
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(io(format!("creating {}", dir.display())))?;
    let name = path
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    std::fs::write(&tmp, text).map_err(io(format!("writing {}", tmp.display())))?;
    std::fs::rename(&tmp, path).map_err(io(format!("writing {}", path.display())))
}
