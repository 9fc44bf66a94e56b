//! `owt remote list|check|setup|install`: machines agents may run on.

use std::path::Path;
use std::process::ExitCode;

use owt_protocol::{RemoteCheck, RemoteList};

use crate::ops::{self, Context};

#[derive(Debug, clap::Subcommand)]
#[command(after_help = "\
A remote is declared in ~/.config/owt/config.toml (or a trusted .owt.toml):
  [remotes.devbox]
  host = \"me@devbox\"     # anything ssh accepts: an alias of ~/.ssh/config, user@host, ssh://…
  path = \"~/src/app\"     # this repository's clone there
  owt = \"owt\"            # the owt binary there (default: owt, ~/.local/bin first)
Then: owt remote setup devbox; owt remote install devbox; owt new --on devbox \"task\".
Everything goes through your own ssh (keys or an agent; no password prompts); owt opens no port.
See docs/remote.md.")]
pub enum Command {
    /// The remotes configured, their sessions and bridges.
    List,
    /// Reachability, the owt there (version, protocol), and the clone.
    Check { name: String },
    /// Create the clone there: from this repository's origin, or a new
    /// repository with the base branch pushed from here.
    Setup { name: String },
    /// Copy this owt binary there, and the session host binary
    /// `owt-host` beside it (when the OS and architecture match; else say
    /// how to build it there).
    Install { name: String },
}

pub fn run(dir: Option<&Path>, out: &super::Out, cmd: Command) -> anyhow::Result<ExitCode> {
    let ctx = Context::open(dir)?;
    match cmd {
        Command::List => {
            let list = ops::remote::list(&ctx)?;
            out.emit(&list, || render_list(&list))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Check { name } => {
            let check = ops::remote::check(&ctx, &name)?;
            out.emit(&check, || render_check(&check))?;
            Ok(if check.problems.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
        Command::Setup { name } => {
            let setup = ops::remote::setup(&ctx, &name, &mut |line| out.progress(line))?;
            out.emit(&setup, || {
                format!(
                    "{}: the clone at {} is ready ({}); {} is at {}.",
                    setup.name,
                    setup.path,
                    match setup.how.as_str() {
                        "cloned" => "cloned from origin",
                        "pushed" => "created, base pushed from here",
                        _ => "already there",
                    },
                    setup.base,
                    &setup.base_tip[..10.min(setup.base_tip.len())]
                )
            })?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Install { name } => {
            let install = ops::remote::install(&ctx, &name, &mut |line| out.progress(line))?;
            out.emit(&install, || match &install.how_to_build {
                Some(how) => how.clone(),
                None => format!(
                    "Installed owt {} at {} on {}.",
                    install.version.as_deref().unwrap_or("?"),
                    install.path,
                    install.name
                ),
            })?;
            Ok(if install.installed {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
    }
}

/// `owt remote list` for a person: a line per remote with its bridge.
fn render_list(list: &RemoteList) -> String {
    if list.remotes.is_empty() {
        return "No remote is configured; add [remotes.NAME] with host and path to ~/.config/owt/config.toml (see `owt remote --help`).".into();
    }
    let now = crate::store::now_ms();
    list.remotes
        .iter()
        .map(|r| {
            let bridge = match &r.bridge {
                Some(b) if b.connected => {
                    format!("connected for {}", super::age(b.since, now))
                }
                Some(b) if b.running => format!(
                    "unreachable for {}{}{}",
                    super::age(b.since, now),
                    b.last_error
                        .as_deref()
                        .map(|e| format!(": {}", crate::printable::line(e)))
                        .unwrap_or_default(),
                    b.retry_in_s
                        .map(|s| format!(" (next try in {s}s)"))
                        .unwrap_or_default()
                ),
                _ => "no bridge running".into(),
            };
            format!(
                "{}  {}:{}  {} session{}  {bridge}",
                r.name,
                crate::printable::line(&r.host),
                crate::printable::line(&r.path),
                r.sessions,
                if r.sessions == 1 { "" } else { "s" }
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `owt remote check` for a person: reachability, the owt there, the
/// clone, then each problem.
fn render_check(check: &RemoteCheck) -> String {
    let mut lines = vec![format!(
        "{}: {}",
        check.name,
        if check.reachable {
            format!(
                "reachable ({})",
                check.os_arch.as_deref().unwrap_or("unknown system")
            )
        } else {
            "unreachable".into()
        }
    )];
    if let Some(version) = &check.owt_version {
        lines.push(format!(
            "owt {version} there, bridge protocol {}{}",
            check.bridge_protocol.unwrap_or(0),
            if check.compatible {
                " (compatible)"
            } else {
                " (incompatible)"
            }
        ));
    }
    if check.clone_ok {
        lines.push(format!(
            "clone at {}: {} {}",
            check.path,
            check.base.as_deref().unwrap_or("base"),
            match (&check.remote_base_tip, &check.local_base_tip) {
                (Some(a), Some(b)) if a == b => "as here".to_string(),
                (Some(a), _) => format!("at {}", &a[..10.min(a.len())]),
                (None, _) => "missing".to_string(),
            }
        ));
    }
    for problem in &check.problems {
        lines.push(format!("problem: {}", crate::printable::line(problem)));
    }
    lines.join("\n")
}
