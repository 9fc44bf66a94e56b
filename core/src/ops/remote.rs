//! Remotes as use cases: `owt remote list|check|setup|install`, `owt new
//! --on`, and what delete, merge and ship do with a remote session — plus
//! the remote's half of them (`owt __bridge info|commit`).
//!
//! Invariants: a remote session is created, changed and deleted by the
//! remote's own owt (with its data-safety and trust rules); here only its
//! record, the fetched refs under `refs/owt/remotes/<remote>/` and — to
//! merge it — a branch and a short-lived worktree of owt's own are
//! written; a remote that cannot be reached changes nothing here.

use std::path::Path;
use std::time::Duration;

use anyhow::{bail, Context as _};
use owt_protocol::bridge::{RemoteCommit, RemoteInfo, BRIDGE_PROTOCOL_VERSION};
use owt_protocol::{
    DeleteOutput, MergeOutput, NewOutput, RemoteCheck, RemoteInstall, RemoteList, RemoteSetup,
    RemoteView, ShipOutput,
};

use super::merge::MergeOptions;
use super::new::NewRequest;
use super::Context;
use crate::remote::ssh::{quote, quote_path, Ssh, COMMAND_TIMEOUT};
use crate::remote::{keeper, Remote, RemoteError};
use crate::store::{now_ms, RemoteSessionRecord, SessionRow};

/// `owt remote list`.
pub fn list(ctx: &Context) -> anyhow::Result<RemoteList> {
    let mut remotes = Vec::new();
    for (name, config) in &ctx.config.config.remotes {
        let sessions = ctx
            .store
            .remote_sessions(ctx.repo_row.id, Some(name))?
            .len() as u32;
        remotes.push(RemoteView {
            name: name.clone(),
            host: config.host.clone(),
            path: config.path.clone(),
            owt: config.owt.clone(),
            sessions,
            bridge: keeper::state(&ctx.home, ctx.repo_row.id, name),
        });
    }
    Ok(RemoteList { remotes })
}

fn remote(ctx: &Context, name: &str) -> anyhow::Result<(Remote, Ssh)> {
    if let Some(why) = untrusted_remote(ctx, name) {
        bail!("{why}");
    }
    let remote = Remote::named(&ctx.config.config, name)?;
    let ssh = Ssh::new(&ctx.home, &remote);
    Ok((remote, ssh))
}

/// Why `[remotes.NAME]` was ignored, when only the repository's untrusted
/// file declares it.
fn untrusted_remote(ctx: &Context, name: &str) -> Option<String> {
    let withheld = ctx.config.withheld.as_ref()?;
    let held = withheld
        .untrusted
        .iter()
        .any(|key| *key == format!("remotes.{name}"));
    held.then(|| {
        format!(
            "[remotes.{name}] is declared by {}, which is not trusted, so it was ignored; review it with `owt trust --show`, trust it with `owt trust`, or declare the remote in ~/.config/owt/config.toml",
            withheld.file.display()
        )
    })
}

/// `uname -sm` of the remote, e.g. `Linux x86_64`.
fn os_arch(ssh: &Ssh) -> Result<String, RemoteError> {
    let out = ssh.run("uname -sm", None, Duration::from_secs(30))?;
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// This machine as `uname -sm` says it.
fn local_os_arch() -> String {
    let os = match std::env::consts::OS {
        "linux" => "Linux",
        "macos" => "Darwin",
        "freebsd" => "FreeBSD",
        other => other,
    };
    let arch = match std::env::consts::ARCH {
        "aarch64" if os == "Darwin" => "arm64",
        other => other,
    };
    format!("{os} {arch}")
}

/// `owt remote check NAME`: reachability, the owt there, the clone.
pub fn check(ctx: &Context, name: &str) -> anyhow::Result<RemoteCheck> {
    let (remote, ssh) = remote(ctx, name)?;
    let base = ctx.repo.default_base().ok();
    let mut check = RemoteCheck {
        name: remote.name.clone(),
        host: remote.host.clone(),
        path: remote.path.clone(),
        reachable: false,
        os_arch: None,
        owt_version: None,
        bridge_protocol: None,
        compatible: false,
        clone_ok: false,
        remote_base_tip: None,
        local_base_tip: base
            .as_deref()
            .and_then(|b| ctx.repo.branch_tip(b).ok())
            .map(|t| t.to_string()),
        base: base.clone(),
        problems: Vec::new(),
    };
    match os_arch(&ssh) {
        Ok(os_arch) => {
            check.reachable = true;
            check.os_arch = Some(os_arch);
        }
        Err(e) => {
            check.problems.push(format!(
                "{e}; check that `ssh {}` works without a password prompt (keys or an agent) and that its host key is known (connect once by hand)",
                remote.host
            ));
            return Ok(check);
        }
    }
    let mut args = vec!["__bridge".to_string(), "info".to_string()];
    if let Some(base) = &base {
        args.extend(["--base".to_string(), base.clone()]);
    }
    match ssh.owt_json::<RemoteInfo>(&args, Duration::from_secs(60)) {
        Ok(info) => {
            check.owt_version = Some(info.version.clone());
            check.bridge_protocol = Some(info.bridge_protocol);
            check.compatible = info.bridge_protocol == BRIDGE_PROTOCOL_VERSION;
            if !check.compatible {
                check.problems.push(
                    owt_protocol::bridge::mismatch_message(
                        info.bridge_protocol,
                        &info.version,
                        BRIDGE_PROTOCOL_VERSION,
                        env!("CARGO_PKG_VERSION"),
                    )
                    .replace("NAME", &remote.name),
                );
            }
            check.clone_ok = info.repository.is_some();
            check.remote_base_tip = info.base_tip.clone();
            if let Some(error) = info.error {
                check.problems.push(format!(
                    "no clone at {}: {error}; create it with `owt remote setup {}`",
                    remote.path, remote.name
                ));
            } else if info.base_tip.is_none() {
                check.problems.push(format!(
                    "the clone at {} has no branch {}; `owt remote setup {}` pushes it",
                    remote.path,
                    base.as_deref().unwrap_or("(base)"),
                    remote.name
                ));
            }
        }
        Err(e @ RemoteError::NoOwt { .. }) => check.problems.push(e.to_string()),
        Err(e) => check.problems.push(format!(
            "{e}; the owt there may be too old for remotes: `owt remote install {}` copies this one",
            remote.name
        )),
    }
    Ok(check)
}

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
    let path = quote_path(&remote.path);
    let toplevel = |ssh: &Ssh| -> Result<Option<String>, RemoteError> {
        let out = ssh.run(
            &format!("git -C {path} rev-parse --show-toplevel 2>/dev/null"),
            None,
            Duration::from_secs(30),
        )?;
        let top = String::from_utf8_lossy(&out.stdout).trim().to_string();
        Ok((out.status.success() && !top.is_empty()).then_some(top))
    };
    progress(&format!("Connecting to {}", remote.host));
    let mut how = "existing";
    let mut repository = toplevel(&ssh)?;
    if repository.is_none() {
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
                how = "cloned";
            } else {
                progress(&format!(
                    "Cloning there failed ({}); pushing from here instead",
                    crate::remote::ssh::last_line(&out.stderr)
                ));
            }
        }
        if how != "cloned" {
            progress(&format!(
                "Creating a repository at {} on {}",
                remote.path, remote.name
            ));
            let out = ssh.run(
                &format!(
                    "git init --quiet -b {b} {path} && git -C {path} config receive.denyCurrentBranch updateInstead",
                    b = quote(&base)
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
            how = "pushed";
        }
        repository = toplevel(&ssh)?;
    }
    let repository = repository.with_context(|| {
        format!(
            "{} on {} is not a git repository after setup",
            remote.path, remote.name
        )
    })?;
    let remote_tip = |ssh: &Ssh| -> Result<Option<String>, RemoteError> {
        let out = ssh.run(
            &format!(
                "git -C {path} rev-parse --verify --quiet {}",
                quote(&format!("refs/heads/{base}^{{commit}}"))
            ),
            None,
            Duration::from_secs(30),
        )?;
        let tip = String::from_utf8_lossy(&out.stdout).trim().to_string();
        Ok((out.status.success() && !tip.is_empty()).then_some(tip))
    };
    let local_tip = ctx.repo.branch_tip(&base)?.to_string();
    if remote_tip(&ssh)?.as_deref() != Some(local_tip.as_str()) {
        progress(&format!("Pushing {base} to {}", remote.name));
        push(ctx, &ssh, &repository, &base)?;
    }
    let base_tip = remote_tip(&ssh)?.unwrap_or_default();
    Ok(RemoteSetup {
        name: remote.name,
        path: repository,
        how: how.into(),
        base,
        base_tip,
    })
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
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(ctx.repo.main_root())
        .args(["push", "--quiet"])
        .arg(ssh.git_url(repository))
        .arg(format!("refs/heads/{base}:refs/heads/{base}"))
        .env("GIT_SSH_COMMAND", ssh.git_ssh_command())
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(std::process::Stdio::null())
        .output()
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

/// `owt remote install NAME`: copies this owt to the remote when its OS
/// and architecture match (else says how to build it there).
pub fn install(
    ctx: &Context,
    name: &str,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<RemoteInstall> {
    let (remote, ssh) = remote(ctx, name)?;
    let there = os_arch(&ssh)?;
    let here = local_os_arch();
    let dest = if remote.owt.contains('/') || remote.owt.starts_with('~') {
        remote.owt.clone()
    } else {
        format!("~/.local/bin/{}", remote.owt)
    };
    if there != here {
        return Ok(RemoteInstall {
            name: remote.name.clone(),
            installed: false,
            path: dest,
            version: None,
            how_to_build: Some(format!(
                "{} is `{there}` and this machine `{here}`, so this binary cannot run there; build owt on {} (`cargo install --path server` in a checkout of owt, Rust 1.85 or later) and set [remotes.{}] owt to its path",
                remote.name, remote.name, remote.name
            )),
        });
    }
    let exe = std::env::current_exe().context("finding this owt binary")?;
    let bytes = std::fs::read(&exe).with_context(|| format!("reading {}", exe.display()))?;
    progress(&format!(
        "Copying {} ({} MB) to {} on {}",
        exe.display(),
        bytes.len() / 1_000_000,
        dest,
        remote.name
    ));
    let (dir, _) = dest.rsplit_once('/').unwrap_or(("~", &dest));
    let tmp = format!("{dest}.owt-install-tmp");
    let script = format!(
        "set -e; mkdir -p {dir}; cat > {tmp}; chmod 755 {tmp}; mv -f {tmp} {dest}",
        dir = quote_path(dir),
        tmp = quote_path(&tmp),
        dest = quote_path(&dest)
    );
    let out = ssh.run(&script, Some(bytes), Duration::from_secs(1800))?;
    if !out.status.success() {
        bail!(
            "copying owt to {} failed: {}",
            remote.name,
            crate::remote::ssh::last_line(&out.stderr)
        );
    }
    let out = ssh.run(
        &format!("{} --json version", quote_path(&dest)),
        None,
        Duration::from_secs(60),
    )?;
    let version = serde_json::from_slice::<owt_protocol::VersionOutput>(&out.stdout)
        .ok()
        .map(|v| v.version);
    if version.is_none() {
        bail!(
            "owt was copied to {dest} on {} but does not run there: {}; build it there instead (`cargo install --path server`)",
            remote.name,
            crate::remote::ssh::last_line(&out.stderr)
        );
    }
    Ok(RemoteInstall {
        name: remote.name,
        installed: true,
        path: dest,
        version,
        how_to_build: None,
    })
}

/// What `owt new --on` did.
pub struct NewOnRemote {
    pub session: SessionRow,
    pub output: NewOutput,
    pub agent_started: bool,
}

/// `owt new --on NAME "task"`: the remote's owt creates the session (its
/// worktree, setup, hooks, host); it is recorded here as a remote session
/// and its bridge is started.
pub fn new_on(
    ctx: &mut Context,
    name: &str,
    req: &NewRequest,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<NewOnRemote> {
    if req.in_place {
        bail!("--in-place works in your own checkout; it cannot be combined with --on");
    }
    if req.task.contains('\0') {
        bail!("the task contains a NUL character, which no program can receive as an argument; remove it");
    }
    let (remote, ssh) = remote(ctx, name)?;
    let mut args = vec!["new".to_string(), req.task.clone()];
    let mut flag = |name: &str, value: &Option<String>| {
        if let Some(value) = value {
            args.extend([format!("--{name}"), value.clone()]);
        }
    };
    flag("name", &req.name);
    flag("branch", &req.branch);
    flag("base", &req.base);
    flag("ai-tool", &req.ai_tool);
    flag("template", &req.template);
    for (on, word) in [
        (req.headless, "--headless"),
        (req.plan, "--plan-mode"),
        (req.raw, "--raw"),
    ] {
        if on {
            args.push(word.to_string());
        }
    }
    progress(&format!("Starting the session on {}", remote.name));
    let (doc, out) = ssh.owt_json_status::<NewOutput>(&args, COMMAND_TIMEOUT)?;
    let Some(mut output) = doc else {
        return Err(ssh.owt_failure(&out).into());
    };
    let view = &output.session;
    let local = crate::remote::local_name(&remote.name, &view.name);
    let row = ctx.store.upsert_remote_session(&RemoteSessionRecord {
        repo_id: ctx.repo_row.id,
        remote: &remote.name,
        name: &local,
        task: &view.task,
        branch: &view.branch,
        base_branch: &view.base,
        worktree: &view.worktree,
        provider: &view.provider,
        kind: owt_protocol::SessionKind::Worktree,
        created_at: now_ms(),
    })?;
    if let Err(e) = keeper::ensure(ctx, &remote.name) {
        output.warnings.push(format!(
            "the bridge to {} did not start: {e:#}",
            remote.name
        ));
    }
    output.warnings = output
        .warnings
        .into_iter()
        .map(|w| format!("on {}: {w}", remote.name))
        .collect();
    Ok(NewOnRemote {
        session: row,
        output,
        agent_started: out.status.success(),
    })
}

/// The remote and its session name of a remote session's row.
fn remote_of(ctx: &Context, row: &SessionRow) -> anyhow::Result<(Remote, Ssh, String)> {
    let (remote_name, _) = row
        .remote()
        .with_context(|| format!("{} is not a remote session", row.name))?;
    let (_, name) = crate::remote::split_local_name(&row.name)
        .with_context(|| format!("{} is not named REMOTE:name", row.name))?;
    let (remote, ssh) = remote(ctx, remote_name)?;
    Ok((remote, ssh, name.to_string()))
}

/// Forgets the record of a remote session and its fetched refs.
fn forget(
    ctx: &mut Context,
    row: &SessionRow,
    remote: &str,
    name: &str,
    how: &str,
) -> anyhow::Result<()> {
    ctx.store.remove_session(row, how)?;
    let snapshot = crate::remote::snapshot_ref(remote, name);
    if let Ok(mut r) = ctx.repo.git2().find_reference(&snapshot) {
        let _ = r.delete();
    }
    Ok(())
}

/// `owt delete REMOTE:name`: the remote's owt deletes it (with its own
/// rules: uncommitted work needs `--force`, its trash keeps what git does
/// not); then the record here goes.
pub fn delete(
    ctx: &mut Context,
    row: &SessionRow,
    force: bool,
    how: &str,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<DeleteOutput> {
    let (remote, ssh, name) = remote_of(ctx, row)?;
    progress(&format!("Deleting {name} on {}", remote.name));
    let mut args = vec!["delete".to_string(), name.clone()];
    if force {
        args.push("--force".into());
    }
    let output = match ssh.owt_json::<DeleteOutput>(&args, COMMAND_TIMEOUT) {
        Ok(mut output) => {
            output.name = row.name.clone();
            output.trash = output.trash.map(|t| format!("{}:{t}", remote.name));
            output
        }
        Err(RemoteError::Failed { message, .. }) if message.starts_with("no session named") => {
            DeleteOutput {
                name: row.name.clone(),
                worktree_removed: false,
                branch_deleted: false,
                backup_ref: None,
                trash: None,
                trashed: Vec::new(),
                dropped: Vec::new(),
                discarded: Vec::new(),
                warnings: vec![format!("{name} was already gone on {}", remote.name)],
            }
        }
        Err(e @ RemoteError::Unreachable { .. }) => {
            return Err(anyhow::Error::new(e).context(format!(
                "deleting {} needs {} (nothing was changed)",
                row.name, remote.name
            )))
        }
        Err(e) => return Err(e.into()),
    };
    forget(ctx, row, &remote.name, &name, how)?;
    Ok(output)
}

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
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(ctx.repo.main_root())
        .args([
            "-c",
            "gc.auto=0",
            "fetch",
            "--quiet",
            "--no-tags",
            "--no-write-fetch-head",
        ])
        .arg(ssh.git_url(&repository))
        .arg(format!("+refs/heads/{}:{tracking}", commit.branch))
        .env("GIT_SSH_COMMAND", ssh.git_ssh_command())
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(std::process::Stdio::null())
        .output()
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
        None => {
            let commit: RemoteCommit = ssh.owt_json(
                &[
                    "__bridge".into(),
                    "commit".into(),
                    name.clone(),
                    "--dry-run".into(),
                ],
                COMMAND_TIMEOUT,
            )?;
            if !commit.dirty.is_empty() {
                bail!(
                    "session `{}` has uncommitted work on {} ({}); commit it, or use `owt ship {}`, which commits it first",
                    row.name,
                    remote.name,
                    commit.dirty.join(", "),
                    row.name
                );
            }
            commit
        }
    };
    progress(&format!("Fetching {} from {}", commit.branch, remote.name));
    let local_branch = fetch_branch(ctx, &ssh, row, &commit)?;
    let base_dir =
        crate::config::normalize(&ctx.config.config.base_directory(ctx.repo.main_root()));
    let admin = format!("owt-remote-{}-{}", remote.name, name);
    let checkout = base_dir.join(format!(".{admin}"));
    if !checkout.exists() {
        ctx.repo
            .add_worktree(&admin, &checkout, &local_branch, &commit.base, false)
            .with_context(|| format!("creating a worktree to merge {} in", row.name))?;
    }
    let merging = SessionRow {
        branch: local_branch.clone(),
        base_branch: row.base_branch.clone(),
        worktree_path: checkout.clone(),
        ..row.clone()
    };
    let merged = super::merge::merge_row(
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

/// `owt __bridge info` (on the remote): this owt and the clone.
pub fn info(dir: Option<&Path>, base: Option<&str>) -> RemoteInfo {
    let mut info = RemoteInfo {
        version: env!("CARGO_PKG_VERSION").to_string(),
        bridge_protocol: BRIDGE_PROTOCOL_VERSION,
        repository: None,
        error: None,
        base: base.map(str::to_string),
        base_tip: None,
    };
    let dir = dir
        .map(Path::to_path_buf)
        .or_else(|| std::env::current_dir().ok());
    match dir.as_deref().map(crate::git::Repo::discover) {
        Some(Ok(repo)) => {
            info.repository = Some(repo.main_root().to_string_lossy().into_owned());
            info.base_tip = base
                .and_then(|b| repo.branch_tip(b).ok())
                .map(|t| t.to_string());
        }
        Some(Err(e)) => info.error = Some(e.to_string()),
        None => info.error = Some("no folder given".into()),
    }
    info
}

/// `owt __bridge commit NAME` (on the remote): commits the session's work
/// (as `owt ship` does, hooks included); with `dry_run` only says what is
/// uncommitted.
pub fn commit(
    ctx: &Context,
    name: &str,
    message: Option<&str>,
    dry_run: bool,
) -> anyhow::Result<RemoteCommit> {
    let row = ctx.session(name)?;
    if row.remote().is_some() {
        bail!("{name} runs on another machine");
    }
    let dirt = crate::git::dirt(&row.worktree_path)?;
    let mut dirty = dirt.modified.clone();
    dirty.extend(dirt.untracked.iter().cloned());
    let never = super::owned::never_staged(ctx, &row);
    dirty.retain(|p| !never.contains(p));
    let committed = if dry_run || dirty.is_empty() {
        None
    } else {
        let message = message
            .map(str::to_string)
            .unwrap_or_else(|| super::merge::default_message(&row));
        crate::ship::commit_all(&row.worktree_path, &message, &never)
            .with_context(|| format!("committing the work of {name}"))?
    };
    Ok(RemoteCommit {
        session: row.name.clone(),
        branch: row.branch.clone(),
        base: row.base_branch.clone(),
        committed: committed.map(|c| c.to_string()),
        tip: ctx.repo.branch_tip(&row.branch)?.to_string(),
        dirty: if dry_run { dirty } else { Vec::new() },
    })
}
