//! owt's own commit-graph of a repository whose history has none.
//!
//! git reads a commit's parents from a commit-graph file instead of
//! inflating the commit. A fresh clone has none (git writes one in `gc`
//! and `maintenance`), and there git's merge of two forks' commits
//! (several merge bases, merged recursively: [`super::merge::merge_commits_batch`])
//! spends most of its time inflating commits to find them (on git/git's
//! history, most of a merge). So before git walks a history for the
//! guard, owt brings a graph of its own up to date with the commits asked
//! (`git commit-graph write --split --stdin-commits`: git adds only the
//! commits it does not hold yet, as a new layer, and merges the layers as
//! they grow; the first time git reads every commit once) and names its
//! folder to git as an alternate object folder
//! (`GIT_ALTERNATE_OBJECT_DIRECTORIES`) that holds no objects, only the
//! graph, which git then reads.
//!
//! Invariants: the graph lives under `$OWT_HOME/cache/commit-graphs/`, a
//! folder per repository (its `repository` file names it; the first write
//! of a process removes the folders of repositories that are gone);
//! nothing of the repository is written (objects, graph, config); a
//! repository with a graph of its own gets none (git
//! reads the repository's first); a graph holds facts that never change
//! under a commit's id, so one that lacks commits only makes git slower
//! (it parses the commits missing); one owt process writes a graph at a
//! time (the folder's `lock`, held while git writes: git takes its own
//! lock only once it has read the history, so two first writes would
//! both read it), the others wait for it ([`WAIT_FOR_WRITER`] at most); a
//! write that fails changes nothing and is no error.
//!
//! The first write of a repository's graph is the costly one (and a
//! session's commits new to the graph cost it a layer): `owt new` starts
//! one in the background for the new session's commits (`owt
//! __commit-graph`: owt-core's `ops::guard::prepare_history`), so the
//! guard's first run finds them written.

use std::collections::HashSet;
use std::ffi::OsString;
use std::fs::File;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use git2::{ObjectType, Oid, Repository};

use crate::platform::git::GitCli;

/// The graphs' folder under `$OWT_HOME`.
const DIR: &str = "cache/commit-graphs";
/// The lock file in a graph's folder, held (`flock`) while a graph is
/// written (see the module doc).
const LOCK: &str = "lock";
/// How long a write waits for another process's write to end before it
/// gives up (git then reads the commits the graph lacks itself).
pub const WAIT_FOR_WRITER: Duration = Duration::from_secs(60);
/// The variable that names alternate object folders to git.
pub const ENV: &str = "GIT_ALTERNATE_OBJECT_DIRECTORIES";

/// One repository's graph (see the module doc).
#[derive(Debug)]
pub struct CommitGraph {
    /// The repository's common git folder.
    git_dir: PathBuf,
    /// The object folder owt owns (`info/commit-graphs/` in it).
    dir: PathBuf,
    /// [`ENV`]'s value for git: `dir`, then the one owt was given.
    alternates: OsString,
    /// Commits given to git already (their history is in the graph).
    written: HashSet<Oid>,
    /// [`GraphGit`]'s flag, for every reader of this graph.
    slow: Arc<AtomicBool>,
}

/// Whether the objects folder `objects` holds a commit-graph git reads.
fn has_graph(objects: &Path) -> bool {
    let info = objects.join("info");
    info.join("commit-graph").exists()
        || info
            .join("commit-graphs")
            .join("commit-graph-chain")
            .exists()
}

/// A libgit2 walk for merge bases that takes this long or more makes
/// the rest of an engine's questions go to git ([`merge_bases`]): about
/// what a `git merge-base` process costs.
const SLOW_WALK: Duration = Duration::from_millis(15);

/// git asked about a repository's history where it reads a commit-graph
/// (the repository's own, or owt's: [`CommitGraph::reader`]): there
/// `git merge-base` answers in milliseconds where libgit2, which cannot
/// read the graphs git writes today (generation data, version 2), parses
/// commits for tens of milliseconds a question on a big history.
#[derive(Debug, Clone)]
pub struct GraphGit {
    /// git in the repository (with [`ENV`] for owt's graph).
    git: GitCli,
    /// Whether a libgit2 walk here took [`SLOW_WALK`] or more (shared by
    /// the clones an engine hands its checkouts).
    slow: Arc<AtomicBool>,
}

impl GraphGit {
    /// The best common ancestors of `one` and a merge of all of `others`
    /// (`git merge-base --all`), sorted; `None` when git could not answer
    /// (the caller asks libgit2).
    fn ask(&self, one: Oid, others: &[Oid]) -> Option<Vec<Oid>> {
        let mut args = vec!["merge-base".to_string(), "--all".into(), one.to_string()];
        args.extend(others.iter().map(Oid::to_string));
        let out = self.git.output(&args).ok()?;
        // 1 with nothing printed: no common ancestor.
        match out.status.code() {
            Some(0) | Some(1) => {}
            _ => return None,
        }
        let found: Vec<Oid> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(Oid::from_str)
            .collect::<Result<_, _>>()
            .ok()?;
        if out.status.code() == Some(1) && !found.is_empty() {
            return None;
        }
        Some(found)
    }
}

/// The best common ancestors of `one` and a merge of all of `others` in
/// `repo` (`git merge-base --all one others…`), sorted: libgit2's walk,
/// or git's answer once `git` is given and a libgit2 walk of this engine
/// took [`SLOW_WALK`] or more (a deep history: git reads the graph; a
/// shallow one costs libgit2 less than starting git).
pub fn merge_bases(
    repo: &Repository,
    git: Option<&GraphGit>,
    one: Oid,
    others: &[Oid],
) -> Result<Vec<Oid>, git2::Error> {
    let asked = git
        .filter(|git| git.slow.load(Ordering::Relaxed))
        .and_then(|git| git.ask(one, others));
    let mut found = match asked {
        Some(found) => found,
        None => {
            let started = Instant::now();
            let mut input = vec![one];
            input.extend(others);
            let found = match repo.merge_bases_many(&input) {
                Ok(array) => array.iter().copied().collect(),
                Err(e) if e.code() == git2::ErrorCode::NotFound => Vec::new(),
                Err(e) => return Err(e),
            };
            if let Some(git) = git.filter(|_| started.elapsed() >= SLOW_WALK) {
                git.slow.store(true, Ordering::Relaxed);
            }
            found
        }
    };
    found.sort();
    found.dedup();
    Ok(found)
}

/// The merge base of `head` and `base` in `repo` ([`merge_bases`]): of
/// several, the least id (the same whichever answers); `head` when they
/// share no history or cannot be walked.
pub fn merge_base(repo: &Repository, git: Option<&GraphGit>, head: Oid, base: Oid) -> Oid {
    let bases = merge_bases(repo, git, head, &[base]).unwrap_or_default();
    bases.into_iter().min().unwrap_or(head)
}

/// git asked about the history of the repository at `git_dir` (its
/// common git folder), when it holds a commit-graph of its own.
pub fn own_reader(git_dir: &Path) -> Option<GraphGit> {
    has_graph(&git_dir.join("objects")).then(|| GraphGit {
        git: GitCli::new(git_dir),
        slow: Arc::default(),
    })
}

impl CommitGraph {
    /// The graph for the repository whose common git folder is `git_dir`,
    /// under `home` (`$OWT_HOME`); `None` when the repository has a graph
    /// of its own, or the folder cannot be named to git (a `:` in it).
    /// Nothing is made until [`Self::cover`] is asked.
    pub fn for_repo(home: &Path, git_dir: &Path) -> Option<CommitGraph> {
        if has_graph(&git_dir.join("objects")) {
            return None;
        }
        let canonical = std::fs::canonicalize(git_dir).ok()?;
        let key =
            Oid::hash_object(ObjectType::Blob, canonical.to_string_lossy().as_bytes()).ok()?;
        let dir = home.join(DIR).join(&key.to_string()[..16]);
        let named = dir.to_str()?;
        if named.contains(':') || named.starts_with('"') {
            return None;
        }
        let mut alternates = OsString::from(named);
        if let Some(given) = std::env::var_os(ENV).filter(|v| !v.is_empty()) {
            alternates.push(":");
            alternates.push(given);
        }
        Some(CommitGraph {
            git_dir: canonical,
            dir,
            alternates,
            written: HashSet::new(),
            slow: Arc::default(),
        })
    }

    /// Makes the graph hold `commits` and their history (best effort: see
    /// the module doc). Commits given before in this process are not
    /// asked again.
    pub fn cover(&mut self, commits: &[Oid]) {
        let mut new: Vec<Oid> = commits
            .iter()
            .filter(|c| !self.written.contains(c))
            .copied()
            .collect();
        new.sort();
        new.dedup();
        if new.is_empty() {
            return;
        }
        let made = std::os::unix::fs::DirBuilderExt::mode(
            std::fs::DirBuilder::new().recursive(true),
            0o700,
        )
        .create(self.dir.join("info"));
        if let Err(e) = made {
            tracing::debug!("commit graph: no folder ({e})");
            return;
        }
        if self.written.is_empty() {
            // Once a process: the graphs of repositories that are gone go,
            // and this one's names its repository.
            if let Some(root) = self.dir.parent() {
                prune_gone(root, &self.dir);
            }
            let _ = std::fs::write(
                self.dir.join("repository"),
                format!("{}\n", self.git_dir.display()),
            );
        }
        // Held until this write ends (dropped with the file).
        let Some(_lock) = self.wait_for_lock() else {
            return;
        };
        let args: Vec<OsString> = vec![
            "commit-graph".into(),
            "write".into(),
            "--split".into(),
            "--stdin-commits".into(),
            "--no-progress".into(),
            "--object-dir".into(),
            self.dir.clone().into(),
        ];
        let input: String = new.iter().map(|c| format!("{c}\n")).collect();
        let output = self.git().output_with_input(&args, input.into_bytes());
        match output {
            Ok(out) if out.status.success() => self.written.extend(new),
            Ok(out) => tracing::debug!(
                "commit graph: not written ({})",
                String::from_utf8_lossy(&out.stderr).trim()
            ),
            Err(e) => tracing::debug!("commit graph: git did not run ({e})"),
        }
    }

    /// This graph's lock ([`LOCK`]), once no other process holds it
    /// (waiting [`WAIT_FOR_WRITER`] at most); `None` when it could not be
    /// taken.
    fn wait_for_lock(&self) -> Option<File> {
        let file = match std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(self.dir.join(LOCK))
        {
            Ok(file) => file,
            Err(e) => {
                tracing::debug!("commit graph: no lock file ({e})");
                return None;
            }
        };
        let deadline = Instant::now() + WAIT_FOR_WRITER;
        loop {
            match crate::platform::fd::try_lock_exclusive(&file) {
                Ok(true) => return Some(file),
                Ok(false) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(10))
                }
                Ok(false) => {
                    tracing::debug!("commit graph: another process is still writing it");
                    return None;
                }
                Err(e) => {
                    tracing::debug!("commit graph: lock not taken ({e})");
                    return None;
                }
            }
        }
    }

    /// git asked about history, once this graph exists (written by this
    /// or an earlier owt); `None` before.
    pub fn reader(&self) -> Option<GraphGit> {
        has_graph(&self.dir).then(|| GraphGit {
            git: self.git(),
            slow: self.slow.clone(),
        })
    }

    /// git in the repository, reading this graph.
    pub fn git(&self) -> GitCli {
        GitCli::new(&self.git_dir).env(ENV, &self.alternates)
    }

    /// The object folder owt owns.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// Removes from `root` the graph folders (16 hex digits) of repositories
/// that are gone: whose `repository` file names a folder that no longer
/// exists; `keep` and anything else are left alone.
fn prune_gone(root: &Path, keep: &Path) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for entry in entries.flatten() {
        let dir = entry.path();
        let name = entry.file_name();
        let ours = name
            .to_str()
            .is_some_and(|n| n.len() == 16 && n.bytes().all(|b| b.is_ascii_hexdigit()));
        let real_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if dir == keep || !ours || !real_dir {
            continue;
        }
        let Ok(named) = std::fs::read_to_string(dir.join("repository")) else {
            continue;
        };
        if !Path::new(named.trim_end_matches('\n')).exists() {
            tracing::debug!(
                "commit graph: {} is gone, its graph removed",
                named.trim_end()
            );
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::{git, hermetic};

    /// Commits `text` as `file` in the checkout `dir`; the new commit.
    fn commit(dir: &Path, file: &str, text: &str) -> Oid {
        std::fs::write(dir.join(file), text).unwrap();
        git(dir, &["add", file]);
        git(dir, &["commit", "-q", "-m", file]);
        Oid::from_str(&git(dir, &["rev-parse", "HEAD"])).unwrap()
    }

    /// A repository of `n` commits on `main`; its last commit.
    fn repo(dir: &Path, n: usize) -> Oid {
        hermetic();
        git(dir, &["init", "-q", "-b", "main"]);
        let mut last = None;
        for i in 0..n {
            last = Some(commit(dir, "f", &format!("{i}\n")));
        }
        last.expect("a commit at least")
    }

    /// The layers of the graph (their names, from git's chain file).
    fn layers(graph: &CommitGraph) -> Vec<String> {
        let chain = graph.dir().join("info/commit-graphs/commit-graph-chain");
        std::fs::read_to_string(chain)
            .map(|t| t.lines().map(str::to_string).collect())
            .unwrap_or_default()
    }

    /// git reads the graph through the alternate and checks every commit
    /// in it against the repository's objects.
    fn verify(graph: &CommitGraph) {
        let args: Vec<OsString> = vec![
            "commit-graph".into(),
            "verify".into(),
            "--object-dir".into(),
            graph.dir().into(),
        ];
        let verified = graph.git().output(&args).unwrap();
        assert!(verified.status.success(), "{verified:?}");
    }

    /// A repository of 3 commits in `work` and its graph under `home`
    /// (not written yet); its last commit.
    fn three_commits(work: &Path, home: &Path) -> (CommitGraph, Oid) {
        let last = repo(work, 3);
        let graph = CommitGraph::for_repo(home, &work.join(".git")).unwrap();
        (graph, last)
    }

    #[test]
    fn the_graph_is_written_outside_the_repository_and_grows_by_layers() {
        let work = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        let (mut graph, first) = three_commits(work.path(), home.path());
        let git_dir = work.path().join(".git");
        assert!(graph.dir().starts_with(home.path().join(DIR)));
        graph.cover(&[first]);
        assert_eq!(layers(&graph).len(), 1, "one layer for the first commits");
        verify(&graph);
        // Nothing of the repository was written.
        assert!(!git_dir.join("objects/info/commit-graph").exists());
        assert!(!git_dir.join("objects/info/commit-graphs").exists());
        // Asked again: nothing new; a new commit: git adds what is new.
        graph.cover(&[first]);
        assert_eq!(layers(&graph).len(), 1);
        let second = commit(work.path(), "g", "x\n");
        graph.cover(&[first, second]);
        verify(&graph);
        assert!(graph.written.contains(&second));
    }

    #[test]
    fn one_process_writes_a_graph_at_a_time_the_others_wait_for_it() {
        let work = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        let (mut graph, first) = three_commits(work.path(), home.path());
        // Another process's writer holds the lock (an open file of its own).
        std::fs::create_dir_all(graph.dir()).unwrap();
        let held = File::create(graph.dir().join(LOCK)).unwrap();
        assert!(crate::platform::fd::try_lock_exclusive(&held).unwrap());
        let (done, finished) = std::sync::mpsc::channel();
        let writer = std::thread::spawn(move || {
            graph.cover(&[first]);
            done.send(()).unwrap();
            graph
        });
        assert!(
            finished.recv_timeout(Duration::from_millis(300)).is_err(),
            "written while another process held the lock"
        );
        drop(held);
        finished
            .recv_timeout(WAIT_FOR_WRITER)
            .expect("written once the lock was let go");
        let graph = writer.join().unwrap();
        assert_eq!(layers(&graph).len(), 1);
        verify(&graph);
    }

    #[test]
    fn git_gives_libgit2s_merge_bases_once_a_walk_was_slow() {
        let work = tempfile::tempdir().unwrap();
        let dir = work.path();
        let base = repo(dir, 2);
        // A criss-cross: two merge bases.
        git(dir, &["checkout", "-q", "-b", "side"]);
        let side = commit(dir, "s", "s\n");
        git(dir, &["checkout", "-q", "main"]);
        let main = commit(dir, "m", "m\n");
        let merge = |into: &str, from: Oid| {
            git(dir, &["checkout", "-q", into]);
            git(dir, &["merge", "-q", "--no-edit", &from.to_string()]);
            Oid::from_str(&git(dir, &["rev-parse", "HEAD"])).unwrap()
        };
        let (a, b) = (merge("main", side), merge("side", main));
        git(dir, &["commit-graph", "write", "--reachable"]);
        let repo = Repository::open(dir).unwrap();
        let reader = own_reader(&dir.join(".git")).unwrap();
        for (one, others) in [(a, vec![b]), (a, vec![base]), (base, vec![a, b])] {
            let walked = merge_bases(&repo, Some(&reader), one, &others).unwrap();
            assert!(
                !reader.slow.load(Ordering::Relaxed),
                "a walk of a few commits is quick"
            );
            reader.slow.store(true, Ordering::Relaxed);
            let asked = merge_bases(&repo, Some(&reader), one, &others).unwrap();
            reader.slow.store(false, Ordering::Relaxed);
            assert_eq!(asked, walked, "{one} {others:?}");
            assert_eq!(
                reader.ask(one, &others).map(|mut v| {
                    v.sort();
                    v
                }),
                Some(walked)
            );
        }
        let two = merge_bases(&repo, None, a, &[b]).unwrap();
        assert_eq!(two, {
            let mut v = vec![side, main];
            v.sort();
            v
        });
        assert_eq!(merge_base(&repo, Some(&reader), a, b), side.min(main));
    }

    #[test]
    fn the_graphs_of_repositories_that_are_gone_are_removed() {
        let home = tempfile::tempdir().unwrap();
        let (kept, gone) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let mut folders = Vec::new();
        for work in [&kept, &gone] {
            let tip = repo(work.path(), 1);
            let mut graph = CommitGraph::for_repo(home.path(), &work.path().join(".git")).unwrap();
            graph.cover(&[tip]);
            folders.push(graph.dir().to_path_buf());
        }
        // Not a graph folder of owt's, naming nothing: left alone.
        let other = home.path().join(DIR).join("notes");
        std::fs::create_dir_all(&other).unwrap();
        std::fs::write(other.join("repository"), "/nowhere\n").unwrap();
        let gone_path = gone.path().to_path_buf();
        drop(gone);
        assert!(!gone_path.exists());
        // The next process's first write prunes.
        let tip = Oid::from_str(&git(kept.path(), &["rev-parse", "HEAD"])).unwrap();
        let mut graph = CommitGraph::for_repo(home.path(), &kept.path().join(".git")).unwrap();
        graph.cover(&[tip]);
        assert!(folders[0].exists(), "the kept repository's graph stays");
        assert!(
            !folders[1].exists(),
            "the gone repository's graph is removed"
        );
        assert!(other.exists());
        verify(&graph);
    }

    #[test]
    fn a_repository_with_a_graph_of_its_own_gets_none() {
        let work = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        repo(work.path(), 2);
        git(work.path(), &["commit-graph", "write", "--reachable"]);
        assert!(CommitGraph::for_repo(home.path(), &work.path().join(".git")).is_none());
    }
}
