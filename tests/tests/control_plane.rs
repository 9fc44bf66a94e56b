//! The control plane (issue 35): `owt` in a real terminal — a tmux pane
//! of 100×30 — driven by keys (`send-keys`) and read back
//! (`capture-pane`), against real sessions whose agent is
//! `tests/data/idle-agent.sh`. Every wait polls with a deadline and fails
//! with the screen it last saw.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use owt_e2e::cockpit::{Cockpit, WAIT};
use owt_e2e::TestEnv;

/// A repository with two sessions of the idle agent, waiting at its
/// prompt.
fn two_sessions(env: &TestEnv) -> (PathBuf, String, String) {
    let repo = env.repo("cockpit");
    let (first, _) = env.new_session(&repo, "fix the parser");
    let (second, _) = env.new_session(&repo, "write the docs");
    (repo, first, second)
}

/// The row of session `name` on the screen (its line in the lanes pane).
fn row<'a>(screen: &'a str, name: &str) -> Option<&'a str> {
    screen.lines().find(|l| {
        l.split('│')
            .next()
            .is_some_and(|left| left.split_whitespace().any(|w| w == name))
    })
}

#[test]
fn the_control_plane_opens_lives_filters_attaches_resizes_and_quits() {
    let env = TestEnv::new();
    let (repo, first, second) = two_sessions(&env);
    let cockpit = Cockpit::open(&env, &repo, "cp-main", "");

    // Opens full screen with both sessions.
    let screen = cockpit.wait_for("both sessions", |s| {
        row(s, &first).is_some() && row(s, &second).is_some()
    });
    assert!(screen.starts_with("owt · cockpit · 2 sessions"), "{screen}");
    assert_eq!(cockpit.tmux_format("#{alternate_on}"), "1");

    // A status change reaches the screen without a key: the first agent
    // exits (told from outside, by `owt send`).
    env.owt_ok(&repo, ["send", &first, "exit"]);
    cockpit.wait_for("the first session's row to say exited", |s| {
        row(s, &first).is_some_and(|r| r.contains("exited"))
    });

    // The README's picture (scripts/terminal-picture), when asked for.
    if let Some(dir) = std::env::var_os("OWT_E2E_ARTIFACTS") {
        let coloured = cockpit
            .tmux
            .run(&["capture-pane", "-p", "-e", "-t", &cockpit.target]);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(PathBuf::from(dir).join("control-plane.ansi"), coloured).unwrap();
    }

    // `/` filters by name.
    cockpit.keys(&["/"]);
    cockpit.type_text("docs");
    cockpit.keys(&["Enter"]);
    cockpit.wait_for("the filter to hide the first session", |s| {
        s.contains("filter: docs")
            && !s.contains("┌ Filter")
            && row(s, &first).is_none()
            && row(s, &second).is_some()
    });

    // `a` attaches full screen to the focused (second) agent; Ctrl-\ d
    // comes back to the board, focus and filter as they were.
    cockpit.keys(&["a"]);
    cockpit.wait_for("the agent's own screen", |s| {
        s.contains("arg: write the docs") && !s.contains("filter: docs")
    });
    cockpit.type_text("hello from the cockpit");
    cockpit.keys(&["Enter"]);
    cockpit.wait_text("got: hello from the cockpit");
    cockpit.keys(&["C-\\", "d"]);
    let screen = cockpit.wait_text(&format!("Back from {second}"));
    assert!(screen.contains("filter: docs"), "{screen}");
    assert!(
        row(&screen, &second).is_some_and(|r| r.contains('›')),
        "{screen}"
    );

    // `?` shows every key; any key closes it.
    cockpit.keys(&["?"]);
    cockpit.wait_text("focus the next session");
    cockpit.keys(&["Escape"]);
    cockpit.wait_for("the help closed", |s| !s.contains("focus the next session"));

    // Esc clears the filter; a resize redraws at the new size.
    cockpit.keys(&["Escape"]);
    cockpit.wait_for("both rows again", |s| {
        row(s, &first).is_some() && row(s, &second).is_some()
    });
    cockpit
        .tmux
        .run(&["resize-window", "-t", "cp", "-x", "80", "-y", "24"]);
    let screen = cockpit.wait_for("the board redrawn at 80×24", |s| {
        let lines: Vec<&str> = s.lines().collect();
        lines.len() <= 24
            && lines
                .first()
                .is_some_and(|l| l.starts_with("owt · cockpit"))
            && s.contains("? ")
            && row(s, &first).is_some()
    });
    assert!(screen.lines().all(|l| l.chars().count() <= 80), "{screen}");

    // `q` gives the terminal back as it was: the main screen with what
    // was printed before, cooked mode, a visible cursor.
    cockpit.keys(&["q"]);
    let screen = cockpit.wait_text("owt exited with 0");
    assert!(screen.contains("before the control plane"), "{screen}");
    cockpit.wait_for("the line discipline", |s| s.lines().any(|l| l == "icanon"));
    assert_eq!(cockpit.tmux_format("#{alternate_on}"), "0");
    assert_eq!(cockpit.tmux_format("#{cursor_flag}"), "1");
}

#[test]
fn n_starts_a_session_and_d_deletes_it_after_a_confirmation() {
    let env = TestEnv::new();
    let repo = env.repo("cockpit");
    // `-v`: debug logs, which go to a log file, never onto the board.
    let cockpit = Cockpit::open(&env, &repo, "cp-new", "-v");
    cockpit.wait_text("No sessions. Press n to start one.");

    cockpit.keys(&["n"]);
    cockpit.wait_text("New session");
    cockpit.type_text("add the login page");
    cockpit.wait_text("owt new 'add the login page'");
    cockpit.keys(&["Enter"]);
    cockpit.wait_text("Started session add-the-login-page.");
    let list = env.sessions(&repo);
    let made: Vec<(&str, &str)> = list
        .sessions
        .iter()
        .map(|s| (s.name.as_str(), s.task.as_str()))
        .collect();
    assert_eq!(made, [("add-the-login-page", "add the login page")]);

    // `t` types a message into the agent (as `owt send`).
    cockpit.keys(&["t"]);
    cockpit.wait_text("Type to add-the-login-page");
    cockpit.type_text("typed from the board");
    cockpit.keys(&["Enter"]);
    cockpit.wait_text("Sent to add-the-login-page.");
    let deadline = Instant::now() + WAIT;
    while !env
        .owt_ok(&repo, ["peek", "add-the-login-page"])
        .contains("got: typed from the board")
    {
        assert!(Instant::now() < deadline, "the agent never got the message");
        std::thread::sleep(Duration::from_millis(50));
    }

    // `c` comments on the Diff tab's line under the cursor (as `owt
    // comment`): the agent's new file, its second line.
    let worktree = PathBuf::from(&list.sessions[0].worktree);
    std::fs::write(worktree.join("login.txt"), "first line\nsecond line\n").unwrap();
    cockpit.keys(&["Tab"]);
    cockpit.wait_text("A login.txt");
    cockpit.keys(&["J", "J", "J", "J"]);
    cockpit.keys(&["c"]);
    cockpit.wait_text("Comment on login.txt:2");
    cockpit.type_text("needs a test");
    cockpit.keys(&["Enter"]);
    cockpit.wait_text("Commented on login.txt:2 of add-the-login-page.");
    let comments: owt_protocol::review::CommentsOutput =
        env.owt_json(&repo, ["comments", "add-the-login-page"]);
    let made: Vec<(&str, u32, &str)> = comments
        .comments
        .iter()
        .map(|c| (c.path.as_str(), c.start_line, c.text.as_str()))
        .collect();
    assert_eq!(made, [("login.txt", 2, "needs a test")]);

    // `d` + `y` is refused as `owt delete` refuses it (uncommitted work),
    // in the status line, and nothing changes. (Not while the agent works
    // on the comment just typed: delete is not offered then.)
    env.wait_settled(&repo, "add-the-login-page");
    // …and the board has seen it too (it re-reads a working agent's
    // status every so often): its footer offers delete.
    cockpit.wait_for("the board to offer delete", |s| {
        !s.contains("add-the-login-page  working") && s.contains("d delete")
    });
    cockpit.keys(&["d"]);
    cockpit.wait_text("Confirm");
    cockpit.keys(&["y"]);
    cockpit.wait_text("delete: session `add-the-login-page` has uncommitted work");
    assert!(worktree.join("login.txt").exists());
    assert_eq!(env.sessions(&repo).sessions.len(), 1);
    std::fs::remove_file(worktree.join("login.txt")).unwrap();

    // `d` names what goes; anything but `y` keeps it; `y` deletes.
    cockpit.keys(&["d"]);
    let screen = cockpit.wait_text("Confirm");
    for said in [
        "Delete add-the-login-page? Its agent stops; its worktree and branch owt/add-the-login-page",
        "Files git does not keep (ignored: .env, build output) are moved to the trash.",
    ] {
        assert!(screen.contains(said), "{screen}");
    }
    cockpit.keys(&["n"]);
    cockpit.wait_text("Cancelled.");
    assert_eq!(env.sessions(&repo).sessions.len(), 1);
    cockpit.keys(&["d"]);
    cockpit.wait_text("Confirm");
    cockpit.keys(&["y"]);
    cockpit.wait_text("Deleted session add-the-login-page.");
    assert!(env.sessions(&repo).sessions.is_empty());
    let screen = cockpit.wait_text("No sessions. Press n to start one.");
    assert!(!screen.contains("DEBUG"), "{screen}");
    let log = std::fs::read_to_string(env.owt_home.join("logs/control-plane.log")).unwrap();
    assert!(log.contains("drew the control plane"), "{log}");
    cockpit.keys(&["q"]);
    cockpit.wait_text("owt exited with 0");
}

#[test]
fn piped_print_and_control_plane_off_keep_the_static_board() {
    let env = TestEnv::new();
    let (repo, first, second) = two_sessions(&env);
    // `owt | cat`: stdout is not a terminal.
    let piped = env.owt_ok(&repo, Vec::<&str>::new());
    assert!(piped.starts_with("owt · cockpit · 2 sessions\n"), "{piped}");
    assert!(piped.contains(&format!("  {first} ")), "{piped}");
    assert!(piped.contains(&format!("  {second} ")), "{piped}");

    // In a terminal: `--print` prints it and exits.
    let printed = Cockpit::open(&env, &repo, "cp-print", "--print");
    let screen = printed.wait_text("owt exited with 0");
    assert!(screen.contains("owt · cockpit · 2 sessions"), "{screen}");
    assert!(screen.contains(&format!("  {first} ")), "{screen}");

    // `[ui] control_plane = false`: the static board in a terminal too.
    let config = env.home.join(".config/owt/config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("\n[ui]\ncontrol_plane = false\n");
    std::fs::write(&config, text).unwrap();
    let off = Cockpit::open(&env, &repo, "cp-off", "");
    let screen = off.wait_text("owt exited with 0");
    assert!(screen.contains("owt · cockpit · 2 sessions"), "{screen}");
    assert!(screen.contains(&format!("  {second} ")), "{screen}");
}

#[test]
fn a_session_entering_needs_you_rings_the_bell_and_the_title_counts() {
    let env = TestEnv::new();
    let repo = env.repo("cockpit");
    let cockpit = Cockpit::open_in(&env, &repo, "cp-bell", "", true);
    cockpit.wait_text("No sessions. Press n to start one.");
    cockpit.wait_format("#{pane_title}", "owt · cockpit");
    assert_eq!(cockpit.tmux_format("#{window_bell_flag}"), "0");

    // Started from outside, the idle agent waits at its prompt: NEEDS YOU.
    let (name, _) = env.new_session(&repo, "fix the parser");
    cockpit.wait_for("the session in NEEDS YOU", |s| {
        s.contains("NEEDS YOU (1)") && row(s, &name).is_some()
    });
    cockpit.wait_format("#{pane_title}", "owt · cockpit · 1 session needs you");
    cockpit.wait_format("#{window_bell_flag}", "1");
}

#[test]
fn s_ships_a_session_with_work_after_a_confirmation() {
    let env = TestEnv::new();
    let repo = env.repo("cockpit");
    let (name, worktree) = env.new_session(&repo, "add the changelog");
    std::fs::write(worktree.join("CHANGELOG.md"), "# Changes\n").unwrap();
    env.git(&worktree, ["add", "CHANGELOG.md"]);
    env.git(&worktree, ["commit", "-qm", "changelog"]);
    let cockpit = Cockpit::open(&env, &repo, "cp-ship", "");
    cockpit.wait_for("the session ready to ship", |s| {
        s.contains("READY TO SHIP (1)") && row(s, &name).is_some_and(|r| r.contains("+1"))
    });
    cockpit.keys(&["s"]);
    cockpit.wait_text(&format!("Ship {name}?"));
    cockpit.keys(&["y"]);
    cockpit.wait_text(&format!("Shipped {name}."));
    assert_eq!(env.git(&repo, ["show", "main:CHANGELOG.md"]), "# Changes");
    assert!(env.sessions(&repo).sessions.is_empty());
    cockpit.wait_text("No sessions. Press n to start one.");
}

#[test]
fn f_types_the_guards_conflict_notes_into_the_agent() {
    let env = TestEnv::new();
    let repo = env.repo("cockpit");
    let (first, first_tree) = env.new_session(&repo, "retitle the readme");
    let (second, second_tree) = env.new_session(&repo, "rename the readme title");
    // Both change the same line differently: a real merge conflicts.
    std::fs::write(first_tree.join("README.md"), "# first title\n").unwrap();
    std::fs::write(second_tree.join("README.md"), "# second title\n").unwrap();
    let cockpit = Cockpit::open(&env, &repo, "cp-fix", "");
    cockpit.wait_for("both sessions", |s| {
        row(s, &first).is_some() && row(s, &second).is_some()
    });
    // The first row is focused.
    cockpit.wait_for("the first session focused", |s| {
        row(s, &first).is_some_and(|r| r.contains('›'))
    });
    cockpit.keys(&["f"]);
    cockpit.wait_text(&format!("Sent 1 conflict note to {first}."));
    let deadline = Instant::now() + WAIT;
    loop {
        // The screen wraps long lines: read it as one.
        let screen = env.owt_ok(&repo, ["peek", &first]).replace('\n', "");
        let note = format!(
            "got: owt: Conflict Guard: your changes conflict with the work of session `{second}`"
        );
        if screen.contains(&note) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the agent never got the note:\n{screen}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn the_screen_tab_shows_the_agents_colours() {
    let env = TestEnv::new();
    let repo = env.repo("cockpit");
    let (name, _) = env.new_session(&repo, "paint the output");
    let cockpit = Cockpit::open(&env, &repo, "cp-colour", "");
    cockpit.wait_text("ready>");
    // The idle agent answers "paint" with a red word.
    env.owt_ok(&repo, ["send", &name, "paint"]);
    cockpit.wait_text("got: red word");
    let coloured = cockpit
        .tmux
        .run(&["capture-pane", "-p", "-e", "-t", &cockpit.target]);
    // Index 1 (red), as ratatui writes it.
    assert!(
        coloured.contains("got: \x1b[38;5;1mred word"),
        "{coloured:?}"
    );
}

/// A long action runs off the board (#35: the board never freezes):
/// while `n`'s setup script runs (it waits for a file), the status line
/// shows its output, keys still work, and `q` waits for it rather than
/// cutting it short; the result comes when it ends.
#[test]
fn the_board_stays_live_while_a_long_action_runs() {
    let env = TestEnv::new();
    let repo = env.repo("cockpit");
    let go = env.path().join("go");
    std::fs::create_dir_all(repo.join(".owt")).unwrap();
    std::fs::write(
        repo.join(".owt/setup.sh"),
        format!(
            "echo setup is waiting\nwhile [ ! -e '{}' ]; do sleep 0.05; done\n",
            go.display()
        ),
    )
    .unwrap();
    env.trust(&repo);
    let cockpit = Cockpit::open(&env, &repo, "cp-job", "");
    cockpit.wait_text("No sessions. Press n to start one.");
    cockpit.keys(&["n"]);
    cockpit.wait_text("New session");
    cockpit.type_text("slow start");
    cockpit.keys(&["Enter"]);
    cockpit.wait_text("setup is waiting");
    // The board answers while the setup runs.
    cockpit.keys(&["?"]);
    cockpit.wait_text("Keys");
    cockpit.keys(&["Escape"]);
    cockpit.wait_for("the help to close", |s| !s.contains("─ Keys "));
    cockpit.keys(&["q"]);
    cockpit.wait_text("1 action still running: q once it ends");
    std::fs::write(&go, "").unwrap();
    cockpit.wait_text("Started session slow-start.");
    let list = env.sessions(&repo);
    assert_eq!(list.sessions.len(), 1);
    assert_eq!(list.sessions[0].name, "slow-start");
}

#[test]
fn r_resumes_a_session_whose_agent_exited() {
    let env = TestEnv::new();
    let repo = env.repo("cockpit");
    let (name, _) = env.new_session(&repo, "say goodbye");
    env.owt_ok(&repo, ["send", &name, "exit"]);
    owt_e2e::wait_until("the agent to exit", WAIT, || {
        env.sessions(&repo)
            .sessions
            .iter()
            .any(|s| s.name == name && s.status == owt_protocol::Status::Exited)
    });
    let cockpit = Cockpit::open(&env, &repo, "cp-resume", "");
    cockpit.wait_for("the exited session, resume offered", |s| {
        row(s, &name).is_some_and(|r| r.contains("exited")) && s.contains("R resume")
    });
    cockpit.keys(&["R"]);
    // The fake agent has no resume of its own: restarted with a note.
    cockpit.wait_text(&format!(
        "Resumed session {name}: restarted with a note of what happened."
    ));
    owt_e2e::wait_until("the agent to run again", WAIT, || {
        env.owt_ok(&repo, ["peek", &name])
            .contains("previous run on this task ended")
    });
}
