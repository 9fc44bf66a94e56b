//! Agents on a remote machine, end to end: a real sshd on a loopback port
//! (Debian's openssh-server, a generated host key and user key), a second
//! local account as the remote (see `owt_e2e::remote`), the real owt on
//! both sides, and a scripted agent (`tests/data/remote-agent.sh`).
//!
//! Each test has its own account (`owt-rt-…`, created once, reused by later
//! runs) and its own sshd.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use owt_e2e::lsp::LspClient;
use owt_e2e::remote::{RemoteUser, Sshd};
use owt_e2e::{data_file, ten_lines, uri, wait_until, with_line, TestEnv};
use owt_protocol::{NewOutput, RemoteCheck, RemoteList, SessionList, SessionView, Status};
use serde_json::json;

const DEADLINE: Duration = Duration::from_secs(30);

/// Past `starting`: the agent drew its prompt, and the remote's facts say so.
fn ready(view: &SessionView) -> bool {
    !matches!(view.status, Status::Starting | Status::Unreachable)
}

/// A local repository, a remote account with owt installed and a clone
/// set up, and an sshd between them.
struct World {
    // Dropped in this order: sshd, then the account's processes, then the
    // local env (its processes).
    sshd: Sshd,
    user: RemoteUser,
    env: TestEnv,
    repo: PathBuf,
}

impl World {
    /// Everything but `owt remote setup` (and the owt binary there when
    /// `install` is false: the test installs it).
    fn bare(account: &str, preinstall: bool) -> World {
        if let Some(why) = owt_e2e::remote::unavailable() {
            panic!("{why}");
        }
        let mut env = TestEnv::new();
        let user = RemoteUser::ensure(account);
        let sshd = Sshd::start(&env.path().join("sshd"), &[("devbox", &user)]);
        env.extra_env
            .push(("OWT_SSH_COMMAND".into(), sshd.ssh_command()));
        let agent = user.write(
            "agents/remote-agent.sh",
            &std::fs::read_to_string(data_file("remote-agent.sh")).unwrap(),
            0o755,
        );
        user.write(
            ".config/owt/config.toml",
            &format!(
                "[agent]\ndefault_tool = \"scripted\"\n\n[tools.scripted]\nbinary = \"{}\"\nprompt_mode = \"none\"\n",
                agent.display()
            ),
            0o644,
        );
        if preinstall {
            // What `owt remote install` does (tested on its own), without
            // copying 200 MB per test: a link to the binary under test.
            let bin = user.home.join(".local/bin");
            user.write(".local/bin/.keep", "", 0o644);
            let target = bin.join("owt");
            if std::fs::hard_link(owt_e2e::owt_bin(), &target).is_err() {
                std::fs::copy(owt_e2e::owt_bin(), &target).unwrap();
                user.chown(&target);
            }
        }
        let repo = env.repo("app");
        std::fs::write(repo.join("src.txt"), ten_lines()).unwrap();
        env.git(&repo, ["add", "src.txt"]);
        env.git(&repo, ["commit", "-q", "-m", "ten lines"]);
        let config = env.home.join(".config/owt/config.toml");
        std::fs::create_dir_all(config.parent().unwrap()).unwrap();
        std::fs::write(
            &config,
            "[remotes.devbox]\nhost = \"devbox\"\npath = \"~/src/app\"\n",
        )
        .unwrap();
        let repo = repo.canonicalize().unwrap();
        World {
            sshd,
            user,
            env,
            repo,
        }
    }

    /// A remote with owt and a clone of the repository.
    fn new(account: &str) -> World {
        let world = World::bare(account, true);
        world.ok(&["remote", "setup", "devbox"]);
        world
    }

    fn ok(&self, args: &[&str]) -> String {
        self.env.owt_ok(&self.repo, args)
    }

    fn err(&self, args: &[&str]) -> String {
        self.env.owt_err(&self.repo, args)
    }

    fn sessions(&self) -> Vec<SessionView> {
        let list: SessionList = self.env.owt_json(&self.repo, ["list"]);
        list.sessions
    }

    fn session(&self, name: &str) -> Option<SessionView> {
        self.sessions().into_iter().find(|s| s.name == name)
    }

    /// Waits until `name`'s view satisfies `pred` (polled, with a deadline).
    fn wait_session(
        &self,
        what: &str,
        name: &str,
        pred: impl Fn(&SessionView) -> bool,
    ) -> SessionView {
        let deadline = Instant::now() + DEADLINE;
        loop {
            let view = self.session(name);
            if let Some(view) = view.as_ref().filter(|v| pred(v)) {
                return view.clone();
            }
            assert!(
                Instant::now() < deadline,
                "timed out after {DEADLINE:?} waiting for {name} to be {what}; last seen: {view:?}\nkeeper log:\n{}",
                self.keeper_log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Waits until the bridge's last error satisfies `pred`; returns it.
    fn wait_bridge_error(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + DEADLINE;
        loop {
            let list: RemoteList = self.env.owt_json(&self.repo, ["remote", "list"]);
            let error = list.remotes[0].bridge.clone().and_then(|b| b.last_error);
            if let Some(error) = error.as_deref().filter(|e| pred(e)) {
                return error.to_string();
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for the bridge's error to be {what}; last: {error:?}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Waits until `name`'s status here is what the remote's owt says.
    fn wait_same_as_remote(&self, name: &str) -> SessionView {
        let (_, remote_name) = name.split_once(':').unwrap();
        let deadline = Instant::now() + DEADLINE;
        loop {
            let here = self.session(name);
            let there = self
                .remote_sessions()
                .into_iter()
                .find(|s| s.name == remote_name);
            if let (Some(here), Some(there)) = (&here, &there) {
                if (here.status, &here.status_text) == (there.status, &there.status_text) {
                    return here.clone();
                }
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {name} to show the remote's status; here {here:?}, there {there:?}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn keeper_log(&self) -> String {
        let mut out = String::new();
        if let Ok(entries) = std::fs::read_dir(self.env.owt_home.join("logs")) {
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if name.starts_with("remote-") {
                    out.push_str(&std::fs::read_to_string(entry.path()).unwrap_or_default());
                }
            }
        }
        out
    }

    /// Starts a session on the remote running the scripted agent.
    fn start(&self, name: &str) -> NewOutput {
        let out: NewOutput = self.env.owt_json(
            &self.repo,
            [
                "new",
                "--on",
                "devbox",
                &format!("work on {name}"),
                "--name",
                name,
            ],
        );
        out
    }

    /// The remote's own view of its sessions (its owt, run as the user).
    fn remote_sessions(&self) -> Vec<SessionView> {
        let out = self
            .user
            .sh("~/.local/bin/owt -C ~/src/app --json list 2>/dev/null || ~/.local/bin/owt-real -C ~/src/app --json list");
        serde_json::from_str::<SessionList>(&out).unwrap().sessions
    }

    /// Kills the remote end of every bridge (`owt __bridge serve`).
    fn kill_bridges(&self) -> usize {
        let pids = self.user.processes_running(&["__bridge", "serve"]);
        for pid in &pids {
            // SAFETY: kill(2) on a process of the test account.
            unsafe { libc::kill(*pid, libc::SIGKILL) };
        }
        pids.len()
    }
}

#[test]
fn setup_install_and_check_a_remote() {
    let world = World::bare("owt-rt-setup", false);
    // Nothing there yet: reachable, but no owt.
    let out = world
        .env
        .owt(&world.repo, ["--json", "remote", "check", "devbox"]);
    assert!(!out.status.success(), "check passes with no owt there");
    let check: RemoteCheck = serde_json::from_slice(&out.stdout).unwrap();
    assert!(check.reachable, "{check:?}");
    assert!(
        check.problems[0].contains("owt is not installed on devbox")
            && check.problems[0].contains("owt remote install devbox"),
        "{check:?}"
    );

    let install: owt_protocol::RemoteInstall = world
        .env
        .owt_json(&world.repo, ["remote", "install", "devbox"]);
    assert!(install.installed, "{install:?}");
    assert_eq!(install.path, "~/.local/bin/owt");
    assert_eq!(install.version.as_deref(), Some(env!("CARGO_PKG_VERSION")));
    assert_eq!(
        std::fs::read(world.user.home.join(".local/bin/owt")).unwrap(),
        std::fs::read(owt_e2e::owt_bin()).unwrap(),
        "the binary there is this one"
    );
    assert_eq!(
        std::fs::read(world.user.home.join(".local/bin/owt-host")).unwrap(),
        std::fs::read(owt_e2e::owt_bin().with_file_name("owt-host")).unwrap(),
        "the session host binary beside it too"
    );

    // owt there, no clone yet.
    let out = world
        .env
        .owt(&world.repo, ["--json", "remote", "check", "devbox"]);
    let check: RemoteCheck = serde_json::from_slice(&out.stdout).unwrap();
    assert!(check.compatible, "{check:?}");
    assert!(!check.clone_ok);
    assert!(
        check
            .problems
            .iter()
            .any(|p| p.contains("owt remote setup devbox")),
        "{check:?}"
    );

    let setup: owt_protocol::RemoteSetup = world
        .env
        .owt_json(&world.repo, ["remote", "setup", "devbox"]);
    assert_eq!(setup.how, "pushed");
    assert_eq!(
        setup.path,
        world.user.home.join("src/app").display().to_string()
    );
    let local_tip = world.env.git(&world.repo, ["rev-parse", "main"]);
    assert_eq!(setup.base_tip, local_tip);
    // The clone's checkout has the files (pushed with updateInstead).
    assert_eq!(
        std::fs::read_to_string(world.user.home.join("src/app/src.txt")).unwrap(),
        ten_lines()
    );

    let check: RemoteCheck = world
        .env
        .owt_json(&world.repo, ["remote", "check", "devbox"]);
    assert!(check.problems.is_empty(), "{check:?}");
    assert_eq!(check.remote_base_tip.as_deref(), Some(local_tip.as_str()));
    assert_eq!(
        check.os_arch.as_deref().map(|s| s.starts_with("Linux ")),
        Some(true)
    );

    // A new local commit: setup pushes it; a second setup is "existing".
    std::fs::write(world.repo.join("more.txt"), "more\n").unwrap();
    world.env.git(&world.repo, ["add", "more.txt"]);
    world.env.git(&world.repo, ["commit", "-q", "-m", "more"]);
    let again: owt_protocol::RemoteSetup = world
        .env
        .owt_json(&world.repo, ["remote", "setup", "devbox"]);
    assert_eq!(again.how, "existing");
    assert_eq!(
        again.base_tip,
        world.env.git(&world.repo, ["rev-parse", "main"])
    );

    let list: RemoteList = world.env.owt_json(&world.repo, ["remote", "list"]);
    assert_eq!(list.remotes.len(), 1);
    assert_eq!(list.remotes[0].host, "devbox");
    assert_eq!(list.remotes[0].sessions, 0);
}

/// What an attached terminal shows, through a real PTY.
struct Attached {
    screen: Arc<Mutex<vt100::Parser>>,
    writer: Box<dyn Write + Send>,
    child: Box<dyn portable_pty::Child + Send + Sync>,
    _master: Box<dyn portable_pty::MasterPty + Send>,
}

impl Attached {
    fn start(world: &World, name: &str) -> Attached {
        use portable_pty::{CommandBuilder, PtySize};
        let pty = portable_pty::native_pty_system()
            .openpty(PtySize {
                rows: 24,
                cols: 100,
                pixel_width: 0,
                pixel_height: 0,
            })
            .unwrap();
        let mut cmd = CommandBuilder::new(owt_e2e::owt_bin());
        cmd.args(["-C", &world.repo.to_string_lossy(), "attach", name]);
        cmd.cwd(&world.repo);
        let probe = world.env.owt_cmd(&world.repo, ["version"]);
        for (k, v) in probe.get_envs() {
            match v {
                Some(v) => cmd.env(k, v),
                None => cmd.env_remove(k),
            }
        }
        cmd.env("TERM", "xterm-256color");
        let child = pty.slave.spawn_command(cmd).unwrap();
        drop(pty.slave);
        let mut reader = pty.master.try_clone_reader().unwrap();
        let writer = pty.master.take_writer().unwrap();
        let screen = Arc::new(Mutex::new(vt100::Parser::new(24, 100, 0)));
        {
            let screen = screen.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 8192];
                while let Ok(n) = reader.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    screen.lock().unwrap().process(&buf[..n]);
                }
            });
        }
        Attached {
            screen,
            writer,
            child,
            _master: pty.master,
        }
    }

    fn wait_contains(&self, needle: &str) {
        let screen = self.screen.clone();
        let mut last = String::new();
        let deadline = Instant::now() + DEADLINE;
        while Instant::now() < deadline {
            last = screen.lock().unwrap().screen().contents();
            if last.contains(needle) {
                return;
            }
            std::thread::sleep(Duration::from_millis(40));
        }
        panic!("timed out waiting for {needle:?} in the attached terminal:\n{last}");
    }

    fn type_bytes(&mut self, bytes: &[u8]) {
        self.writer.write_all(bytes).unwrap();
        self.writer.flush().unwrap();
    }

    fn wait_exit(&mut self) -> u32 {
        let deadline = Instant::now() + DEADLINE;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.exit_code();
            }
            assert!(Instant::now() < deadline, "owt attach did not exit");
            std::thread::sleep(Duration::from_millis(40));
        }
    }
}

impl Drop for Attached {
    fn drop(&mut self) {
        let _ = self.child.kill();
    }
}

#[test]
fn a_remote_agent_is_on_the_board_and_every_verb_works_on_it() {
    let world = World::new("owt-rt-verbs");
    let started = world.start("fix-login");
    let view = &started.session;
    assert_eq!(view.name, "devbox:fix-login");
    assert_eq!(view.remote.as_deref(), Some("devbox"));
    let remote_worktree = world.user.home.join("src/app.worktrees/fix-login");
    assert_eq!(
        view.worktree,
        format!("devbox:{}", remote_worktree.display())
    );
    assert_eq!(view.provider, "scripted");
    assert_eq!(view.branch, "owt/fix-login");
    // The remote's owt ignored the clone's untrusted .owt.toml, and said so.
    assert!(
        started
            .warnings
            .iter()
            .any(|w| w.starts_with("on devbox: ") && w.contains("not trusted")),
        "{:?}",
        started.warnings
    );
    // It runs over there, in its own worktree, created by the remote owt.
    assert!(remote_worktree.join("src.txt").exists());
    assert_eq!(world.remote_sessions()[0].name, "fix-login");

    // Facts arrive through the bridge: the agent's prompt shows here as the
    // remote's owt sees it (nothing is polled from here).
    let here = world.wait_session("past starting", "devbox:fix-login", ready);
    let there = world.remote_sessions().remove(0);
    assert_eq!(
        (here.status, &here.status_text),
        (there.status, &there.status_text)
    );
    let board = world.ok(&[]);
    assert!(board.contains("devbox:fix-login"), "{board}");

    // Review is not supported from here yet: said clearly, nothing stored.
    for verb in [
        &["diff", "devbox:fix-login"][..],
        &["review", "devbox:fix-login", "--mark"],
        &["comment", "devbox:fix-login", "src.txt:1", "why"],
    ] {
        let err = world.err(verb);
        assert!(
            err.contains("devbox:fix-login runs on devbox: its files are there, and owt cannot review a remote session from this machine yet; on devbox, run `owt diff fix-login`"),
            "{verb:?}: {err}"
        );
    }
    let comments: owt_protocol::review::CommentsOutput = world
        .env
        .owt_json(&world.repo, ["comments", "devbox:fix-login"]);
    assert!(comments.comments.is_empty());

    // send, peek.
    world.ok(&["send", "devbox:fix-login", "hello from here"]);
    let deadline = Instant::now() + DEADLINE;
    loop {
        let peek: owt_protocol::host::PeekView = world
            .env
            .owt_json(&world.repo, ["peek", "devbox:fix-login"]);
        if peek.screen.text().contains("got: hello from here") {
            assert!(peek.live);
            break;
        }
        assert!(Instant::now() < deadline, "{}", peek.screen.text());
        std::thread::sleep(Duration::from_millis(100));
    }

    // attach: the agent's terminal here; typed keys reach it; detach.
    let mut attached = Attached::start(&world, "devbox:fix-login");
    attached.wait_contains("ready>");
    attached.type_bytes(b"typed in a terminal\r");
    attached.wait_contains("got: typed in a terminal");
    attached.type_bytes(b"\x1cd");
    assert_eq!(attached.wait_exit(), 0, "detach exits 0");

    // wait: the agent exits with 3 over there; wait sees it here.
    world.ok(&["send", "devbox:fix-login", "exit 3"]);
    let out = world
        .env
        .owt(&world.repo, ["wait", "devbox:fix-login", "--timeout", "30"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let view = world.wait_session("exited", "devbox:fix-login", |v| v.status == Status::Exited);
    assert_eq!(view.status_text, "exited with code 3");
    assert!(!view.host_lost);

    // delete: done by the remote's owt; the record here goes too.
    world.ok(&["delete", "devbox:fix-login"]);
    assert!(world.session("devbox:fix-login").is_none());
    assert!(world.remote_sessions().is_empty());
    assert!(!remote_worktree.exists());
}

#[test]
fn a_remote_write_overlapping_a_local_session_is_an_lsp_diagnostic() {
    let world = World::new("owt-rt-guard");
    world.start("remote-edit");
    let local: NewOutput = world
        .env
        .owt_json(&world.repo, ["new", "local work", "--name", "local"]);
    let local_wt = PathBuf::from(&local.session.worktree);
    world.wait_session("past starting", "devbox:remote-edit", ready);

    // The editor shows the local session's checkout: "you" are `local`,
    // whose line 3 changed (on disk, not committed).
    let file = local_wt.join("src.txt");
    let mine: String = with_line(&ten_lines(), 3, "local 3");
    std::fs::write(&file, &mine).unwrap();
    let mut client = LspClient::start(
        &world.env,
        &local_wt,
        json!({"openTerminal": true}),
        LspClient::default_capabilities(),
        true,
    );
    client.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri(&file), "languageId": "text", "version": 1, "text": mine}}),
    );
    // The remote agent changes the same line over there.
    world.ok(&["send", "devbox:remote-edit", "line src.txt 3 remote 3"]);
    let diags = client.await_diagnostics(&uri(&file), DEADLINE, |d| {
        d.iter()
            .any(|d| d["data"]["session"] == "devbox:remote-edit")
    });
    let d = diags
        .iter()
        .find(|d| d["data"]["session"] == "devbox:remote-edit")
        .unwrap();
    assert_eq!(d["range"]["start"]["line"], 2, "{d}");
    assert_eq!(d["code"], "conflict", "{d}");
    let message = d["message"].as_str().unwrap();
    assert!(
        message.starts_with("devbox:remote-edit (scripted, "),
        "{message}"
    );
    assert!(message.contains("changed line 3 here"), "{message}");
    // No copy of the file on this machine to point at.
    assert!(
        d.get("relatedInformation").is_none_or(|r| r.is_null()),
        "{d}"
    );

    // `owt guard` here sees the same pair, from the fetched snapshot.
    let report: owt_protocol::guard::GuardReport = world
        .env
        .owt_json(&world.repo, ["guard", "devbox:remote-edit"]);
    let pair = report
        .pairs
        .iter()
        .find(|p| p.a == "local" || p.b == "local")
        .expect("the remote and the local session overlap");
    assert_eq!(pair.level, owt_protocol::guard::Level::Conflict);
    let remote = report
        .participants
        .iter()
        .find(|p| p.name == "devbox:remote-edit")
        .unwrap();
    assert_eq!(remote.scan.as_deref(), Some("snapshot"));

    // Attach in an editor split works the same: the terminal runs `owt
    // attach devbox:remote-edit`.
    client.request(
        "workspace/executeCommand",
        json!({"command": "owt.attach", "arguments": [{"session": "devbox:remote-edit"}]}),
    );
    let open = client.await_request("owt/openTerminal", DEADLINE);
    let argv: Vec<String> = serde_json::from_value(open["argv"].clone()).unwrap();
    assert!(
        argv.ends_with(&["attach".to_string(), "devbox:remote-edit".to_string()]),
        "{argv:?}"
    );

    // The remote agent puts the line back: the diagnostic goes.
    world.ok(&["send", "devbox:remote-edit", "line src.txt 3 line 3"]);
    client.await_diagnostics(&uri(&file), DEADLINE, |d| {
        !d.iter()
            .any(|d| d["data"]["session"] == "devbox:remote-edit")
    });
}

#[test]
fn shipping_a_remote_session_merges_its_work_here() {
    let world = World::new("owt-rt-ship");
    world.start("feature");
    world.wait_session("past starting", "devbox:feature", ready);
    world.ok(&["send", "devbox:feature", "write feature.txt made on devbox"]);
    let remote_file = world
        .user
        .home
        .join("src/app.worktrees/feature/feature.txt");
    wait_until("the remote agent's write", DEADLINE, || {
        remote_file.exists()
    });
    // The change shows here through the bridge (git facts of the remote).
    world.wait_session("changed", "devbox:feature", |v| v.changed_files == 1);
    // Ship refuses an agent at work: its turn is over first.
    world.wait_session("its turn over", "devbox:feature", |v| {
        !matches!(v.status, Status::Working | Status::Starting)
    });

    let before = world.env.git(&world.repo, ["rev-parse", "main"]);
    let shipped: owt_protocol::ShipOutput = world.env.owt_json(
        &world.repo,
        ["ship", "devbox:feature", "-m", "Feature from devbox"],
    );
    assert!(shipped.committed.is_some(), "{shipped:?}");
    assert!(shipped.merge.merged && shipped.merge.deleted, "{shipped:?}");
    assert_eq!(shipped.merge.base_before, before);
    // The work is on main here, and in the checkout of main.
    assert_eq!(
        std::fs::read_to_string(world.repo.join("feature.txt")).unwrap(),
        "made on devbox\n"
    );
    let log = world
        .env
        .git(&world.repo, ["log", "--format=%s", "-3", "main"]);
    assert!(log.contains("Feature from devbox"), "{log}");
    // Gone here and there; nothing of owt's own left behind here.
    assert!(world.session("devbox:feature").is_none());
    assert!(world.remote_sessions().is_empty());
    let branches = world.env.git(&world.repo, ["branch", "--list"]);
    assert!(!branches.contains("devbox/"), "{branches}");
    let worktrees = world.env.git(&world.repo, ["worktree", "list"]);
    assert_eq!(worktrees.lines().count(), 1, "{worktrees}");
}

#[test]
fn a_killed_bridge_shows_unreachable_then_recovers() {
    let world = World::new("owt-rt-bridge");
    world.start("steady");
    let view = world.wait_session("past starting", "devbox:steady", ready);
    let agent = world.remote_sessions()[0]
        .agent_pid
        .expect("the remote agent's pid");

    // The bridge's remote end is killed; the remote owt is moved away so
    // the keeper's reconnections fail until it is back.
    let bin = world.user.home.join(".local/bin/owt");
    let away = world.user.home.join(".local/bin/owt-away");
    std::fs::rename(&bin, &away).unwrap();
    assert_eq!(world.kill_bridges(), 1, "one bridge per remote");
    let down = world.wait_session("unreachable", "devbox:steady", |v| {
        v.status == Status::Unreachable
    });
    assert!(
        down.status_text.starts_with("unreachable (since "),
        "{down:?}"
    );
    assert!(down.status_text.ends_with(" UTC)"), "{down:?}");
    // Nothing deleted, nothing exited; verbs say why they cannot reach it.
    assert_eq!(down.task, view.task);
    let err = world.err(&["send", "devbox:steady", "anyone?"]);
    assert!(err.contains("devbox is unreachable"), "{err}");
    let list: RemoteList = world.env.owt_json(&world.repo, ["remote", "list"]);
    let bridge = list.remotes[0].bridge.clone().unwrap();
    assert!(bridge.running && !bridge.connected, "{bridge:?}");

    std::fs::rename(&away, &bin).unwrap();
    world.wait_session("back", "devbox:steady", |v| v.status != Status::Unreachable);
    let back = world.wait_same_as_remote("devbox:steady");
    assert_eq!(back.task, view.task);
    world.ok(&["send", "devbox:steady", "still there"]);
    let peek: owt_protocol::host::PeekView =
        world.env.owt_json(&world.repo, ["peek", "devbox:steady"]);
    assert!(peek.live);
    assert!(owt_e2e::pid_alive(agent), "the same agent all along");
}

#[test]
fn a_killed_sshd_shows_unreachable_then_recovers() {
    let mut world = World::new("owt-rt-sshd");
    world.start("survivor");
    let view = world.wait_session("past starting", "devbox:survivor", ready);
    let agent = world.remote_sessions()[0]
        .agent_pid
        .expect("the remote agent's pid");

    world.sshd.kill();
    let down = world.wait_session("unreachable", "devbox:survivor", |v| {
        v.status == Status::Unreachable
    });
    assert!(
        down.status_text.starts_with("unreachable (since "),
        "{down:?}"
    );
    // The agent goes on over there.
    assert!(owt_e2e::pid_alive(agent), "the remote agent survived");
    // Reconnections meet a closed port.
    world.wait_bridge_error("connection refused", |e| e.contains("Connection refused"));
    assert_eq!(world.sessions().len(), 1, "nothing deleted");

    world.sshd.restart();
    world.wait_session("back", "devbox:survivor", |v| {
        v.status != Status::Unreachable
    });
    let back = world.wait_same_as_remote("devbox:survivor");
    assert_eq!(back.task, view.task);
    world.ok(&["send", "devbox:survivor", "welcome back"]);
    let deadline = Instant::now() + DEADLINE;
    loop {
        let peek: owt_protocol::host::PeekView =
            world.env.owt_json(&world.repo, ["peek", "devbox:survivor"]);
        if peek.screen.text().contains("got: welcome back") {
            break;
        }
        assert!(Instant::now() < deadline, "{}", peek.screen.text());
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_bridge_of_another_protocol_version_is_refused_with_a_clear_message() {
    let world = World::new("owt-rt-version");
    world.start("old-and-new");
    world.wait_session("past starting", "devbox:old-and-new", ready);

    // The real remote owt refuses a hello of another version, naming both.
    let mut hello = vec![0x41u8];
    let doc = br#"{"version": 99, "owt_version": "9.9.9"}"#;
    hello.extend_from_slice(&(doc.len() as u32).to_le_bytes());
    hello.extend_from_slice(doc);
    let mut ssh = std::process::Command::new("ssh")
        .args([
            "-F",
            &world.sshd.client_config.to_string_lossy(),
            "-T",
            "devbox",
        ])
        .arg("~/.local/bin/owt -C ~/src/app __bridge serve")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    ssh.stdin.take().unwrap().write_all(&hello).unwrap();
    let out = ssh.wait_with_output().unwrap();
    assert!(!out.status.success());
    let frame = owt_protocol::bridge::read_frame(&mut &out.stdout[..])
        .unwrap()
        .unwrap();
    assert_eq!(frame.kind, owt_protocol::bridge::BridgeKind::Error);
    let error: owt_protocol::bridge::BridgeError = frame.json().unwrap();
    assert_eq!(
        error.message,
        format!(
            "protocol mismatch: the remote's owt {v} speaks owt bridge protocol version 1, this machine's owt 9.9.9 speaks version 99; install the same owt on both (`owt remote install NAME` copies this one)",
            v = env!("CARGO_PKG_VERSION")
        )
    );

    // The remote's owt becomes one of a newer protocol (a stand-in script:
    // no such build exists here): the keeper refuses it.
    let bin = world.user.home.join(".local/bin");
    std::fs::rename(bin.join("owt"), bin.join("owt-real")).unwrap();
    world.user.write(
        ".local/bin/owt",
        &std::fs::read_to_string(data_file("newer-owt.py")).unwrap(),
        0o755,
    );
    world.user.write(
        ".local/bin/real-owt",
        &bin.join("owt-real").display().to_string(),
        0o644,
    );
    world.kill_bridges();
    let down = world.wait_session("unreachable", "devbox:old-and-new", |v| {
        v.status == Status::Unreachable
    });
    assert_eq!(down.remote.as_deref(), Some("devbox"));
    // The first failure is the kill itself; the next attempt meets the
    // newer owt.
    let error = world.wait_bridge_error("a protocol mismatch", |e| e.contains("protocol mismatch"));
    assert!(
        error.starts_with(&format!(
            "protocol mismatch: the remote's owt 9.0.0 speaks owt bridge protocol version 2, this machine's owt {} speaks version 1",
            env!("CARGO_PKG_VERSION")
        )),
        "{error}"
    );
    let out = world
        .env
        .owt(&world.repo, ["--json", "remote", "check", "devbox"]);
    assert!(!out.status.success());
    let check: RemoteCheck = serde_json::from_slice(&out.stdout).unwrap();
    assert!(!check.compatible);
    assert!(
        check
            .problems
            .iter()
            .any(|p| p.contains("protocol mismatch")),
        "{check:?}"
    );
    // The session is kept, unreachable, never exited.
    assert_eq!(world.sessions().len(), 1);
}

#[test]
fn a_repositorys_own_remotes_need_trust() {
    let world = World::bare("owt-rt-trust", true);
    // The repository declares a remote of its own (as a cloned project
    // could): ignored until trusted.
    std::fs::write(
        world.repo.join(".owt.toml"),
        format!(
            "{}\n[remotes.theirs]\nhost = \"devbox\"\npath = \"~/src/app\"\n",
            std::fs::read_to_string(world.repo.join(".owt.toml")).unwrap()
        ),
    )
    .unwrap();
    let err = world.err(&["new", "--on", "theirs", "task"]);
    assert!(err.contains("[remotes.theirs] is declared by"), "{err}");
    assert!(err.contains("owt trust"), "{err}");
    // A host that ssh would read as an option is refused before ssh runs.
    std::fs::write(
        world.env.home.join(".config/owt/config.toml"),
        "[remotes.devbox]\nhost = \"-oProxyCommand=touch /tmp/pwned\"\npath = \"~/src/app\"\n",
    )
    .unwrap();
    let err = world.err(&["remote", "check", "devbox"]);
    assert!(err.contains("[remotes.devbox] host"), "{err}");
    assert!(!Path::new("/tmp/pwned").exists());
}

/// #35: a remote session is in the control plane's lanes as a local one
/// is (`devbox:name`); its Screen tab shows the agent over there, and `t`
/// types into it through the bridge.
#[test]
fn a_remote_session_is_in_the_control_planes_lanes() {
    use owt_e2e::cockpit::Cockpit;
    let world = World::new("owt-rt-cockpit");
    world.start("fix-login");
    world.wait_session("past starting", "devbox:fix-login", ready);
    let cockpit = Cockpit::open(&world.env, &world.repo, "cp-remote", "");
    cockpit.wait_for("the remote row in a lane", |s| {
        s.contains("IN FLIGHT (1)") || s.contains("NEEDS YOU (1)")
    });
    cockpit.wait_text("› devbox:fix-login");
    cockpit.wait_text("ready>");
    cockpit.keys(&["t"]);
    cockpit.wait_text("Type to devbox:fix-login");
    cockpit.type_text("typed from the board");
    cockpit.keys(&["Enter"]);
    cockpit.wait_text("Sent to devbox:fix-login.");
    cockpit.wait_text("got: typed from the board");
}

#[test]
fn forking_a_remote_session_is_refused_and_creates_nothing() {
    let world = World::new("owt-rt-fork");
    world.start("far");
    let before = (
        world.env.git(&world.repo, ["branch", "--list"]),
        world
            .env
            .git(&world.repo, ["worktree", "list", "--porcelain"]),
        world.sessions().len(),
    );
    let err = world.err(&["fork", "devbox:far", "--name", "near"]);
    assert!(
        err.contains("devbox:far runs on the remote devbox: owt cannot read its working state from here; fork it on that machine"),
        "{err}"
    );
    let after = (
        world.env.git(&world.repo, ["branch", "--list"]),
        world
            .env
            .git(&world.repo, ["worktree", "list", "--porcelain"]),
        world.sessions().len(),
    );
    assert_eq!(after, before);
}
