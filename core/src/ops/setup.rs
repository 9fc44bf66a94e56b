//! Worktree setup: copy env files from the main checkout, install
//! dependencies, run the setup script (its output streamed as it comes and
//! kept in `$OWT_HOME/logs/<short id>.setup.log`). Failures are warnings,
//! never aborts.
//!
//! The repository's own `.owt/setup.sh` runs only when the user trusts its
//! exact content (`owt trust`), and what runs is the content that was
//! checked, never the file read again later. Every file setup puts in the
//! worktree is returned as owned by owt ([`super::owned`]): kept out of
//! commits and the guard, and removed without a copy by `owt delete` while
//! unchanged.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Stdio};

use super::owned::OwnedFile;
use super::Context;
use crate::safe_fs::{self, SafeFsError};
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
        run_setup_script(ctx, session, &script, &text, progress, &mut out);
    }
    out
}

/// The largest file `copy_files` copies (env files and local settings).
const COPY_LIMIT: u64 = 64 << 20;

/// `$OWT_HOME/logs/<short id>.setup.log`: the setup script's output.
pub fn setup_log_path(home: &Path, short_id: &str) -> PathBuf {
    home.join("logs").join(format!("{short_id}.setup.log"))
}

/// Runs the checked content of the setup script, as `sh FILE` would run it
/// ($0 = FILE), in a process group of its own (an interrupted `owt new`
/// stops it with everything it started). Its output (stdout and stderr)
/// streams through `progress` as it comes and is kept in its log.
fn run_setup_script(
    ctx: &Context,
    session: &SessionRow,
    script: &Path,
    text: &[u8],
    progress: &mut dyn FnMut(&str),
    out: &mut Prepared,
) {
    let log_path = setup_log_path(&ctx.home, &session.short_id);
    progress(&format!(
        "Running setup script {} (its output is kept in {})",
        script.display(),
        log_path.display()
    ));
    let log = log_path
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| {
            // Private, as everything in the state folder (0600).
            std::os::unix::fs::OpenOptionsExt::mode(
                std::fs::OpenOptions::new()
                    .write(true)
                    .create(true)
                    .truncate(true),
                0o600,
            )
            .open(&log_path)
        });
    let child = Command::new("sh")
        .arg("-c")
        .arg(String::from_utf8_lossy(text).as_ref())
        .arg(script)
        .current_dir(&session.worktree_path)
        .env("OWT_WORKTREE", &session.worktree_path)
        .env("OWT_REPO_PATH", ctx.repo.main_root())
        .env("OWT_SESSION", &session.name)
        .envs(super::ports::env(&super::ports::of(&ctx.store, session.id)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn();
    let ran = child.and_then(|child| wait_streaming(child, log.ok(), progress));
    match ran {
        Ok(None) => out.interrupted = true,
        Ok(Some(s)) if s.success() => {}
        Ok(Some(s)) => out.warnings.push(format!(
            "setup script {} failed ({s}); its output is in {}",
            script.display(),
            log_path.display()
        )),
        Err(e) => out.warnings.push(format!(
            "setup script {} could not run: {e}",
            script.display()
        )),
    }
}

/// Waits for the setup script, its output lines passed to `progress` and
/// written to `log` as they come; `None` when `owt new` was interrupted
/// meanwhile (the script's whole process group is then stopped).
fn wait_streaming(
    mut child: std::process::Child,
    log: Option<std::fs::File>,
    progress: &mut dyn FnMut(&str),
) -> std::io::Result<Option<std::process::ExitStatus>> {
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let readers: Vec<_> = [
        child
            .stdout
            .take()
            .map(|o| Box::new(o) as Box<dyn Read + Send>),
        child
            .stderr
            .take()
            .map(|e| Box::new(e) as Box<dyn Read + Send>),
    ]
    .into_iter()
    .flatten()
    .map(|pipe| {
        let tx = tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        })
    })
    .collect();
    drop(tx);
    let mut log = log;
    let mut pass_on = |line: String, log: &mut Option<std::fs::File>| {
        if let Some(file) = log.as_mut() {
            let _ = writeln!(file, "{line}");
        }
        progress(&format!("  setup: {}", crate::printable::line(&line)));
    };
    let status = loop {
        while let Ok(line) = rx.try_recv() {
            pass_on(line, &mut log);
        }
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if super::interrupt::interrupted() {
            crate::platform::process::signal_group(
                child.id(),
                crate::platform::process::Signal::TERM,
            );
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    if status.is_some() {
        // The rest of its output (the pipes close when it ends, unless it
        // left a process holding them: that one is not waited for).
        for reader in readers {
            if reader.is_finished() {
                let _ = reader.join();
            }
        }
        while let Ok(line) = rx.try_recv() {
            pass_on(line, &mut log);
        }
    }
    Ok(status)
}

/// Copies `file` (relative to the main checkout) into the worktree, unless
/// it escapes the checkout (an absolute path, `..`, or a link to outside),
/// is not a regular file, or its place in the worktree lies through a link
/// (a branch may commit `config -> /tmp/shared`: the copy is written
/// without following links, [`crate::safe_fs`]).
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
    let bytes = match safe_fs::read_regular(&from, COPY_LIMIT, Some(main_root)) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => return,
        Err(SafeFsError::LinkOutside { .. }) => {
            out.warnings.push(format!(
                "not copying `{file}`: it is a link to a file outside the repository"
            ));
            return;
        }
        Err(e) => {
            out.warnings.push(format!("not copying `{file}`: {e}"));
            return;
        }
    };
    progress(&format!("Copying {file} into the worktree"));
    // Same permissions as the original (a secret stays private), set
    // before the content is written.
    let mode = std::fs::metadata(&from).map(|m| m.permissions().mode() & 0o7777);
    match safe_fs::write_beneath(worktree, rel, &bytes, Some(mode.unwrap_or(0o600))) {
        Ok(()) => out.owned.push(OwnedFile::copied(file, &bytes)),
        Err(e) if e.is_refusal() => out.warnings.push(format!("not copying `{file}`: {e}")),
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
