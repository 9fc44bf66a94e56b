//! Many agents on one machine (issue 22): each session's block of ports,
//! and the queue — a session beyond `[agent] max_running` is created
//! `queued` and its agent starts when a running one ends; `--now` and
//! `owt start` start anyway; queued sessions outlive every owt process;
//! two owt processes never start the same one; deleting a queued session
//! starts nothing. And `owt list` reads the git facts the live hosts
//! recorded from their journals (asking no host, walking no checkout),
//! and walks only the checkouts without a live host.

use std::path::{Path, PathBuf};
use std::time::Duration;

use owt_e2e::{pid_alive, wait_until, TestEnv};
use owt_protocol::{NewOutput, SessionList, SessionView, Status};

const WAIT: Duration = Duration::from_secs(30);

/// A repository whose `.owt.toml` allows `max_running` agents (and keeps
/// no memory free, so that only the count decides), gives each session
/// `ports` ports, and runs `agent`.
fn repo_with(env: &TestEnv, name: &str, max_running: u32, ports: u16, agent: &Path) -> PathBuf {
    let repo = env.repo(name);
    std::fs::write(
        repo.join(".owt.toml"),
        format!(
            "[agent]\ndefault_tool = \"fake\"\nmax_running = {max_running}\nmin_free_memory = \"0 B\"\n\n[worktree]\nports = {ports}\n\n[tools.fake]\nbinary = \"{}\"\n",
            agent.display()
        ),
    )
    .unwrap();
    env.git(&repo, ["commit", "-qam", "limits"]);
    env.trust(&repo);
    repo
}

fn idle_agent() -> PathBuf {
    owt_e2e::data_file("idle-agent.sh")
}

fn new(env: &TestEnv, repo: &Path, task: &str) -> SessionView {
    let session = env.owt_json::<NewOutput, _, _>(repo, ["new", task]).session;
    env.wait_settled(repo, &session.name);
    session
}

fn sessions(env: &TestEnv, repo: &Path) -> Vec<SessionView> {
    env.owt_json::<SessionList, _, _>(repo, ["list"]).sessions
}

fn session(env: &TestEnv, repo: &Path, name: &str) -> SessionView {
    sessions(env, repo)
        .into_iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no session {name}"))
}

/// Whether a session host process serves `short_id` (its spec file names it).
fn hosts_of(env: &TestEnv, short_id: &str) -> usize {
    env.our_processes()
        .into_iter()
        .filter(|pid| {
            let cmd = owt_e2e::cmdline(*pid as u32);
            cmd.iter().any(|a| a == "__host")
                && cmd
                    .iter()
                    .any(|a| a.ends_with(&format!("{short_id}.spec.json")))
        })
        .count()
}

fn kill_every_owt_process(env: &TestEnv) {
    let killed = env.our_processes();
    for &pid in &killed {
        // SAFETY: kill has no memory preconditions; these are this test's.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    // Dead, not only dying: a killed process's environment reads empty
    // while it still exits, and until it is a zombie owt rightly counts
    // it as running.
    wait_until("every owt process of the test to die", WAIT, || {
        env.our_processes().is_empty() && killed.iter().all(|&pid| !pid_alive(pid as u32))
    });
}

/// The port range is the machine's: the tests that take blocks and the
/// one that listens on a port of it run one at a time.
static PORT_RANGE: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn port_range() -> std::sync::MutexGuard<'static, ()> {
    PORT_RANGE.lock().unwrap_or_else(|e| e.into_inner())
}

// ---------------------------------------------------------------------------
// Ports

#[test]
fn each_session_gets_its_own_block_of_ports_kept_across_restarts_and_freed_on_delete() {
    let _ports = port_range();
    let env = TestEnv::new();
    // An agent that says what it was given, then waits.
    let agent = env.path().join("env-agent.sh");
    std::fs::write(
        &agent,
        "#!/usr/bin/env bash\nprintf 'PORT=%s PORTS=%s\\n' \"$OWT_PORT\" \"$OWT_PORTS\"\nexec cat\n",
    )
    .unwrap();
    std::fs::set_permissions(&agent, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let repo = repo_with(&env, "app", 10, 3, &agent);
    // The setup script is told them too.
    std::fs::create_dir_all(repo.join(".owt")).unwrap();
    std::fs::write(
        repo.join(".owt/setup.sh"),
        "printf '%s|%s' \"$OWT_PORT\" \"$OWT_PORTS\" > .ports\n",
    )
    .unwrap();
    env.git(&repo, ["add", ".owt/setup.sh"]);
    env.git(&repo, ["commit", "-qm", "setup"]);
    env.trust(&repo);

    let a = new(&env, &repo, "first");
    let b = new(&env, &repo, "second");
    let c = new(&env, &repo, "third");
    for s in [&a, &b, &c] {
        assert_eq!(s.ports.len(), 3, "{s:?}");
        assert!(
            s.ports.windows(2).all(|w| w[1] == w[0] + 1),
            "consecutive: {s:?}"
        );
    }
    let all: std::collections::BTreeSet<u16> =
        [&a, &b, &c].iter().flat_map(|s| s.ports.clone()).collect();
    assert_eq!(all.len(), 9, "distinct blocks: {a:?} {b:?} {c:?}");

    let joined = |ports: &[u16]| {
        ports
            .iter()
            .map(u16::to_string)
            .collect::<Vec<_>>()
            .join(" ")
    };
    // The agent and the setup script got OWT_PORT and OWT_PORTS.
    let expected = format!("PORT={} PORTS={}", a.ports[0], joined(&a.ports));
    wait_until("the agent to print its ports", WAIT, || {
        env.owt_ok(&repo, ["peek", &a.name]).contains(&expected)
    });
    assert_eq!(
        std::fs::read_to_string(Path::new(&a.worktree).join(".ports")).unwrap(),
        format!("{}|{}", a.ports[0], joined(&a.ports))
    );

    // Every owt process gone (hosts, agents): the blocks stay.
    kill_every_owt_process(&env);
    let after: Vec<(String, Vec<u16>)> = sessions(&env, &repo)
        .into_iter()
        .map(|s| (s.name, s.ports))
        .collect();
    assert_eq!(
        after,
        vec![
            (a.name.clone(), a.ports.clone()),
            (b.name.clone(), b.ports.clone()),
            (c.name.clone(), c.ports.clone()),
        ]
    );

    // Deleting a session frees its block: the next session gets the
    // lowest free block, which is that one.
    env.owt_ok(&repo, ["delete", "--force", &a.name]);
    let d = new(&env, &repo, "fourth");
    assert_eq!(d.ports, a.ports, "the freed block is given again");
    assert!(d
        .ports
        .iter()
        .all(|p| !b.ports.contains(p) && !c.ports.contains(p)));
}

#[test]
fn a_port_something_listens_on_is_never_given() {
    let _ports = port_range();
    let env = TestEnv::new();
    let repo = repo_with(&env, "app", 10, 2, &idle_agent());
    let first = new(&env, &repo, "first");
    env.owt_ok(&repo, ["delete", &first.name]);
    // Someone else's server now listens on the first port of that block.
    let listener = std::net::TcpListener::bind(("0.0.0.0", first.ports[0])).unwrap();
    let second = new(&env, &repo, "second");
    assert!(
        !second.ports.contains(&first.ports[0]),
        "{:?} includes the busy port {}",
        second.ports,
        first.ports[0]
    );
    drop(listener);
}

// ---------------------------------------------------------------------------
// The queue

#[test]
fn beyond_the_limit_a_session_is_queued_and_starts_when_a_running_one_ends() {
    let env = TestEnv::new();
    let repo = repo_with(&env, "app", 1, 0, &idle_agent());
    let a = new(&env, &repo, "first");
    assert_ne!(a.status, Status::Queued, "{a:?}");
    let out = env.owt_ok(&repo, ["new", "second"]);
    assert!(out.contains("Queued session second"), "{out}");
    assert!(out.contains("max_running is 1"), "{out}");
    let b = session(&env, &repo, "second");
    assert_eq!(
        (b.status, b.lane),
        (Status::Queued, owt_protocol::Lane::InFlight)
    );
    assert_eq!(b.agent_pid, None);
    assert!(
        Path::new(&b.worktree).is_dir(),
        "its worktree is made at once"
    );
    // The board shows it in IN FLIGHT's queued part.
    let board = env.owt_ok(&repo, Vec::<&str>::new());
    assert!(board.contains("  QUEUED (1)\n  second"), "{board}");

    // The running agent ends: its host starts the queued one (no other
    // owt process is asked).
    env.owt_ok(&repo, ["send", &a.name, "exit"]);
    wait_until("the queued session to start", WAIT, || {
        hosts_of(&env, &b.id) == 1
    });
    let b = session(&env, &repo, "second");
    assert_ne!(b.status, Status::Queued, "{b:?}");
    assert!(b.agent_pid.is_some(), "{b:?}");
    assert_eq!(session(&env, &repo, "first").status, Status::Exited);
}

#[test]
fn now_starts_beyond_the_limit_and_start_starts_a_queued_one() {
    let env = TestEnv::new();
    let repo = repo_with(&env, "app", 1, 0, &idle_agent());
    new(&env, &repo, "first");
    let now = env
        .owt_json::<NewOutput, _, _>(&repo, ["new", "urgent", "--now"])
        .session;
    assert_ne!(now.status, Status::Queued, "{now:?}");
    assert_eq!(hosts_of(&env, &now.id), 1);
    let queued = new(&env, &repo, "later");
    assert_eq!(queued.status, Status::Queued);
    let started: SessionView = env.owt_json(&repo, ["start", "later"]);
    assert_ne!(started.status, Status::Queued, "{started:?}");
    assert_eq!(hosts_of(&env, &queued.id), 1);
    let err = env.owt_err(&repo, ["start", "later"]);
    assert!(err.contains("is not queued"), "{err}");
    let running = sessions(&env, &repo)
        .iter()
        .filter(|s| s.agent_pid.is_some())
        .count();
    assert_eq!(running, 3, "two of them beyond max_running = 1, by request");
}

#[test]
fn queued_sessions_survive_every_owt_process_and_start_later() {
    let env = TestEnv::new();
    let repo = repo_with(&env, "app", 1, 0, &idle_agent());
    let a = new(&env, &repo, "first");
    let b = new(&env, &repo, "second");
    assert_eq!(b.status, Status::Queued);

    // Every owt process dies at once (the host of `first` too, so no host
    // ends cleanly and starts anything).
    kill_every_owt_process(&env);
    assert_eq!(hosts_of(&env, &b.id), 0);

    // The next `owt list` — one call — finds `first` gone (its host is
    // recorded lost before the queue is asked for room) and starts
    // `second`.
    let b = session(&env, &repo, "second");
    assert_ne!(b.status, Status::Queued, "{b:?}");
    assert_eq!(hosts_of(&env, &b.id), 1);
    let a = session(&env, &repo, &a.name);
    assert!(a.host_lost, "{a:?}");
}

#[test]
fn two_owt_processes_never_start_the_same_queued_session() {
    let env = TestEnv::new();
    let repo = repo_with(&env, "app", 1, 0, &idle_agent());
    let a = new(&env, &repo, "first");
    let b = new(&env, &repo, "second");
    let c = new(&env, &repo, "third");
    // The running agent ends while eight `owt list` run at once (and its
    // host starts an admitter too): one place is free, so exactly one
    // queued session starts, exactly once.
    env.owt_ok(&repo, ["send", &a.name, "exit"]);
    let lists: Vec<std::process::Child> = (0..8)
        .map(|_| {
            env.owt_cmd(&repo, ["list"])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut list in lists {
        assert!(list.wait().unwrap().success());
    }
    wait_until("the second session to start", WAIT, || {
        hosts_of(&env, &b.id) == 1
    });
    // Let every admitter finish: nothing more starts.
    wait_until("the admitters to finish", WAIT, || {
        env.our_processes().iter().all(|pid| {
            !owt_e2e::cmdline(*pid as u32)
                .iter()
                .any(|a| a == "__admit" || a == "list")
        })
    });
    assert_eq!(hosts_of(&env, &b.id), 1, "one host for the second session");
    assert_eq!(hosts_of(&env, &c.id), 0, "the third still waits");
    assert_eq!(session(&env, &repo, "third").status, Status::Queued);
    // No second host was ever tried for it (it would have found the
    // socket served, and said so in the session's host log).
    let log = std::fs::read_to_string(env.owt_home.join(format!("logs/{}.log", b.id))).unwrap();
    assert!(!log.contains("already serves"), "{log}");
}

#[test]
fn deleting_a_queued_session_starts_nothing() {
    let env = TestEnv::new();
    let repo = repo_with(&env, "app", 1, 0, &idle_agent());
    let a = new(&env, &repo, "first");
    let b = new(&env, &repo, "second");
    let c = new(&env, &repo, "third");
    env.owt_ok(&repo, ["delete", &b.name]);
    assert!(!Path::new(&b.worktree).exists());
    let left = sessions(&env, &repo);
    let statuses: Vec<(&str, Status)> = left.iter().map(|s| (s.name.as_str(), s.status)).collect();
    assert_eq!(left.len(), 2, "{statuses:?}");
    assert_ne!(session(&env, &repo, &a.name).status, Status::Queued);
    assert_eq!(
        session(&env, &repo, &c.name).status,
        Status::Queued,
        "{statuses:?}"
    );
    assert_eq!(hosts_of(&env, &b.id) + hosts_of(&env, &c.id), 0);
}

// ---------------------------------------------------------------------------
// Listing

/// Folder opens under watched folders, seen with inotify: a walk of a
/// checkout opens every folder in it (to list it); an `lstat`, a file read
/// or a look at the git dir opens none.
struct FolderOpens {
    fd: i32,
}

impl FolderOpens {
    /// Watches every folder of each checkout in `roots` (their `.git`
    /// left out).
    fn watch(roots: &[PathBuf]) -> FolderOpens {
        // SAFETY: plain inotify calls on a descriptor this value owns.
        let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
        assert!(
            fd >= 0,
            "inotify_init1: {}",
            std::io::Error::last_os_error()
        );
        // Every folder first: listing one once it is watched is an open.
        let mut folders: Vec<PathBuf> = roots.to_vec();
        let mut next = 0;
        while next < folders.len() {
            for entry in std::fs::read_dir(&folders[next]).unwrap().flatten() {
                if entry.file_type().unwrap().is_dir() && entry.file_name() != ".git" {
                    folders.push(entry.path());
                }
            }
            next += 1;
        }
        for dir in &folders {
            let c = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()).unwrap();
            // SAFETY: `c` is a valid C string for the call's duration.
            let wd = unsafe { libc::inotify_add_watch(fd, c.as_ptr(), libc::IN_OPEN) };
            assert!(
                wd >= 0,
                "watching {}: {}",
                dir.display(),
                std::io::Error::last_os_error()
            );
        }
        FolderOpens { fd }
    }

    /// Folder opens seen since the last call.
    fn take(&self) -> usize {
        let mut buf = vec![0u8; 64 * 1024];
        let mut opens = 0;
        loop {
            // SAFETY: reads into `buf`, at most its length.
            let n = unsafe { libc::read(self.fd, buf.as_mut_ptr().cast(), buf.len()) };
            if n <= 0 {
                return opens;
            }
            let mut at = 0;
            while at < n as usize {
                // SAFETY: the kernel wrote whole events; read unaligned.
                let event: libc::inotify_event =
                    unsafe { std::ptr::read_unaligned(buf[at..].as_ptr().cast()) };
                if event.mask & libc::IN_OPEN != 0 && event.mask & libc::IN_ISDIR != 0 {
                    opens += 1;
                }
                at += std::mem::size_of::<libc::inotify_event>() + event.len as usize;
            }
        }
    }
}

impl Drop for FolderOpens {
    fn drop(&mut self) {
        // SAFETY: closes the descriptor this value owns.
        unsafe { libc::close(self.fd) };
    }
}

fn host_pid(env: &TestEnv, short_id: &str) -> i32 {
    env.our_processes()
        .into_iter()
        .find(|pid| {
            let cmd = owt_e2e::cmdline(*pid as u32);
            cmd.iter().any(|a| a == "__host")
                && cmd
                    .iter()
                    .any(|a| a.ends_with(&format!("{short_id}.spec.json")))
        })
        .unwrap_or_else(|| panic!("no host for {short_id}"))
}

#[test]
fn owt_list_reads_the_live_hosts_records_and_walks_only_checkouts_without_a_host() {
    let env = TestEnv::new();
    let repo = repo_with(&env, "app", 10, 0, &idle_agent());
    // A repository of a few folders, so that a walk opens several.
    for d in 0..5 {
        let dir = repo.join(format!("src/m{d}"));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..4 {
            std::fs::write(dir.join(format!("f{f}.txt")), format!("{d}/{f}\n")).unwrap();
        }
    }
    env.git(&repo, ["add", "."]);
    env.git(&repo, ["commit", "-qm", "files"]);
    let sessions_made: Vec<SessionView> = (0..3)
        .map(|i| new(&env, &repo, &format!("task {i}")))
        .collect();
    let worktrees: Vec<PathBuf> = sessions_made
        .iter()
        .map(|s| PathBuf::from(&s.worktree))
        .collect();
    // What the agents did: the first edited a file and added one, the
    // second committed an edit, the third nothing.
    std::fs::write(worktrees[0].join("src/m1/f0.txt"), "edited\n").unwrap();
    std::fs::write(worktrees[0].join("src/m2/new.txt"), "new\n").unwrap();
    std::fs::write(worktrees[1].join("src/m3/f1.txt"), "edited\n").unwrap();
    env.git(&worktrees[1], ["commit", "-qam", "an edit"]);

    // Every host's journal ready (what `owt guard` used shows it).
    wait_until("every session host's journal to be ready", WAIT, || {
        let report: owt_protocol::guard::GuardReport = env.owt_json(&repo, ["guard"]);
        report
            .participants
            .iter()
            .filter(|p| p.kind == "session")
            .all(|p| p.scan.as_deref() == Some("journal"))
    });

    // Every host records its git facts from its journal (debounced, see
    // `session::host::git_facts`): a listing takes them from the store.
    // (A host may record a first reading from before its journal saw
    // every write: wait for the one that has them.)
    wait_until("every live host's git facts to be recorded", WAIT, || {
        env.listing_sources(&repo) == vec!["the host's record"; 3]
            && sessions(&env, &repo)
                .iter()
                .map(|s| (s.ahead, s.changed_files))
                .eq([(0, 2), (1, 1), (0, 0)])
    });

    // No host can answer (every one stopped): the listing asks none, and
    // walks no checkout, and counts right.
    let hosts: Vec<i32> = sessions_made
        .iter()
        .map(|s| host_pid(&env, &s.id))
        .collect();
    let opens = FolderOpens::watch(&worktrees);
    for pid in &hosts {
        // SAFETY: kill(2) of this test's own session hosts.
        unsafe { libc::kill(*pid, libc::SIGSTOP) };
    }
    let listed = sessions(&env, &repo);
    for pid in &hosts {
        // SAFETY: as above.
        unsafe { libc::kill(*pid, libc::SIGCONT) };
    }
    assert_eq!(
        opens.take(),
        0,
        "owt list opened folders of the checkouts (it walked them) though every host is live"
    );
    let counts: Vec<(u32, u32)> = listed.iter().map(|s| (s.ahead, s.changed_files)).collect();
    assert_eq!(counts, vec![(0, 2), (1, 1), (0, 0)], "{listed:?}");

    // A later write is seen at a listing soon after (once the host's
    // journal is quiet for 50 ms, and it read it), still without a walk.
    std::fs::write(worktrees[2].join("src/m4/f3.txt"), "edited\n").unwrap();
    wait_until("the write to show in `owt list`", WAIT, || {
        sessions(&env, &repo)[2].changed_files == 1
    });
    assert_eq!(opens.take(), 0, "owt list walked a checkout after a write");

    // The base branch moves (the host does not see it): the next listing
    // asks the host's journal once, and counts right.
    std::fs::write(repo.join("src/m0/f0.txt"), "on main\n").unwrap();
    env.git(&repo, ["commit", "-qam", "main moves"]);
    let sources = env.listing_sources(&repo);
    assert_eq!(sources, vec!["journal"; 3], "after the base moved");
    assert_eq!(env.listing_sources(&repo), vec!["the host's record"; 3]);
    let counts: Vec<(u32, u32)> = sessions(&env, &repo)
        .iter()
        .map(|s| (s.ahead, s.changed_files))
        .collect();
    assert_eq!(counts, vec![(0, 2), (1, 1), (0, 1)]);
    assert_eq!(
        opens.take(),
        0,
        "owt list walked a checkout after the base moved"
    );

    // The first session's host dies: its checkout alone is walked, and
    // counts the same.
    let pid = host_pid(&env, &sessions_made[0].id);
    // SAFETY: kill(2) of this test's own session host.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    // A killed multi-threaded host shows as a zombie while its other
    // threads still hold its socket open: gone is when both have ended.
    let socket = env
        .owt_home
        .join("run")
        .join(format!("{}.sock", sessions_made[0].id));
    wait_until("the killed host to be gone", WAIT, || {
        !pid_alive(pid as u32) && std::os::unix::net::UnixStream::connect(&socket).is_err()
    });
    let dead = FolderOpens::watch(&worktrees[..1]);
    let live = FolderOpens::watch(&worktrees[1..]);
    let listed = sessions(&env, &repo);
    assert!(listed[0].host_lost, "{:?}", listed[0]);
    assert_eq!(listed[0].changed_files, 2, "{:?}", listed[0]);
    assert!(
        dead.take() > 0,
        "the checkout of a session without a live host is walked"
    );
    assert_eq!(live.take(), 0, "the live hosts' checkouts are not walked");
}
