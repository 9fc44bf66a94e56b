//! Conflict Guard benchmark: generates repositories of 10k and 100k files,
//! 32 agent worktrees plus the human's checkout making realistic changes
//! (a few files each, some hot files shared, new untracked files, some
//! commits), then prints, in one run: full recompute time (cold and warm),
//! incremental update time after one file write, the 100k/10k ratio of the
//! incremental time, git baselines (`git status` per checkout,
//! `git merge-tree` per pair) and the stat floor (listing and lstat-ing
//! every checkout, the least any full scan does). Then it starts a real
//! session host (`owt __host run`, agent `cat`) in every agent worktree and
//! measures the full recompute again, with each host's work journal
//! answering for its worktree instead of a walk (the human's checkout,
//! which has no host, is still walked).
//!
//! Usage: cargo run --release --manifest-path bench/guard/Cargo.toml --
//!        [--sizes 10000,100000] [--participants 32] [--rounds 40]
//!        [--dir DIR] [--owt target/release/owt] [--cold-runs N]
//!
//! With `--cold-runs N` it measures only the full recompute with live
//! hosts, N times, each with a fresh engine (cold, then warm), on the
//! first of `--sizes`: after one engine with no host (every checkout
//! walked, which also writes every object), whose snapshots and pairs each
//! run must give again. One line per run with the load average.
//!
//! Without `--dir` everything is generated in a fresh folder under the
//! system's temp folder, removed at the end (also when a run fails); with
//! `--dir DIR` the repositories stay there and a later run reuses them.
//!
//! With `--corpus SPEC` (`bench/corpus/git-topics.json.gz`) it runs the
//! Conflict Guard corpus instead: the spec's repository built under
//! `--dir`, every topic as a session in each shape × variant
//! (`owt::guard::corpus`), the guard's base-conflict and pair verdicts
//! against git's (`git merge-tree --write-tree` on the exact states), with
//! both times; one line per case, then one JSON line of totals. With
//! `--real GITDIR` too (a clone of the repository the spec was taken from,
//! git/git for the committed spec), the same topics with their real
//! content: the pairs git merges cleanly where one side changed a function
//! signature the other side's changes use (each printed), the
//! incremental update on real C files with the symbol index on and off,
//! and the cold full recompute of the real topics with it on and off:
//! verdicts first then symbols (as `owt lsp`), and at once (as `owt
//! guard`) with the symbol cache warm, empty, and the index off.
//! `--whole-parses` parses old versions whole instead of around the lines
//! asked (`symbols::regions`), as owt did before: the same binary, to
//! compare the two.

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

/// An engine over every checkout of `setup`, no journal (each walked),
/// not computed yet.
fn walking_engine(setup: &Setup) -> GuardEngine {
    let mut engine = GuardEngine::new(&setup.main, &[]).unwrap();
    for p in participants(setup) {
        engine.add_participant(p).unwrap();
    }
    engine
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
            journal: None,
        })
        .collect();
    out.push(Participant {
        id: YOU.into(),
        session_id: None,
        worktree: setup.main.clone(),
        base_branch: "main".into(),
        journal: None,
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
    /// Files the symbol index parsed: in the cold full recompute, and in
    /// the incremental writes with it on (of that many writes).
    parses: (u64, u64, usize),
    /// The same writes with the symbol index off (median).
    incr_no_symbols: Duration,
    pairs: usize,
    git_status_all: Duration,
    stat_floor: Duration,
    git_merge_tree_per_pair: Duration,
    journal_cold: Duration,
    journal_warm: Duration,
    /// Median resident memory of a session host holding its journal (MiB).
    host_rss_mib: f64,
}

/// Resident memory of process `pid` in MiB (`VmRSS`).
fn rss_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(0.0, |kib| kib / 1024.0)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// Real session hosts, one per agent worktree; killed on drop (the agent,
/// `cat`, then gets its hang-up).
struct Hosts {
    children: Vec<std::process::Child>,
    sockets: Vec<PathBuf>,
    home: PathBuf,
}

impl Drop for Hosts {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.home);
    }
}

fn start_hosts(owt: &Path, dir: &Path, worktrees: &[PathBuf]) -> Hosts {
    use std::io::Write as _;
    let home = dir.join("owt-home");
    let _ = std::fs::remove_dir_all(&home);
    std::fs::create_dir_all(&home).unwrap();
    let mut hosts = Hosts {
        children: Vec::new(),
        sockets: Vec::new(),
        home: home.clone(),
    };
    for (p, wt) in worktrees.iter().enumerate() {
        let spec = owt::session::HostSpec {
            session_id: 0,
            session_name: format!("agent-{p:02}"),
            short_id: format!("bench{p:02}"),
            provider: "generic".into(),
            argv: vec!["cat".into()],
            cwd: wt.clone(),
            env: Default::default(),
            typed_prompt: None,
            prompt_in_argv: false,
            headless: false,
            home: home.clone(),
            rows: 24,
            cols: 80,
            scrollback: owt::session::DEFAULT_SCROLLBACK,
            transport: Default::default(),
            on_limit_wait: false,
            acp_load: None,
            acp_mcp_servers: Vec::new(),
        };
        let mut child = Command::new(owt)
            .args(["__host", "run", "--spec", "-"])
            .env("OWT_HOME", &home)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", owt.display()));
        let mut stdin = child.stdin.take().unwrap();
        stdin
            .write_all(serde_json::to_string(&spec).unwrap().as_bytes())
            .unwrap();
        drop(stdin);
        hosts.children.push(child);
        hosts
            .sockets
            .push(owt::session::socket_path(&home, &spec.short_id));
    }
    // Each host walks its worktree once when it starts; wait for all.
    let deadline = Instant::now() + Duration::from_secs(600);
    for socket in &hosts.sockets {
        loop {
            let ready = owt::session::HostConn::connect_quick(socket, Duration::from_secs(5))
                .and_then(|mut conn| conn.journal(Duration::from_secs(5)))
                .is_ok_and(|view| view.ready);
            if ready {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "no journal from {} within 600 s",
                socket.display()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    hosts
}

fn run(
    dir: &Path,
    owt_bin: &Path,
    n_files: usize,
    n_participants: usize,
    rounds: usize,
) -> Figures {
    let setup = setup(dir, n_files, n_participants);
    let mut engine = walking_engine(&setup);
    let started = Instant::now();
    engine.full_recompute().unwrap();
    let cold_full = started.elapsed();
    let parses_full = engine.symbol_parses();
    let started = Instant::now();
    engine.full_recompute().unwrap();
    let warm_full = started.elapsed();
    let pairs = engine.pairs().len();
    let started = Instant::now();
    engine.recompute_pairs().unwrap();
    let pairs_only = started.elapsed();

    // Incremental: one file written in one agent's worktree, the engine told
    // (the symbol index on, as by default; then the same writes with it off).
    let mut rng = Rng(42);
    let mut own = Vec::new();
    let mut hot = Vec::new();
    let mut no_symbols = Vec::new();
    let mut parses_incr = 0;
    for round in 0..rounds * 2 {
        let symbols = round < rounds;
        if round == rounds {
            parses_incr = engine.symbol_parses() - parses_full;
            engine.set_symbols(false);
        }
        let p = rng.below(setup.worktrees.len());
        let wt = &setup.worktrees[p];
        let (rel, bucket) = if !symbols {
            (file_path(rng.below(16) * 7), &mut no_symbols)
        } else if round % 2 == 0 {
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
    engine.set_symbols(true);
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
    drop(engine);

    // The same, with a live host (and its journal) in every agent worktree.
    let hosts = start_hosts(owt_bin, dir, &setup.worktrees);
    let mut engine = GuardEngine::new(&setup.main, &[]).unwrap();
    for (mut p, socket) in participants(&setup).into_iter().zip(
        hosts
            .sockets
            .iter()
            .map(|s| Some(s.clone()))
            .chain(std::iter::repeat(None)),
    ) {
        p.journal = socket.map(|socket| {
            std::sync::Arc::new(owt::session::HostJournal::new(socket))
                as std::sync::Arc<dyn owt::guard::source::JournalSource>
        });
        engine.add_participant(p).unwrap();
    }
    let started = Instant::now();
    engine.full_recompute().unwrap();
    let journal_cold = started.elapsed();
    let journal_snaps = engine.snapshots();
    let started = Instant::now();
    engine.full_recompute().unwrap();
    let journal_warm = started.elapsed();
    let sources = engine.scan_sources();
    let from_journals = sources
        .values()
        .filter(|s| s.is_some_and(|s| s.name() == "journal"))
        .count();
    assert_eq!(
        from_journals,
        setup.worktrees.len(),
        "every agent's journal answered: {sources:?}"
    );
    assert_eq!(
        journal_snaps, snaps,
        "the journals give the same snapshots as the walks"
    );
    let mut rss: Vec<f64> = hosts.children.iter().map(|c| rss_mib(c.id())).collect();
    rss.sort_by(f64::total_cmp);
    let host_rss_mib = rss[rss.len() / 2];
    drop(hosts);
    Figures {
        n_files,
        cold_full,
        warm_full,
        pairs_only,
        incr_median: median(all),
        incr_max,
        incr_hot_median: median(hot),
        incr_no_symbols: median(no_symbols),
        pairs,
        git_status_all,
        stat_floor,
        git_merge_tree_per_pair,
        journal_cold,
        journal_warm,
        host_rss_mib,
        parses: (parses_full, parses_incr, rounds),
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

/// A folder of the benchmark's own, removed when dropped (also when a
/// run panics: the benchmark unwinds).
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `--dir` as given (kept, reused by the next run), or a fresh folder
/// under the system's temp folder, removed at the end.
fn bench_dir(given: Option<String>, what: &str) -> (PathBuf, Option<TempDir>) {
    if let Some(dir) = given {
        return (PathBuf::from(dir), None);
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let dir = std::env::temp_dir().join(format!("{what}-{}-{nanos}", std::process::id()));
    std::fs::create_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    (dir.clone(), Some(TempDir(dir)))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1).cloned())
    };
    if args.iter().any(|a| a == "--whole-parses") {
        WHOLE_PARSES.store(true, std::sync::atomic::Ordering::Relaxed);
    }
    if let Some(spec) = arg("--corpus") {
        let (dir, _cleanup) = bench_dir(arg("--dir"), "owt-guard-corpus");
        corpus(Path::new(&spec), &dir);
        if let Some(real) = arg("--real") {
            real_corpus(Path::new(&spec), Path::new(&real), &dir);
        }
        return;
    }
    let sizes: Vec<usize> = arg("--sizes")
        .unwrap_or_else(|| "10000,100000".into())
        .split(',')
        .map(|s| s.parse().expect("--sizes N,M"))
        .collect();
    let n_participants: usize = arg("--participants").map_or(32, |s| s.parse().unwrap());
    let rounds: usize = arg("--rounds").map_or(40, |s| s.parse().unwrap());
    let (dir, _cleanup) = bench_dir(arg("--dir"), "owt-guard-bench");
    let owt_bin =
        std::fs::canonicalize(arg("--owt").unwrap_or_else(|| "target/release/owt".into()))
            .expect("the owt binary (build it: cargo build --release -p owt; or pass --owt PATH)");
    if let Some(runs) = arg("--cold-runs") {
        let runs: usize = runs.parse().expect("--cold-runs N");
        cold_runs(&dir, &owt_bin, sizes[0], n_participants, runs);
        return;
    }
    let figures: Vec<Figures> = sizes
        .iter()
        .map(|n| run(&dir, &owt_bin, *n, n_participants, rounds))
        .collect();
    println!(
        "Conflict Guard benchmark: {n_participants} agents + you, {} cores",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    println!(
        "{:>8} {:>6} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} {:>12} | {:>13} {:>11} {:>15} | {:>12} {:>12}",
        "files",
        "pairs",
        "full cold",
        "full warm",
        "full pairs",
        "incr med",
        "incr hot",
        "incr max",
        "incr no-sym",
        format!("git status×{}", n_participants + 1),
        "stat floor",
        "merge-tree/pair",
        "journal cold",
        "journal warm"
    );
    for f in &figures {
        println!(
            "{:>8} {:>6} {:>9.1}ms {:>9.1}ms {:>9.1}ms {:>9.2}ms {:>9.2}ms {:>9.2}ms {:>10.2}ms | {:>11.1}ms {:>9.1}ms {:>13.2}ms | {:>10.1}ms {:>10.1}ms",
            f.n_files,
            f.pairs,
            ms(f.cold_full),
            ms(f.warm_full),
            ms(f.pairs_only),
            ms(f.incr_median),
            ms(f.incr_hot_median),
            ms(f.incr_max),
            ms(f.incr_no_symbols),
            ms(f.git_status_all),
            ms(f.stat_floor),
            ms(f.git_merge_tree_per_pair),
            ms(f.journal_cold),
            ms(f.journal_warm),
        );
    }
    println!(
        "full cold/warm: git status of every checkout + all pairs; full pairs: every change and pair recomputed from snapshots, no scan, no cache"
    );
    println!(
        "incr med/hot/max: one write, the symbol index on (the default: enclosing symbols, semantic notes); incr no-sym: writes to hot files with it off"
    );
    println!(
        "journal cold/warm: the full recompute with a live session host in every agent worktree, whose journal answers for it (the human's checkout is walked)"
    );
    println!(
        "stat floor: every folder listed and every entry lstat-ed in every checkout on the engine's threads, nothing else: no walk of every checkout can be faster"
    );
    for f in &figures {
        println!(
            "symbol index parses, {}k files: {} in the cold full recompute, {} in {} incremental writes",
            f.n_files / 1000,
            f.parses.0,
            f.parses.1,
            f.parses.2
        );
    }
    for f in &figures {
        println!(
            "session host RSS with its journal, {}k files: {:.1} MiB (median of {n_participants})",
            f.n_files / 1000,
            f.host_rss_mib
        );
    }
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

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// `--cold-runs N`: the full recompute with a live host in every agent
/// worktree, each run with a fresh engine; every run's snapshots and pairs
/// must be those of an engine that walked every checkout.
fn cold_runs(dir: &Path, owt_bin: &Path, n_files: usize, n_participants: usize, runs: usize) {
    let setup = setup(dir, n_files, n_participants);
    let mut engine = walking_engine(&setup);
    let started = Instant::now();
    engine.full_recompute().unwrap();
    let walked = started.elapsed();
    let snaps = engine.snapshots();
    let pairs: Vec<owt_protocol::guard::GuardPair> = engine.pairs().into_iter().cloned().collect();
    drop(engine);
    println!(
        "{n_participants} agents + you, {n_files} files: every checkout walked, cold: {:.1} ms (load {}); {} pairs reported",
        ms(walked),
        loadavg(),
        pairs.len()
    );
    let hosts = start_hosts(owt_bin, dir, &setup.worktrees);
    for run in 0..runs {
        let mut engine = GuardEngine::new(&setup.main, &[]).unwrap();
        for (mut p, socket) in participants(&setup).into_iter().zip(
            hosts
                .sockets
                .iter()
                .map(Some)
                .chain(std::iter::repeat(None)),
        ) {
            p.journal = socket.map(|socket| {
                std::sync::Arc::new(owt::session::HostJournal::new(socket.clone()))
                    as std::sync::Arc<dyn owt::guard::source::JournalSource>
            });
            engine.add_participant(p).unwrap();
        }
        let load = loadavg();
        let started = Instant::now();
        engine.full_recompute().unwrap();
        let cold = started.elapsed();
        let started = Instant::now();
        engine.full_recompute().unwrap();
        let warm = started.elapsed();
        let from_journals = engine
            .scan_sources()
            .values()
            .filter(|s| s.is_some_and(|s| s.name() == "journal"))
            .count();
        assert_eq!(
            from_journals,
            setup.worktrees.len(),
            "every journal answered"
        );
        assert_eq!(engine.snapshots(), snaps, "the walked engine's snapshots");
        let now: Vec<owt_protocol::guard::GuardPair> =
            engine.pairs().into_iter().cloned().collect();
        assert!(now == pairs, "the walked engine's pairs");
        println!(
            "run {}: journal cold {:.1} ms, warm {:.1} ms (load {load})",
            run + 1,
            ms(cold),
            ms(warm)
        );
    }
}

/// `--real GITDIR`: the corpus's topics in the real repository they were
/// taken from (a clone of it: its objects are borrowed, nothing is written
/// there), so the files have their real content: the pairs git merges
/// cleanly but where one side changed a function's signature that the
/// other side's changes use (`semantic` notes, each printed for a person
/// to judge), and the incremental update on real source files with the
/// symbol index on and off.
fn real_corpus(spec_path: &Path, source: &Path, dir: &Path) {
    use owt::guard::corpus::{evaluate, Corpus, Variant, SHAPES};
    use owt_protocol::guard::Level;
    let raw = std::fs::read(spec_path).unwrap();
    let json = if spec_path.extension().is_some_and(|e| e == "gz") {
        let out = Command::new("gzip")
            .args(["-dc", spec_path.to_str().unwrap()])
            .output()
            .expect("gzip");
        out.stdout
    } else {
        raw
    };
    let spec: serde_json::Value = serde_json::from_slice(&json).expect("the spec's JSON");
    let origin = &spec["source"];
    let base = origin["base"].as_str().expect("source.base in the spec");
    let objects = if source.join(".git").is_dir() {
        source.join(".git/objects")
    } else {
        source.join("objects")
    };
    let objects = std::fs::canonicalize(&objects)
        .unwrap_or_else(|e| panic!("--real {}: no objects folder ({e})", source.display()));
    let main = dir.join("real");
    std::fs::create_dir_all(&main).unwrap();
    git(&main, &["init", "-q", "-b", "main"]);
    std::fs::write(
        main.join(".git/objects/info/alternates"),
        format!("{}\n", objects.display()),
    )
    .unwrap();
    git(&main, &["update-ref", "refs/heads/main", base]);
    for (i, topic) in origin["topics"]
        .as_array()
        .expect("source.topics")
        .iter()
        .enumerate()
    {
        let name = topic["name"].as_str().unwrap().replace('/', "-");
        let tip = topic["tip"].as_str().unwrap();
        git(
            &main,
            &[
                "update-ref",
                &format!("refs/heads/topic/{i:02}-{name}"),
                tip,
            ],
        );
    }
    git(&main, &["reset", "-q", "--hard", "main"]);
    let corpus = Corpus::open(&main, &dir.join("real-wt"), None);
    let scratch = dir.join("real-scratch-index");
    println!(
        "real content ({}, {} topics at {}): pairs git merges cleanly where one side changed a signature the other side's changes use",
        origin["repository"].as_str().unwrap_or("?"),
        corpus.topics.len(),
        &base[..12.min(base.len())]
    );
    let mut total = 0;
    let mut incremental: Option<(Vec<Duration>, Vec<Duration>, usize)> = None;
    let mut full: Option<(Vec<Duration>, Vec<Duration>, Vec<Duration>)> = None;
    let mut one_shot: Option<OneShot> = None;
    for shape in SHAPES {
        let case = corpus.setup(shape, Variant::Committed);
        let mut r = evaluate(&main, &case, &scratch);
        let mut found = Vec::new();
        for p in r.engine.pairs() {
            if p.semantic.is_empty()
                || !p.conflicting_paths.is_empty()
                || p.level == Level::Conflict
            {
                continue;
            }
            found.push(p.clone());
        }
        println!(
            "  {}: {} sessions, {} pairs, exact verdicts: {}, semantic (git merges cleanly): {}",
            shape.name(),
            r.sessions,
            r.pairs.true_positive
                + r.pairs.false_positive
                + r.pairs.false_negative
                + r.pairs.true_negative,
            r.exact,
            found.len()
        );
        for p in &found {
            for n in &p.semantic {
                let at: Vec<String> = n.used_at.iter().map(|r| r.start.to_string()).collect();
                println!(
                    "    {} × {}: {} changed {} ({}:{}) `{}` -> `{}`; {} uses it in {} line {}{}",
                    p.a,
                    p.b,
                    n.changed_by,
                    n.symbol,
                    n.path,
                    n.lines.start,
                    n.before,
                    n.after,
                    n.used_by,
                    n.used_in,
                    at.join(","),
                    n.used_inside
                        .as_deref()
                        .map(|s| format!(" ({s})"))
                        .unwrap_or_default()
                );
            }
        }
        total += found.len();
        if incremental.is_none() {
            incremental = Some(real_incremental(&mut r.engine, &case));
            full = Some(real_full_recomputes(&main, &case));
            one_shot = Some(real_one_shots(&main, &case, &dir.join("real-owt-home")));
        }
    }
    println!("semantic pairs git merges cleanly, all shapes: {total}");
    if let Some((on, symbols, off)) = full {
        println!(
            "full recompute on real source files ({} fresh engines each, alternating): symbol index on: median {:.2} ms (the verdicts; the symbols held back and added after them in a median {:.2} ms more); off: median {:.2} ms",
            on.len(),
            ms(median(on)),
            ms(median(symbols)),
            ms(median(off)),
        );
    }
    if let Some(o) = one_shot {
        let (warm, first, off) = (median(o.warm), median(o.first), median(o.off));
        println!(
            "cold one-shot full recompute (as `owt guard`), real source files ({} fresh engines each, alternating): symbols on, symbol cache warm: median {:.2} ms; on, cache empty (a first run, filling it): median {:.2} ms; off: median {:.2} ms; on/off: {:.2}x warm, {:.2}x empty; parses: {} empty, {} warm ({} read from the cache)",
            o.runs,
            ms(warm),
            ms(first),
            ms(off),
            warm.as_secs_f64() / off.as_secs_f64(),
            first.as_secs_f64() / off.as_secs_f64(),
            o.parses_first,
            o.parses_warm,
            o.hits_warm,
        );
    }
    if let Some((on, off, files)) = incremental {
        let max = |v: &[Duration]| v.iter().max().copied().unwrap_or_default();
        println!(
            "incremental update on real source files ({files} writes, one per session to a C file it changed): symbol index on: median {:.2} ms, max {:.2} ms; off: median {:.2} ms, max {:.2} ms",
            ms(median(on.clone())),
            ms(max(&on)),
            ms(median(off.clone())),
            ms(max(&off)),
        );
    }
}

/// The cold full recompute of `case` (real source files) by fresh
/// engines, the symbol index on and off in turn (5 each), so that load
/// drifting during the run falls on both alike. With it on, as `owt lsp`
/// does it: the verdicts (`full_recompute_verdicts`), then the symbols
/// (`complete_symbols`), each timed.
fn real_full_recomputes(
    main: &Path,
    case: &owt::guard::corpus::Case,
) -> (Vec<Duration>, Vec<Duration>, Vec<Duration>) {
    let (mut on, mut symbols_after, mut off) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..10 {
        let symbols = round % 2 == 0;
        let mut engine = real_engine(main, case);
        engine.set_symbols(symbols);
        let started = Instant::now();
        if symbols {
            engine.full_recompute_verdicts().expect("full recompute");
            on.push(started.elapsed());
            let started = Instant::now();
            engine.complete_symbols().expect("the symbols");
            symbols_after.push(started.elapsed());
        } else {
            engine.full_recompute().expect("full recompute");
            off.push(started.elapsed());
        }
    }
    (on, symbols_after, off)
}

/// [`real_one_shots`]' times and counts.
struct OneShot {
    runs: usize,
    warm: Vec<Duration>,
    first: Vec<Duration>,
    off: Vec<Duration>,
    parses_first: u64,
    parses_warm: u64,
    hits_warm: u64,
}

/// With `--whole-parses`: old versions parsed whole, as before
/// `symbols::regions` (to compare the two in one binary).
static WHOLE_PARSES: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// An engine over the corpus case's sessions (`--whole-parses` applied).
fn real_engine(main: &Path, case: &owt::guard::corpus::Case) -> GuardEngine {
    let mut engine = owt::guard::corpus::engine_for(main, case);
    engine.set_symbol_regions(!WHOLE_PARSES.load(std::sync::atomic::Ordering::Relaxed));
    engine
}

/// The cold one-shot full recompute `owt guard` runs (`full_recompute`,
/// verdicts and symbols at once) by fresh engines, in turn: symbols on
/// with the symbol cache under `home` warm (kept by the runs before), on
/// with it empty (a first run, which fills it), and off; 5 each.
fn real_one_shots(main: &Path, case: &owt::guard::corpus::Case, home: &Path) -> OneShot {
    let empty = home.with_extension("empty");
    let mut o = OneShot {
        runs: 5,
        warm: Vec::new(),
        first: Vec::new(),
        off: Vec::new(),
        parses_first: 0,
        parses_warm: 0,
        hits_warm: 0,
    };
    // Fills the cache the warm runs read.
    let _ = std::fs::remove_dir_all(home);
    let mut engine = real_engine(main, case);
    engine.set_symbol_cache(Some(home));
    engine.full_recompute().expect("full recompute");
    for round in 0..3 * o.runs {
        let mut engine = real_engine(main, case);
        let started = Instant::now();
        match round % 3 {
            0 => {
                engine.set_symbol_cache(Some(home));
                engine.full_recompute().expect("full recompute");
                o.warm.push(started.elapsed());
                o.parses_warm = engine.symbol_parses();
                o.hits_warm = engine.symbol_cache_hits().0;
            }
            1 => {
                let _ = std::fs::remove_dir_all(&empty);
                let started = Instant::now();
                engine.set_symbol_cache(Some(&empty));
                engine.full_recompute().expect("full recompute");
                o.first.push(started.elapsed());
                o.parses_first = engine.symbol_parses();
            }
            _ => {
                engine.set_symbols(false);
                engine.full_recompute().expect("full recompute");
                o.off.push(started.elapsed());
            }
        }
    }
    o
}

/// One write per session to a C file it changed (a line inserted in the
/// middle), the engine told; with the symbol index on, then again off.
fn real_incremental(
    engine: &mut GuardEngine,
    case: &owt::guard::corpus::Case,
) -> (Vec<Duration>, Vec<Duration>, usize) {
    let (mut on, mut off) = (Vec::new(), Vec::new());
    let (mut parsed, mut reparsed) = (0, 0);
    for symbols in [true, false] {
        engine.set_symbols(symbols);
        for m in &case.members {
            let Some(rel) = engine.changes(&m.name).and_then(|changes| {
                changes
                    .iter()
                    .find(|c| c.path.ends_with(".c") && c.new.is_some())
                    .map(|c| c.path.clone())
            }) else {
                continue;
            };
            let path = m.worktree.join(&rel);
            let text = std::fs::read_to_string(&path).unwrap();
            let mut lines: Vec<&str> = text.lines().collect();
            let at = lines.len() / 2;
            let comment = format!("/* owt bench, symbols {symbols} */");
            lines.insert(at, comment.as_str());
            write_file(&m.worktree, &rel, &(lines.join("\n") + "\n"));
            let (parses, reparses) = (engine.symbol_parses(), engine.symbol_reparses());
            let started = Instant::now();
            engine
                .on_paths_changed(&m.name, &[PathBuf::from(&rel)])
                .unwrap();
            let took = started.elapsed();
            if symbols {
                parsed += engine.symbol_parses() - parses;
                reparsed += engine.symbol_reparses() - reparses;
            }
            if symbols {
                on.push(took)
            } else {
                off.push(took)
            }
        }
    }
    engine.set_symbols(true);
    let n = on.len();
    let (trees, bytes) = engine.symbol_trees_kept();
    println!(
        "symbol index parses in the {n} real writes with it on: {parsed} ({reparsed} incremental from a kept tree); trees kept: {trees}, ~{:.1} MiB",
        bytes as f64 / (1 << 20) as f64
    );
    (on, off, n)
}

/// The corpus run (see the module doc).
fn corpus(spec_path: &Path, dir: &Path) {
    use owt::guard::corpus::{build, evaluate, Corpus, Counts, Spec, SHAPES, VARIANTS};
    let spec = Spec::read(spec_path).unwrap_or_else(|e| panic!("{}: {e}", spec_path.display()));
    if dir.exists() {
        std::fs::remove_dir_all(dir).expect("clearing --dir (the benchmark's own)");
    }
    std::fs::create_dir_all(dir).unwrap();
    let dir = std::fs::canonicalize(dir).unwrap();
    let main = build(&spec, &dir).expect("building the corpus repository");
    let corpus = Corpus::open(&main, &dir.join("wt"), None);
    let scratch = dir.join("scratch-index");
    let (mut base, mut pairs) = (Counts::default(), Counts::default());
    let (mut guard_s, mut git_s, mut cases, mut exact) = (0.0, 0.0, 0, 0);
    let mut pair_conflicts = std::collections::BTreeSet::new();
    println!(
        "{:<9} {:<10} {:>8} {:>22} {:>24} {:>10} {:>10}",
        "shape", "variant", "sessions", "base tp/fp/fn/tn", "pairs tp/fp/fn/tn", "guard", "git"
    );
    for shape in SHAPES {
        for variant in VARIANTS {
            let case = corpus.setup(shape, variant);
            let r = evaluate(&main, &case, &scratch);
            let guard = ms(r.guard_full + r.guard_verdicts);
            let git = ms(r.git_full);
            let counts = |c: &Counts| {
                format!(
                    "{}/{}/{}/{}",
                    c.true_positive, c.false_positive, c.false_negative, c.true_negative
                )
            };
            println!(
                "{:<9} {:<10} {:>8} {:>22} {:>24} {:>8.0}ms {:>8.0}ms{}",
                shape.name(),
                variant.name(),
                r.sessions,
                counts(&r.base),
                counts(&r.pairs),
                guard,
                git,
                if r.exact { "" } else { "  NOT EXACT" }
            );
            for p in r.engine.pairs() {
                if p.level == owt_protocol::guard::Level::Conflict {
                    pair_conflicts.insert(format!("{}: {} × {}", shape.name(), p.a, p.b));
                }
            }
            base.merge(r.base);
            pairs.merge(r.pairs);
            guard_s += guard / 1000.0;
            git_s += git / 1000.0;
            cases += 1;
            exact += usize::from(r.exact);
        }
    }
    for p in &pair_conflicts {
        println!("conflicting pair {p}");
    }
    println!(
        "{{\"topics\": {}, \"cases\": {cases}, \"exact_cases\": {exact}, \"base_precision\": {}, \"base_recall\": {}, \"pair_precision\": {}, \"pair_recall\": {}, \"base_conflicts\": {}, \"pair_conflicts\": {}, \"pairs\": {}, \"guard_s\": {guard_s:.3}, \"git_s\": {git_s:.3}}}",
        corpus.topics.len(),
        base.precision(),
        base.recall(),
        pairs.precision(),
        pairs.recall(),
        base.true_positive + base.false_negative,
        pairs.true_positive + pairs.false_negative,
        pairs.true_positive + pairs.false_positive + pairs.false_negative + pairs.true_negative,
    );
}
