//! The merge queue: the order in which sessions ready to ship merge with
//! the fewest conflicts. Sessions that conflict with no other queued
//! session go first (smallest first); then, greedily, the one whose
//! simulated merge onto the base — as projected after the steps before it —
//! has the fewest conflicts.
//!
//! Invariants: pure over git objects (committed branch tips only: shipping
//! merges commits); merges are simulated in memory ([`super::merge`]).

use std::collections::BTreeSet;

use git2::{Oid, Repository};
use owt_protocol::guard::QueueStep;

use super::merge;
use super::tree;
use super::GuardError;

/// A session that may be queued.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub name: String,
    pub branch: String,
    pub base: String,
    pub ahead: u32,
}

struct Prepared {
    candidate: Candidate,
    merge_base_tree: Oid,
    tip_tree: Oid,
    tip: Oid,
    paths: BTreeSet<String>,
}

/// The merge order of `candidates` (each merged into its own base).
pub fn plan(repo: &Repository, candidates: Vec<Candidate>) -> Result<Vec<QueueStep>, GuardError> {
    let mut bases: Vec<String> = candidates.iter().map(|c| c.base.clone()).collect();
    bases.sort();
    bases.dedup();
    let mut steps = Vec::new();
    for base in bases {
        let Ok(base_ref) = repo.find_branch(&base, git2::BranchType::Local) else {
            continue;
        };
        let Some(base_tip) = base_ref.get().target() else {
            continue;
        };
        let prepared = prepare(repo, &candidates, &base, base_tip)?;
        let pairwise = pairwise(repo, &prepared)?;
        order(repo, base_tip, &prepared, &pairwise, &mut steps)?;
    }
    Ok(steps)
}

/// The candidates onto `base` whose branch exists, with the trees and
/// paths their merge is about.
fn prepare(
    repo: &Repository,
    candidates: &[Candidate],
    base: &str,
    base_tip: Oid,
) -> Result<Vec<Prepared>, GuardError> {
    let mut prepared = Vec::new();
    for candidate in candidates.iter().filter(|c| c.base == base) {
        let Ok(branch) = repo.find_branch(&candidate.branch, git2::BranchType::Local) else {
            continue;
        };
        let Some(tip) = branch.get().target() else {
            continue;
        };
        let merge_base = repo.merge_base(tip, base_tip).unwrap_or(base_tip);
        let merge_base_tree = repo.find_commit(merge_base)?.tree_id();
        let tip_tree = repo.find_commit(tip)?.tree_id();
        let paths = tree::diff_trees(repo, Some(merge_base_tree), Some(tip_tree))?
            .into_iter()
            .map(|c| c.0)
            .collect();
        prepared.push(Prepared {
            candidate: candidate.clone(),
            merge_base_tree,
            tip_tree,
            tip,
            paths,
        });
    }
    Ok(prepared)
}

/// What each prepared candidate has with the others onto the same base.
struct Pairwise {
    /// How many others change one of its paths.
    overlaps: Vec<u32>,
    /// Whether it merges with every other without a conflict.
    conflict_free: Vec<bool>,
}

fn pairwise(repo: &Repository, prepared: &[Prepared]) -> Result<Pairwise, GuardError> {
    let n = prepared.len();
    let mut overlaps = vec![0u32; n];
    let mut conflict_free = vec![true; n];
    for i in 0..n {
        for j in i + 1..n {
            if prepared[i].paths.is_disjoint(&prepared[j].paths) {
                continue;
            }
            overlaps[i] += 1;
            overlaps[j] += 1;
            let pair_base = match repo.merge_base(prepared[i].tip, prepared[j].tip) {
                Ok(id) => repo.find_commit(id)?.tree_id(),
                Err(_) => tree::empty_tree(repo)?,
            };
            let outcome = merge::merge_trees(
                repo,
                pair_base,
                prepared[i].tip_tree,
                prepared[j].tip_tree,
                false,
            )?;
            if !outcome.conflicts.is_empty() {
                conflict_free[i] = false;
                conflict_free[j] = false;
            }
        }
    }
    Ok(Pairwise {
        overlaps,
        conflict_free,
    })
}

/// Appends the steps onto one base to `steps`: the conflict-free
/// candidates smallest first, then greedily the one with the fewest
/// conflicts onto the base as projected after the steps before it.
fn order(
    repo: &Repository,
    base_tip: Oid,
    prepared: &[Prepared],
    pairwise: &Pairwise,
    steps: &mut Vec<QueueStep>,
) -> Result<(), GuardError> {
    let n = prepared.len();
    let conflict_free = &pairwise.conflict_free;
    let size = |p: &Prepared| (p.paths.len(), p.candidate.ahead, p.candidate.name.clone());
    let mut first: Vec<usize> = (0..n).filter(|i| conflict_free[*i]).collect();
    first.sort_by_key(|i| size(&prepared[*i]));
    let mut rest: Vec<usize> = (0..n).filter(|i| !conflict_free[*i]).collect();
    let mut projected = repo.find_commit(base_tip)?.tree_id();
    let push = |i: usize, outcome: merge::MergeOutcome, steps: &mut Vec<QueueStep>| {
        let p = &prepared[i];
        steps.push(QueueStep {
            position: steps.len() as u32 + 1,
            session: p.candidate.name.clone(),
            branch: p.candidate.branch.clone(),
            base: p.candidate.base.clone(),
            ahead: p.candidate.ahead,
            changed_files: p.paths.len() as u32,
            overlaps: pairwise.overlaps[i],
            conflict_free: conflict_free[i],
            predicted_conflicts: outcome.conflicts,
        });
    };
    for i in first {
        let p = &prepared[i];
        let outcome = merge::merge_trees(repo, p.merge_base_tree, projected, p.tip_tree, true)?;
        projected = outcome.tree.unwrap_or(projected);
        push(i, outcome, steps);
    }
    while !rest.is_empty() {
        let mut best: Option<(usize, merge::MergeOutcome)> = None;
        for (k, &i) in rest.iter().enumerate() {
            let p = &prepared[i];
            let outcome = merge::merge_trees(repo, p.merge_base_tree, projected, p.tip_tree, true)?;
            let better = match &best {
                None => true,
                Some((bk, bo)) => {
                    (outcome.conflicts.len(), size(p))
                        < (bo.conflicts.len(), size(&prepared[rest[*bk]]))
                }
            };
            if better {
                best = Some((k, outcome));
            }
        }
        let Some((k, outcome)) = best else { break };
        let i = rest.remove(k);
        projected = outcome.tree.unwrap_or(projected);
        push(i, outcome, steps);
    }
    Ok(())
}
