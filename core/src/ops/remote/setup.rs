//! `owt remote setup`: the repository's clone on a remote, and the base
//! pushed to it from here.

use std::time::Duration;

use anyhow::{bail, Context as _};
use owt_protocol::RemoteSetup;

use super::remote;
use crate::ops::Context;
use crate::remote::ssh::{quote, quote_path, Ssh};
use crate::remote::{Remote, RemoteError};

/// `owt remote setup NAME`: the clone on the remote — cloned from this
/// repository's own `origin`, or a new repository there with the base
/// pushed from here.
pub fn setup(
    ctx: &Context,
    name: &str,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<RemoteSetup> {
    let (remote, ssh) = remote(ctx, name)?;
    let base = ctx.repo.default_base()?;
    progress(&format!("Connecting to {}", remote.host));
    let mut how = "existing";
    let mut repository = toplevel(&ssh, &remote)?;
    if repository.is_none() {
        how = create_clone(ctx, &ssh, &remote, &base, progress)?;
        repository = toplevel(&ssh, &remote)?;
    }
    let repository = repository.with_context(|| {
        format!(
            "{} on {} is not a git repository after setup",
            remote.path, remote.name
        )
    })?;
    let local_tip = ctx.repo.branch_tip(&base)?.to_string();
    if remote_tip(&ssh, &remote, &base)?.as_deref() != Some(local_tip.as_str()) {
        progress(&format!("Pushing {base} to {}", remote.name));
        push(ctx, &ssh, &repository, &base)?;
    }
    let base_tip = remote_tip(&ssh, &remote, &base)?.unwrap_or_default();
    Ok(RemoteSetup {
        name: remote.name,
        path: repository,
        how: how.into(),
        base,
        base_tip,
    })
}

/// The top folder of the git repository at the remote's path, if it is one.
fn toplevel(ssh: &Ssh, remote: &Remote) -> Result<Option<String>, RemoteError> {
    let path = quote_path(&remote.path);
    let out = ssh.run(
        &format!("git -C {path} rev-parse --show-toplevel 2>/dev/null"),
        None,
        Duration::from_secs(30),
    )?;
    let top = String::from_utf8_lossy(&out.stdout).trim().to_string();
    Ok((out.status.success() && !top.is_empty()).then_some(top))
}

/// The tip of `base` in the remote's clone, if it has that branch.
fn remote_tip(ssh: &Ssh, remote: &Remote, base: &str) -> Result<Option<String>, RemoteError> {
    let out = ssh.run(
        &format!(
            "git -C {} rev-parse --verify --quiet {}",
            quote_path(&remote.path),
            quote(&format!("refs/heads/{base}^{{commit}}"))
        ),
        None,
        Duration::from_secs(30),
    )?;
    let tip = String::from_utf8_lossy(&out.stdout).trim().to_string();
    Ok((out.status.success() && !tip.is_empty()).then_some(tip))
}

/// Makes a repository at the remote's path, which holds nothing yet: a
/// clone of this repository's network `origin` when the remote can reach
/// it, else an empty repository the base is pushed into. Returns how
/// (`cloned` or `pushed`).
fn create_clone(
    ctx: &Context,
    ssh: &Ssh,
    remote: &Remote,
    base: &str,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<&'static str> {
    let path = quote_path(&remote.path);
    let exists = ssh.run(&format!("test -e {path}"), None, Duration::from_secs(30))?;
    if exists.status.success() {
        bail!(
            "{} on {} exists but is not a git repository; point [remotes.{}] path at a new folder or at a clone of this repository",
            remote.path, remote.name, remote.name
        );
    }
    let origin = crate::ship::git_cli::GitCli::new(ctx.repo.main_root())
        .run(["remote", "get-url", "origin"])
        .ok()
        .map(|u| u.trim().to_string())
        .filter(|u| is_network_url(u));
    if let Some(url) = origin {
        progress(&format!(
            "Cloning {url} into {} on {}",
            remote.path, remote.name
        ));
        let out = ssh.run(
            &format!("git clone --quiet {} {path}", quote(&url)),
            None,
            Duration::from_secs(3600),
        )?;
        if out.status.success() {
            return Ok("cloned");
        }
        progress(&format!(
            "Cloning there failed ({}); pushing from here instead",
            crate::remote::ssh::last_line(&out.stderr)
        ));
    }
    progress(&format!(
        "Creating a repository at {} on {}",
        remote.path, remote.name
    ));
    let out = ssh.run(
        &format!(
            "git init --quiet -b {b} {path} && git -C {path} config receive.denyCurrentBranch updateInstead",
            b = quote(base)
        ),
        None,
        Duration::from_secs(60),
    )?;
    if !out.status.success() {
        bail!(
            "creating {} on {} failed: {}",
            remote.path,
            remote.name,
            crate::remote::ssh::last_line(&out.stderr)
        );
    }
    Ok("pushed")
}

/// A URL the remote could clone from itself (not a path on this machine).
fn is_network_url(url: &str) -> bool {
    if url.contains("://") {
        return !url.starts_with("file://");
    }
    // scp-like `host:path` (not a local path that happens to hold a colon).
    !url.starts_with('/')
        && !url.starts_with('.')
        && url.split_once(':').is_some_and(|(h, _)| !h.contains('/'))
}

/// `git push` of `base` to the remote clone (fast-forward only: git
/// refuses anything else and so does this).
fn push(ctx: &Context, ssh: &Ssh, repository: &str, base: &str) -> anyhow::Result<()> {
    let out = crate::ship::git_cli::GitCli::new(ctx.repo.main_root())
        .env("GIT_SSH_COMMAND", ssh.git_ssh_command())
        .output([
            "push".to_string(),
            "--quiet".to_string(),
            ssh.git_url(repository),
            format!("refs/heads/{base}:refs/heads/{base}"),
        ])
        .context("running git push")?;
    if !out.status.success() {
        bail!(
            "pushing {base} to {} failed: {}",
            ssh.remote.name,
            crate::remote::ssh::last_line(&out.stderr)
        );
    }
    Ok(())
}
