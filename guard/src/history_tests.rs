//! The verdicts against git on histories: sessions created at different
//! base commits, stacked on each other, sharing commits beyond the base
//! (a branch both merged, each other's branches merged back and forth), a
//! base that moved on; every kind of working state. Truth is computed by
//! the git CLI alone, from states it builds itself (`git add -A` into a
//! scratch index): `git merge-tree --write-tree T S` for a landing, and
//! for a pair `git merge-tree --write-tree C S'` with `C` the landing as a
//! commit (parents `T` and `S`).

use std::path::{Path, PathBuf};
use std::process::Command;

use owt_protocol::guard::Level;

use super::commit_graph::CommitGraph;
use super::corpus::{truth, verdicts, Truth, Truthful};
use super::engine::{GuardEngine, Participant, YOU};
use super::tests::{git, random_edit, write, Fixture, Rng};

/// A session: its worktree and base branch.
struct Session {
    name: String,
    root: PathBuf,
    base: String,
}

/// Commits one random edit (or a few) in `root`.
fn commit_edits(rng: &mut Rng, root: &Path, tag: &str, log: &mut Vec<String>) {
    for _ in 0..1 + rng.below(2) {
        log.push(format!("{tag}: {}", random_edit(rng, root, tag)));
    }
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "--allow-empty", "-m", tag]);
    log.push(format!("{tag}: commit"));
}

/// Merges `branch` into the checkout at `root`, or leaves it as it was when
/// that conflicts.
fn try_merge(root: &Path, branch: &str, log: &mut Vec<String>, tag: &str) {
    let out = Command::new("git")
        .args(["merge", "-q", "--no-edit", "--no-ff", branch])
        .current_dir(root)
        .output()
        .unwrap();
    if out.status.success() {
        log.push(format!("{tag}: merged {branch}"));
    } else {
        git(root, &["merge", "--abort"]);
        log.push(format!("{tag}: merging {branch} conflicted, aborted"));
    }
}

/// One random history with 3 sessions and the human; returns what the
/// engine and git say, and the log that replays it.
fn random_history(seed: u64) -> (Vec<(Truth, Truth)>, Vec<String>) {
    let mut rng = Rng(seed);
    let mut log = vec![format!("seed {seed}")];
    let body: String = (1..=12).map(|i| format!("line {i}\n")).collect();
    let fx = Fixture::new(&[
        ("f0.txt", &body),
        ("f1.txt", &body),
        ("f2.txt", &body),
        ("d/x.txt", &body),
        ("d/y.txt", &body),
    ]);
    // The base's history before the sessions.
    for _ in 0..rng.below(3) {
        commit_edits(&mut rng, &fx.main, "main", &mut log);
    }
    // Commits beyond the base that sessions may share.
    let shared = rng.below(2) == 0;
    if shared {
        let path = fx.root.join("shared");
        git(
            &fx.main,
            &[
                "worktree",
                "add",
                "-q",
                "-b",
                "shared",
                path.to_str().unwrap(),
                "main",
            ],
        );
        commit_edits(&mut rng, &path, "shared", &mut log);
    }
    let mut sessions: Vec<Session> = Vec::new();
    for i in 0..3 {
        let name = format!("s{i}");
        let root = fx.root.join(&name);
        // Where it starts: an older base commit, the base's tip, the shared
        // branch, or another session (stacked: that session is its base).
        let depth = git(&fx.main, &["rev-list", "--count", "main"])
            .parse::<usize>()
            .unwrap();
        let (start, base) = match rng.below(5) {
            0 if depth > 1 => (
                format!("main~{}", 1 + rng.below(depth - 1)),
                "main".to_string(),
            ),
            1 if shared => ("shared".to_string(), "main".to_string()),
            2 if !sessions.is_empty() => {
                let parent = &sessions[rng.below(sessions.len())].name;
                (parent.clone(), parent.clone())
            }
            _ => ("main".to_string(), "main".to_string()),
        };
        git(
            &fx.main,
            &[
                "worktree",
                "add",
                "-q",
                "-b",
                &name,
                root.to_str().unwrap(),
                &start,
            ],
        );
        log.push(format!("{name}: from {start}, base {base}"));
        sessions.push(Session { name, root, base });
    }
    // Their commits, interleaved (a stacked session's base moves), merges
    // of the shared branch and of each other (several merge bases).
    for _ in 0..4 {
        let s = &sessions[rng.below(sessions.len())];
        let other = &sessions[rng.below(sessions.len())];
        match rng.below(7) {
            0 if shared => try_merge(&s.root, "shared", &mut log, &s.name),
            1 if other.name != s.name => try_merge(&s.root, &other.name, &mut log, &s.name),
            2 if other.name != s.name => {
                // Criss-cross: each commits a file of its own, then merges
                // the other's commit (two best common ancestors).
                for x in [s, other] {
                    let text = format!("cross {}\n", rng.next());
                    write(&x.root, &format!("cross-{}.txt", x.name), &text);
                    git(&x.root, &["add", "-A"]);
                    git(&x.root, &["commit", "-q", "-m", "cross"]);
                }
                let before = git(&s.root, &["rev-parse", "HEAD"]);
                try_merge(&s.root, &other.name, &mut log, &s.name);
                try_merge(&other.root, &before, &mut log, &other.name);
            }
            3 => {
                // A session shipped into the base.
                try_merge(&fx.main, &s.name, &mut log, "main");
            }
            _ => commit_edits(&mut rng, &s.root, &s.name, &mut log),
        }
    }
    // The base moves on.
    for _ in 0..rng.below(3) {
        commit_edits(&mut rng, &fx.main, "main", &mut log);
    }
    // Working states: staged, unstaged, untracked.
    for s in &sessions {
        for _ in 0..rng.below(3) {
            log.push(format!(
                "{}: {}",
                s.name,
                random_edit(&mut rng, &s.root, &s.name)
            ));
        }
        if rng.below(2) == 0 {
            git(&s.root, &["add", "-A"]);
            log.push(format!("{}: staged", s.name));
            if rng.below(2) == 0 {
                log.push(format!(
                    "{}: {}",
                    s.name,
                    random_edit(&mut rng, &s.root, &s.name)
                ));
            }
        }
    }
    if rng.below(2) == 0 {
        log.push(format!("you: {}", random_edit(&mut rng, &fx.main, "you")));
    }
    let mut engine = GuardEngine::new(&fx.main, &[]).unwrap();
    if seed.is_multiple_of(2) {
        // Every other history with owt's commit-graph written first, so
        // that git reads it for the merges from the start (merge bases
        // stay libgit2's here: its walks of these few commits are quick;
        // `commit_graph`'s tests compare the two).
        let home = fx.root.join("owt-home");
        let git_dir = fx.main.join(".git");
        let mut graph = CommitGraph::for_repo(&home, &git_dir).unwrap();
        let tips: Vec<git2::Oid> = git(&fx.main, &["for-each-ref", "--format=%(objectname)"])
            .lines()
            .map(|l| git2::Oid::from_str(l).unwrap())
            .collect();
        graph.cover(&tips);
        assert!(graph.reader().is_some(), "the graph was written");
        engine.set_commit_graph(Some(&home));
        log.push("owt's commit-graph: written".into());
    }
    let mut truthful = Vec::new();
    for s in &sessions {
        engine
            .add_participant(Participant {
                id: s.name.clone(),
                session_id: None,
                worktree: s.root.clone(),
                base_branch: s.base.clone(),
                journal: None,
            })
            .unwrap();
        truthful.push(Truthful {
            name: s.name.clone(),
            root: s.root.clone(),
            base: s.base.clone(),
        });
    }
    engine
        .add_participant(Participant {
            id: YOU.into(),
            session_id: None,
            worktree: fx.main.clone(),
            base_branch: "main".into(),
            journal: None,
        })
        .unwrap();
    truthful.push(Truthful {
        name: YOU.into(),
        root: fx.main.clone(),
        base: "main".into(),
    });
    engine.full_recompute().unwrap();
    let names: Vec<String> = truthful.iter().map(|t| t.name.clone()).collect();
    let scratch = fx.root.join("scratch-index");
    let mut rounds = vec![(
        verdicts(&engine, &names),
        truth(&fx.main, &truthful, &scratch),
    )];
    // Then, incrementally: a session commits or edits, the base moves on
    // (with the human's edits set aside and put back), and the engine hears
    // only what a watcher would tell it.
    let s = &sessions[rng.below(sessions.len())];
    if rng.below(2) == 0 {
        commit_edits(&mut rng, &s.root, &s.name, &mut log);
    } else {
        log.push(format!(
            "{}: {}",
            s.name,
            random_edit(&mut rng, &s.root, &s.name)
        ));
    }
    engine.rescan(&s.name).unwrap();
    let dirty = !git(&fx.main, &["status", "--porcelain"]).is_empty();
    if dirty {
        git(&fx.main, &["stash", "-q", "--include-untracked"]);
    }
    commit_edits(&mut rng, &fx.main, "main", &mut log);
    let popped = !dirty
        || Command::new("git")
            .args(["stash", "pop", "-q"])
            .current_dir(&fx.main)
            .output()
            .unwrap()
            .status
            .success();
    if !popped {
        git(&fx.main, &["reset", "-q", "--hard"]);
        git(&fx.main, &["clean", "-qfd"]);
        git(&fx.main, &["stash", "drop", "-q"]);
        log.push("you: the stash did not apply, dropped".into());
    }
    for name in &names {
        engine.on_refs_changed(name).unwrap();
    }
    engine.rescan(YOU).unwrap();
    rounds.push((
        verdicts(&engine, &names),
        truth(&fx.main, &truthful, &scratch),
    ));
    (rounds, log)
}

#[test]
fn sequential_verdicts_match_git_on_random_histories() {
    let seed: u64 = std::env::var("OWT_GUARD_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x00b1_5700_a11e);
    let iterations: u64 = std::env::var("OWT_GUARD_ITERATIONS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(16);
    let (mut base_conflicts, mut pair_conflicts, mut pairs_merged, mut one_order) = (0, 0, 0, 0);
    let (mut several_bases, mut several_bases_graphed) = (0, 0);
    for i in 0..iterations {
        let (rounds, log) = random_history(seed.wrapping_add(i));
        let graphed = seed.wrapping_add(i).is_multiple_of(2);
        for (round, (got, expected)) in rounds.iter().enumerate() {
            let when = if round == 0 { "full" } else { "incremental" };
            assert_eq!(got.trees, expected.trees, "{when}: states differ: {log:#?}");
            assert_eq!(
                got.base, expected.base,
                "{when}: base verdicts differ: {log:#?}"
            );
            assert_eq!(
                got.pairs, expected.pairs,
                "{when}: pair verdicts differ: {log:#?}"
            );
            assert_eq!(
                got.orders, expected.orders,
                "{when}: conflicting orders differ: {log:#?}"
            );
            base_conflicts += expected.base.values().filter(|v| v.is_some()).count();
            pair_conflicts += expected.pairs.values().filter(|v| v.is_some()).count();
            pairs_merged += expected.orders.len();
            one_order += expected.orders.values().filter(|o| o.len() == 1).count();
            several_bases += expected.several_bases;
            if graphed {
                several_bases_graphed += expected.several_bases;
            }
        }
    }
    // The generator must make every kind of verdict.
    assert!(
        base_conflicts > 0
            && pair_conflicts > 0
            && pairs_merged > pair_conflicts
            && one_order > 0
            && several_bases > 0
            && several_bases_graphed > 0,
        "base conflicts {base_conflicts}, pair conflicts {pair_conflicts}, pairs merged \
         {pairs_merged}, one order only {one_order}, merges with several bases {several_bases} \
         ({several_bases_graphed} with owt's commit-graph)"
    );
    eprintln!(
        "{iterations} histories: {base_conflicts} base conflicts, {pair_conflicts} conflicting pairs of \
         {pairs_merged} merged, {one_order} conflicting in one order only, {several_bases} merges \
         with several merge bases ({several_bases_graphed} with owt's commit-graph)"
    );
}

/// A participant on `base` from `start` in a new worktree.
fn session(fx: &Fixture, name: &str, start: &str) -> PathBuf {
    let root = fx.root.join(name);
    git(
        &fx.main,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            name,
            root.to_str().unwrap(),
            start,
        ],
    );
    root
}

fn engine_of(fx: &Fixture, members: &[(&str, &str)]) -> GuardEngine {
    let mut engine = GuardEngine::new(&fx.main, &[]).unwrap();
    for (name, base) in members {
        let worktree = if *name == YOU {
            fx.main.clone()
        } else {
            fx.root.join(name)
        };
        engine
            .add_participant(Participant {
                id: name.to_string(),
                session_id: None,
                worktree,
                base_branch: base.to_string(),
                journal: None,
            })
            .unwrap();
    }
    engine.full_recompute().unwrap();
    engine
}

fn render_base(engine: &GuardEngine) -> String {
    let mut out = String::new();
    for c in engine.base_conflicts() {
        out.push_str(&format!(
            "{} vs {}: {:?}\n",
            c.name, c.base, c.conflicting_paths
        ));
        for p in &c.paths {
            let fmt = |r: &[owt_protocol::guard::LineRange]| {
                r.iter()
                    .map(|r| format!("{}+{}", r.start, r.lines))
                    .collect::<Vec<_>>()
                    .join(",")
            };
            out.push_str(&format!(
                "  {} {} mine=[{}] base=[{}]\n",
                p.path,
                p.level.as_str(),
                fmt(&p.a_ranges),
                fmt(&p.b_ranges)
            ));
        }
    }
    out
}

fn commit_all(root: &Path, message: &str) {
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", message]);
}

#[test]
fn the_base_moving_under_a_session_is_a_base_conflict_with_its_lines() {
    use super::tests::{lines, render_pairs, with_line};
    let fx = Fixture::new(&[("f.txt", &lines()), ("g.txt", &lines())]);
    let a = session(&fx, "a", "main");
    write(&a, "f.txt", &with_line(3, "a's line 3"));
    let mut engine = engine_of(&fx, &[("a", "main")]);
    assert!(engine.base_conflicts().is_empty());
    // main moves on: line 3 of f.txt changes there too.
    write(&fx.main, "f.txt", &with_line(3, "main's line 3"));
    commit_all(&fx.main, "main moves");
    let update = engine.on_refs_changed("a").unwrap();
    assert_eq!(update.changed_base_conflicts, ["a"]);
    expect_test::expect![[r#"
        a vs main: ["f.txt"]
          f.txt base-conflict mine=[3+1] base=[3+1]
    "#]]
    .assert_eq(&render_base(&engine));
    // Its pairs are not merged while it conflicts with its base.
    let b = session(&fx, "b", "main");
    write(
        &b,
        "f.txt",
        &with_line(3, "main's line 3").replace("line 9", "b"),
    );
    let engine = engine_of(&fx, &[("a", "main"), ("b", "main")]);
    expect_test::expect![[r#"
        a ~ b: overlap (conflicting: [])
          f.txt overlap a=[3+1] b=[9+1]
    "#]]
    .assert_eq(&render_pairs(&engine.pairs()));
    assert_eq!(engine.pairs()[0].not_merged, ["a"]);
    // Resolved (the session merges main and keeps main's line): gone.
    let mut engine = engine;
    write(&a, "f.txt", &with_line(3, "main's line 3"));
    commit_all(&a, "a");
    git(&a, &["merge", "-q", "--no-edit", "main"]);
    engine.on_refs_changed("a").unwrap();
    engine.rescan("a").unwrap();
    assert!(
        engine.base_conflicts().is_empty(),
        "{}",
        render_base(&engine)
    );
}

#[test]
fn sessions_created_at_different_base_commits_are_judged_by_their_own_work() {
    use super::tests::{lines, render_pairs, with_line};
    let fx = Fixture::new(&[("f.txt", &lines())]);
    // `old` starts at the first commit and edits line 4. main then changes
    // line 5 (and later reverts it); `new` starts in between and edits
    // line 9. Merged directly over their common ancestor, old's line 4
    // meets the line 5 new's branch carries from main: a conflict neither
    // agent wrote. Shipped one after the other, nothing conflicts.
    let old = session(&fx, "old", "main");
    write(&fx.main, "f.txt", &with_line(5, "main's line 5"));
    commit_all(&fx.main, "main changes line 5");
    let new = session(&fx, "new", "main");
    write(&fx.main, "f.txt", &lines());
    commit_all(&fx.main, "main reverts line 5");
    write(
        &new,
        "f.txt",
        &with_line(5, "main's line 5").replace("line 9", "new's line 9"),
    );
    write(&old, "f.txt", &with_line(4, "old's line 4"));
    let engine = engine_of(&fx, &[("old", "main"), ("new", "main")]);
    assert!(engine.base_conflicts().is_empty());
    let pair = engine.pairs()[0].clone();
    assert!(pair.lines_from.is_some(), "their merge bases differ");
    expect_test::expect![[r#"
        new ~ old: overlap (conflicting: [])
          f.txt overlap a=[9+1] b=[4+1]
    "#]]
    .assert_eq(&render_pairs(&engine.pairs()));
    // The old verdict (a merge of the two states over their merge base)
    // conflicts.
    let state = |name: &str, root: &Path| {
        let tree = engine.snapshot(name).unwrap().to_string();
        let head = git(root, &["rev-parse", "HEAD"]);
        git(&fx.main, &["commit-tree", &tree, "-p", &head, "-m", name])
    };
    let (conflicted, _) =
        super::tests::git_merge_tree_conflicts(&fx.main, &state("old", &old), &state("new", &new));
    assert!(conflicted);
}

#[test]
fn a_stacked_session_is_judged_by_what_it_changed_after_its_parent() {
    use super::tests::{lines, render_pairs, with_line};
    let fx = Fixture::new(&[("f.txt", &lines())]);
    let parent = session(&fx, "parent", "main");
    write(&parent, "f.txt", &with_line(2, "parent's line 2"));
    commit_all(&parent, "parent");
    // `child` is stacked on parent (`owt new --base parent`) and edits a
    // line right next to the parent's.
    let child = session(&fx, "child", "parent");
    write(
        &child,
        "f.txt",
        &with_line(2, "parent's line 2").replace("line 3", "child's line 3"),
    );
    let engine = engine_of(&fx, &[("parent", "main"), ("child", "parent")]);
    // The parent's committed line 2 is history they share: only the
    // child's line 3 is its own, next to the parent's line 2.
    expect_test::expect![[r#"
        child ~ parent: hunk-overlap (conflicting: [])
          f.txt hunk-overlap a=[3+1] b=[2+1]
    "#]]
    .assert_eq(&render_pairs(&engine.pairs()));
    // The parent then rewrites line 3, uncommitted: now merging the child
    // after the parent conflicts.
    write(
        &parent,
        "f.txt",
        &with_line(2, "parent's line 2").replace("line 3", "parent's line 3"),
    );
    let mut engine = engine;
    engine.rescan("parent").unwrap();
    let pair = engine.pairs()[0].clone();
    assert_eq!(pair.level, Level::Conflict);
    assert_eq!(pair.conflicting_paths, ["f.txt"]);
    assert!(!pair.conflicting_orders.is_empty());
}

#[test]
fn identical_binary_changes_are_the_same_change_and_different_ones_conflict() {
    use super::tests::render_pairs;
    let bin = |byte: u8| -> Vec<u8> { (0..64u8).map(|i| i ^ byte).chain([0, 0]).collect() };
    let fx = Fixture::new(&[("f.txt", "x\n")]);
    std::fs::write(fx.main.join("img.bin"), bin(0)).unwrap();
    commit_all(&fx.main, "binary");
    let a = session(&fx, "a", "main");
    let b = session(&fx, "b", "main");
    std::fs::write(a.join("img.bin"), bin(7)).unwrap();
    std::fs::write(b.join("img.bin"), bin(7)).unwrap();
    let engine = engine_of(&fx, &[("a", "main"), ("b", "main")]);
    expect_test::expect![[r#"
        a ~ b: same-change (conflicting: [])
          img.bin same-change a=[] binary b=[] binary (binary file changed on both sides)
    "#]]
    .assert_eq(&render_pairs(&engine.pairs()));
    assert_eq!(
        engine.overlap_count("a"),
        0,
        "the same change is no overlap"
    );
}

#[test]
fn the_same_lines_added_on_both_sides_beside_other_changes_are_not_lines_meeting() {
    use super::tests::{lines, render_pairs};
    let fx = Fixture::new(&[("f.txt", &lines())]);
    let a = session(&fx, "a", "main");
    let b = session(&fx, "b", "main");
    // Both add the same import after line 1; a also edits line 9.
    let both = lines().replace("line 1\n", "line 1\nuse shared;\n");
    write(&a, "f.txt", &both.replace("line 9", "a's line 9"));
    write(&b, "f.txt", &both);
    let engine = engine_of(&fx, &[("a", "main"), ("b", "main")]);
    expect_test::expect![[r#"
        a ~ b: overlap (conflicting: [])
          f.txt overlap a=[9+1] b=[]
    "#]]
    .assert_eq(&render_pairs(&engine.pairs()));
}

/// The batch of merges a full recompute asks git at once (`git merge-tree
/// --stdin`, split between processes) gives, merge by merge, what one
/// `git merge-tree` per merge gives: verdicts, conflicting paths, trees;
/// criss-cross histories (several merge bases), clean and conflicting.
#[test]
fn merges_in_a_batch_equal_merges_one_by_one() {
    let body: String = (1..=12).map(|i| format!("line {i}\n")).collect();
    let fx = Fixture::new(&[("f.txt", &body), ("g.txt", &body)]);
    let a = session(&fx, "a", "main");
    let b = session(&fx, "b", "main");
    // Criss-cross: each commits, then merges the other's commit.
    for (root, name) in [(&a, "a"), (&b, "b")] {
        write(root, &format!("{name}.txt"), "own\n");
        git(root, &["add", "-A"]);
        git(root, &["commit", "-q", "-m", name]);
    }
    let a_before = git(&a, &["rev-parse", "HEAD"]);
    git(&a, &["merge", "-q", "--no-edit", "--no-ff", "b"]);
    git(&b, &["merge", "-q", "--no-edit", "--no-ff", &a_before]);
    // Then both change line 3 of f.txt; only a changes g.txt, deleted by b.
    for (root, name) in [(&a, "a"), (&b, "b")] {
        write(
            root,
            "f.txt",
            &body.replace("line 3\n", &format!("{name} 3\n")),
        );
    }
    write(&a, "g.txt", &body.replace("line 9\n", "a 9\n"));
    git(&b, &["rm", "-q", "g.txt"]);
    for root in [&a, &b] {
        git(root, &["add", "-A"]);
        git(root, &["commit", "-q", "-m", "change"]);
    }
    let id = |root: &Path, rev: &str| git2::Oid::from_str(&git(root, &["rev-parse", rev])).unwrap();
    let (a_head, b_head, main) = (id(&a, "HEAD"), id(&b, "HEAD"), id(&fx.main, "main"));
    let bases = git(
        &fx.main,
        &[
            "merge-base",
            "--all",
            &a_head.to_string(),
            &b_head.to_string(),
        ],
    );
    assert_eq!(bases.lines().count(), 2, "a criss-cross: two merge bases");
    let merges = [
        (a_head, b_head),
        (b_head, a_head),
        (main, a_head),
        (a_head, id(&a, "HEAD^")),
        (id(&b, "HEAD^"), id(&a, "HEAD^")),
    ];
    let git_dir = fx.main.join(".git");
    let home = tempfile::tempdir().unwrap();
    let mut graph = CommitGraph::for_repo(home.path(), &git_dir).unwrap();
    for jobs in [1, 2] {
        let batch = super::merge::merge_commits_batch(&git_dir, None, &merges, jobs).unwrap();
        let one_by_one: Vec<_> = merges
            .iter()
            .map(|(o, t)| {
                super::merge::merge_commits_with_git(&git_dir, None, *o, *t, true).unwrap()
            })
            .collect();
        assert_eq!(batch, one_by_one, "{jobs} processes");
        // The same with owt's commit-graph, which git reads.
        let graphed =
            super::merge::merge_commits_batch(&git_dir, Some(&mut graph), &merges, jobs).unwrap();
        assert_eq!(graphed, batch, "{jobs} processes, with the graph");
        assert!(graph
            .dir()
            .join("info/commit-graphs/commit-graph-chain")
            .exists());
        let one = super::merge::merge_commits_with_git(
            &git_dir,
            Some(&mut graph),
            merges[0].0,
            merges[0].1,
            true,
        )
        .unwrap();
        assert_eq!(one, batch[0]);
        assert!(
            !batch[0].clean && batch[0].conflicts.len() == 2,
            "{:?}",
            batch[0]
        );
        assert!(batch[2].clean);
    }
}
