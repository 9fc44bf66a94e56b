//! Merging and shipping a remote session: its branch fetched into
//! `REMOTE/branch` here and merged in a short-lived worktree of owt's own.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context as _};
use owt_protocol::bridge::{RemoteCommit, RemoteInfo};
use owt_protocol::{MergeOutput, ShipOutput};

use super::MergeOptions;
use crate::ops::remote::{delete, remote_of};
use crate::ops::Context;
use crate::remote::keeper;
use crate::remote::ssh::{Ssh, COMMAND_TIMEOUT};
use crate::store::SessionRow;

/// Fetches a remote session's branch into an owt branch here
/// (`REMOTE/branch`), fast-forward only; returns its name.
fn fetch_branch(
    ctx: &Context,
    ssh: &Ssh,
    row: &SessionRow,
    commit: &RemoteCommit,
) -> anyhow::Result<String> {
    let repository =
        keeper::raw_state(&ctx.home, ctx.repo_row.id, &ssh.remote.name).and_then(|s| s.repository);
    let repository = match repository {
        Some(r) => r,
        None => ssh
            .owt_json::<RemoteInfo>(&["__bridge".into(), "info".into()], Duration::from_secs(60))?
            .repository
            .with_context(|| format!("{} has no clone at {}", ssh.remote.name, ssh.remote.path))?,
    };
    let tracking = format!(
        "refs/owt/remotes/{}/branches/{}",
        ssh.remote.name, row.branch
    );
    let mut args: Vec<String> = [
        "-c",
        "gc.auto=0",
        "fetch",
        "--quiet",
        "--no-tags",
        "--no-write-fetch-head",
    ]
    .map(String::from)
    .into();
    args.push(ssh.git_url(&repository));
    args.push(format!("+refs/heads/{}:{tracking}", commit.branch));
    let out = crate::ship::git_cli::GitCli::new(ctx.repo.main_root())
        .env("GIT_SSH_COMMAND", ssh.git_ssh_command())
        .output(&args)
        .context("running git fetch")?;
    if !out.status.success() {
        bail!(
            "fetching {} from {} failed: {}",
            commit.branch,
            ssh.remote.name,
            crate::remote::ssh::last_line(&out.stderr)
        );
    }
    let repo = ctx.repo.git2();
    let tip = repo.refname_to_id(&tracking)?;
    if tip.to_string() != commit.tip {
        bail!(
            "{} moved on {} while it was fetched ({} → {}); run the command again",
            commit.branch,
            ssh.remote.name,
            &commit.tip[..10.min(commit.tip.len())],
            &tip.to_string()[..10]
        );
    }
    let local = format!("{}/{}", ssh.remote.name, row.branch);
    match ctx.repo.branch_tip(&local) {
        Ok(existing) if existing == tip => {}
        Ok(existing) if repo.graph_descendant_of(tip, existing)? => {
            repo.reference(&format!("refs/heads/{local}"), tip, true, "owt: fetched from a remote")?;
        }
        Ok(_) => bail!(
            "branch {local} exists here and is not behind {} of {}; it was not changed (rename or delete it, then run the command again)",
            commit.branch,
            ssh.remote.name
        ),
        Err(_) => {
            repo.branch(&local, &repo.find_commit(tip)?, false)?;
        }
    }
    Ok(local)
}

/// `owt merge REMOTE:name` (and the merge of `owt ship`): the session's
/// branch is fetched into `REMOTE/branch` here, merged with the usual two
/// phases — phase 1 in a short-lived worktree of owt's own — and the
/// remote session deleted there unless `keep`.
pub fn merge(
    ctx: &mut Context,
    row: &SessionRow,
    op: &str,
    opts: MergeOptions,
    commit: Option<RemoteCommit>,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<MergeOutput> {
    let (remote, ssh, name) = remote_of(ctx, row)?;
    let commit = match commit {
        Some(commit) => commit,
        None => committed_work(&ssh, row, &name)?,
    };
    progress(&format!("Fetching {} from {}", commit.branch, remote.name));
    let local_branch = fetch_branch(ctx, &ssh, row, &commit)?;
    let checkout = merge_checkout(ctx, row, &remote.name, &name, &local_branch, &commit)?;
    let merging = SessionRow {
        branch: local_branch.clone(),
        base_branch: row.base_branch.clone(),
        worktree_path: checkout.clone(),
        ..row.clone()
    };
    let merged = super::merge_row(
        ctx,
        &merging,
        op,
        MergeOptions { keep: true, ..opts },
        progress,
    );
    let mut output = match merged {
        Ok(output) => output,
        Err(e) => {
            // The merge changed nothing (or restored its worktree): the
            // short-lived checkout goes, unless conflicts were left in it.
            if crate::ship::in_progress(&checkout).is_none() {
                let _ = ctx.repo.remove_worktree(&checkout);
            }
            return Err(e);
        }
    };
    if output.left_conflicts {
        progress(&format!(
            "The conflicts are in {}; resolve and commit them there, then run `owt merge {}` again",
            checkout.display(),
            row.name
        ));
        return Ok(output);
    }
    ctx.repo
        .remove_worktree(&checkout)
        .with_context(|| format!("removing {}", checkout.display()))?;
    if output.merged {
        let _ = ctx.repo.delete_branch(
            &local_branch,
            &row.base_branch,
            &format!("{}-{name}", remote.name),
        );
    }
    output.name = row.name.clone();
    output.branch = format!("{}:{}", remote.name, commit.branch);
    if output.merged && !opts.keep {
        let how = if op == "ship" { "shipped" } else { "merged" };
        match delete(ctx, row, false, how, progress) {
            Ok(_) => output.deleted = true,
            Err(e) => progress(&format!("Merged, but the session was kept: {e:#}")),
        }
    }
    Ok(output)
}

/// What a merge of the remote session `name` takes: its branch and tip as
/// the remote says (`owt __bridge commit --dry-run`); refused while it has
/// uncommitted work.
fn committed_work(ssh: &Ssh, row: &SessionRow, name: &str) -> anyhow::Result<RemoteCommit> {
    let commit: RemoteCommit = ssh.owt_json(
        &[
            "__bridge".into(),
            "commit".into(),
            name.to_string(),
            "--dry-run".into(),
        ],
        COMMAND_TIMEOUT,
    )?;
    if !commit.dirty.is_empty() {
        bail!(
            "session `{}` has uncommitted work on {} ({}); commit it, or use `owt ship {}`, which commits it first",
            row.name,
            ssh.remote.name,
            commit.dirty.join(", "),
            row.name
        );
    }
    Ok(commit)
}

/// The short-lived worktree of owt's own the fetched branch is merged in
/// (`.owt-remote-REMOTE-NAME` in the worktrees' folder), made unless it is
/// left from a merge that stopped on conflicts.
fn merge_checkout(
    ctx: &Context,
    row: &SessionRow,
    remote: &str,
    name: &str,
    local_branch: &str,
    commit: &RemoteCommit,
) -> anyhow::Result<PathBuf> {
    let base_dir =
        crate::config::normalize(&ctx.config.config.base_directory(ctx.repo.main_root()));
    let admin = format!("owt-remote-{remote}-{name}");
    let checkout = base_dir.join(format!(".{admin}"));
    if !checkout.exists() {
        ctx.repo
            .add_worktree(&admin, &checkout, local_branch, &commit.base, false)
            .with_context(|| format!("creating a worktree to merge {} in", row.name))?;
    }
    Ok(checkout)
}

/// `owt ship REMOTE:name`: commits its work on the remote (the hooks
/// there run), then [`merge`] and delete.
pub fn ship(
    ctx: &mut Context,
    row: &SessionRow,
    message: Option<&str>,
    opts: MergeOptions,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<ShipOutput> {
    let (remote, ssh, name) = remote_of(ctx, row)?;
    progress(&format!("Committing the work of {name} on {}", remote.name));
    let mut args = vec!["__bridge".to_string(), "commit".to_string(), name];
    if let Some(message) = message {
        args.extend(["-m".to_string(), message.to_string()]);
    }
    let commit: RemoteCommit = ssh.owt_json(&args, COMMAND_TIMEOUT)?;
    let committed = commit.committed.clone();
    let merge = merge(
        ctx,
        row,
        "ship",
        MergeOptions {
            keep: false,
            ..opts
        },
        Some(commit),
        progress,
    )?;
    Ok(ShipOutput {
        committed,
        merge,
        unreviewed: Vec::new(),
        checks: None,
    })
}
