//! Running the `git` CLI for the steps that change a working tree (merge,
//! rebase, commit), so hooks and attributes behave exactly as git's own.
//!
//! Invariant: argv only (no shell); `GIT_DIR`, `GIT_WORK_TREE` and
//! `GIT_INDEX_FILE` from our own environment (set when owt runs inside a git
//! hook) are removed so git acts on the folder we name.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

#[derive(Debug, thiserror::Error)]
#[error("`git {args}` in {dir} failed: {message}")]
pub struct GitCliError {
    pub args: String,
    pub dir: PathBuf,
    pub message: String,
}

pub struct GitCli {
    dir: PathBuf,
}

impl GitCli {
    pub fn new(dir: &Path) -> GitCli {
        GitCli {
            dir: dir.to_path_buf(),
        }
    }

    /// Runs git with `args`; returns stdout, or an error carrying stderr.
    pub fn run<I, S>(&self, args: I) -> Result<String, GitCliError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let args: Vec<_> = args
            .into_iter()
            .map(|a| a.as_ref().to_os_string())
            .collect();
        let shown = args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ");
        let out = Command::new("git")
            .args(&args)
            .current_dir(&self.dir)
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .env_remove("GIT_INDEX_FILE")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_EDITOR", "true")
            .stdin(Stdio::null())
            .output()
            .map_err(|e| GitCliError {
                args: shown.clone(),
                dir: self.dir.clone(),
                message: format!("cannot run git: {e}"),
            })?;
        if out.status.success() {
            return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
        }
        let mut message = String::from_utf8_lossy(&out.stderr).trim().to_string();
        let stdout = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if !stdout.is_empty() {
            if !message.is_empty() {
                message.push_str("; ");
            }
            message.push_str(&stdout);
        }
        if message.is_empty() {
            message = out.status.to_string();
        }
        // git's own lines kept (a list of files, a hint), indented under
        // the first.
        Err(GitCliError {
            args: shown,
            dir: self.dir.clone(),
            message: message.lines().collect::<Vec<_>>().join("\n    "),
        })
    }
}
