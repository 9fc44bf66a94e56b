//! What `owt new` readies for the guard in the background (`owt
//! __prepare-guard`, detached, at a low priority), so that the
//! repository's first `owt guard` after it does less:
//!
//! - owt's commit-graph of the repository brought up to date with the
//!   session's branch and base (unless the repository has a graph of its
//!   own: [`crate::commit_graph`]);
//! - for a session started on a branch that already has changes (a
//!   review, a topic picked up again), the old versions of the files it
//!   changed parsed into the symbol cache on disk, around their hunks:
//!   what a first guard's signature changes parse first for that side
//!   ([`SymbolIndex::parse_old_versions`]). A new branch (at its base)
//!   has none.
//!
//! Invariants: writes only under `$OWT_HOME/cache/` (the graph's folder
//! and the symbol cache); reads the repository, writes nothing of it;
//! what goes wrong is logged and changes nothing else (both caches are
//! optimisations only).

use std::path::Path;

use git2::{Oid, Repository};

use crate::changes::{changes, HunkCache};
use crate::commit_graph::{merge_base, own_reader, CommitGraph};
use crate::symbols::{DiskCache, SymbolIndex};
use crate::GuardError;

/// What was readied.
#[derive(Debug, Default, PartialEq)]
pub struct Prepared {
    /// Whether owt's commit-graph was asked to hold the commits.
    pub graph: bool,
    /// Blobs parsed into the symbol cache.
    pub parsed: usize,
}

/// Readies the guard of the repository whose common git folder is
/// `git_dir` for a session at `tip` on `base` (`home`: `$OWT_HOME`);
/// parses nothing when `symbols` is off.
pub fn prepare(
    home: &Path,
    git_dir: &Path,
    tip: Oid,
    base: Oid,
    symbols: bool,
) -> Result<Prepared, GuardError> {
    let mut prepared = Prepared::default();
    let graph = CommitGraph::for_repo(home, git_dir);
    let history = match graph {
        Some(mut graph) => {
            graph.cover(&[tip, base]);
            prepared.graph = true;
            graph.reader()
        }
        None => own_reader(git_dir),
    };
    if !symbols || tip == base {
        return Ok(prepared);
    }
    let repo = Repository::open(git_dir)?;
    // One merge base, in a process that asks no more: git with a graph
    // answers at once where libgit2 walks a deep history.
    let history = history.map(|h| h.asked_first());
    let fork = merge_base(&repo, history.as_ref(), tip, base);
    if fork == tip {
        return Ok(prepared);
    }
    let old = repo.find_commit(fork)?.tree_id();
    let new = repo.find_commit(tip)?.tree_id();
    let changes = changes(&repo, Some(old), new, &mut HunkCache::default())?;
    let mut index = SymbolIndex::default();
    index.disk = Some(DiskCache::new(home));
    prepared.parsed = index.parse_old_versions(&repo, &changes);
    Ok(prepared)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::symbols::Lang;
    use crate::tests::{git, hermetic};

    const OLD: &str =
        "pub fn alpha(n: u32) -> u32 {\n    n + 1\n}\n\npub fn beta() -> i64 {\n    2\n}\n";
    const NEW: &str =
        "pub fn alpha(n: u64) -> u64 {\n    n + 1\n}\n\npub fn beta() -> i64 {\n    2\n}\n";

    /// A repository whose `main` holds `lib.rs` as [`OLD`] and whose
    /// branch `topic` changed it to [`NEW`]: (main, topic, old blob).
    fn repo_with_topic(dir: &Path) -> (Oid, Oid, Oid) {
        hermetic();
        git(dir, &["init", "-q", "-b", "main"]);
        std::fs::write(dir.join("lib.rs"), OLD).unwrap();
        git(dir, &["add", "lib.rs"]);
        git(dir, &["commit", "-q", "-m", "old"]);
        let id = |rev: &str| Oid::from_str(&git(dir, &["rev-parse", rev])).unwrap();
        let (main, old_blob) = (id("HEAD"), id("HEAD:lib.rs"));
        git(dir, &["checkout", "-q", "-b", "topic"]);
        std::fs::write(dir.join("lib.rs"), NEW).unwrap();
        git(dir, &["commit", "-q", "-am", "new"]);
        (main, id("HEAD"), old_blob)
    }

    #[test]
    fn a_branch_with_changes_has_its_old_versions_parsed_into_the_symbol_cache_once() {
        let work = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        let (main, topic, old_blob) = repo_with_topic(work.path());
        let git_dir = work.path().join(".git");
        let cached = || DiskCache::new(home.path()).get(old_blob, Lang::Rust);
        assert!(cached().is_none());

        // The symbol index off, or a branch at its base: the graph only.
        let only_graph = Prepared {
            graph: true,
            parsed: 0,
        };
        let prepared = prepare(home.path(), &git_dir, topic, main, false).unwrap();
        assert_eq!(prepared, only_graph);
        assert_eq!(
            prepare(home.path(), &git_dir, main, main, true).unwrap(),
            only_graph
        );
        assert!(cached().is_none());

        let prepared = prepare(home.path(), &git_dir, topic, main, true).unwrap();
        assert_eq!(prepared.parsed, 1);
        let symbols = cached().expect("the old version in the cache");
        let names: Vec<&str> = symbols.symbols.iter().map(|s| s.name.as_str()).collect();
        assert!(names.contains(&"alpha"), "{names:?}");
        // Found on disk the next time: nothing parsed again.
        assert_eq!(
            prepare(home.path(), &git_dir, topic, main, true)
                .unwrap()
                .parsed,
            0
        );
        // Nothing of the repository was written.
        assert_eq!(git(work.path(), &["status", "--porcelain"]), "");
        assert!(!git_dir.join("objects/info/commit-graphs").exists());
    }
}
