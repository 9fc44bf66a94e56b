//! Working states across machines, as git commits.
//!
//! On the remote, each session's snapshot (the tree Conflict Guard builds
//! from its committed, staged, unstaged and untracked work) is written as a
//! commit — tree = the snapshot, parent = the session's HEAD — under
//! `refs/owt/snapshots/<session>` ([`write`]). Here, `git fetch` brings
//! them over the bridge's SSH connection into
//! `refs/owt/remotes/<remote>/snapshots/<session>` ([`fetch`]): an
//! incremental pack of what changed, whatever the size of the repository.
//! The local guard reads them as participants without a checkout
//! ([`crate::guard::engine::GuardEngine::add_snapshot_participant`]).
//!
//! Invariants: only refs under `refs/owt/snapshots/` (there) and
//! `refs/owt/remotes/<remote>/snapshots/` (here) are ever written or
//! removed; a snapshot commit is written only when its tree or parent
//! changed.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

use git2::{Oid, Repository};

use super::ssh::Ssh;

/// Writes `session`'s snapshot commit (when its tree or parent changed);
/// returns the new commit.
pub fn write(
    repo: &Repository,
    session: &str,
    tree: Oid,
    head: Option<Oid>,
) -> Result<Option<Oid>, git2::Error> {
    let name = super::own_snapshot_ref(session);
    if let Ok(existing) = repo.find_reference(&name).and_then(|r| r.peel_to_commit()) {
        if existing.tree_id() == tree && existing.parent_id(0).ok() == head {
            return Ok(None);
        }
    }
    let now = crate::store::now_ms() / 1000;
    let signature = git2::Signature::new("owt", "owt@localhost", &git2::Time::new(now, 0))?;
    let tree = repo.find_tree(tree)?;
    let parent = match head {
        Some(head) => Some(repo.find_commit(head)?),
        None => None,
    };
    let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
    let commit = repo.commit(
        None,
        &signature,
        &signature,
        &format!("owt snapshot of {session}"),
        &tree,
        &parents,
    )?;
    repo.reference(&name, commit, true, "owt snapshot")?;
    Ok(Some(commit))
}

/// Removes the snapshot refs of sessions not in `keep`; returns their names.
pub fn remove_others(repo: &Repository, keep: &BTreeSet<String>) -> Vec<String> {
    let mut removed = Vec::new();
    let Ok(refs) = repo.references_glob("refs/owt/snapshots/*") else {
        return removed;
    };
    let names: Vec<String> = refs
        .flatten()
        .filter_map(|r| r.name().map(str::to_string))
        .collect();
    for name in names {
        let session = name.trim_start_matches("refs/owt/snapshots/").to_string();
        if !keep.contains(&session) {
            if let Ok(mut r) = repo.find_reference(&name) {
                if r.delete().is_ok() {
                    removed.push(session);
                }
            }
        }
    }
    removed
}

/// What one fetch did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fetched {
    pub elapsed: Duration,
}

/// Fetches every snapshot ref of the remote's clone at `repository` into
/// `refs/owt/remotes/<remote>/snapshots/`, pruning those gone there, over
/// the remote's shared SSH connection.
pub fn fetch(local_repo: &Path, ssh: &Ssh, repository: &str) -> Result<Fetched, String> {
    let started = Instant::now();
    let refspec = format!(
        "+refs/owt/snapshots/*:refs/owt/remotes/{}/snapshots/*",
        ssh.remote.name
    );
    let mut args: Vec<String> = [
        "-c",
        "gc.auto=0",
        "-c",
        "maintenance.auto=false",
        "-c",
        "fetch.writeCommitGraph=false",
        "fetch",
        "--prune",
        "--no-tags",
        "--no-write-fetch-head",
        "--quiet",
    ]
    .map(String::from)
    .into();
    args.push(ssh.git_url(repository));
    args.push(refspec);
    let out = crate::platform::git::GitCli::new(local_repo)
        .env("GIT_SSH_COMMAND", ssh.git_ssh_command())
        .output(&args)
        .map_err(|e| format!("cannot run git fetch: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "git fetch of the snapshots of {} failed: {}",
            ssh.remote.name,
            super::ssh::last_line(&out.stderr)
        ));
    }
    Ok(Fetched {
        elapsed: started.elapsed(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_commit_is_written_only_when_it_changed() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        let sig = git2::Signature::new("t", "t@t", &git2::Time::new(1, 0)).unwrap();
        let empty = repo.treebuilder(None).unwrap().write().unwrap();
        let head = repo
            .commit(
                None,
                &sig,
                &sig,
                "base",
                &repo.find_tree(empty).unwrap(),
                &[],
            )
            .unwrap();
        let blob = repo.blob(b"hello\n").unwrap();
        let mut builder = repo.treebuilder(None).unwrap();
        builder.insert("a.txt", blob, 0o100644).unwrap();
        let tree = builder.write().unwrap();

        let first = write(&repo, "fix-login", tree, Some(head))
            .unwrap()
            .unwrap();
        let commit = repo.find_commit(first).unwrap();
        assert_eq!(commit.tree_id(), tree);
        assert_eq!(commit.parent_id(0).unwrap(), head);
        assert_eq!(
            repo.refname_to_id("refs/owt/snapshots/fix-login").unwrap(),
            first
        );
        assert_eq!(write(&repo, "fix-login", tree, Some(head)).unwrap(), None);
        let second = write(&repo, "fix-login", empty, Some(head))
            .unwrap()
            .unwrap();
        assert_ne!(second, first);

        write(&repo, "other", tree, None).unwrap().unwrap();
        let keep: BTreeSet<String> = ["fix-login".to_string()].into();
        assert_eq!(remove_others(&repo, &keep), ["other"]);
        assert!(repo.find_reference("refs/owt/snapshots/other").is_err());
        assert!(repo.find_reference("refs/owt/snapshots/fix-login").is_ok());
    }
}
