//! Worktree setup: copy env files from the main checkout, run the
//! repository's setup script. Failures are warnings, never aborts.

use std::path::PathBuf;
use std::process::Command;

use super::Context;
use crate::store::SessionRow;

/// Prepares a new worktree; returns warnings.
pub fn prepare_worktree(
    ctx: &Context,
    session: &SessionRow,
    progress: &mut dyn FnMut(&str),
) -> Vec<String> {
    let mut warnings = Vec::new();
    let config = &ctx.config.config;
    let main_root = ctx.repo.main_root();
    if config.environment.copy_env_file {
        for file in &config.worktree.copy_files {
            let rel = std::path::Path::new(file);
            if rel.is_absolute()
                || rel
                    .components()
                    .any(|c| matches!(c, std::path::Component::ParentDir))
            {
                warnings.push(format!(
                    "not copying `{file}`: copy_files entries must be paths inside the repository"
                ));
                continue;
            }
            let from = main_root.join(rel);
            let to = session.worktree_path.join(rel);
            if !from.is_file() || to.exists() {
                continue;
            }
            progress(&format!("Copying {file} into the worktree"));
            let copied = to
                .parent()
                .map_or(Ok(()), std::fs::create_dir_all)
                .and_then(|()| std::fs::copy(&from, &to).map(|_| ()));
            if let Err(e) = copied {
                warnings.push(format!("could not copy {file}: {e}"));
            }
        }
    }
    if config.environment.auto_install_deps {
        warnings.extend(super::deps::install(&session.worktree_path, progress));
    }
    if let Some(script) = setup_script(ctx) {
        progress(&format!("Running setup script {}", script.display()));
        let status = Command::new("sh")
            .arg(&script)
            .current_dir(&session.worktree_path)
            .env("OWT_WORKTREE", &session.worktree_path)
            .env("OWT_REPO_PATH", main_root)
            .env("OWT_SESSION", &session.name)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::inherit())
            .status();
        match status {
            Ok(s) if s.success() => {}
            Ok(s) => warnings.push(format!("setup script {} failed ({s})", script.display())),
            Err(e) => warnings.push(format!(
                "setup script {} could not run: {e}",
                script.display()
            )),
        }
    }
    warnings
}

/// `.owt/setup.sh` in the repository, else `~/.config/owt/setups/<repo>.sh`.
fn setup_script(ctx: &Context) -> Option<PathBuf> {
    let in_repo = ctx.repo.main_root().join(".owt/setup.sh");
    if in_repo.is_file() {
        return Some(in_repo);
    }
    let user = crate::config::user_config_path()?
        .parent()?
        .join("setups")
        .join(format!("{}.sh", ctx.repo.name()));
    user.is_file().then_some(user)
}
