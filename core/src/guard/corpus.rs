//! The Conflict Guard corpus (`bench/corpus/`): repositories holding real
//! topic branches, set up as sessions in three shapes × four kinds of
//! working state, and the verdicts of the guard checked against git's.
//!
//! - [`Spec`] / [`build`]: a repository made from a spec that
//!   `bench/corpus/extract.py` takes from a real repository's merged topic
//!   branches (its commit graph, and each file as line numbers, so merges
//!   behave as the real ones without any of the real content);
//! - [`Corpus`]: a repository with a `main` branch (the base) and
//!   `topic/*` branches (the topics), real or built;
//! - [`Shape`] × [`Variant`]: the sessions of a [`Case`] — topics replayed
//!   on the base (their squashed change applied to it: the normal agent
//!   case), topics on their real branches (other forks, shared history),
//!   stacked pairs (a session on another session's branch); the work
//!   committed, staged, unstaged (new files intent-to-add) or untracked;
//! - [`truth`]: what git says, from states git builds itself (`git add -A`
//!   into a scratch index): `git merge-tree --write-tree T S` for a
//!   session's landing on its base's tip `T`; for a pair, `git merge-tree
//!   --write-tree C S'` with `C` the first one's landing as a commit
//!   (parents `T` and `S`), both orders;
//! - [`evaluate`]: the engine's verdicts beside that truth, timed.
//!
//! Benchmark and test support only: compiled for tests and with the
//! `corpus` feature (`bench/guard`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use git2::{Oid, Repository};
use owt_protocol::guard::Level;
use serde::Deserialize;

use super::engine::{GuardEngine, Participant};
use super::merge::parse_merge_tree;
use super::tree;

/// Runs git with no user or system configuration and a fixed identity.
pub fn git(cwd: &Path, args: &[&str]) -> String {
    let out = git_command(cwd, args).output().expect("running git");
    assert!(
        out.status.success(),
        "git {args:?} in {}: {}",
        cwd.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim_end().to_string()
}

fn git_command(cwd: &Path, args: &[&str]) -> Command {
    let mut command = Command::new("git");
    command
        .args(args)
        .current_dir(cwd)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "Corpus")
        .env("GIT_AUTHOR_EMAIL", "corpus@example.com")
        .env("GIT_COMMITTER_NAME", "Corpus")
        .env("GIT_COMMITTER_EMAIL", "corpus@example.com")
        .env("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z")
        .env("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z");
    command
}

// ---------------------------------------------------------------------
// The spec and the repository built from it.

/// What `bench/corpus/extract.py` writes.
#[derive(Debug, Deserialize)]
pub struct Spec {
    /// The commit the topics were merged into.
    pub base: usize,
    pub topics: Vec<SpecTopic>,
    /// In an order where parents come first.
    pub commits: Vec<SpecCommit>,
    pub blobs: Vec<SpecBlob>,
    /// The number of the empty line.
    #[serde(default)]
    pub empty_line: Option<u64>,
    #[serde(default)]
    pub source: serde_json::Value,
}

#[derive(Debug, Deserialize)]
pub struct SpecTopic {
    pub name: String,
    pub tip: usize,
}

#[derive(Debug, Deserialize)]
pub struct SpecCommit {
    pub parents: Vec<usize>,
    /// Path → (blob, mode in octal).
    pub files: BTreeMap<String, (usize, String)>,
}

#[derive(Debug, Deserialize)]
pub struct SpecBlob {
    #[serde(default)]
    pub binary: Option<u64>,
    #[serde(default)]
    pub seed: Option<u64>,
    #[serde(default)]
    pub lines: Option<Vec<u64>>,
    /// A delta against this earlier blob.
    #[serde(default, rename = "ref")]
    pub reference: Option<usize>,
    /// `[start, count]` copies lines of the reference; `["+", n…]` is new
    /// lines.
    #[serde(default)]
    pub ops: Option<Vec<serde_json::Value>>,
}

impl Spec {
    /// Reads a spec (`.json`, or `.json.gz` through `gzip -dc`).
    pub fn read(path: &Path) -> Result<Spec, String> {
        let bytes = if path.extension().is_some_and(|e| e == "gz") {
            let out = Command::new("gzip")
                .arg("-dc")
                .arg(path)
                .output()
                .map_err(|e| format!("gzip: {e}"))?;
            if !out.status.success() {
                return Err(format!(
                    "gzip -dc {}: {}",
                    path.display(),
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
            out.stdout
        } else {
            std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?
        };
        serde_json::from_slice(&bytes).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Every blob's line numbers (`None` for a binary one).
    fn lines(&self) -> Result<Vec<Option<Vec<u64>>>, String> {
        let mut out: Vec<Option<Vec<u64>>> = Vec::with_capacity(self.blobs.len());
        for (i, blob) in self.blobs.iter().enumerate() {
            if blob.binary.is_some() {
                out.push(None);
                continue;
            }
            if let Some(lines) = &blob.lines {
                out.push(Some(lines.clone()));
                continue;
            }
            let (Some(reference), Some(ops)) = (blob.reference, &blob.ops) else {
                return Err(format!("blob {i} has neither lines nor a delta"));
            };
            let old = out
                .get(reference)
                .and_then(Option::as_ref)
                .ok_or_else(|| format!("blob {i}: bad reference {reference}"))?;
            let mut lines = Vec::new();
            for op in ops {
                let items = op.as_array().ok_or("a delta op is not a list")?;
                if items.first().and_then(|v| v.as_str()) == Some("+") {
                    lines.extend(items[1..].iter().filter_map(|v| v.as_u64()));
                } else {
                    let start = items.first().and_then(|v| v.as_u64()).unwrap_or(0) as usize;
                    let count = items.get(1).and_then(|v| v.as_u64()).unwrap_or(0) as usize;
                    lines.extend_from_slice(
                        old.get(start..start + count)
                            .ok_or_else(|| format!("blob {i}: copy out of range"))?,
                    );
                }
            }
            out.push(Some(lines));
        }
        Ok(out)
    }
}

/// Content for a spec blob: each line number becomes a line of its own
/// (`l<n>`; the empty line stays empty), so lines are equal exactly when
/// they were; a binary blob becomes bytes from its seed.
fn render(lines: Option<&[u64]>, blob: &SpecBlob, empty: Option<u64>) -> Vec<u8> {
    match lines {
        Some(lines) => lines
            .iter()
            .map(|n| {
                if Some(*n) == empty {
                    String::new()
                } else {
                    format!("l{n}")
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
            .into_bytes(),
        None => {
            let mut x = blob.seed.unwrap_or(1).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
            let size = blob.binary.unwrap_or(64).clamp(16, 4096) as usize;
            let mut bytes: Vec<u8> = (0..size)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect();
            bytes[0] = 0;
            bytes
        }
    }
}

/// Builds the repository of `spec` at `dir/main` (`main` = its base,
/// `topic/NN-name` = its topics) and returns the main checkout.
pub fn build(spec: &Spec, dir: &Path) -> Result<PathBuf, String> {
    let main = dir.join("main");
    if main.exists() {
        return Err(format!("{} exists", main.display()));
    }
    std::fs::create_dir_all(&main).map_err(|e| e.to_string())?;
    git(&main, &["init", "-q", "-b", "main"]);
    let repo = Repository::open(&main).map_err(|e| e.to_string())?;
    let lines = spec.lines()?;
    let mut blob_ids = Vec::with_capacity(spec.blobs.len());
    for (i, blob) in spec.blobs.iter().enumerate() {
        let bytes = render(lines[i].as_deref(), blob, spec.empty_line);
        blob_ids.push(repo.blob(&bytes).map_err(|e| e.to_string())?);
    }
    let mut commits: Vec<Oid> = Vec::with_capacity(spec.commits.len());
    for (i, commit) in spec.commits.iter().enumerate() {
        let mut files = BTreeMap::new();
        for (path, (blob, mode)) in &commit.files {
            let mode = i32::from_str_radix(mode, 8).map_err(|e| e.to_string())?;
            let id = *blob_ids.get(*blob).ok_or("bad blob index")?;
            files.insert(path.clone(), Some((id, mode)));
        }
        let tree_id = tree::overlay(&repo, None, &files).map_err(|e| e.to_string())?;
        let tree = repo.find_tree(tree_id).map_err(|e| e.to_string())?;
        let parents = commit
            .parents
            .iter()
            .map(|p| {
                commits
                    .get(*p)
                    .ok_or_else(|| format!("commit {i}: parent {p} not built yet"))
                    .and_then(|id| repo.find_commit(*id).map_err(|e| e.to_string()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let parents: Vec<&git2::Commit<'_>> = parents.iter().collect();
        let time = git2::Time::new(1_700_000_000 + i as i64 * 60, 0);
        let signature = git2::Signature::new("Corpus", "corpus@example.com", &time)
            .map_err(|e| e.to_string())?;
        let id = repo
            .commit(
                None,
                &signature,
                &signature,
                &format!("commit {i}"),
                &tree,
                &parents,
            )
            .map_err(|e| e.to_string())?;
        commits.push(id);
    }
    let base = *commits.get(spec.base).ok_or("bad base index")?;
    repo.reference("refs/heads/main", base, true, "corpus base")
        .map_err(|e| e.to_string())?;
    for (i, topic) in spec.topics.iter().enumerate() {
        let tip = *commits.get(topic.tip).ok_or("bad tip index")?;
        let name = format!("refs/heads/topic/{i:02}-{}", topic.name.replace('/', "-"));
        repo.reference(&name, tip, true, "corpus topic")
            .map_err(|e| e.to_string())?;
    }
    git(&main, &["checkout", "-q", "-f", "main"]);
    Ok(main)
}

// ---------------------------------------------------------------------
// Shapes and variants.

/// How the topics become sessions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Shape {
    /// Each topic's squashed change applied to the base.
    Replayed,
    /// Each topic on its real branch (its own fork, shared history).
    Real,
    /// Pairs: one replayed on the base, the other's change applied on top
    /// of it, on its branch (`owt new --base first`).
    Stacked,
}

/// How a session's last work is held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Variant {
    Committed,
    Staged,
    /// Modified files unstaged; new files intent-to-add.
    Unstaged,
    /// Modified files unstaged; new files untracked.
    Untracked,
}

pub const SHAPES: [Shape; 3] = [Shape::Replayed, Shape::Real, Shape::Stacked];
pub const VARIANTS: [Variant; 4] = [
    Variant::Committed,
    Variant::Staged,
    Variant::Unstaged,
    Variant::Untracked,
];

impl Shape {
    pub fn name(self) -> &'static str {
        match self {
            Shape::Replayed => "replayed",
            Shape::Real => "real",
            Shape::Stacked => "stacked",
        }
    }
}

impl Variant {
    pub fn name(self) -> &'static str {
        match self {
            Variant::Committed => "committed",
            Variant::Staged => "staged",
            Variant::Unstaged => "unstaged",
            Variant::Untracked => "untracked",
        }
    }
}

/// One session of a shape: its state is commit `last`'s tree; with the
/// work not committed, HEAD is `head` (the commit before it).
#[derive(Debug, Clone)]
struct Planned {
    name: String,
    branch: String,
    last: String,
    head: String,
    base: String,
    /// Held committed whatever the variant (a stacked pair's first).
    always_committed: bool,
}

/// A participant of a case.
#[derive(Debug, Clone)]
pub struct Member {
    pub name: String,
    pub worktree: PathBuf,
    pub base: String,
}

#[derive(Debug, Clone)]
pub struct Case {
    pub shape: Shape,
    pub variant: Variant,
    pub members: Vec<Member>,
}

/// A repository with `main` (the base) and `topic/*` branches.
pub struct Corpus {
    pub main: PathBuf,
    /// Where worktrees go.
    pub work: PathBuf,
    pub topics: Vec<(String, String)>,
    /// Topics whose change does not apply to the base (left out of the
    /// replayed and stacked shapes).
    pub not_replayable: Vec<String>,
    plans: BTreeMap<Shape, Vec<Planned>>,
}

impl Corpus {
    /// The corpus in the repository checked out at `main`, its worktrees
    /// under `work`; only the topics numbered in `select` (the `NN` of
    /// `topic/NN-name`) when given.
    pub fn open(main: &Path, work: &Path, select: Option<&[usize]>) -> Corpus {
        let mut topics: Vec<(String, String)> = git(
            main,
            &[
                "for-each-ref",
                "--format=%(refname:lstrip=3) %(objectname)",
                "refs/heads/topic/",
            ],
        )
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(n, id)| (n.to_string(), id.to_string()))
        .collect();
        topics.sort();
        if let Some(select) = select {
            topics.retain(|(name, _)| {
                name.split_once('-')
                    .and_then(|(n, _)| n.parse::<usize>().ok())
                    .is_some_and(|n| select.contains(&n))
            });
        }
        let mut corpus = Corpus {
            main: main.to_path_buf(),
            work: work.to_path_buf(),
            topics,
            not_replayable: Vec::new(),
            plans: BTreeMap::new(),
        };
        corpus.plan();
        corpus
    }

    fn commit_tree(&self, tree: &str, parents: &[&str], message: &str) -> String {
        let mut args = vec!["commit-tree", tree];
        for p in parents {
            args.push("-p");
            args.push(p);
        }
        args.push("-m");
        args.push(message);
        git(&self.main, &args)
    }

    /// `tip`'s own change (from its fork off the base) applied onto
    /// `onto`: the tree, when it applies cleanly.
    fn apply(&self, tip: &str, onto: &str) -> Option<String> {
        let fork = git(&self.main, &["merge-base", "main", tip]);
        let out = git_command(
            &self.main,
            &[
                "merge-tree",
                "--write-tree",
                &format!("--merge-base={fork}"),
                onto,
                tip,
            ],
        )
        .output()
        .expect("git merge-tree");
        if out.status.code() != Some(0) {
            return None;
        }
        Some(
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .next()?
                .trim()
                .to_string(),
        )
    }

    fn changed_paths(&self, from: &str, to: &str) -> BTreeSet<String> {
        git(
            &self.main,
            &["diff", "--name-only", "--no-renames", from, to],
        )
        .lines()
        .map(str::to_string)
        .collect()
    }

    fn plan(&mut self) {
        let base = git(&self.main, &["rev-parse", "main"]);
        let mut replayed = Vec::new();
        let mut real = Vec::new();
        let mut applied: Vec<(String, String, String)> = Vec::new();
        for (name, tip) in self.topics.clone() {
            let short = name.split_once('-').map_or(name.as_str(), |(n, _)| n);
            let parent = git(&self.main, &["rev-parse", &format!("{tip}^")]);
            real.push(Planned {
                name: format!("t{short}"),
                branch: format!("real/{short}"),
                last: tip.clone(),
                head: parent,
                base: "main".into(),
                always_committed: false,
            });
            match self.apply(&tip, &base) {
                Some(tree) => {
                    let last = self.commit_tree(&tree, &[&base], &format!("replayed {name}"));
                    replayed.push(Planned {
                        name: format!("t{short}"),
                        branch: format!("replayed/{short}"),
                        last: last.clone(),
                        head: base.clone(),
                        base: "main".into(),
                        always_committed: false,
                    });
                    applied.push((short.to_string(), tip.clone(), last));
                }
                None => self.not_replayable.push(name.clone()),
            }
        }
        // Stacked pairs: topics that change a path in common first, each
        // topic in one pair at most.
        let paths: Vec<BTreeSet<String>> = applied
            .iter()
            .map(|(_, _, last)| self.changed_paths(&base, last))
            .collect();
        let mut candidates: Vec<(usize, usize, bool)> = Vec::new();
        for i in 0..applied.len() {
            for j in i + 1..applied.len() {
                candidates.push((i, j, paths[i].is_disjoint(&paths[j])));
            }
        }
        candidates.sort_by_key(|(i, j, disjoint)| (*disjoint, *i, *j));
        let mut used = BTreeSet::new();
        let mut stacked = Vec::new();
        for (i, j, _) in candidates {
            if used.contains(&i) || used.contains(&j) || stacked.len() >= 2 * (applied.len() / 2) {
                continue;
            }
            let (first, _, first_last) = &applied[i];
            let (second, second_tip, _) = &applied[j];
            let Some(tree) = self.apply(second_tip, first_last) else {
                continue;
            };
            let last = self.commit_tree(&tree, &[first_last], &format!("stacked {second}"));
            used.insert(i);
            used.insert(j);
            let parent_branch = format!("stacked/{first}");
            stacked.push(Planned {
                name: format!("t{first}"),
                branch: parent_branch.clone(),
                last: first_last.clone(),
                head: base.clone(),
                base: "main".into(),
                always_committed: true,
            });
            stacked.push(Planned {
                name: format!("t{second}-on-t{first}"),
                branch: format!("stacked/{second}"),
                last,
                head: first_last.clone(),
                base: parent_branch,
                always_committed: false,
            });
        }
        self.plans.insert(Shape::Replayed, replayed);
        self.plans.insert(Shape::Real, real);
        self.plans.insert(Shape::Stacked, stacked);
    }

    /// How many sessions a shape has.
    pub fn sessions(&self, shape: Shape) -> usize {
        self.plans.get(&shape).map_or(0, Vec::len)
    }

    /// Puts every session of `shape` in `variant` (worktrees made once,
    /// then reset) and returns the case.
    pub fn setup(&self, shape: Shape, variant: Variant) -> Case {
        let mut members = Vec::new();
        for planned in self.plans.get(&shape).into_iter().flatten() {
            let worktree = self.work.join(shape.name()).join(&planned.name);
            if !worktree.exists() {
                std::fs::create_dir_all(worktree.parent().unwrap()).unwrap();
                git(
                    &self.main,
                    &[
                        "worktree",
                        "add",
                        "-q",
                        "-f",
                        "-B",
                        &planned.branch,
                        worktree.to_str().unwrap(),
                        &planned.last,
                    ],
                );
            }
            git(&worktree, &["reset", "-q", "--hard", &planned.last]);
            git(&worktree, &["clean", "-q", "-f", "-d", "-x"]);
            let variant = if planned.always_committed {
                Variant::Committed
            } else {
                variant
            };
            match variant {
                Variant::Committed => {}
                Variant::Staged => {
                    git(&worktree, &["reset", "-q", "--soft", &planned.head]);
                }
                Variant::Unstaged => {
                    git(&worktree, &["reset", "-q", &planned.head]);
                    git(&worktree, &["add", "-N", "--", "."]);
                }
                Variant::Untracked => {
                    git(&worktree, &["reset", "-q", &planned.head]);
                }
            }
            members.push(Member {
                name: planned.name.clone(),
                worktree,
                base: planned.base.clone(),
            });
        }
        Case {
            shape,
            variant,
            members,
        }
    }
}

// ---------------------------------------------------------------------
// Truth and verdicts.

/// The working state of the checkout at `root` as a tree, built by git
/// alone: every file `git add -A` would take, into a scratch index.
pub fn state_tree(root: &Path, scratch: &Path) -> String {
    let git_dir = PathBuf::from(git(root, &["rev-parse", "--absolute-git-dir"]));
    let index = git_dir.join("index");
    if index.exists() {
        std::fs::copy(&index, scratch).unwrap();
    } else {
        let _ = std::fs::remove_file(scratch);
    }
    let run = |args: &[&str]| {
        let out = git_command(root, args)
            .env("GIT_INDEX_FILE", scratch)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    run(&["add", "-A"]);
    run(&["write-tree"])
}

/// `git merge-tree --write-tree ours theirs`: (clean, tree, conflicting paths).
pub fn merge_tree(repo: &Path, ours: &str, theirs: &str) -> (bool, String, Vec<String>) {
    let out = git_command(
        repo,
        &[
            "merge-tree",
            "--write-tree",
            "--name-only",
            "-z",
            ours,
            theirs,
        ],
    )
    .output()
    .unwrap();
    let code = out.status.code();
    assert!(
        code == Some(0) || code == Some(1),
        "git merge-tree {ours} {theirs}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (clean, tree, paths) =
        parse_merge_tree(&out.stdout, code == Some(0), &[ours.into(), theirs.into()]);
    (
        clean,
        tree.map(|t| t.to_string()).unwrap_or_default(),
        paths,
    )
}

/// Whether two commits have more than one best common ancestor.
fn several_bases(repo: &Path, a: &str, b: &str) -> bool {
    let out = git_command(repo, &["merge-base", "--all", a, b])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).lines().count() > 1
}

/// One participant as git alone sees it.
pub struct Truthful {
    pub name: String,
    pub root: PathBuf,
    pub base: String,
}

/// Verdicts: per participant, the paths its landing conflicts on (`None`:
/// clean); per pair, the paths the sequential merges conflict on (`None`:
/// clean or not merged), with the orders that conflict (pairs both of
/// whose landings are clean).
#[derive(Debug, PartialEq, Default)]
pub struct Truth {
    pub base: BTreeMap<String, Option<Vec<String>>>,
    pub pairs: BTreeMap<(String, String), Option<Vec<String>>>,
    pub orders: BTreeMap<(String, String), Vec<[String; 2]>>,
    pub trees: BTreeMap<String, String>,
    /// Merges (landings and pair orders) git did over several merge bases.
    pub several_bases: usize,
    /// Time spent in the `git merge-tree` runs alone.
    pub merge_time: Duration,
}

impl Truth {
    /// Equal verdicts (times and counts aside).
    pub fn same_verdicts(&self, other: &Truth) -> bool {
        self.base == other.base
            && self.pairs == other.pairs
            && self.orders == other.orders
            && self.trees == other.trees
    }
}

/// What git says (see the module doc).
pub fn truth(repo: &Path, participants: &[Truthful], scratch: &Path) -> Truth {
    let mut states = BTreeMap::new();
    let mut landed = BTreeMap::new();
    let mut truth = Truth::default();
    for p in participants {
        let tree = state_tree(&p.root, scratch);
        let head = git(&p.root, &["rev-parse", "HEAD"]);
        let tip = git(repo, &["rev-parse", &format!("refs/heads/{}", p.base)]);
        let message = format!("state of {}", p.name);
        let state = git(repo, &["commit-tree", &tree, "-p", &head, "-m", &message]);
        truth.several_bases += usize::from(several_bases(repo, &tip, &state));
        let started = Instant::now();
        let (clean, merged, paths) = merge_tree(repo, &tip, &state);
        truth.merge_time += started.elapsed();
        truth.base.insert(p.name.clone(), (!clean).then_some(paths));
        if clean {
            let message = format!("{} shipped", p.name);
            let commit = git(
                repo,
                &[
                    "commit-tree",
                    &merged,
                    "-p",
                    &tip,
                    "-p",
                    &state,
                    "-m",
                    &message,
                ],
            );
            landed.insert(p.name.clone(), commit);
        }
        truth.trees.insert(p.name.clone(), tree);
        states.insert(p.name.clone(), state);
    }
    let names: Vec<&String> = states.keys().collect();
    for (i, a) in names.iter().enumerate() {
        for b in &names[i + 1..] {
            let key = ((*a).clone(), (*b).clone());
            let (Some(la), Some(lb)) = (landed.get(*a), landed.get(*b)) else {
                truth.pairs.insert(key, None);
                continue;
            };
            let mut conflicts = BTreeSet::new();
            let mut orders = Vec::new();
            for (first, second, landing, state) in
                [(a, b, la, &states[*b]), (b, a, lb, &states[*a])]
            {
                truth.several_bases += usize::from(several_bases(repo, landing, state));
                let started = Instant::now();
                let (clean, _, paths) = merge_tree(repo, landing, state);
                truth.merge_time += started.elapsed();
                if !clean {
                    conflicts.extend(paths);
                    orders.push([(*first).clone(), (*second).clone()]);
                }
            }
            truth.orders.insert(key.clone(), orders);
            truth.pairs.insert(
                key,
                (!conflicts.is_empty()).then(|| conflicts.into_iter().collect()),
            );
        }
    }
    truth
}

/// The same questions asked of the engine.
pub fn verdicts(engine: &GuardEngine, names: &[String]) -> Truth {
    let mut out = Truth::default();
    for name in names {
        out.base.insert(
            name.clone(),
            engine
                .base_conflict(name)
                .map(|c| c.conflicting_paths.clone()),
        );
        if let Some(snapshot) = engine.snapshot(name) {
            out.trees.insert(name.clone(), snapshot.to_string());
        }
    }
    let mut sorted = names.to_vec();
    sorted.sort();
    for (i, a) in sorted.iter().enumerate() {
        for b in &sorted[i + 1..] {
            let pair = engine
                .pairs_of(a)
                .into_iter()
                .find(|p| p.b == *b || p.a == *b);
            let merged = engine.base_conflict(a).is_none() && engine.base_conflict(b).is_none();
            let key = (a.clone(), b.clone());
            if merged {
                out.orders.insert(
                    key.clone(),
                    pair.map(|p| p.conflicting_orders.clone())
                        .unwrap_or_default(),
                );
            }
            out.pairs.insert(
                key,
                pair.filter(|p| p.level == Level::Conflict)
                    .map(|p| p.conflicting_paths.clone()),
            );
        }
    }
    out
}

/// Counts of a comparison: positives are conflicts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub true_positive: usize,
    pub false_positive: usize,
    pub false_negative: usize,
    pub true_negative: usize,
    /// Both say conflict but name other paths.
    pub other_paths: usize,
}

impl Counts {
    pub fn add(&mut self, guard: Option<&Vec<String>>, git: Option<&Vec<String>>) {
        match (guard, git) {
            (Some(g), Some(t)) => {
                self.true_positive += 1;
                self.other_paths += usize::from(g != t);
            }
            (Some(_), None) => self.false_positive += 1,
            (None, Some(_)) => self.false_negative += 1,
            (None, None) => self.true_negative += 1,
        }
    }

    pub fn merge(&mut self, other: Counts) {
        self.true_positive += other.true_positive;
        self.false_positive += other.false_positive;
        self.false_negative += other.false_negative;
        self.true_negative += other.true_negative;
        self.other_paths += other.other_paths;
    }

    /// 1.0 when nothing was predicted.
    pub fn precision(&self) -> f64 {
        let predicted = self.true_positive + self.false_positive;
        if predicted == 0 {
            1.0
        } else {
            self.true_positive as f64 / predicted as f64
        }
    }

    /// 1.0 when there was nothing to find.
    pub fn recall(&self) -> f64 {
        let actual = self.true_positive + self.false_negative;
        if actual == 0 {
            1.0
        } else {
            self.true_positive as f64 / actual as f64
        }
    }
}

/// One case's result.
#[derive(Debug)]
pub struct Evaluation {
    pub shape: Shape,
    pub variant: Variant,
    pub sessions: usize,
    pub base: Counts,
    pub pairs: Counts,
    /// Pairs merged (both land cleanly) / conflicting in one order only.
    pub pairs_merged: usize,
    pub one_order: usize,
    pub several_bases: usize,
    /// Everything equal: states, verdicts, paths, orders.
    pub exact: bool,
    /// The engine from nothing: scan every checkout, every verdict.
    pub guard_full: Duration,
    /// Every verdict again from the snapshots (no scan, no cache).
    pub guard_verdicts: Duration,
    /// Git: the states built with `git add -A`, and every merge.
    pub git_full: Duration,
    /// Git: the `git merge-tree` runs alone.
    pub git_merges: Duration,
    pub engine: GuardEngine,
}

/// The engine's verdicts on a case beside git's, timed.
pub fn evaluate(main: &Path, case: &Case, scratch: &Path) -> Evaluation {
    let started = Instant::now();
    let mut engine = GuardEngine::new(main, &[]).expect("engine");
    for m in &case.members {
        engine
            .add_participant(Participant {
                id: m.name.clone(),
                session_id: None,
                worktree: m.worktree.clone(),
                base_branch: m.base.clone(),
                journal: None,
            })
            .expect("participant");
    }
    engine.full_recompute().expect("full recompute");
    let guard_full = started.elapsed();
    let started = Instant::now();
    engine.recompute_pairs().expect("recompute");
    let guard_verdicts = started.elapsed();
    let names: Vec<String> = case.members.iter().map(|m| m.name.clone()).collect();
    let got = verdicts(&engine, &names);
    let truthful: Vec<Truthful> = case
        .members
        .iter()
        .map(|m| Truthful {
            name: m.name.clone(),
            root: m.worktree.clone(),
            base: m.base.clone(),
        })
        .collect();
    let started = Instant::now();
    let expected = truth(main, &truthful, scratch);
    let git_full = started.elapsed();
    let mut base = Counts::default();
    for (name, verdict) in &expected.base {
        base.add(
            got.base.get(name).and_then(Option::as_ref),
            verdict.as_ref(),
        );
    }
    let mut pairs = Counts::default();
    for (key, verdict) in &expected.pairs {
        pairs.add(
            got.pairs.get(key).and_then(Option::as_ref),
            verdict.as_ref(),
        );
    }
    Evaluation {
        shape: case.shape,
        variant: case.variant,
        sessions: case.members.len(),
        base,
        pairs,
        pairs_merged: expected.orders.len(),
        one_order: expected.orders.values().filter(|o| o.len() == 1).count(),
        several_bases: expected.several_bases,
        exact: got.same_verdicts(&expected),
        guard_full,
        guard_verdicts,
        git_full,
        git_merges: expected.merge_time,
        engine,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The committed corpus (`bench/corpus/git-topics.json.gz`), some of its
    /// topics as sessions in every shape and variant: the guard's verdicts
    /// equal git's. (`bench/run --only corpus` runs every topic.)
    #[test]
    fn corpus_verdicts_equal_git_in_every_shape_and_variant() {
        super::super::tests::hermetic();
        let spec_path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../bench/corpus/git-topics.json.gz");
        let spec = Spec::read(&spec_path).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let main = build(&spec, &root).unwrap();
        // A few topics by default (the whole corpus is `bench/run --only
        // corpus`'s): three that build on one another (pair conflicts in
        // every shape), one that conflicts with the base on its real
        // branch, and neighbours that merge cleanly. OWT_CORPUS_TOPICS=all
        // or a list (`0,3,5`) picks others.
        let select: Option<Vec<usize>> = match std::env::var("OWT_CORPUS_TOPICS") {
            Ok(s) if s == "all" => None,
            Ok(s) => Some(s.split(',').map(|n| n.trim().parse().unwrap()).collect()),
            Err(_) => Some(vec![4, 5, 6, 7, 10, 11]),
        };
        let corpus = Corpus::open(&main, &root.join("wt"), select.as_deref());
        let scratch = root.join("scratch-index");
        let (mut base, mut pairs) = (Counts::default(), Counts::default());
        for shape in SHAPES {
            assert!(corpus.sessions(shape) >= 2, "{shape:?}");
            for variant in VARIANTS {
                let case = corpus.setup(shape, variant);
                let result = evaluate(&main, &case, &scratch);
                assert!(
                    result.exact,
                    "{shape:?} {variant:?}: {:?} {:?}",
                    result.base, result.pairs
                );
                eprintln!(
                    "{:?} {:?}: {} sessions, base {:?}, pairs {:?}",
                    shape, variant, result.sessions, result.base, result.pairs
                );
                base.merge(result.base);
                pairs.merge(result.pairs);
            }
        }
        assert_eq!((base.precision(), base.recall()), (1.0, 1.0));
        assert_eq!((pairs.precision(), pairs.recall()), (1.0, 1.0));
        assert!(
            base.true_positive > 0 && pairs.true_positive > 0 && pairs.true_negative > 0,
            "the corpus should hold conflicts of both kinds and clean pairs: {base:?} {pairs:?}"
        );
    }
}
