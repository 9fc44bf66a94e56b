//! Worktree setup: copy env files from the main checkout, install
//! dependencies, run the setup script. Failures are warnings, never aborts.
//!
//! The repository's own `.owt/setup.sh` runs only when the user trusts its
//! exact content (`owt trust`), and what runs is the content that was
//! checked, never the file read again later. Every file setup puts in the
//! worktree is returned as owned by owt ([`super::owned`]): kept out of
//! commits and the guard, and removed without a copy by `owt delete` while
//! unchanged.

use std::os::unix::process::CommandExt;
use std::path::{Component, Path};
use std::process::Command;

use super::owned::OwnedFile;
use super::Context;
use crate::store::SessionRow;

/// What setup did: warnings, and the files it put into the worktree.
#[derive(Debug, Default)]
pub struct Prepared {
    pub warnings: Vec<String>,
    pub owned: Vec<OwnedFile>,
    /// `owt new` was interrupted (Ctrl-C) while the setup script ran: the
    /// script was stopped.
    pub interrupted: bool,
}

/// Prepares a new worktree.
pub fn prepare_worktree(
    ctx: &Context,
    session: &SessionRow,
    progress: &mut dyn FnMut(&str),
) -> Prepared {
    let mut out = Prepared::default();
    let config = &ctx.config.config;
    let main_root = ctx.repo.main_root();
    if config.environment.copy_env_file {
        for file in &config.worktree.copy_files {
            copy_file(main_root, &session.worktree_path, file, progress, &mut out);
        }
    }
    if config.environment.auto_install_deps {
        let before: Vec<String> = super::deps::INSTALL_DIRS
            .iter()
            .filter(|d| session.worktree_path.join(d).exists())
            .map(|d| d.to_string())
            .collect();
        out.warnings
            .extend(super::deps::install(&session.worktree_path, progress));
        for dir in super::deps::INSTALL_DIRS {
            if !before.iter().any(|b| b == dir) && session.worktree_path.join(dir).exists() {
                out.owned.push(OwnedFile::installed(dir));
            }
        }
    }
    let script = super::trust::trusted_setup_script(ctx).or_else(|| user_setup_script(ctx));
    if let Some((script, text)) = script {
        progress(&format!("Running setup script {}", script.display()));
        // The checked content itself, as `sh FILE` would run it ($0 = FILE),
        // in a process group of its own: an interrupted `owt new` stops it
        // with everything it started.
        let child = Command::new("sh")
            .arg("-c")
            .arg(String::from_utf8_lossy(&text).as_ref())
            .arg(&script)
            .current_dir(&session.worktree_path)
            .env("OWT_WORKTREE", &session.worktree_path)
            .env("OWT_REPO_PATH", main_root)
            .env("OWT_SESSION", &session.name)
            .envs(super::ports::env(&super::ports::of(&ctx.store, session.id)))
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::inherit())
            .process_group(0)
            .spawn();
        match child.and_then(wait_unless_interrupted) {
            Ok(None) => out.interrupted = true,
            Ok(Some(s)) if s.success() => {}
            Ok(Some(s)) => out
                .warnings
                .push(format!("setup script {} failed ({s})", script.display())),
            Err(e) => out.warnings.push(format!(
                "setup script {} could not run: {e}",
                script.display()
            )),
        }
    }
    out
}

/// Waits for the setup script; `None` when `owt new` was interrupted
/// meanwhile (the script's whole process group is then stopped).
fn wait_unless_interrupted(
    mut child: std::process::Child,
) -> std::io::Result<Option<std::process::ExitStatus>> {
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Some(status));
        }
        if super::new::interrupted() {
            let group = i32::try_from(child.id())
                .ok()
                .and_then(rustix::process::Pid::from_raw);
            if let Some(group) = group {
                let _ = rustix::process::kill_process_group(group, rustix::process::Signal::TERM);
            }
            let _ = child.wait();
            return Ok(None);
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Copies `file` (relative to the main checkout) into the worktree, unless
/// it escapes the checkout (an absolute path, `..`, or a link to outside).
fn copy_file(
    main_root: &Path,
    worktree: &Path,
    file: &str,
    progress: &mut dyn FnMut(&str),
    out: &mut Prepared,
) {
    let rel = Path::new(file);
    if rel.is_absolute() || rel.components().any(|c| matches!(c, Component::ParentDir)) {
        out.warnings.push(format!(
            "not copying `{file}`: copy_files entries must be paths inside the repository"
        ));
        return;
    }
    let from = main_root.join(rel);
    let to = worktree.join(rel);
    if !from.is_file() || to.symlink_metadata().is_ok() {
        return;
    }
    match std::fs::canonicalize(&from) {
        Ok(real) if real.starts_with(main_root) => {}
        _ => {
            out.warnings.push(format!(
                "not copying `{file}`: it is a link to a file outside the repository"
            ));
            return;
        }
    }
    progress(&format!("Copying {file} into the worktree"));
    let copied = to
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| std::fs::read(&from))
        .and_then(|bytes| std::fs::write(&to, &bytes).map(|()| bytes));
    match copied {
        Ok(bytes) => {
            // Same permissions as the original (a secret stays private).
            if let Ok(meta) = std::fs::metadata(&from) {
                let _ = std::fs::set_permissions(&to, meta.permissions());
            }
            out.owned.push(OwnedFile::copied(file, &bytes));
        }
        Err(e) => out.warnings.push(format!("could not copy {file}: {e}")),
    }
}

/// `~/.config/owt/setups/<repo>.sh`, the user's own setup for a repository.
fn user_setup_script(ctx: &Context) -> Option<(std::path::PathBuf, Vec<u8>)> {
    let user = crate::config::user_config_path()?
        .parent()?
        .join("setups")
        .join(format!("{}.sh", ctx.repo.name()));
    let text = std::fs::read(&user).ok()?;
    Some((user, text))
}
