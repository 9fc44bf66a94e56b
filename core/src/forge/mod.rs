//! Forges (GitHub, GitLab) through their own command-line clients, which
//! the user has already logged in: which forge hosts a remote, pushing a
//! branch, opening a pull (merge) request, reading one back. The watcher
//! that routes what happens on one to the agent is a use case,
//! `crate::ops::pr_monitor`.
//!
//! - [`cli`]: running `gh` / `glab` / `git push`, errors sorted by what to
//!   do about them;
//! - [`github`]: `gh` commands and their JSON;
//! - [`gitlab`]: `glab` commands and their JSON.
//!
//! Invariants: owt never talks to a forge's API itself and never holds a
//! token; every call is the forge CLI's argv (no shell) with prompts off
//! and a timeout; answers are parsed into [`PrSnapshot`] before anything
//! acts on them.

pub mod cli;
pub mod github;
pub mod gitlab;

use std::path::{Path, PathBuf};

use serde_json::Value;

pub use cli::ForgeError;

use crate::config::{ForgeKind, PrConfig};
use crate::status::feedback::{CiState, PrState, ReviewState};

/// Where a repository lives on its forge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoRef {
    /// `github.com`, `gitlab.example.com`, `127.0.0.1:8443`.
    pub host: String,
    /// Owner or group path (`group/subgroup` on GitLab).
    pub owner: String,
    pub name: String,
}

impl RepoRef {
    /// `HOST/OWNER/NAME`, as `gh --repo` and `glab --repo` take it.
    pub fn full(&self) -> String {
        format!("{}/{}/{}", self.host, self.owner, self.name)
    }

    /// `OWNER/NAME`.
    pub fn path(&self) -> String {
        format!("{}/{}", self.owner, self.name)
    }
}

/// Reads host, owner and name from a remote URL: `https://host[:port]/o/n(.git)`,
/// `ssh://[user@]host[:port]/o/n(.git)`, `[user@]host:o/n(.git)`.
pub fn parse_remote_url(url: &str) -> Option<RepoRef> {
    let url = url.trim();
    let (host, path) = if let Some(rest) = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
    {
        let (authority, path) = rest.split_once('/')?;
        let host = authority.rsplit('@').next()?;
        (host.to_string(), path)
    } else if let Some(rest) = url.strip_prefix("ssh://") {
        let (authority, path) = rest.split_once('/')?;
        let host = authority.rsplit('@').next()?;
        // The port is SSH's, not the forge's web port.
        let host = host.split(':').next()?;
        (host.to_string(), path)
    } else if !url.contains("://") && url.contains(':') && !url.starts_with('/') {
        let (authority, path) = url.split_once(':')?;
        let host = authority.rsplit('@').next()?;
        (host.to_string(), path)
    } else {
        return None;
    };
    let path = path.trim_end_matches('/');
    let path = path.strip_suffix(".git").unwrap_or(path);
    let (owner, name) = path.rsplit_once('/')?;
    let owner = owner.trim_matches('/');
    if host.is_empty() || owner.is_empty() || name.is_empty() {
        return None;
    }
    Some(RepoRef {
        host,
        owner: owner.to_string(),
        name: name.to_string(),
    })
}

/// The forge of a host: GitHub for `github.com`, GitLab for a host with
/// `gitlab` in its name; else what `[pr] forge` says.
pub fn detect(host: &str, configured: Option<ForgeKind>) -> Option<ForgeKind> {
    if let Some(kind) = configured {
        return Some(kind);
    }
    let host = host.to_ascii_lowercase();
    let bare = host.split(':').next().unwrap_or(&host);
    if bare == "github.com" || bare.ends_with(".github.com") {
        Some(ForgeKind::Github)
    } else if bare.split('.').any(|part| part.contains("gitlab")) {
        Some(ForgeKind::Gitlab)
    } else {
        None
    }
}

/// A remote of the repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Remote {
    pub name: String,
    pub url: String,
}

/// The remote to push to: `[pr] remote`, else the base branch's upstream
/// remote, else `origin`, else the only remote.
pub fn choose_remote(
    repo: &git2::Repository,
    base_branch: &str,
    configured: Option<&str>,
) -> Result<Remote, ForgeError> {
    let names: Vec<String> = repo
        .remotes()
        .map(|r| r.iter().flatten().map(str::to_string).collect())
        .unwrap_or_default();
    let upstream = repo
        .config()
        .ok()
        .and_then(|c| c.get_string(&format!("branch.{base_branch}.remote")).ok())
        .filter(|r| r != ".");
    let name = match configured {
        Some(name) => {
            if !names.iter().any(|n| n == name) {
                return Err(ForgeError::NoRemote(format!(
                    "[pr] remote = {name:?}, but the repository has no such remote ({})",
                    if names.is_empty() {
                        "it has none".to_string()
                    } else {
                        format!("it has {}", names.join(", "))
                    }
                )));
            }
            name.to_string()
        }
        None => match (upstream, names.as_slice()) {
            (Some(up), _) if names.contains(&up) => up,
            (_, []) => {
                return Err(ForgeError::NoRemote(
                    "the repository has no remote to push to: add one (`git remote add origin URL`), or set [pr] remote".into(),
                ))
            }
            (_, names) if names.iter().any(|n| n == "origin") => "origin".into(),
            (_, [only]) => only.clone(),
            (_, names) => {
                return Err(ForgeError::NoRemote(format!(
                    "the repository has several remotes ({}) and none is `origin`: set [pr] remote",
                    names.join(", ")
                )))
            }
        },
    };
    let url = repo
        .find_remote(&name)
        .ok()
        .and_then(|r| r.url().map(str::to_string))
        .ok_or_else(|| ForgeError::NoRemote(format!("the remote `{name}` has no URL")))?;
    Ok(Remote { name, url })
}

/// A forge as owt talks to it: which one, its CLI, the repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forge {
    pub kind: ForgeKind,
    /// The CLI's name as configured (for messages).
    pub cli_name: String,
    pub cli: PathBuf,
    pub repo: RepoRef,
}

impl Forge {
    /// The forge of `remote`'s URL, with its CLI found on `PATH`.
    pub fn for_remote(remote: &Remote, config: &PrConfig) -> Result<Forge, ForgeError> {
        let repo = parse_remote_url(&remote.url).ok_or_else(|| {
            ForgeError::NoRemote(format!(
                "cannot read the forge's OWNER/NAME from the URL of `{}` ({}); a pull request needs a remote on a forge",
                remote.name, remote.url
            ))
        })?;
        let kind = detect(&repo.host, config.forge).ok_or_else(|| {
            ForgeError::NoRemote(format!(
                "cannot tell which forge hosts {} (the remote `{}`): set [pr] forge = \"github\" or \"gitlab\"",
                repo.host, remote.name
            ))
        })?;
        Forge::with(kind, repo, config.cli.as_deref())
    }

    /// A forge of a kind for a known repository (as a `pr` fact names it).
    pub fn with(kind: ForgeKind, repo: RepoRef, cli: Option<&str>) -> Result<Forge, ForgeError> {
        let cli_name = cli.unwrap_or(kind.default_cli()).to_string();
        let cli = cli::find_program(&crate::config::expand_home(&cli_name).to_string_lossy())
            .ok_or_else(|| {
                let (what, install) = match kind {
                    ForgeKind::Github => ("The GitHub CLI", "Debian/Ubuntu: `apt install gh`; others: https://cli.github.com"),
                    ForgeKind::Gitlab => ("The GitLab CLI", "https://gitlab.com/gitlab-org/cli"),
                };
                ForgeError::NoCli(format!(
                    "{what} `{cli_name}` is not installed (not on PATH); install it ({install}) and log in, or set [pr] cli"
                ))
            })?;
        Ok(Forge {
            kind,
            cli_name,
            cli,
            repo,
        })
    }

    /// Opens a pull request of `head` into `base`; `(number, url)`. One
    /// that exists for `head` already is returned as it is.
    pub fn create_pr(
        &self,
        head: &str,
        base: &str,
        title: &str,
        body: &str,
        draft: bool,
    ) -> Result<(u64, String), ForgeError> {
        match self.kind {
            ForgeKind::Github => github::create_pr(self, head, base, title, body, draft),
            ForgeKind::Gitlab => gitlab::create_pr(self, head, base, title, body, draft),
        }
    }

    /// The pull request as it is now.
    pub fn view_pr(&self, number: u64) -> Result<PrSnapshot, ForgeError> {
        match self.kind {
            ForgeKind::Github => github::view_pr(self, number),
            ForgeKind::Gitlab => gitlab::view_pr(self, number),
        }
    }

    /// The end of a failing CI job's log.
    pub fn failed_log(&self, check: &FailingCheck) -> Result<String, ForgeError> {
        match self.kind {
            ForgeKind::Github => github::failed_log(self, check),
            ForgeKind::Gitlab => gitlab::failed_log(self, check),
        }
    }

    /// When the rate limit resets (Unix seconds), if the forge says.
    pub fn rate_limit_reset(&self) -> Option<i64> {
        match self.kind {
            ForgeKind::Github => github::rate_limit_reset(self),
            ForgeKind::Gitlab => None,
        }
    }

    /// Runs the forge CLI with `parts` and reads the JSON it prints;
    /// `what` names the command in the error ("gh pr view").
    pub(crate) fn call_json(&self, parts: &[&str], what: &str) -> Result<Value, ForgeError> {
        let out = self.call(&args(parts), None)?;
        serde_json::from_str(&out.stdout)
            .map_err(|e| ForgeError::Failed(format!("{what} printed no JSON: {e}")))
    }

    pub(crate) fn call(
        &self,
        args: &[String],
        stdin: Option<&str>,
    ) -> Result<cli::Output, ForgeError> {
        // `gh api` takes its host from GH_HOST (its --hostname refuses a
        // port); the other commands from --repo.
        let env = vec![
            ("GH_HOST".to_string(), self.repo.host.clone()),
            ("GITLAB_HOST".to_string(), self.repo.host.clone()),
        ];
        let out = cli::run(&self.cli, args, None, &env, stdin, cli::CALL_TIMEOUT).map_err(|e| {
            if e.contains("did not answer") {
                ForgeError::Network {
                    host: self.repo.host.clone(),
                    detail: e,
                }
            } else {
                ForgeError::Failed(e)
            }
        })?;
        if out.ok() {
            Ok(out)
        } else {
            let mut err = cli::classify(&self.cli_name, &self.repo.host, &out);
            if let ForgeError::RateLimited { reset_at, .. } = &mut err {
                *reset_at = self.rate_limit_reset();
            }
            Err(err)
        }
    }
}

/// `parts` as the owned arguments of a forge CLI call.
pub(crate) fn args(parts: &[&str]) -> Vec<String> {
    parts.iter().map(|s| s.to_string()).collect()
}

/// The number after `marker` in a pull or merge request URL
/// (`…/pull/12`, `…/merge_requests/12#note`).
pub(crate) fn number_after(url: &str, marker: &str) -> Option<u64> {
    url.trim()
        .trim_end_matches('/')
        .rsplit_once(marker)
        .and_then(|(_, n)| n.split(['/', '#', '?']).next())
        .and_then(|n| n.parse().ok())
}

/// The string at `key` of a JSON object ("" when absent).
pub(crate) fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// Pushes `branch` of the checkout at `dir` to `remote` (never forced).
pub fn push(dir: &Path, remote: &str, branch: &str) -> Result<(), ForgeError> {
    let git = cli::find_program("git")
        .ok_or_else(|| ForgeError::NoCli("git is not installed (not on PATH)".into()))?;
    let refspec = format!("refs/heads/{branch}:refs/heads/{branch}");
    let args = vec![
        "push".to_string(),
        "--porcelain".into(),
        remote.into(),
        refspec,
    ];
    let out = cli::run(&git, &args, Some(dir), &[], None, cli::CALL_TIMEOUT).map_err(|e| {
        ForgeError::Network {
            host: remote.into(),
            detail: e,
        }
    })?;
    if out.ok() {
        Ok(())
    } else {
        Err(cli::classify_push(remote, &out))
    }
}

/// A failing CI check of a pull request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailingCheck {
    pub name: String,
    pub url: String,
    /// The CI run's id (GitHub Actions), or the job's (GitLab).
    pub run_id: Option<u64>,
}

/// A comment to route: a conversation comment, a review's text, or an
/// inline review comment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForgeComment {
    /// Stable id on the forge (kept to tell each once).
    pub id: String,
    pub author: String,
    /// `path:line` of an inline comment.
    pub place: Option<String>,
    pub body: String,
    /// The author works on the repository: GitHub's author association
    /// `OWNER`, `MEMBER` or `COLLABORATOR`; a GitLab member with Developer
    /// access or more. What `[feedback] comment_authors = "collaborators"`
    /// routes.
    pub collaborator: bool,
}

/// A pull request as the forge shows it now.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PrSnapshot {
    pub number: u64,
    pub url: String,
    pub state: PrState,
    pub draft: bool,
    pub ci: CiState,
    pub failing: Vec<FailingCheck>,
    pub review: ReviewState,
    /// `mergeable`, `conflicting` or `unknown`.
    pub mergeable: String,
    pub head: Option<String>,
    pub comments: Vec<ForgeComment>,
}

/// The overall CI state of a set of checks: failing if any failed, pending
/// if any is not done, passing if all passed, none without checks.
pub fn ci_of<'a>(states: impl Iterator<Item = CiState> + 'a) -> CiState {
    let mut any = false;
    let mut pending = false;
    for state in states {
        any = true;
        match state {
            CiState::Failing => return CiState::Failing,
            CiState::Pending => pending = true,
            _ => {}
        }
    }
    match (any, pending) {
        (false, _) => CiState::None,
        (true, true) => CiState::Pending,
        (true, false) => CiState::Passing,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_urls_of_every_shape() {
        for (url, host, owner, name) in [
            ("https://github.com/o/r.git", "github.com", "o", "r"),
            ("https://github.com/o/r", "github.com", "o", "r"),
            (
                "https://user:tok@github.com/o/r.git",
                "github.com",
                "o",
                "r",
            ),
            ("git@github.com:o/r.git", "github.com", "o", "r"),
            (
                "ssh://git@gitlab.example.com:2222/g/sub/r.git",
                "gitlab.example.com",
                "g/sub",
                "r",
            ),
            (
                "https://127.0.0.1:8443/owt-test/app.git",
                "127.0.0.1:8443",
                "owt-test",
                "app",
            ),
        ] {
            let got = parse_remote_url(url).unwrap_or_else(|| panic!("{url}"));
            assert_eq!(
                (got.host.as_str(), got.owner.as_str(), got.name.as_str()),
                (host, owner, name),
                "{url}"
            );
        }
        for url in [
            "/srv/git/app.git",
            "../bare.git",
            "file:///srv/app.git",
            "https://host/",
        ] {
            assert_eq!(parse_remote_url(url), None, "{url}");
        }
    }

    #[test]
    fn the_forge_is_told_from_the_host_unless_configured() {
        assert_eq!(detect("github.com", None), Some(ForgeKind::Github));
        assert_eq!(detect("gitlab.com", None), Some(ForgeKind::Gitlab));
        assert_eq!(
            detect("gitlab.corp.example:8443", None),
            Some(ForgeKind::Gitlab)
        );
        assert_eq!(detect("git.example.com", None), None);
        assert_eq!(
            detect("127.0.0.1:8443", Some(ForgeKind::Github)),
            Some(ForgeKind::Github)
        );
    }

    #[test]
    fn ci_is_failing_if_any_fails_pending_while_any_runs() {
        use CiState::*;
        assert_eq!(ci_of([Passing, Failing, Pending].into_iter()), Failing);
        assert_eq!(ci_of([Passing, Pending].into_iter()), Pending);
        assert_eq!(ci_of([Passing, Passing].into_iter()), Passing);
        assert_eq!(ci_of(std::iter::empty()), None);
    }
}
