//! What git says of a case's sessions, the engine's verdicts beside it,
//! and the counts that compare them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use owt_protocol::guard::Level;

use super::super::engine::{GuardEngine, Participant};
use super::super::merge::parse_merge_tree;
use super::{git, git_command, Case, Shape, Variant};

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
        let out = git_command(root)
            .env("GIT_INDEX_FILE", scratch)
            .output(args)
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
    let out = git_command(repo)
        .output([
            "merge-tree",
            "--write-tree",
            "--name-only",
            "-z",
            ours,
            theirs,
        ])
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
    let out = git_command(repo)
        .output(["merge-base", "--all", a, b])
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

/// An engine with every member of `case` as a participant, not computed
/// yet.
pub fn engine_for(main: &Path, case: &Case) -> GuardEngine {
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
    engine
}

/// The engine's verdicts on a case beside git's, timed.
pub fn evaluate(main: &Path, case: &Case, scratch: &Path) -> Evaluation {
    let started = Instant::now();
    let mut engine = engine_for(main, case);
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
