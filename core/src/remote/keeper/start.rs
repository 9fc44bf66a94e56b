//! Starting a keeper, detached, from the verbs that need one.

use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::Context as _;

use super::super::keeper_file;
use super::state::{is_running, private_dir};
use crate::context::Context;

/// Starts the keeper of `remote` for the repository of `ctx` unless one
/// runs (detached, in its own session; its log is
/// `$OWT_HOME/logs/remote-<repo>-<name>.log`).
pub fn ensure(ctx: &Context, remote: &str) -> anyhow::Result<()> {
    if is_running(&ctx.home, ctx.repo_row.id, remote) {
        return Ok(());
    }
    let exe = crate::platform::exe::owt_to_run().context("finding the owt binary")?;
    let log_path = keeper_file(&ctx.home, ctx.repo_row.id, remote, "log");
    if let Some(parent) = log_path.parent() {
        private_dir(parent)?;
    }
    let log = {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(&log_path)
            .with_context(|| format!("opening {}", log_path.display()))?
    };
    let mut cmd = std::process::Command::new(exe);
    cmd.arg("-C")
        .arg(ctx.repo.main_root())
        .args(["__bridge", "keep", "--remote", remote])
        .env("OWT_HOME", &ctx.home)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    crate::platform::process::new_session_on_exec(&mut cmd, None);
    let mut child = cmd.spawn().context("starting the bridge keeper")?;
    std::thread::spawn(move || {
        let _ = child.wait();
    });
    Ok(())
}

/// Starts the keepers of every remote the repository has sessions on.
pub fn ensure_all(ctx: &Context) {
    let Ok(rows) = ctx.store.remote_sessions(ctx.repo_row.id, None) else {
        return;
    };
    let mut remotes: Vec<&str> = rows
        .iter()
        .filter_map(|r| r.remote().map(|x| x.0))
        .collect();
    remotes.sort_unstable();
    remotes.dedup();
    for remote in remotes {
        if let Err(e) = ensure(ctx, remote) {
            tracing::warn!(remote, "starting the bridge keeper failed: {e:#}");
        }
    }
}

/// Makes sure a remote session's host socket is served here (its keeper
/// runs), waiting a little for a keeper just started.
pub fn ensure_socket(ctx: &Context, row: &crate::store::SessionRow) {
    let Some((remote, _)) = row.remote() else {
        return;
    };
    if let Err(e) = ensure(ctx, remote) {
        tracing::warn!(remote, "starting the bridge keeper failed: {e:#}");
        return;
    }
    let socket = crate::session::socket_path(&ctx.home, &row.short_id);
    let deadline = Instant::now() + Duration::from_secs(5);
    while !socket.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
}
