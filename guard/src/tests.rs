//! Fixture tests of the guard: real temporary repositories with linked
//! worktrees, hermetic git (no user or system config, fixed identity and
//! dates), one `check`-style helper rendering a pair report as text.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use expect_test::{expect, Expect};
use owt_protocol::guard::{GuardPair, Level};

use super::engine::{GuardEngine, Participant, YOU};
use super::GuardWatcher;

pub(super) fn hermetic() {
    owt_e2e::hermetic_git_process();
}

pub(crate) fn git(cwd: &Path, args: &[&str]) -> String {
    owt_e2e::git(cwd, args)
}

pub(super) use owt_e2e::ten_lines as lines;

/// `lines()` with line `n` (1-based) replaced.
pub(super) fn with_line(n: usize, text: &str) -> String {
    owt_e2e::with_line(&lines(), n, text)
}

pub(super) struct Fixture {
    _dir: tempfile::TempDir,
    pub(super) main: PathBuf,
    pub(super) root: PathBuf,
}

impl Fixture {
    /// A repository on `main` with `files` committed.
    pub(super) fn new(files: &[(&str, &str)]) -> Fixture {
        hermetic();
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let main = root.join("main");
        std::fs::create_dir_all(&main).unwrap();
        git(&main, &["init", "-q", "-b", "main"]);
        for (path, text) in files {
            write(&main, path, text);
        }
        git(&main, &["add", "-A"]);
        git(&main, &["commit", "-q", "-m", "initial"]);
        Fixture {
            _dir: dir,
            main,
            root,
        }
    }

    /// A linked worktree on a new branch `name` from `main`.
    pub(super) fn worktree(&self, name: &str) -> PathBuf {
        let path = self.root.join(name);
        git(
            &self.main,
            &[
                "worktree",
                "add",
                "-q",
                "-b",
                name,
                path.to_str().unwrap(),
                "main",
            ],
        );
        path
    }

    pub(super) fn engine(&self, names: &[&str], ignore: &[&str]) -> GuardEngine {
        let mut engine = self.uncomputed_engine(names, ignore);
        engine.full_recompute().unwrap();
        engine
    }

    /// [`Self::engine`] before its first computation.
    pub(super) fn uncomputed_engine(&self, names: &[&str], ignore: &[&str]) -> GuardEngine {
        let ignore: Vec<String> = ignore.iter().map(|s| s.to_string()).collect();
        let mut engine = GuardEngine::new(&self.main, &ignore).unwrap();
        for name in names {
            let (worktree, id) = if *name == YOU {
                (self.main.clone(), YOU)
            } else {
                (self.root.join(name), *name)
            };
            engine
                .add_participant(Participant {
                    id: id.to_string(),
                    session_id: None,
                    worktree,
                    base_branch: "main".into(),
                    journal: None,
                })
                .unwrap();
        }
        engine
    }
}

pub(super) fn write(root: &Path, path: &str, text: &str) {
    let abs = root.join(path);
    std::fs::create_dir_all(abs.parent().unwrap()).unwrap();
    std::fs::write(abs, text).unwrap();
}

pub(super) fn render_pairs(pairs: &[&GuardPair]) -> String {
    let mut out = String::new();
    for pair in pairs {
        out.push_str(&format!(
            "{} ~ {}: {} (conflicting: {:?})\n",
            pair.a,
            pair.b,
            pair.level.as_str(),
            pair.conflicting_paths
        ));
        for p in &pair.paths {
            let fmt = |r: &[owt_protocol::guard::LineRange]| {
                r.iter()
                    .map(|r| format!("{}+{}", r.start, r.lines))
                    .collect::<Vec<_>>()
                    .join(",")
            };
            let side =
                |ranges: &[owt_protocol::guard::LineRange], change: &Option<String>| match change {
                    Some(change) => format!("[{}] {change}", fmt(ranges)),
                    None => format!("[{}]", fmt(ranges)),
                };
            out.push_str(&format!(
                "  {} {} a={} b={}{}{}\n",
                p.path,
                p.level.as_str(),
                side(&p.a_ranges, &p.a_change),
                side(&p.b_ranges, &p.b_change),
                p.detail
                    .as_ref()
                    .map(|d| format!(" ({d})"))
                    .unwrap_or_default(),
                if p.ignored { " ignored" } else { "" }
            ));
        }
    }
    if out.is_empty() {
        out.push_str("no overlaps\n");
    }
    out
}

/// Two agents `a` and `b` branch from a repository holding `files`;
/// `edit_a` / `edit_b` change their worktrees; the pair report must read
/// `expected`.
fn check(
    files: &[(&str, &str)],
    edit_a: impl FnOnce(&Path),
    edit_b: impl FnOnce(&Path),
    expected: Expect,
) {
    let fx = Fixture::new(files);
    let a = fx.worktree("a");
    let b = fx.worktree("b");
    edit_a(&a);
    edit_b(&b);
    let engine = fx.engine(&["a", "b"], &[]);
    expected.assert_eq(&render_pairs(&engine.pairs()));
}

#[test]
fn same_change_on_both_sides_is_not_a_conflict() {
    check(
        &[("f.txt", &lines())],
        |a| write(a, "f.txt", &with_line(5, "same")),
        |b| write(b, "f.txt", &with_line(5, "same")),
        expect![[r#"
            a ~ b: same-change (conflicting: [])
              f.txt same-change a=[5+1] b=[5+1]
        "#]],
    );
}

#[test]
fn hunks_one_line_apart_are_a_hunk_overlap_not_a_conflict() {
    check(
        &[("f.txt", &lines())],
        |a| write(a, "f.txt", &with_line(3, "a was here")),
        |b| write(b, "f.txt", &with_line(5, "b was here")),
        expect![[r#"
            a ~ b: hunk-overlap (conflicting: [])
              f.txt hunk-overlap a=[3+1] b=[5+1]
        "#]],
    );
}

#[test]
fn touching_hunks_conflict_like_git() {
    check(
        &[("f.txt", &lines())],
        |a| write(a, "f.txt", &with_line(3, "a was here")),
        |b| write(b, "f.txt", &with_line(4, "b was here")),
        expect![[r#"
            a ~ b: conflict (conflicting: ["f.txt"])
              f.txt conflict a=[3+1] b=[4+1]
        "#]],
    );
}

#[test]
fn far_apart_hunks_are_an_overlap() {
    check(
        &[("f.txt", &lines())],
        |a| write(a, "f.txt", &with_line(1, "top")),
        |b| write(b, "f.txt", &with_line(9, "bottom")),
        expect![[r#"
            a ~ b: overlap (conflicting: [])
              f.txt overlap a=[1+1] b=[9+1]
        "#]],
    );
}

#[test]
fn different_files_do_not_overlap() {
    check(
        &[("f.txt", &lines()), ("g.txt", &lines())],
        |a| write(a, "f.txt", &with_line(1, "top")),
        |b| write(b, "g.txt", &with_line(1, "top")),
        expect![[r#"
            no overlaps
        "#]],
    );
}

#[test]
fn edit_vs_delete_conflicts() {
    check(
        &[("f.txt", &lines())],
        |a| write(a, "f.txt", &with_line(2, "edited")),
        |b| std::fs::remove_file(b.join("f.txt")).unwrap(),
        expect![[r#"
            a ~ b: conflict (conflicting: ["f.txt"])
              f.txt conflict a=[2+1] b=[1+10] deleted (edit/delete)
        "#]],
    );
}

#[test]
fn rename_vs_edit_merges_cleanly() {
    check(
        &[("f.txt", &lines())],
        |a| std::fs::rename(a.join("f.txt"), a.join("renamed.txt")).unwrap(),
        |b| write(b, "f.txt", &with_line(2, "edited")),
        expect![[r#"
            a ~ b: overlap (conflicting: [])
              f.txt overlap a=[] renamed away b=[2+1] (rename)
        "#]],
    );
}

#[test]
fn rename_vs_rename_conflicts() {
    check(
        &[("f.txt", &lines())],
        |a| std::fs::rename(a.join("f.txt"), a.join("one.txt")).unwrap(),
        |b| std::fs::rename(b.join("f.txt"), b.join("two.txt")).unwrap(),
        expect![[r#"
            a ~ b: conflict (conflicting: ["f.txt", "one.txt", "two.txt"])
              f.txt conflict a=[] renamed away b=[] renamed away (rename/rename)
              one.txt conflict a=[] renamed here b=[]
              two.txt conflict a=[] b=[] renamed here
        "#]],
    );
}

#[test]
fn file_vs_directory_conflicts() {
    check(
        &[("f.txt", &lines())],
        |a| write(a, "lib", "a file\n"),
        |b| write(b, "lib/mod.rs", "a folder\n"),
        expect![[r#"
            a ~ b: conflict (conflicting: ["lib"])
              lib conflict a=[] added b=[] (file/directory)
        "#]],
    );
}

#[test]
fn binary_files_changed_on_both_sides_conflict() {
    let bin = |byte: u8| -> Vec<u8> { (0..64u8).map(|i| i ^ byte).chain([0, 0]).collect() };
    let fx = Fixture::new(&[("f.txt", "x\n")]);
    std::fs::write(fx.main.join("img.bin"), bin(0)).unwrap();
    git(&fx.main, &["add", "img.bin"]);
    git(&fx.main, &["commit", "-q", "-m", "binary"]);
    let a = fx.worktree("a");
    let b = fx.worktree("b");
    std::fs::write(a.join("img.bin"), bin(1)).unwrap();
    std::fs::write(b.join("img.bin"), bin(2)).unwrap();
    let engine = fx.engine(&["a", "b"], &[]);
    expect![[r#"
        a ~ b: conflict (conflicting: ["img.bin"])
          img.bin conflict a=[] binary b=[] binary (binary file changed on both sides)
    "#]]
    .assert_eq(&render_pairs(&engine.pairs()));
    assert!(engine.changes("a").unwrap()[0].binary);
}

#[test]
fn untracked_new_file_on_both_sides() {
    check(
        &[("f.txt", "x\n")],
        |a| write(a, "new.txt", "same\n"),
        |b| write(b, "new.txt", "same\n"),
        expect![[r#"
            a ~ b: same-change (conflicting: [])
              new.txt same-change a=[] added b=[] added (the same new file on both sides)
        "#]],
    );
    check(
        &[("f.txt", "x\n")],
        |a| write(a, "new.txt", "from a\n"),
        |b| write(b, "new.txt", "from b\n"),
        expect![[r#"
            a ~ b: conflict (conflicting: ["new.txt"])
              new.txt conflict a=[] added b=[] added (new file on both sides)
        "#]],
    );
}

#[test]
fn mode_change_vs_edit_merges_cleanly() {
    use std::os::unix::fs::PermissionsExt;
    check(
        &[("run.sh", &lines())],
        |a| {
            std::fs::set_permissions(a.join("run.sh"), std::fs::Permissions::from_mode(0o755))
                .unwrap()
        },
        |b| write(b, "run.sh", &with_line(2, "edited")),
        expect![[r#"
            a ~ b: overlap (conflicting: [])
              run.sh overlap a=[] mode b=[2+1] (mode)
        "#]],
    );
}

#[test]
fn committed_staged_unstaged_and_untracked_all_count_and_ignored_does_not() {
    let fx = Fixture::new(&[
        ("c.txt", &lines()),
        ("s.txt", &lines()),
        ("u.txt", &lines()),
        (".gitignore", "build/\n"),
    ]);
    let a = fx.worktree("a");
    write(&a, "c.txt", &with_line(1, "committed"));
    git(&a, &["commit", "-q", "-am", "c"]);
    write(&a, "s.txt", &with_line(1, "staged"));
    git(&a, &["add", "s.txt"]);
    write(&a, "u.txt", &with_line(1, "unstaged"));
    write(&a, "new/untracked.txt", "new\n");
    write(&a, "build/out.o", "ignored\n");
    let engine = fx.engine(&["a"], &[]);
    let paths: Vec<&str> = engine
        .changes("a")
        .unwrap()
        .iter()
        .map(|c| c.path.as_str())
        .collect();
    assert_eq!(paths, ["c.txt", "new/untracked.txt", "s.txt", "u.txt"]);
    // The index and the branch are untouched.
    assert_eq!(git(&a, &["diff", "--cached", "--name-only"]), "s.txt");
    assert_eq!(git(&a, &["status", "--porcelain"]).lines().count(), 3);
}

/// The in-process walk finds the same working state as `git status` on a
/// checkout holding every kind of change it must tell apart, and writes
/// nothing.
#[test]
fn the_in_process_scan_agrees_with_git_status() {
    use super::snapshot::WorkState;
    use std::os::unix::fs::{symlink, PermissionsExt};
    let fx = Fixture::new(&[
        ("edit.txt", &lines()),
        ("staged.txt", &lines()),
        ("both.txt", &lines()),
        ("gone.txt", &lines()),
        ("rm-cached.txt", &lines()),
        ("touched.txt", &lines()),
        ("chmod.sh", "echo hi\n"),
        ("becomes-dir", "file\n"),
        ("dir-becomes-file/inner.txt", "inner\n"),
        ("skip.txt", &lines()),
        ("link", "target"),
        ("src/a.rs", &lines()),
        ("src/deep/b.rs", &lines()),
        ("with space é.txt", &lines()),
        (".gitignore", "build/\n*.log\n"),
    ]);
    let a = fx.worktree("a");
    std::fs::remove_file(a.join("link")).unwrap();
    symlink("elsewhere", a.join("link")).unwrap();
    write(&a, "edit.txt", &with_line(2, "edited"));
    write(&a, "staged.txt", &with_line(3, "staged"));
    git(&a, &["add", "staged.txt"]);
    write(&a, "both.txt", &with_line(4, "staged"));
    git(&a, &["add", "both.txt"]);
    write(&a, "both.txt", &with_line(4, "then edited"));
    std::fs::remove_file(a.join("gone.txt")).unwrap();
    git(&a, &["rm", "-q", "--cached", "rm-cached.txt"]);
    let touched = a.join("touched.txt");
    std::fs::write(&touched, lines()).unwrap();
    std::fs::set_permissions(a.join("chmod.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::remove_file(a.join("becomes-dir")).unwrap();
    write(&a, "becomes-dir/x.txt", "x\n");
    std::fs::remove_dir_all(a.join("dir-becomes-file")).unwrap();
    write(&a, "dir-becomes-file", "now a file\n");
    git(&a, &["update-index", "--skip-worktree", "skip.txt"]);
    write(&a, "skip.txt", &with_line(5, "hidden by skip-worktree"));
    write(&a, "src/new.rs", "new\n");
    write(&a, "src/debug.log", "ignored by pattern\n");
    write(&a, "untracked/dir/deep.txt", "deep\n");
    write(&a, "build/out.o", "ignored folder\n");
    std::fs::create_dir_all(a.join("empty/folder")).unwrap();
    write(&a, "intent.txt", "intent to add\n");
    git(&a, &["add", "-N", "intent.txt"]);
    git(&a.join("untracked"), &["init", "-q", "nested"]);
    write(
        &a,
        "untracked/nested/inside.txt",
        "in a repository of its own\n",
    );
    write(&a, "src/deep/b.rs", &with_line(6, "deep edit"));
    // Racily clean: same size, same second as the index write.
    write(&a, "src/a.rs", &with_line(7, "racy"));
    git(&a, &["add", "src/a.rs"]);
    write(&a, "src/a.rs", &with_line(7, "RACY"));

    let index_before =
        std::fs::read(PathBuf::from(git(&a, &["rev-parse", "--absolute-git-dir"])).join("index"))
            .unwrap();
    let mut walked = WorkState::open(&a, "main").unwrap();
    walked.scan_full().unwrap();
    let mut by_git = WorkState::open(&a, "main").unwrap();
    by_git.scan_full_with_git().unwrap();
    let names = |ws: &WorkState| ws.dirty.keys().cloned().collect::<Vec<_>>();
    assert_eq!(names(&walked), names(&by_git));
    assert_eq!(walked.dirty, by_git.dirty);
    assert_eq!(walked.snapshot, by_git.snapshot);
    expect![[r#"
        becomes-dir
        becomes-dir/x.txt
        both.txt
        chmod.sh
        dir-becomes-file
        dir-becomes-file/inner.txt
        edit.txt
        gone.txt
        intent.txt
        link
        src/a.rs
        src/deep/b.rs
        src/new.rs
        staged.txt
        untracked/dir/deep.txt"#]]
    .assert_eq(&names(&walked).join("\n"));
    assert!(walked.status_in_process().is_some(), "the walk handled it");
    let index_after =
        std::fs::read(PathBuf::from(git(&a, &["rev-parse", "--absolute-git-dir"])).join("index"))
            .unwrap();
    assert!(index_before == index_after, "the index is untouched");
}

#[test]
fn crlf_only_change_is_no_change_under_text_auto() {
    let fx = Fixture::new(&[("f.txt", &lines()), (".gitattributes", "* text=auto\n")]);
    let a = fx.worktree("a");
    write(&a, "f.txt", &lines().replace('\n', "\r\n"));
    let engine = fx.engine(&["a"], &[]);
    assert_eq!(engine.changes("a").unwrap(), &[]);
}

#[test]
fn a_branch_behind_its_base_owns_only_its_own_changes() {
    let fx = Fixture::new(&[("f.txt", &lines()), ("g.txt", &lines())]);
    let a = fx.worktree("a");
    // main moves on after `a` branched: f.txt changes there.
    write(&fx.main, "f.txt", &with_line(2, "main moved"));
    git(&fx.main, &["commit", "-q", "-am", "main moves"]);
    write(&a, "g.txt", &with_line(2, "a's work"));
    // The human edits f.txt further, uncommitted.
    write(&fx.main, "f.txt", &with_line(2, "human"));
    let engine = fx.engine(&["a", YOU], &[]);
    let paths: Vec<&str> = engine
        .changes("a")
        .unwrap()
        .iter()
        .map(|c| c.path.as_str())
        .collect();
    assert_eq!(paths, ["g.txt"], "main's newer commit is not a's change");
    let you: Vec<&str> = engine
        .changes(YOU)
        .unwrap()
        .iter()
        .map(|c| c.path.as_str())
        .collect();
    assert_eq!(you, ["f.txt"]);
    expect![[r#"
        no overlaps
    "#]]
    .assert_eq(&render_pairs(&engine.pairs()));
}

#[test]
fn the_humans_unsaved_buffer_overlapping_an_agent() {
    let fx = Fixture::new(&[("f.txt", &lines())]);
    let a = fx.worktree("a");
    write(&a, "f.txt", &with_line(6, "agent"));
    let mut engine = fx.engine(&["a", YOU], &[]);
    expect![[r#"
        no overlaps
    "#]]
    .assert_eq(&render_pairs(&engine.pairs()));
    let rx = engine.subscribe();
    let mut buffers = BTreeMap::new();
    buffers.insert(fx.main.join("f.txt"), with_line(6, "human, unsaved"));
    let update = engine.set_overrides(YOU, buffers).unwrap();
    assert_eq!(update.participants, [YOU]);
    assert_eq!(rx.try_recv().unwrap(), update);
    expect![[r#"
        a ~ you: conflict (conflicting: ["f.txt"])
          f.txt conflict a=[6+1] b=[6+1]
    "#]]
    .assert_eq(&render_pairs(&engine.pairs()));
    // Nothing on disk changed.
    assert_eq!(
        std::fs::read_to_string(fx.main.join("f.txt")).unwrap(),
        lines()
    );
    engine.set_overrides(YOU, BTreeMap::new()).unwrap();
    assert!(engine.pairs().is_empty());
}

#[test]
fn ignore_globs_hide_overlaps_but_never_conflicts() {
    let fx = Fixture::new(&[("Cargo.lock", &lines()), ("sub/x.lock", &lines())]);
    let a = fx.worktree("a");
    let b = fx.worktree("b");
    write(&a, "Cargo.lock", &with_line(1, "a"));
    write(&b, "Cargo.lock", &with_line(9, "b"));
    write(&a, "sub/x.lock", &with_line(1, "a"));
    write(&b, "sub/x.lock", &with_line(1, "b"));
    let engine = fx.engine(&["a", "b"], &["*.lock"]);
    expect![[r#"
        a ~ b: conflict (conflicting: ["sub/x.lock"])
          sub/x.lock conflict a=[1+1] b=[1+1] ignored
    "#]]
    .assert_eq(&render_pairs(&engine.pairs()));
}

/// Regression (found by the LSP's code-action test under load): committing
/// what was already in the working state moves HEAD and nothing else, so no
/// update named the participant and the commits ahead the LSP shows stayed
/// stale until the next full git pass (a minute).
#[test]
fn a_commit_of_the_working_state_reports_the_moved_head() {
    let fx = Fixture::new(&[("f.txt", &lines())]);
    let a = fx.worktree("a");
    write(&a, "f.txt", &with_line(3, "a"));
    let mut engine = fx.engine(&["a"], &[]);
    git(&a, &["commit", "-q", "-am", "work"]);
    let before = engine.changes("a").unwrap().to_vec();
    let update = engine.on_refs_changed("a").unwrap();
    assert_eq!(
        engine.changes("a").unwrap(),
        &before[..],
        "the working state is the same"
    );
    // (Its landing — the state as a commit on its HEAD, which the pair
    // verdicts merge — did move: the participant is recomputed.)
    assert_eq!(update.heads_moved, ["a"]);
    let unchanged = engine.on_refs_changed("a").unwrap();
    assert!(unchanged.heads_moved.is_empty());
    assert!(unchanged.participants.is_empty(), "nothing moved again");
}

#[test]
fn incremental_updates_touch_only_the_changed_participant() {
    let fx = Fixture::new(&[("f.txt", &lines()), ("d/g.txt", &lines())]);
    let a = fx.worktree("a");
    let b = fx.worktree("b");
    fx.worktree("c");
    let mut engine = fx.engine(&["a", "b", "c"], &[]);
    assert!(engine.pairs().is_empty());
    // Unchanged: nothing recomputed.
    let update = engine
        .on_paths_changed("a", &[PathBuf::from("f.txt")])
        .unwrap();
    assert!(update.participants.is_empty() && update.pairs.is_empty());
    write(&a, "f.txt", &with_line(3, "a"));
    write(&b, "f.txt", &with_line(3, "b"));
    let update = engine.on_paths_changed("a", &[a.join("f.txt")]).unwrap();
    assert_eq!(update.participants, ["a"]);
    assert_eq!(update.pairs.len(), 2, "only a's pairs: {update:?}");
    assert!(engine.pairs().is_empty(), "b not told yet");
    engine
        .on_paths_changed("b", &[PathBuf::from("f.txt")])
        .unwrap();
    assert_eq!(engine.pairs()[0].level, Level::Conflict);
    // A folder removed: every file in it is deleted.
    std::fs::remove_dir_all(b.join("d")).unwrap();
    engine.on_paths_changed("b", &[PathBuf::from("d")]).unwrap();
    let paths: Vec<&str> = engine
        .changes("b")
        .unwrap()
        .iter()
        .map(|c| c.path.as_str())
        .collect();
    assert_eq!(paths, ["d/g.txt", "f.txt"]);
    // A commit in b moves HEAD: its state is the same, its changes too.
    git(&b, &["add", "-A"]);
    git(&b, &["commit", "-q", "-m", "b"]);
    let before = engine.snapshot("b");
    engine.on_refs_changed("b").unwrap();
    assert_eq!(engine.snapshot("b"), before);
    assert_eq!(engine.changes("b").unwrap().len(), 2);
}

/// The window between an engine's first computation and its watcher's
/// start (`owt lsp` at start, `owt serve`'s snapshots): a write the
/// computation did not see, made once the folders are watched, reaches
/// the engine when the watcher starts.
#[test]
fn a_write_between_watching_and_starting_reaches_the_engine() {
    let fx = Fixture::new(&[("f.txt", &lines())]);
    let a = fx.worktree("a");
    let b = fx.worktree("b");
    write(&b, "f.txt", &with_line(4, "b"));
    let engine = fx.engine(&["a", "b"], &[]);
    let watching = super::Watching::new(&engine).unwrap();
    write(&a, "f.txt", &with_line(4, "a"));
    assert_eq!(engine.overlap_count("a"), 0, "the engine has not seen it");
    let engine = Arc::new(Mutex::new(engine));
    let (tx, rx) = std::sync::mpsc::channel();
    let _watcher = watching
        .start(
            engine.clone(),
            Duration::from_millis(30),
            move |engine, update| {
                let _ = tx.send((update.participants.clone(), engine.overlap_count("a")));
            },
        )
        .unwrap();
    let (participants, overlaps) = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the queued write reached the engine within 10 s");
    assert_eq!(participants, ["a"]);
    assert_eq!(overlaps, 1);
}

/// `owt lsp`'s start: the engine computed and published first, the
/// watches made afterwards on the watcher's thread. A write (and a commit)
/// the computation did not see, made before any watch existed, reaches the
/// engine once the watches are made; one after, as a batch.
#[test]
fn a_write_before_the_watches_are_made_reaches_the_engine() {
    let fx = Fixture::new(&[("f.txt", &lines()), ("g.txt", &lines())]);
    let a = fx.worktree("a");
    fx.worktree("b");
    let engine = fx.engine(&["a", "b"], &[]);
    write(&a, "f.txt", &with_line(4, "a"));
    git(&a, &["commit", "-q", "-am", "a commits"]);
    write(&a, "g.txt", &with_line(4, "a"));
    let changed = |g: &GuardEngine| -> Vec<String> {
        let mut paths: Vec<String> = g
            .changes("a")
            .unwrap()
            .iter()
            .map(|c| c.path.clone())
            .collect();
        paths.sort();
        paths
    };
    assert!(changed(&engine).is_empty(), "the engine has not seen it");
    let engine = Arc::new(Mutex::new(engine));
    let (tx, rx) = std::sync::mpsc::channel();
    let (watched_tx, watched_rx) = std::sync::mpsc::channel();
    let _watcher = GuardWatcher::start_watching(
        engine.clone(),
        Duration::from_millis(30),
        move |engine, update| {
            let _ = tx.send((update.participants.clone(), changed(engine)));
        },
        move |watched| {
            let _ = watched_tx.send(watched.map_err(|e| e.to_string()));
        },
    )
    .unwrap();
    watched_rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the watches were made within 10 s")
        .expect("watching");
    // Told after the catch-up: its batch is in.
    let updates: Vec<(Vec<String>, Vec<String>)> = rx.try_iter().collect();
    assert_eq!(
        updates.last(),
        Some(&(vec!["a".to_string()], vec!["f.txt".into(), "g.txt".into()])),
        "{updates:?}"
    );
    // Watched now: a later write is a batch of its own.
    write(&a, "g.txt", &lines());
    let update = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the write after watching within 10 s");
    assert_eq!(update, (vec!["a".to_string()], vec!["f.txt".to_string()]));
}

/// A checkout gone before its watch could be made: the watcher says so
/// (`owt lsp` then shows the guard is not live) and ends.
#[test]
fn watches_that_cannot_be_made_are_reported() {
    let fx = Fixture::new(&[("f.txt", &lines())]);
    let a = fx.worktree("a");
    fx.worktree("b");
    let engine = Arc::new(Mutex::new(fx.engine(&["a", "b"], &[])));
    std::fs::remove_dir_all(&a).unwrap();
    let (watched_tx, watched_rx) = std::sync::mpsc::channel();
    let _watcher = GuardWatcher::start_watching(
        engine,
        Duration::from_millis(30),
        |_, _| {},
        move |watched| {
            let _ = watched_tx.send(watched.map_err(|e| e.to_string()));
        },
    )
    .unwrap();
    let error = watched_rx
        .recv_timeout(Duration::from_secs(10))
        .expect("told within 10 s")
        .expect_err("a deleted checkout was watched");
    assert!(error.contains(a.to_str().unwrap()), "{error}");
}

#[test]
fn watcher_updates_facts_after_a_write() {
    let fx = Fixture::new(&[("f.txt", &lines())]);
    let a = fx.worktree("a");
    let b = fx.worktree("b");
    write(&b, "f.txt", &with_line(4, "b"));
    let engine = Arc::new(Mutex::new(fx.engine(&["a", "b"], &[])));
    let (tx, rx) = std::sync::mpsc::channel();
    let _watcher = GuardWatcher::start(
        engine.clone(),
        Duration::from_millis(30),
        move |engine, update| {
            let _ = tx.send((update.participants.clone(), engine.overlap_count("a")));
        },
    )
    .unwrap();
    write(&a, "f.txt", &with_line(4, "a"));
    let (participants, overlaps) = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the watcher reported the write within 10 s");
    assert_eq!(participants, ["a"]);
    assert_eq!(overlaps, 1);
    // An ignored file changes nothing; a real write does.
    write(&b, ".gitignore", "*.log\n");
    git(&b, &["add", ".gitignore"]);
    git(&b, &["commit", "-q", "-m", "ignore logs"]);
    let _ = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the commit");
    write(&b, "debug.log", "noise\n");
    write(&b, "f.txt", &with_line(4, "b2"));
    // Under load the commit's events may come in several updates: wait for
    // the state, then check that only b was ever re-read.
    let paths_of_b = |g: &GuardEngine| -> Vec<String> {
        g.changes("b")
            .unwrap()
            .iter()
            .map(|c| c.path.clone())
            .collect()
    };
    let seen = updates_until(&rx, &engine, "the second write", |g| {
        paths_of_b(g) == [".gitignore", "f.txt"]
    });
    assert!(seen.iter().all(|p| p == &["b"]), "{seen:?}");
    // A ref move alone (no file written): b's branch jumps to main's new
    // tip, whose new file b's folder lacks.
    write(&fx.main, "g.txt", "on main\n");
    git(&fx.main, &["add", "g.txt"]);
    git(&fx.main, &["commit", "-q", "-m", "g"]);
    git(&b, &["update-ref", "refs/heads/b", "main"]);
    let seen = updates_until(&rx, &engine, "the ref move", |g| {
        g.changes("b")
            .unwrap()
            .iter()
            .any(|c| c.path == "g.txt" && c.kind == super::ChangeKind::Deleted)
    });
    assert!(
        seen.iter().any(|p| p.contains(&"b".to_string())),
        "{seen:?}"
    );
    assert_eq!(engine.lock().unwrap().pairs()[0].level, Level::Conflict);
}

/// A finished write (the file closed) ends its batch without waiting out
/// the debounce; a file still open for writing is held back until the
/// debounce passes with no event, and is then applied.
#[test]
fn a_closed_write_does_not_wait_out_the_debounce() {
    use std::io::Write;
    let fx = Fixture::new(&[("f.txt", &lines())]);
    let a = fx.worktree("a");
    let engine = Arc::new(Mutex::new(fx.engine(&["a"], &[])));
    let (tx, rx) = std::sync::mpsc::channel();
    let debounce = Duration::from_secs(20);
    let _watcher = GuardWatcher::start(engine.clone(), debounce, move |_, u| {
        let _ = tx.send(u.participants.clone());
    })
    .unwrap();
    let started = std::time::Instant::now();
    write(&a, "f.txt", &with_line(4, "a"));
    let participants = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("a closed write applied before the 20 s debounce passed");
    assert_eq!(participants, ["a"]);
    assert!(started.elapsed() < debounce);
    // Written and left open: the batch is not settled, so it waits for the
    // debounce (here cut short by closing the file: the close is the event
    // that settles it).
    let mut open = std::fs::OpenOptions::new()
        .append(true)
        .open(a.join("f.txt"))
        .unwrap();
    open.write_all(b"appended\n").unwrap();
    open.flush().unwrap();
    assert!(
        rx.recv_timeout(Duration::from_millis(500)).is_err(),
        "a write to a file still open was applied before the file settled"
    );
    drop(open);
    let participants = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the append applied once the file was closed");
    assert_eq!(participants, ["a"]);
    assert!(engine.lock().unwrap().changes("a").unwrap()[0].path == "f.txt");
}

/// The participants of each update `rx` brings until `done` holds of the
/// engine after one; fails loudly after 10 s.
fn updates_until(
    rx: &std::sync::mpsc::Receiver<(Vec<String>, u32)>,
    engine: &Arc<Mutex<GuardEngine>>,
    what: &str,
    done: impl Fn(&GuardEngine) -> bool,
) -> Vec<Vec<String>> {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let mut seen = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let (participants, _) = rx
            .recv_timeout(left)
            .unwrap_or_else(|_| panic!("the watcher did not report {what} within 10 s: {seen:?}"));
        seen.push(participants);
        if done(&engine.lock().unwrap()) {
            return seen;
        }
    }
}

/// Folders made after the watcher started are watched too: a file written
/// deep in a new tree at once (before any watch on it could exist) is seen,
/// and so is a later write inside it, and a tree moved in.
#[test]
fn watcher_sees_files_in_folders_made_after_it_started() {
    let fx = Fixture::new(&[("f.txt", &lines())]);
    let a = fx.worktree("a");
    let engine = Arc::new(Mutex::new(fx.engine(&["a"], &[])));
    let (tx, rx) = std::sync::mpsc::channel();
    let _watcher = GuardWatcher::start(engine.clone(), Duration::from_millis(30), move |_, u| {
        let _ = tx.send(u.participants.clone());
    })
    .unwrap();
    let changed = |engine: &Arc<Mutex<GuardEngine>>| -> Vec<String> {
        let guard = engine.lock().unwrap();
        let changes = guard.changes("a").unwrap();
        changes.iter().map(|c| c.path.clone()).collect()
    };
    let wait_for = |path: &str| {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !changed(&engine).iter().any(|p| p == path) {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            assert!(
                rx.recv_timeout(left).is_ok(),
                "the watcher never reported {path}; changes: {:?}",
                changed(&engine)
            );
        }
    };
    write(&a, "new/deep/er/x.rs", "x\n");
    wait_for("new/deep/er/x.rs");
    write(&a, "new/deep/er/y.rs", "y\n");
    wait_for("new/deep/er/y.rs");
    let outside = fx.root.join("outside-tree");
    write(&outside, "sub/z.rs", "z\n");
    std::fs::rename(&outside, a.join("moved")).unwrap();
    wait_for("moved/sub/z.rs");
    write(&a, "moved/sub/w.rs", "w\n");
    wait_for("moved/sub/w.rs");
    // Many folders come and go (the watcher's table of names is compacted
    // once removed ones are most of it); the ones left still resolve.
    for i in 0..200 {
        write(
            &a,
            &format!("churn/folder-with-a-long-name-{i:04}/f.rs"),
            "f\n",
        );
    }
    wait_for("churn/folder-with-a-long-name-0199/f.rs");
    std::fs::remove_dir_all(a.join("churn")).unwrap();
    write(&a, "moved/sub/after-churn.rs", "a\n");
    wait_for("moved/sub/after-churn.rs");
    write(&a, "new/deep/er/after-churn.rs", "b\n");
    wait_for("new/deep/er/after-churn.rs");
}

/// Folders that existed before the watcher started are watched at every
/// depth, leaf folders (not listed when the file system's link counts say
/// they hold no subfolder) included; a folder made later inside a leaf
/// folder is watched too.
#[test]
fn watcher_sees_writes_in_existing_leaf_folders() {
    let text = lines();
    let fx = Fixture::new(&[
        ("top.rs", &text),
        ("src/m0/d0/f0.rs", &text),
        ("src/m0/d1/f1.rs", &text),
        ("src/m1/d0/f2.rs", &text),
    ]);
    let a = fx.worktree("a");
    let engine = Arc::new(Mutex::new(fx.engine(&["a"], &[])));
    let (tx, rx) = std::sync::mpsc::channel();
    let _watcher = GuardWatcher::start(engine.clone(), Duration::from_millis(30), move |_, u| {
        let _ = tx.send(u.participants.clone());
    })
    .unwrap();
    let wait_for = |path: &str| {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let changed: Vec<String> = {
                let guard = engine.lock().unwrap();
                let changes = guard.changes("a").unwrap();
                changes.iter().map(|c| c.path.clone()).collect()
            };
            if changed.iter().any(|p| p == path) {
                return;
            }
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            assert!(
                rx.recv_timeout(left).is_ok(),
                "the watcher never reported {path}; changes: {changed:?}"
            );
        }
    };
    for path in ["src/m1/d0/f2.rs", "src/m0/d1/f1.rs", "top.rs"] {
        write(&a, path, "changed\n");
        wait_for(path);
    }
    write(&a, "src/m0/d0/later/g.rs", "g\n");
    wait_for("src/m0/d0/later/g.rs");
    write(&a, "src/m0/d0/later/h.rs", "h\n");
    wait_for("src/m0/d0/later/h.rs");
}

/// A tiny deterministic generator (xorshift64*), so a failure names its
/// seed and replays.
pub(super) struct Rng(pub(super) u64);

impl Rng {
    pub(super) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub(super) fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

pub(super) fn files_in(root: &Path) -> Vec<String> {
    let out = git(
        root,
        &["ls-files", "--cached", "--others", "--exclude-standard"],
    );
    let mut files: Vec<String> = out
        .lines()
        .filter(|p| root.join(p).is_file())
        .map(str::to_string)
        .collect();
    files.sort();
    files.dedup();
    files
}

/// One random edit of the checkout at `root`.
pub(super) fn random_edit(rng: &mut Rng, root: &Path, tag: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let files = files_in(root);
    let pick = |rng: &mut Rng| files[rng.below(files.len())].clone();
    let words = ["alpha", "beta", tag];
    match rng.below(9) {
        0..=2 => {
            let path = pick(rng);
            let text = std::fs::read_to_string(root.join(&path)).unwrap_or_default();
            let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
            if lines.is_empty() {
                lines.push(String::new());
            }
            let at = rng.below(lines.len());
            match rng.below(3) {
                0 => lines[at] = words[rng.below(3)].to_string(),
                1 => lines.insert(at, words[rng.below(3)].to_string()),
                _ => {
                    lines.remove(at);
                }
            }
            write(root, &path, &(lines.join("\n") + "\n"));
            format!("edit {path}:{at}")
        }
        3 => {
            let path = pick(rng);
            std::fs::remove_file(root.join(&path)).unwrap();
            format!("delete {path}")
        }
        4 => {
            let path = format!("new{}.txt", rng.below(2));
            write(root, &path, &format!("{}\n", words[rng.below(3)]));
            format!("add {path}")
        }
        5 => {
            let from = pick(rng);
            let to = format!("moved{}.txt", rng.below(2));
            std::fs::rename(root.join(&from), root.join(&to)).unwrap();
            format!("rename {from} {to}")
        }
        6 => {
            let path = pick(rng);
            std::fs::set_permissions(root.join(&path), std::fs::Permissions::from_mode(0o755))
                .unwrap();
            format!("chmod {path}")
        }
        7 => {
            let path = format!("d/extra{}.txt", rng.below(2));
            write(root, &path, &format!("{}\n", words[rng.below(3)]));
            format!("add {path}")
        }
        _ => {
            if root.join("d").is_dir() && !root.join("e").exists() {
                std::fs::rename(root.join("d"), root.join("e")).unwrap();
                "rename d e".into()
            } else {
                let path = format!("d{}", rng.below(2));
                write(root, &path, "a file where a folder may be\n");
                format!("add {path}")
            }
        }
    }
}

/// The conflicting paths git reports when merging commits `a` and `b`.
pub(super) fn git_merge_tree_conflicts(repo: &Path, a: &str, b: &str) -> (bool, Vec<String>) {
    let out = Command::new("git")
        .args(["merge-tree", "--write-tree", "--name-only", "-z", a, b])
        .current_dir(repo)
        .output()
        .unwrap();
    let code = out.status.code();
    assert!(
        code == Some(0) || code == Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sides = [a.to_string(), b.to_string()];
    let (clean, _, paths) = super::merge::parse_merge_tree(&out.stdout, code == Some(0), &sides);
    (!clean, paths)
}

#[test]
fn conflict_verdicts_match_git_merge_tree_on_random_edit_pairs() {
    let seed: u64 = std::env::var("OWT_GUARD_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x0005_eed0_f0a7);
    let iterations: usize = std::env::var("OWT_GUARD_ITERATIONS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let body: String = (1..=12).map(|i| format!("line {i}\n")).collect();
    let fx = Fixture::new(&[
        ("f0.txt", &body),
        ("f1.txt", &body),
        ("f2.txt", &body),
        ("d/x.txt", &body),
        ("d/y.txt", &body),
    ]);
    let a = fx.worktree("a");
    let b = fx.worktree("b");
    let mut engine = fx.engine(&["a", "b"], &[]);
    let mut rng = Rng(seed);
    let mut conflicts_seen = 0;
    for iteration in 0..iterations {
        let mut log = Vec::new();
        for (side, root) in [("a", &a), ("b", &b)] {
            git(root, &["reset", "-q", "--hard", "main"]);
            git(root, &["clean", "-q", "-fdx"]);
            for _ in 0..1 + rng.below(3) {
                log.push(format!("{side}: {}", random_edit(&mut rng, root, side)));
            }
            if rng.below(3) == 0 {
                git(root, &["add", "-A"]);
                git(root, &["commit", "-q", "--allow-empty", "-m", "work"]);
                log.push(format!("{side}: commit"));
                if rng.below(2) == 0 {
                    log.push(format!("{side}: {}", random_edit(&mut rng, root, side)));
                }
            }
        }
        engine.rescan("a").unwrap();
        engine.rescan("b").unwrap();
        let pair = engine.pairs().first().map(|p| (*p).clone());
        let ours_conflicted = pair.as_ref().is_some_and(|p| p.level == Level::Conflict);
        let ours: Vec<String> = pair.map(|p| p.conflicting_paths).unwrap_or_default();
        // Commit both snapshots and ask git.
        let commit = |id: &str, root: &Path| {
            let tree = engine.snapshot(id).unwrap().to_string();
            let head = git(root, &["rev-parse", "HEAD"]);
            git(
                &fx.main,
                &["commit-tree", &tree, "-p", &head, "-m", "snapshot"],
            )
        };
        let (ca, cb) = (commit("a", &a), commit("b", &b));
        let (conflicted, theirs) = git_merge_tree_conflicts(&fx.main, &ca, &cb);
        assert_eq!(
            (ours_conflicted, &ours),
            (conflicted, &theirs),
            "seed {seed}, iteration {iteration}: {log:#?}"
        );
        conflicts_seen += usize::from(conflicted);
        // The engine reuses one order's verdict for the other where that is
        // the same merge mirrored (and libgit2 judged it): both orders must
        // agree on the verdict and the paths.
        let repo = engine.repo();
        let base_tree = repo
            .find_commit(engine.merge_base("a").unwrap())
            .unwrap()
            .tree_id();
        let (sa, sb) = (engine.snapshot("a").unwrap(), engine.snapshot("b").unwrap());
        let ab = super::merge::merge_trees(repo, base_tree, sa, sb, false).unwrap();
        let ba = super::merge::merge_trees(repo, base_tree, sb, sa, false).unwrap();
        assert_eq!(
            (ab.clean, &ab.conflicts, ab.backend),
            (ba.clean, &ba.conflicts, ba.backend),
            "seed {seed}, iteration {iteration}, mirrored: {log:#?}"
        );
    }
    assert!(
        conflicts_seen > iterations / 10 && conflicts_seen < iterations,
        "the generator should make both clean and conflicting pairs ({conflicts_seen}/{iterations})"
    );
}

/// The journal's view once it offers one (a walk may be under way).
fn ready_view(journal: &super::journal::Journal, after: &str) -> owt_protocol::host::JournalView {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let view = journal.view();
        if view.ready {
            return view;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the journal offered nothing within 30 s after {after}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_scan_from_the_journal_agrees_with_a_walk() {
    use super::journal::Journal;
    use super::snapshot::{ScanSource, WorkState};
    let fx = Fixture::new(&[
        ("a.txt", &lines()),
        ("b.txt", &lines()),
        ("d/one.txt", &lines()),
        ("d/two.txt", &lines()),
        ("src/deep/c.rs", &lines()),
        (".gitignore", "build/\n*.log\n"),
    ]);
    let wt = fx.worktree("a");
    let journal = Journal::start(&wt).unwrap();
    ready_view(&journal, "the start");
    let mut rng = Rng(0x5eed);
    let mut commits = 0;
    for step in 0..60 {
        let walks_before = journal.walks();
        let (what, moves_index) = match step {
            7 | 23 | 41 => {
                git(&wt, &["add", "-A"]);
                ("git add -A".to_string(), true)
            }
            11 | 29 | 47 => {
                git(&wt, &["add", "-A"]);
                git(&wt, &["commit", "-q", "--allow-empty", "-m", "step"]);
                commits += 1;
                ("commit".to_string(), true)
            }
            15 => {
                write(&wt, "build/out.o", "ignored folder\n");
                write(&wt, "debug.log", "ignored file\n");
                ("ignored writes".to_string(), false)
            }
            19 => {
                write(&wt, ".gitignore", "*.log\n");
                ("build/ no longer ignored".to_string(), true)
            }
            25 => {
                write(&wt, "fresh/a/b/c.txt", "deep\n");
                write(&wt, "fresh/a/d.txt", "less deep\n");
                ("a new folder tree".to_string(), false)
            }
            33 if commits > 0 => {
                // HEAD moves, the index does not.
                git(&wt, &["reset", "-q", "--soft", "HEAD~1"]);
                ("reset --soft".to_string(), true)
            }
            37 => {
                let gone = wt.join("src");
                if gone.exists() {
                    std::fs::remove_dir_all(gone).unwrap();
                }
                ("a folder removed".to_string(), false)
            }
            _ => (random_edit(&mut rng, &wt, &format!("s{step}")), false),
        };
        let view = ready_view(&journal, &what);
        let mut from_journal = WorkState::open(&wt, "main").unwrap();
        from_journal.scan_from(Some(view)).unwrap();
        assert_eq!(
            from_journal.last_scan,
            Some(ScanSource::Journal),
            "step {step} ({what}): the journal's view was not taken"
        );
        let mut walked = WorkState::open(&wt, "main").unwrap();
        walked.scan_full().unwrap();
        assert_eq!(walked.last_scan, Some(ScanSource::Walk));
        assert_eq!(
            from_journal.dirty, walked.dirty,
            "step {step} ({what}): the journal and a walk disagree"
        );
        assert_eq!(
            from_journal.snapshot, walked.snapshot,
            "step {step} ({what})"
        );
        // (A `.gitignore` touched by a random edit also calls for a walk.)
        if !moves_index && !what.contains(".gitignore") {
            assert_eq!(
                journal.walks(),
                walks_before,
                "step {step} ({what}) made the journal walk the checkout again"
            );
        }
    }
    // Each index or HEAD change made a walk; nothing else did.
    assert!(journal.walks() >= 4, "walks: {}", journal.walks());
}

#[test]
fn a_journal_that_no_longer_holds_is_not_taken() {
    use super::journal::Journal;
    use super::snapshot::{ScanSource, WorkState};
    let fx = Fixture::new(&[("a.txt", &lines())]);
    let wt = fx.worktree("a");
    let journal = Journal::start(&wt).unwrap();
    let view = ready_view(&journal, "the start");
    // The agent stages a change after the answer: the index differs.
    write(&wt, "a.txt", &with_line(2, "staged"));
    git(&wt, &["add", "a.txt"]);
    let mut work = WorkState::open(&wt, "main").unwrap();
    work.scan_from(Some(view)).unwrap();
    assert_eq!(work.last_scan, Some(ScanSource::Walk));
    assert!(work.dirty.contains_key("a.txt"));
    // Outside a repository there is no journal at all.
    let plain = tempfile::tempdir().unwrap();
    assert!(Journal::start(plain.path()).is_err());
}

#[test]
fn a_journal_answer_naming_paths_outside_the_checkout_is_not_followed() {
    use super::snapshot::{ScanSource, WorkState};
    let fx = Fixture::new(&[("a.txt", &lines())]);
    let wt = fx.worktree("a");
    write(&fx.root, "outside.txt", "not the agent's\n");
    write(&wt, "a.txt", &with_line(1, "mine"));
    let mut work = WorkState::open(&wt, "main").unwrap();
    work.scan_full().unwrap();
    let view = owt_protocol::host::JournalView {
        ready: true,
        index: super::source::index_id(&work.git_dir()),
        head_tree: work.head_tree.map(|t| t.to_string()),
        paths: vec![
            "a.txt".into(),
            "../outside.txt".into(),
            fx.root.join("outside.txt").to_string_lossy().into_owned(),
            ".git".into(),
        ],
    };
    let mut from_view = WorkState::open(&wt, "main").unwrap();
    from_view.scan_from(Some(view)).unwrap();
    assert_eq!(from_view.last_scan, Some(ScanSource::Journal));
    assert_eq!(from_view.dirty.keys().collect::<Vec<_>>(), ["a.txt"]);
    assert_eq!(from_view.snapshot, work.snapshot);
}

/// A journal on checkout `a`, ready, watching its new folder `gen/`.
fn journal_with_gen_folder() -> (Fixture, PathBuf, super::journal::Journal) {
    let fx = Fixture::new(&[("a.txt", &lines())]);
    let wt = fx.worktree("a");
    let journal = super::journal::Journal::start(&wt).unwrap();
    ready_view(&journal, "the start");
    // The folder first, seen (and so watched) before the files land in it:
    // files written into a folder before its watch exists are covered by
    // the folder's own entry instead, one path.
    std::fs::create_dir(wt.join("gen")).unwrap();
    ready_view(&journal, "a new folder");
    (fx, wt, journal)
}

/// Writes `gen/file0.txt` … `gen/file{n-1}.txt` in `wt`.
fn write_gen_files(wt: &Path, n: usize) {
    for i in 0..n {
        write(wt, &format!("gen/file{i}.txt"), &format!("{i}\n"));
    }
}

#[test]
fn a_journal_past_its_touched_limit_walks_again_and_still_agrees() {
    use super::journal::MAX_TOUCHED;
    use super::snapshot::{ScanSource, WorkState};
    let (_fx, wt, journal) = journal_with_gen_folder();
    let walks = journal.walks();
    write_gen_files(&wt, MAX_TOUCHED + 10);
    let view = ready_view(&journal, "many writes");
    assert!(
        journal.walks() > walks,
        "more than {MAX_TOUCHED} touched paths made no walk"
    );
    let mut from_journal = WorkState::open(&wt, "main").unwrap();
    from_journal.scan_from(Some(view)).unwrap();
    assert_eq!(from_journal.last_scan, Some(ScanSource::Journal));
    let mut walked = WorkState::open(&wt, "main").unwrap();
    walked.scan_full().unwrap();
    assert_eq!(from_journal.dirty.len(), MAX_TOUCHED + 10);
    assert_eq!(from_journal.dirty, walked.dirty);
}

#[test]
fn a_journal_whose_checkout_is_deleted_lets_go_and_takes_it_back_when_it_returns() {
    use super::journal::MAX_TOUCHED;
    let (fx, wt, journal) = journal_with_gen_folder();
    write_gen_files(&wt, MAX_TOUCHED / 2);
    assert!(journal.view().ready);
    // Deleted under the host (`rm -rf`, a `git worktree remove --force`
    // from outside owt): every try to watch it again fails.
    std::fs::remove_dir_all(&wt).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let mut seen = 0;
    while journal.failing().0 < 3 {
        assert!(
            std::time::Instant::now() < deadline,
            "the journal did not try again three times in 30 s: {:?}",
            journal.failing()
        );
        seen = journal.wait_change(seen, Some(Duration::from_millis(100)));
    }
    let (failures, touched) = journal.failing();
    assert_eq!(touched, 0, "after {failures} failed walks");
    assert!(
        !journal.view().ready,
        "a deleted checkout offered a baseline"
    );
    // The same checkout made again: the journal watches it anew.
    git(&fx.main, &["worktree", "prune"]);
    git(
        &fx.main,
        &["worktree", "add", "-q", wt.to_str().unwrap(), "a"],
    );
    write(&wt, "a.txt", &with_line(3, "back"));
    let view = ready_view(&journal, "the checkout came back");
    assert_eq!(journal.failing(), (0, journal.failing().1));
    assert_eq!(view.paths, ["a.txt"]);
}
