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

use crate::platform::git::GitCli;

/// Runs git with no user or system configuration and a fixed identity.
pub fn git(cwd: &Path, args: &[&str]) -> String {
    let out = git_command(cwd).output(args).expect("running git");
    assert!(
        out.status.success(),
        "git {args:?} in {}: {}",
        cwd.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim_end().to_string()
}

fn git_command(cwd: &Path) -> GitCli {
    GitCli::new(cwd)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "Corpus")
        .env("GIT_AUTHOR_EMAIL", "corpus@example.com")
        .env("GIT_COMMITTER_NAME", "Corpus")
        .env("GIT_COMMITTER_EMAIL", "corpus@example.com")
        .env("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z")
        .env("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z")
}

mod spec;
mod truth;

pub use spec::{build, Spec, SpecBlob, SpecCommit, SpecTopic};
pub use truth::{
    engine_for, evaluate, merge_tree, state_tree, truth, verdicts, Counts, Evaluation, Truth,
    Truthful,
};

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
        let out = git_command(&self.main)
            .output([
                "merge-tree",
                "--write-tree",
                &format!("--merge-base={fork}"),
                onto,
                tip,
            ])
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
        let stacked = self.stacked(&base, &applied);
        self.plans.insert(Shape::Replayed, replayed);
        self.plans.insert(Shape::Real, real);
        self.plans.insert(Shape::Stacked, stacked);
    }

    /// Stacked pairs of the replayed topics `applied` (short name, tip,
    /// replayed commit): topics that change a path in common first, each
    /// topic in one pair at most.
    fn stacked(&self, base: &str, applied: &[(String, String, String)]) -> Vec<Planned> {
        let paths: Vec<BTreeSet<String>> = applied
            .iter()
            .map(|(_, _, last)| self.changed_paths(base, last))
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
                head: base.to_string(),
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
        stacked
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
