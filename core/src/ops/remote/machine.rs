//! The remote machine: whether it is reachable with a compatible owt and
//! a clone (`owt remote check`), and this owt copied there (`owt remote
//! install`).

use std::time::Duration;

use anyhow::{bail, Context as _};
use owt_protocol::bridge::{RemoteInfo, BRIDGE_PROTOCOL_VERSION};
use owt_protocol::{RemoteCheck, RemoteInstall};

use super::remote;
use crate::ops::Context;
use crate::remote::ssh::{quote_path, Ssh};
use crate::remote::RemoteError;

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

/// Copies the local file `from` to `dest` on the remote `name` (through a
/// temporary file beside it, made executable, then renamed over it).
fn copy_there(
    ssh: &Ssh,
    from: &std::path::Path,
    dest: &str,
    name: &str,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<()> {
    let bytes = std::fs::read(from).with_context(|| format!("reading {}", from.display()))?;
    progress(&format!(
        "Copying {} ({} MB) to {} on {}",
        from.display(),
        bytes.len() / 1_000_000,
        dest,
        name
    ));
    let (dir, _) = dest.rsplit_once('/').unwrap_or(("~", dest));
    let tmp = format!("{dest}.owt-install-tmp");
    let script = format!(
        "set -e; mkdir -p {dir}; cat > {tmp}; chmod 755 {tmp}; mv -f {tmp} {dest}",
        dir = quote_path(dir),
        tmp = quote_path(&tmp),
        dest = quote_path(dest)
    );
    let out = ssh.run(&script, Some(bytes), Duration::from_secs(1800))?;
    if !out.status.success() {
        bail!(
            "copying {} to {name} failed: {}",
            from.display(),
            crate::remote::ssh::last_line(&out.stderr)
        );
    }
    Ok(())
}

/// `owt remote install NAME`: copies this owt (and the session host binary
/// beside it) to the remote when its OS and architecture match (else says
/// how to build it there).
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
    let exe = crate::platform::exe::owt().context("finding this owt binary")?;
    let (dir, _) = dest.rsplit_once('/').unwrap_or(("~", &dest));
    copy_there(&ssh, &exe, &dest, &remote.name, progress)?;
    // The session host binary beside it, when this owt has one: hosts
    // there then run it (and not an older one left there by a build).
    let host = crate::platform::exe::host_for(&exe);
    if host != exe {
        let host_dest = format!("{dir}/{}", crate::platform::exe::HOST_BINARY);
        copy_there(&ssh, &host, &host_dest, &remote.name, progress)?;
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
