//! Conflict Guard benchmark: generates repositories of 10k and 100k files,
//! 32 agent worktrees plus the human's checkout making realistic changes
//! (a few files each, some hot files shared, new untracked files, some
//! commits), then prints, in one run: full recompute time (cold and warm),
//! incremental update time after one file write, the 100k/10k ratio of the
//! incremental time, git baselines (`git status` per checkout,
//! `git merge-tree` per pair) and the stat floor (listing and lstat-ing
//! every checkout, the least any full scan does).
//!
//! Usage: cargo run --release --manifest-path bench/guard/Cargo.toml --
//!        [--sizes 10000,100000] [--participants 32] [--rounds 40]
//!        [--dir /tmp/owt-guard-bench]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use owt::guard::{GuardEngine, Participant, YOU};

fn git(cwd: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(cwd)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "Bench")
        .env("GIT_AUTHOR_EMAIL", "bench@example.com")
        .env("GIT_COMMITTER_NAME", "Bench")
        .env("GIT_COMMITTER_EMAIL", "bench@example.com")
        .output()
        .expect("git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

struct Rng(u64);
impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

fn file_path(i: usize) -> String {
    // 100 files per folder, 100 folders per top folder.
    format!(
        "src/m{:03}/d{:02}/f{:05}.rs",
        i / 10_000,
        (i / 100) % 100,
        i
    )
}

fn file_text(i: usize, tag: &str) -> String {
    let mut s = String::with_capacity(1200);
    for line in 0..30 {
        s.push_str(&format!(
            "fn item_{i}_{line}() -> u32 {{ {line} }} // {tag}\n"
        ));
    }
    s
}

/// Writes like an editor does (new inode), so checkouts sharing nothing
/// stay independent.
fn write_file(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let tmp = path.with_extension("owt-bench-tmp");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, &path).unwrap();
}

fn edit_line(root: &Path, rel: &str, line: usize, text: &str) {
    let old = std::fs::read_to_string(root.join(rel)).unwrap();
    let mut lines: Vec<&str> = old.lines().collect();
    let replacement = format!("// {text}");
    if line < lines.len() {
        lines[line] = &replacement;
    }
    write_file(root, rel, &(lines.join("\n") + "\n"));
}

struct Setup {
    main: PathBuf,
    worktrees: Vec<PathBuf>,
    n_files: usize,
}

fn setup(dir: &Path, n_files: usize, participants: usize) -> Setup {
    let root = dir.join(format!("repo-{n_files}"));
    let main = root.join("main");
    let marker = root.join("ready");
    let worktrees: Vec<PathBuf> = (0..participants)
        .map(|p| root.join(format!("agent-{p:02}")))
        .collect();
    if marker.exists() {
        eprintln!("reusing {}", root.display());
        reset_changes(&main, &worktrees);
        apply_changes(&main, &worktrees, n_files);
        return Setup {
            main,
            worktrees,
            n_files,
        };
    }
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&main).unwrap();
    eprintln!("generating {n_files} files in {}", main.display());
    git(&main, &["init", "-q", "-b", "main"]);
    for i in 0..n_files {
        let path = main.join(file_path(i));
        if i % 100 == 0 {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        }
        std::fs::write(path, file_text(i, "base")).unwrap();
    }
    std::fs::write(main.join(".gitignore"), "target/\n*.owt-bench-tmp\n").unwrap();
    git(&main, &["add", "-A"]);
    git(&main, &["commit", "-q", "-m", "initial"]);
    // Like any repository that has seen a `git gc`.
    git(&main, &["repack", "-adq"]);
    for (p, wt) in worktrees.iter().enumerate() {
        eprintln!("  worktree {p}");
        git(
            &main,
            &[
                "worktree",
                "add",
                "-q",
                "-b",
                &format!("agent-{p:02}"),
                wt.to_str().unwrap(),
                "main",
            ],
        );
    }
    std::fs::write(&marker, "").unwrap();
    apply_changes(&main, &worktrees, n_files);
    Setup {
        main,
        worktrees,
        n_files,
    }
}

fn reset_changes(main: &Path, worktrees: &[PathBuf]) {
    for (p, wt) in worktrees.iter().enumerate() {
        git(wt, &["reset", "-q", "--hard", "main"]);
        git(wt, &["clean", "-q", "-fd"]);
        let _ = p;
    }
    git(main, &["reset", "-q", "--hard"]);
    git(main, &["clean", "-q", "-fd"]);
}

/// Each agent: 8 files of its own area, 2 of 16 hot shared files (some
/// lines shared → conflicts), a new untracked file, half of them commit a
/// part of their work. The human edits 3 files.
fn apply_changes(main: &Path, worktrees: &[PathBuf], n_files: usize) {
    let mut rng = Rng(0x0123_4567_89ab_cdef);
    for (p, wt) in worktrees.iter().enumerate() {
        for k in 0..8 {
            let i = (p * 997 + k * 131) % n_files;
            edit_line(
                wt,
                &file_path(i),
                rng.below(30),
                &format!("agent {p} own {k}"),
            );
        }
        if p % 2 == 0 {
            git(wt, &["commit", "-q", "-am", "agent work"]);
        }
        for _ in 0..2 {
            let hot = rng.below(16) * 7;
            edit_line(
                wt,
                &file_path(hot),
                rng.below(30),
                &format!("agent {p} hot"),
            );
        }
        write_file(wt, &format!("src/new/agent_{p}.rs"), "fn new() {}\n");
    }
    for k in 0..3 {
        edit_line(main, &file_path(k * 7), 10 + k, "human");
    }
}

fn participants(setup: &Setup) -> Vec<Participant> {
    let mut out: Vec<Participant> = setup
        .worktrees
        .iter()
        .enumerate()
        .map(|(p, wt)| Participant {
            id: format!("agent-{p:02}"),
            session_id: None,
            worktree: wt.clone(),
            base_branch: "main".into(),
        })
        .collect();
    out.push(Participant {
        id: YOU.into(),
        session_id: None,
        worktree: setup.main.clone(),
        base_branch: "main".into(),
    });
    out
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

struct Figures {
    n_files: usize,
    cold_full: Duration,
    warm_full: Duration,
    pairs_only: Duration,
    incr_median: Duration,
    incr_max: Duration,
    incr_hot_median: Duration,
    pairs: usize,
    git_status_all: Duration,
    stat_floor: Duration,
    git_merge_tree_per_pair: Duration,
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn run(dir: &Path, n_files: usize, n_participants: usize, rounds: usize) -> Figures {
    let setup = setup(dir, n_files, n_participants);
    let mut engine = GuardEngine::new(&setup.main, &[]).unwrap();
    for p in participants(&setup) {
        engine.add_participant(p).unwrap();
    }
    let started = Instant::now();
    engine.full_recompute().unwrap();
    let cold_full = started.elapsed();
    let started = Instant::now();
    engine.full_recompute().unwrap();
    let warm_full = started.elapsed();
    let pairs = engine.pairs().len();
    let started = Instant::now();
    engine.recompute_pairs().unwrap();
    let pairs_only = started.elapsed();

    // Incremental: one file written in one agent's worktree, the engine told.
    let mut rng = Rng(42);
    let mut own = Vec::new();
    let mut hot = Vec::new();
    for round in 0..rounds {
        let p = rng.below(setup.worktrees.len());
        let wt = &setup.worktrees[p];
        let (rel, bucket) = if round % 2 == 0 {
            (
                file_path((p * 997 + 5 * 131 + round) % setup.n_files),
                &mut own,
            )
        } else {
            (file_path(rng.below(16) * 7), &mut hot)
        };
        edit_line(wt, &rel, rng.below(30), &format!("round {round}"));
        let id = format!("agent-{p:02}");
        let started = Instant::now();
        let update = engine
            .on_paths_changed(&id, &[PathBuf::from(&rel)])
            .unwrap();
        bucket.push(started.elapsed());
        assert!(update.participants.contains(&id), "the write was seen");
    }
    let all: Vec<Duration> = own.iter().chain(&hot).copied().collect();
    let incr_max = *all.iter().max().unwrap();

    // Baselines: git status of every checkout; git merge-tree per pair.
    let started = Instant::now();
    for wt in setup.worktrees.iter().chain([&setup.main]) {
        git(wt, &["status", "--porcelain", "-uall"]);
    }
    let git_status_all = started.elapsed();
    let checkouts: Vec<&Path> = setup
        .worktrees
        .iter()
        .chain([&setup.main])
        .map(PathBuf::as_path)
        .collect();
    let stat_floor = stat_walk(&checkouts);
    let snaps = engine.snapshots();
    let base = git(&setup.main, &["rev-parse", "main^{tree}"])
        .trim()
        .to_string();
    let ids: Vec<&String> = snaps.keys().take(8).collect();
    let mut n = 0u32;
    let started = Instant::now();
    for (i, a) in ids.iter().enumerate() {
        for b in &ids[i + 1..] {
            let out = Command::new("git")
                .args(["merge-tree", "--write-tree", "--name-only", "-z"])
                .arg(format!("--merge-base={base}"))
                .arg(snaps[*a].to_string())
                .arg(snaps[*b].to_string())
                .current_dir(&setup.main)
                .output()
                .unwrap();
            assert!(out.status.code().is_some_and(|c| c <= 1));
            n += 1;
        }
    }
    let git_merge_tree_per_pair = started.elapsed() / n.max(1);
    Figures {
        n_files,
        cold_full,
        warm_full,
        pairs_only,
        incr_median: median(all),
        incr_max,
        incr_hot_median: median(hot),
        pairs,
        git_status_all,
        stat_floor,
        git_merge_tree_per_pair,
    }
}

/// The floor of any full scan: list every folder and lstat every entry of
/// every checkout (`.git` left out), on as many threads as the engine
/// scans with, and nothing else: no index, no hashing, no ignore rules.
fn stat_walk(checkouts: &[&Path]) -> Duration {
    fn walk(dir: &Path, entries: &mut u64) {
        let Ok(read) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in read.flatten() {
            if entry.file_name() == ".git" {
                continue;
            }
            // DirEntry::metadata is an lstat (fstatat, no follow).
            let Ok(meta) = entry.metadata() else { continue };
            *entries += 1;
            if meta.is_dir() {
                walk(&entry.path(), entries);
            }
        }
    }
    let threads = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .clamp(1, 8);
    let chunk = checkouts.len().div_ceil(threads).max(1);
    let started = Instant::now();
    let entries: u64 = std::thread::scope(|scope| {
        let handles: Vec<_> = checkouts
            .chunks(chunk)
            .map(|part| {
                scope.spawn(move || {
                    let mut entries = 0;
                    for checkout in part {
                        walk(checkout, &mut entries);
                    }
                    entries
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).sum()
    });
    let elapsed = started.elapsed();
    assert!(entries > 0, "the stat walk saw no files");
    elapsed
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1).cloned())
    };
    let sizes: Vec<usize> = arg("--sizes")
        .unwrap_or_else(|| "10000,100000".into())
        .split(',')
        .map(|s| s.parse().expect("--sizes N,M"))
        .collect();
    let n_participants: usize = arg("--participants").map_or(32, |s| s.parse().unwrap());
    let rounds: usize = arg("--rounds").map_or(40, |s| s.parse().unwrap());
    let dir = PathBuf::from(arg("--dir").unwrap_or_else(|| "/tmp/owt-guard-bench".into()));
    let figures: Vec<Figures> = sizes
        .iter()
        .map(|n| run(&dir, *n, n_participants, rounds))
        .collect();
    println!(
        "Conflict Guard benchmark: {n_participants} agents + you, {} cores",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    println!(
        "{:>8} {:>6} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} | {:>13} {:>11} {:>15}",
        "files",
        "pairs",
        "full cold",
        "full warm",
        "full pairs",
        "incr med",
        "incr hot",
        "incr max",
        format!("git status×{}", n_participants + 1),
        "stat floor",
        "merge-tree/pair"
    );
    for f in &figures {
        println!(
            "{:>8} {:>6} {:>9.1}ms {:>9.1}ms {:>9.1}ms {:>9.2}ms {:>9.2}ms {:>9.2}ms | {:>11.1}ms {:>9.1}ms {:>13.2}ms",
            f.n_files,
            f.pairs,
            ms(f.cold_full),
            ms(f.warm_full),
            ms(f.pairs_only),
            ms(f.incr_median),
            ms(f.incr_hot_median),
            ms(f.incr_max),
            ms(f.git_status_all),
            ms(f.stat_floor),
            ms(f.git_merge_tree_per_pair),
        );
    }
    println!(
        "full cold/warm: git status of every checkout + all pairs; full pairs: every change and pair recomputed from snapshots, no scan, no cache"
    );
    println!(
        "stat floor: every folder listed and every entry lstat-ed in every checkout on the engine's threads, nothing else: no full scan can be faster"
    );
    if figures.len() >= 2 {
        let (small, big) = (&figures[0], &figures[figures.len() - 1]);
        println!(
            "incremental ratio {}k/{}k (median): {:.2}   targets: full <= 1000 ms, incremental <= 20 ms, ratio <= 1.5",
            big.n_files / 1000,
            small.n_files / 1000,
            ms(big.incr_median) / ms(small.incr_median).max(1e-9)
        );
    }
}
