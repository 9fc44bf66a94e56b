//! Remotes: agents on other machines, reached with the user's own SSH.
//!
//! A remote is `[remotes.NAME]` (`host`, the clone's `path`, the `owt`
//! binary there). Its sessions are created by the remote's own owt
//! (`owt new --on NAME`, run over `ssh`) and recorded here as remote
//! sessions (`NAME:session`, worktree `remote://NAME/path`, see
//! [`crate::store::REMOTE_SCHEME`]). One *bridge* per remote and repository
//! keeps them current: a detached local process, the keeper
//! ([`keeper`], `owt __bridge keep`), runs `ssh -T HOST owt __bridge serve`
//! over a shared ControlMaster connection; the remote end ([`serve`])
//! pushes the sessions' facts as they change, writes each session's working
//! state as a commit under `refs/owt/snapshots/<session>` (which the keeper
//! `git fetch`es over the same SSH), and carries host-protocol bytes for
//! attach / send / peek on channels. The keeper serves each remote
//! session's host socket here (`$OWT_HOME/run/<short id>.sock`), so every
//! verb that talks to a host works unchanged.
//!
//! Invariants: everything rides `ssh` (no port of owt's own); every remote
//! command is an argv quoted word by word for the remote's POSIX shell;
//! remote names, hosts and paths are validated before use
//! ([`Remote::from_config`]); an unreachable remote records an
//! `unreachable` fact, never an exit, and nothing is deleted because of it.
//! See `docs/remote.md`.

pub mod keeper;
pub mod mirror;
pub mod serve;
pub mod snapshots;
pub mod ssh;

use std::path::{Path, PathBuf};

use crate::config::{Config, RemoteConfig};

#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    #[error("no remote named `{name}`; {known}")]
    Unknown { name: String, known: String },
    #[error("[remotes.{name}] {key}: {why}")]
    Invalid {
        name: String,
        key: &'static str,
        why: String,
    },
    /// `ssh` itself failed (connection, authentication, host key).
    #[error("cannot reach {remote} over ssh: {message}")]
    Unreachable { remote: String, message: String },
    /// The remote's owt is not there.
    #[error("owt is not installed on {remote} ({owt} was not found there); install it with `owt remote install {remote}`")]
    NoOwt { remote: String, owt: String },
    /// The remote's owt (or a command there) failed and said why.
    #[error("on {remote}: {message}")]
    Failed {
        remote: String,
        message: String,
        hint: Option<String>,
    },
    #[error("{0}")]
    Io(String),
}

/// A configured remote, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Remote {
    pub name: String,
    /// What `ssh` is given.
    pub host: String,
    /// The clone on the remote: absolute, or `~`-relative.
    pub path: String,
    /// The owt binary there: a bare name (looked up on its `PATH`, with
    /// `~/.local/bin` first) or a path.
    pub owt: String,
}

/// The longest remote name (it is part of session names and refs).
pub const MAX_NAME: usize = 24;

fn has_control(s: &str) -> bool {
    s.chars().any(|c| c.is_control())
}

impl Remote {
    /// Validates `[remotes.NAME]`: a name of lowercase letters, digits and
    /// dashes; a host `ssh` cannot mistake for an option; a path that is
    /// absolute or under `~`, without `..`; an `owt` that is a plain name
    /// or such a path.
    pub fn from_config(name: &str, config: &RemoteConfig) -> Result<Remote, RemoteError> {
        let invalid = |key: &'static str, why: String| RemoteError::Invalid {
            name: name.to_string(),
            key,
            why,
        };
        let name_ok = !name.is_empty()
            && name.len() <= MAX_NAME
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            && !name.starts_with('-');
        if !name_ok {
            return Err(invalid(
                "name",
                format!("a remote's name is 1 to {MAX_NAME} lowercase letters, digits and dashes (it becomes part of session names like `{}:fix-login`)", crate::printable::line(name)),
            ));
        }
        let host = config.host.trim();
        if host.is_empty() {
            return Err(invalid(
                "host",
                "missing: what you would give `ssh` (an alias of ~/.ssh/config, or user@host)"
                    .into(),
            ));
        }
        if host.starts_with('-') || host.chars().any(|c| c.is_whitespace()) || has_control(host) {
            return Err(invalid(
                "host",
                format!(
                    "`{}` is not a host ssh can be given (no leading `-`, no spaces or control characters); put options in ~/.ssh/config under a Host alias",
                    crate::printable::line(host)
                ),
            ));
        }
        let path = validate_path(&config.path).map_err(|why| invalid("path", why))?;
        let owt = config.owt.trim();
        let owt = if !owt.contains('/') && !owt.starts_with('~') {
            let plain = !owt.is_empty()
                && !owt.starts_with('-')
                && owt
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
            if !plain {
                return Err(invalid(
                    "owt",
                    format!(
                        "`{}` is neither a program name nor a path",
                        crate::printable::line(owt)
                    ),
                ));
            }
            owt.to_string()
        } else {
            validate_path(owt).map_err(|why| invalid("owt", why))?
        };
        Ok(Remote {
            name: name.to_string(),
            host: host.to_string(),
            path,
            owt,
        })
    }

    /// The remote called `name` in `config`, or an error listing them.
    pub fn named(config: &Config, name: &str) -> Result<Remote, RemoteError> {
        match config.remotes.get(name) {
            Some(remote) => Remote::from_config(name, remote),
            None => Err(RemoteError::Unknown {
                name: name.to_string(),
                known: if config.remotes.is_empty() {
                    "none is configured: add one to ~/.config/owt/config.toml, e.g.\n  [remotes.devbox]\n  host = \"me@devbox\"\n  path = \"~/src/app\"".into()
                } else {
                    format!(
                        "remotes: {}",
                        config
                            .remotes
                            .keys()
                            .cloned()
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                },
            }),
        }
    }
}

/// A remote path: absolute or `~`-relative (a relative one is taken as
/// relative to the remote home), no `..`, no control characters, no
/// leading `-`.
fn validate_path(path: &str) -> Result<String, String> {
    let path = path.trim();
    if path.is_empty() {
        return Err("missing: the repository's clone on the remote, e.g. \"~/src/app\"".into());
    }
    if has_control(path) || path.starts_with('-') {
        return Err(format!(
            "`{}` holds control characters or starts with `-`",
            crate::printable::line(path)
        ));
    }
    let path = if path.starts_with('/') || path == "~" || path.starts_with("~/") {
        path.to_string()
    } else if path.starts_with('~') {
        return Err(format!(
            "`{path}`: only your own home (`~/…`) can be named, not another user's"
        ));
    } else {
        format!("~/{path}")
    };
    if path.split('/').any(|part| part == "..") {
        return Err(format!("`{path}` holds `..`; name the folder directly"));
    }
    Ok(path.trim_end_matches('/').to_string())
}

/// Adds every remote session of the repository to a guard engine, as a
/// participant whose working state is its fetched snapshot commit.
pub fn add_guard_participants(
    ctx: &crate::context::Context,
    engine: &mut crate::guard::engine::GuardEngine,
) -> anyhow::Result<()> {
    use anyhow::Context as _;
    for row in ctx.store.remote_sessions(ctx.repo_row.id, None)? {
        let (Some((remote, _)), Some((_, name))) = (row.remote(), split_local_name(&row.name))
        else {
            continue;
        };
        let reference = snapshot_ref(remote, name);
        engine
            .add_snapshot_participant(
                crate::guard::engine::Participant {
                    id: row.name.clone(),
                    session_id: Some(row.id),
                    worktree: PathBuf::new(),
                    base_branch: row.base_branch.clone(),
                    journal: None,
                },
                &reference,
            )
            .with_context(|| format!("reading the snapshot of {}", row.name))?;
    }
    Ok(())
}

/// Every configured remote, validated (invalid ones as errors).
pub fn configured(config: &Config) -> Vec<Result<Remote, RemoteError>> {
    config
        .remotes
        .iter()
        .map(|(name, remote)| Remote::from_config(name, remote))
        .collect()
}

/// A remote session's local name: `REMOTE:name`.
pub fn local_name(remote: &str, name: &str) -> String {
    format!("{remote}:{name}")
}

/// `(remote, name)` of a local name `REMOTE:name`.
pub fn split_local_name(local: &str) -> Option<(&str, &str)> {
    local.split_once(':')
}

/// Where the keeper of `remote` for the repository `repo_id` keeps its
/// lock (held while it runs), state and log.
pub fn keeper_file(home: &Path, repo_id: i64, remote: &str, ext: &str) -> PathBuf {
    let folder = if ext == "log" { "logs" } else { "run" };
    home.join(folder)
        .join(format!("remote-{repo_id}-{remote}.{ext}"))
}

/// The local ref a remote session's fetched snapshot lives at.
pub fn snapshot_ref(remote: &str, session: &str) -> String {
    format!("refs/owt/remotes/{remote}/snapshots/{session}")
}

/// The ref a session's snapshot is written to on its own machine.
pub fn own_snapshot_ref(session: &str) -> String {
    format!("refs/owt/snapshots/{session}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn remote(host: &str, path: &str, owt: &str) -> Result<Remote, RemoteError> {
        Remote::from_config(
            "devbox",
            &RemoteConfig {
                host: host.into(),
                path: path.into(),
                owt: owt.into(),
            },
        )
    }

    #[test]
    fn remotes_are_validated_like_local_paths() {
        let ok = remote("me@devbox", "src/app/", "owt").unwrap();
        assert_eq!(ok.path, "~/src/app");
        assert_eq!(
            remote("devbox", "/srv/app", "~/bin/owt").unwrap().owt,
            "~/bin/owt"
        );
        assert_eq!(
            remote("ssh://me@devbox:2222", "~", "owt").unwrap().host,
            "ssh://me@devbox:2222"
        );
        for (host, path, owt, key) in [
            ("-oProxyCommand=sh", "~/a", "owt", "host"),
            ("dev box", "~/a", "owt", "host"),
            ("", "~/a", "owt", "host"),
            ("devbox", "", "owt", "path"),
            ("devbox", "~/a/../../etc", "owt", "path"),
            ("devbox", "~root/x", "owt", "path"),
            ("devbox", "-rf", "owt", "path"),
            ("devbox", "~/a\x1b[2J", "owt", "path"),
            ("devbox", "~/a", "owt; rm -rf ~", "owt"),
            ("devbox", "~/a", "-x", "owt"),
        ] {
            match remote(host, path, owt) {
                Err(RemoteError::Invalid { key: k, .. }) => {
                    assert_eq!(k, key, "{host} {path} {owt}")
                }
                other => panic!("{host:?} {path:?} {owt:?}: {other:?}"),
            }
        }
        for name in ["Dev", "dev_box", "", "-x", "a:b", &"x".repeat(MAX_NAME + 1)] {
            let err = Remote::from_config(
                name,
                &RemoteConfig {
                    host: "h".into(),
                    path: "~/a".into(),
                    owt: "owt".into(),
                },
            )
            .unwrap_err();
            assert!(
                matches!(err, RemoteError::Invalid { key: "name", .. }),
                "{name}"
            );
        }
    }

    #[test]
    fn an_unknown_remote_lists_the_known_ones() {
        let mut config = Config::default();
        let err = Remote::named(&config, "devbox").unwrap_err().to_string();
        assert!(err.contains("none is configured"), "{err}");
        config.remotes.insert(
            "gpu".into(),
            RemoteConfig {
                host: "gpu".into(),
                path: "~/app".into(),
                owt: "owt".into(),
            },
        );
        let err = Remote::named(&config, "devbox").unwrap_err().to_string();
        assert_eq!(err, "no remote named `devbox`; remotes: gpu");
    }
}
