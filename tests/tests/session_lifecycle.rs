//! Sessions outlive whoever started them; a killed host becomes
//! `exited (host lost)` without touching the worktree or other sessions;
//! exit codes, the final screen, `wait` exit codes, stop, status rules from
//! the live screen, a client of the wrong protocol version, and the
//! environment the agent gets (exactly owt's, plus owt's variables).

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::io::{BufRead, BufReader};
use std::os::unix::net::UnixStream;
use std::process::Stdio;
use std::time::Duration;

use crate::session_common::{environ_of, wait_for, with_timeout, Env, WAIT};
use owt_e2e::pid_alive;
use owt_protocol::host::{self as proto, FrameKind, Hello, HostError, Role};

#[test]
fn the_agent_survives_sigkill_of_the_process_that_started_it() {
    with_timeout(Duration::from_secs(60), || {
        let env = Env::new();
        // A starter that stays around after starting the session.
        let agent = crate::session_common::fake_agent();
        let script = format!(
            "{} -C {} __host spawn --name survivor -- python3 {} && sleep 300",
            crate::session_common::owt_bin().display(),
            env.repo.display(),
            agent.display()
        );
        let mut starter = env
            .command("bash")
            .args(["-c", &script])
            .stdout(Stdio::piped())
            .spawn()
            .expect("starter");
        let mut line = String::new();
        BufReader::new(starter.stdout.take().unwrap())
            .read_line(&mut line)
            .expect("spawn output");
        let s = env.parse_spawned(&line);
        starter.kill().expect("SIGKILL the starter");
        starter.wait().expect("reap the starter");

        // A new process finds it live and working normally.
        env.wait_screen("survivor", "FAKE AGENT READY");
        env.ok(&["send", "survivor", "still here"]);
        env.wait_screen("survivor", "got: still here");
        assert!(pid_alive(s.host_pid) && pid_alive(s.agent_pid));
        let (code, status) = env.wait_json("survivor", "5");
        assert_eq!(code, 0, "{status}");
        assert_eq!(status["status"], "needs-input", "{status}");
    });
}

#[test]
fn a_killed_host_is_host_lost_and_nothing_else_is_touched() {
    with_timeout(Duration::from_secs(60), || {
        let env = Env::new();
        let victim = env.spawn_fake("victim", &[]);
        env.spawn_fake("bystander", &[]);
        env.wait_screen("victim", "FAKE AGENT READY");
        env.wait_screen("bystander", "FAKE AGENT READY");
        std::fs::write(env.repo.join("work.txt"), "uncommitted work\n").unwrap();
        let git_status = || {
            let out = env
                .command("git")
                .args(["status", "--porcelain"])
                .current_dir(&env.repo)
                .output()
                .unwrap();
            String::from_utf8_lossy(&out.stdout).into_owned()
        };
        let before = git_status();

        // SAFETY: kill has no memory preconditions.
        unsafe { libc::kill(victim.host_pid as i32, libc::SIGKILL) };
        wait_for("the host to die", WAIT, || {
            if pid_alive(victim.host_pid) {
                Err("alive".into())
            } else {
                Ok(())
            }
        });
        let (code, status) = env.wait_json("victim", "10");
        assert_eq!(status["text"], "exited (host lost)", "{status}");
        assert_eq!(status["host_lost"], true);
        assert_eq!(code, 1, "{status}");

        assert_eq!(git_status(), before, "the worktree was touched");
        assert_eq!(
            std::fs::read_to_string(env.repo.join("work.txt")).unwrap(),
            "uncommitted work\n"
        );
        env.ok(&["send", "bystander", "unaffected"]);
        env.wait_screen("bystander", "got: unaffected");
    });
}

#[test]
fn exit_codes_reach_wait_and_the_final_screen_stays_peekable() {
    with_timeout(Duration::from_secs(60), || {
        let env = Env::new();
        let s = env.spawn_fake("failing", &[]);
        env.spawn_fake("fine", &[]);
        env.wait_screen("failing", "FAKE AGENT READY");
        env.wait_screen("fine", "FAKE AGENT READY");
        env.ok(&["send", "failing", "exit 3"]);
        env.ok(&["send", "fine", "exit 0"]);

        let (code, status) = env.wait_json("failing", "15");
        assert_eq!(
            (code, status["text"].as_str()),
            (1, Some("exited with code 3")),
            "{status}"
        );
        let (code, status) = env.wait_json("fine", "15");
        assert_eq!(
            (code, status["status"].as_str()),
            (0, Some("exited")),
            "{status}"
        );

        // The host leaves shortly after its agent, saving the last screen.
        wait_for("the host to leave", WAIT, || {
            if pid_alive(s.host_pid) {
                Err("alive".into())
            } else {
                Ok(())
            }
        });
        let screen = env.peek("failing");
        assert!(screen.contains("bye"), "{screen}");
        let json: serde_json::Value =
            serde_json::from_str(&env.ok(&["--json", "peek", "failing"])).unwrap();
        assert_eq!(json["live"], false);
    });
}

#[test]
fn wait_times_out_with_code_2_while_the_agent_works() {
    with_timeout(Duration::from_secs(60), || {
        let env = Env::new();
        env.spawn_fake("busy", &[]);
        env.wait_screen("busy", "FAKE AGENT READY");
        env.ok(&["send", "busy", "busy 20"]);
        env.wait_screen("busy", "esc to interrupt");
        let (code, status) = env.wait_json("busy", "1");
        assert_eq!(code, 2, "{status}");
        assert_eq!(status["status"], "working", "{status}");
        assert_eq!(status["timed_out"], true);
    });
}

#[test]
fn a_permission_dialog_is_blocked_and_input_clears_it() {
    with_timeout(Duration::from_secs(60), || {
        let env = Env::new();
        env.spawn_fake("asker", &[]);
        env.wait_screen("asker", "FAKE AGENT READY");
        env.ok(&["send", "asker", "perm"]);
        env.wait_screen("asker", "Do you want to proceed?");
        let status = wait_for("blocked", WAIT, || {
            let (_, status) = env.wait_json("asker", "0");
            if status["status"] == "blocked" {
                Ok(status)
            } else {
                Err(status.to_string())
            }
        });
        assert_eq!(status["text"], "blocked");
        env.ok(&["send", "asker", "y"]);
        wait_for("needs-input after the answer", WAIT, || {
            let (_, status) = env.wait_json("asker", "0");
            if status["status"] == "needs-input" {
                Ok(())
            } else {
                Err(status.to_string())
            }
        });
    });
}

#[test]
fn stop_hangs_up_the_agent_and_the_host_leaves() {
    with_timeout(Duration::from_secs(60), || {
        let env = Env::new();
        let s = env.spawn_fake("stoppable", &[]);
        env.wait_screen("stoppable", "FAKE AGENT READY");
        env.ok(&["__host", "stop", "stoppable"]);
        assert!(!pid_alive(s.agent_pid), "agent still alive");
        assert!(!pid_alive(s.host_pid), "host still alive");
        let (_, status) = env.wait_json("stoppable", "5");
        assert_eq!(status["status"], "exited", "{status}");
        assert_eq!(status["host_lost"], false, "{status}");
    });
}

#[test]
fn a_client_of_another_protocol_version_gets_a_clear_error() {
    with_timeout(Duration::from_secs(60), || {
        let env = Env::new();
        let s = env.spawn_fake("versioned", &[]);
        env.wait_screen("versioned", "FAKE AGENT READY");
        let socket = env.home.join("run").join(format!("{}.sock", s.short_id));
        let mut stream = UnixStream::connect(&socket).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let hello = Hello {
            version: proto::HOST_PROTOCOL_VERSION + 1,
            role: Role::Control,
            rows: 0,
            cols: 0,
            direct: None,
        };
        proto::write_json(&mut stream, FrameKind::Hello, &hello).unwrap();
        let frame = proto::read_frame(&mut stream)
            .expect("a reply, not a hang")
            .expect("a frame");
        assert_eq!(frame.kind, FrameKind::Error);
        let err: HostError = frame.json().unwrap();
        assert!(err.message.contains("protocol mismatch"), "{}", err.message);
        assert!(
            err.message
                .contains(&format!("version {}", proto::HOST_PROTOCOL_VERSION + 1)),
            "{}",
            err.message
        );
        // The host closes that connection and keeps serving others.
        assert!(proto::read_frame(&mut stream).unwrap().is_none());
        env.ok(&["send", "versioned", "after the bad client"]);
        env.wait_screen("versioned", "got: after the bad client");
    });
}

#[test]
fn a_missing_agent_binary_fails_to_start_with_a_clear_error() {
    with_timeout(Duration::from_secs(60), || {
        let env = Env::new();
        let out = env.run(&[
            "__host",
            "spawn",
            "--name",
            "nope",
            "--",
            "/no/such/agent-binary",
        ]);
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("starting `/no/such/agent-binary`"), "{err}");
    });
}

/// The status of `name` now (`owt wait --timeout 0`).
fn status_now(env: &Env, name: &str) -> String {
    let (_, status) = env.wait_json(name, "0");
    status["status"].as_str().unwrap_or_default().to_string()
}

/// Waits until `name`'s status is `want`; returns the statuses seen.
fn wait_status(env: &Env, name: &str, want: &str) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    wait_for(&format!("{name} {want}"), WAIT, || {
        let now = status_now(env, name);
        if seen.last() != Some(&now) {
            seen.push(now.clone());
        }
        if now == want {
            Ok(())
        } else {
            Err(format!("{seen:?}"))
        }
    });
    seen
}

/// Regression (issue 16): a line-mode agent that printed "Do you want to
/// proceed? (y/n)", got `y` and went on working read as `blocked` seconds
/// later: the screen rules matched the question anywhere on the screen, not
/// where the agent was.
#[test]
fn regression_an_answered_question_does_not_stay_blocked() {
    with_timeout(Duration::from_secs(60), || {
        let env = Env::new();
        env.spawn_fake("asker", &[]);
        env.wait_screen("asker", "FAKE AGENT READY");
        env.ok(&["send", "asker", "ask"]);
        env.wait_screen("asker", "Do you want to proceed? (y/n)");
        wait_status(&env, "asker", "blocked");
        env.ok(&["send", "asker", "y"]);
        // It works for 3 s below the question, which stays on screen.
        let screen = env.wait_screen("asker", "Thinking (esc to interrupt)");
        assert!(
            screen.contains("Do you want to proceed? (y/n) y"),
            "{screen}"
        );
        wait_status(&env, "asker", "working");
        std::thread::sleep(Duration::from_millis(1_500));
        let screen = env.peek("asker");
        if screen.contains("Thinking") {
            assert_eq!(
                status_now(&env, "asker"),
                "working",
                "still working below the answered question:\n{screen}"
            );
        }
        env.wait_screen("asker", "done thinking");
        wait_status(&env, "asker", "needs-input");
    });
}

/// Regression (issue 16): a TUI that redraws without pause is never quiet
/// for the settle time, so its screen was never judged again: its dialog
/// never read as `blocked`, its input box never as `needs-input`.
#[test]
fn regression_an_animated_tui_is_judged_while_it_never_settles() {
    with_timeout(Duration::from_secs(60), || {
        let env = Env::new();
        env.spawn_fake("animated", &[]);
        env.wait_screen("animated", "FAKE AGENT READY");
        env.ok(&["send", "animated", "anim"]);
        env.wait_screen("animated", "Allow this command?");
        wait_status(&env, "animated", "blocked");
        env.ok(&["send", "animated", "y"]);
        env.wait_screen("animated", "Ready for your next task.");
        let seen = wait_status(&env, "animated", "needs-input");
        assert!(
            !seen.contains(&"blocked".to_string()),
            "the answered dialog read as blocked: {seen:?}"
        );
    });
}

/// Stopping a session ends what its agent left running outside its process
/// group (a daemon in a session of its own, like Codex's app-server), and
/// nothing of any other session.
#[test]
fn stop_ends_a_daemon_the_agent_detached_and_nothing_else() {
    with_timeout(Duration::from_secs(60), || {
        let env = Env::new();
        env.spawn_fake("detacher", &[]);
        env.spawn_fake("other", &[]);
        env.wait_screen("detacher", "FAKE AGENT READY");
        env.wait_screen("other", "FAKE AGENT READY");
        let daemon_pid = |name: &str| -> u32 {
            env.ok(&["send", name, "daemon"]);
            let screen = env.wait_screen(name, "daemon pid ");
            screen
                .split("daemon pid ")
                .nth(1)
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|pid| pid.parse().ok())
                .unwrap_or_else(|| panic!("no daemon pid in:\n{screen}"))
        };
        let mine = daemon_pid("detacher");
        let theirs = daemon_pid("other");
        assert!(pid_alive(mine) && pid_alive(theirs));
        env.ok(&["__host", "stop", "detacher"]);
        wait_for("the detached daemon to be gone", WAIT, || {
            if pid_alive(mine) {
                Err(format!("pid {mine} alive"))
            } else {
                Ok(())
            }
        });
        assert!(pid_alive(theirs), "another session's daemon was killed");
    });
}

/// owt never changes its agents' environment for its own sake (no glibc
/// tunables for its memory figures, issue 38): an agent runs with exactly
/// the environment `owt` was given plus owt's documented variables
/// (`OWT_SESSION`, `OWT_HOME`, `TERM`), whether or not the user set
/// `GLIBC_TUNABLES`.
#[test]
fn the_agent_gets_exactly_owts_environment_plus_its_variables() {
    with_timeout(Duration::from_secs(60), || {
        let env = Env::new();
        for (name, user) in [("none", None), ("users", Some("glibc.malloc.perturb=0"))] {
            let mut cmd = env.owt(&["__host", "spawn", "--name", name, "--", "sleep", "300"]);
            // A known environment, not the one the tests run in: that may
            // hold variables owt removes on purpose (an agent's nesting
            // markers, when the suite runs inside one; `agent_env.rs`).
            let mut expected: BTreeMap<OsString, OsString> = cmd
                .get_envs()
                .filter_map(|(k, v)| Some((k.to_owned(), v?.to_owned())))
                .collect();
            expected.insert("PATH".into(), std::env::var_os("PATH").unwrap_or_default());
            expected.insert("KEEP_ME".into(), "kept".into());
            // (A PTY child with no SHELL gets the login shell's: set one.)
            expected.insert("SHELL".into(), "/bin/sh".into());
            if let Some(value) = user {
                expected.insert("GLIBC_TUNABLES".into(), value.into());
            }
            cmd.env_clear().envs(&expected);
            let out = cmd.output().expect("running owt");
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let s = env.parse_spawned(&String::from_utf8_lossy(&out.stdout));
            assert_ne!(s.agent_pid, 0, "the agent's pid in {out:?}");
            expected.insert("OWT_SESSION".into(), s.short_id.clone().into());
            expected.insert("OWT_HOME".into(), env.home.clone().into_os_string());
            expected.insert("TERM".into(), "xterm-256color".into());
            // What the agent was started with (`sleep` never changes it).
            let got = environ_of(s.agent_pid, &["300"]);
            assert_eq!(got, expected, "the environment of agent {name}");
            assert_eq!(
                got.get(OsStr::new("GLIBC_TUNABLES")),
                user.map(OsString::from).as_ref()
            );
            // Nor the host's: owt starts it with no allocator tuning.
            let host = environ_of(s.host_pid, &["__host", "run"]);
            assert_eq!(
                host.get(OsStr::new("GLIBC_TUNABLES")),
                user.map(OsString::from).as_ref(),
                "the session host's GLIBC_TUNABLES"
            );
        }
    });
}

/// Hosts run in the session host binary beside owt (`owt-host`: a smaller
/// program, so an idle host keeps less memory of its own), else in owt
/// itself (`owt __host run`: an owt binary copied alone); an `owt-host` of
/// another owt version refuses to run, and the start says how to mend it.
#[test]
fn hosts_run_in_the_host_binary_beside_owt_else_in_owt_itself() {
    with_timeout(Duration::from_secs(90), || {
        let env = Env::new();
        let exe_of = |pid: u32| std::fs::read_link(format!("/proc/{pid}/exe")).unwrap();
        let owt = crate::session_common::owt_bin().canonicalize().unwrap();
        let installed = env.spawn(&[
            "__host",
            "spawn",
            "--name",
            "installed",
            "--",
            "sleep",
            "300",
        ]);
        assert_eq!(exe_of(installed.host_pid), owt.with_file_name("owt-host"));
        let cmd = owt_e2e::cmdline(installed.host_pid);
        assert_eq!(cmd[1..3], ["__host", "run"], "{cmd:?}");
        assert!(
            cmd.windows(2)
                .any(|w| w[0] == "--owt-version" && w[1] == env!("CARGO_PKG_VERSION")),
            "{cmd:?}"
        );
        env.ok(&["__host", "stop", "installed"]);

        // An owt binary with no host binary beside it (linked, not copied:
        // the same program).
        let alone = env.dir.path().join("alone");
        std::fs::create_dir(&alone).unwrap();
        std::fs::hard_link(&owt, alone.join("owt")).unwrap();
        let run_from = |dir: &std::path::Path, name: &str| {
            env.command(dir.join("owt"))
                // (scripts/test names its owt so; this one is another.)
                .env_remove("OWT_BIN")
                .arg("-C")
                .arg(&env.repo)
                .args(["__host", "spawn", "--name", name, "--", "sleep", "300"])
                .stdin(Stdio::null())
                .output()
                .unwrap()
        };
        let out = run_from(&alone, "alone");
        assert!(out.status.success(), "{out:?}");
        let s = env.parse_spawned(&String::from_utf8_lossy(&out.stdout));
        assert_eq!(exe_of(s.host_pid), alone.join("owt"));
        assert_eq!(owt_e2e::cmdline(s.host_pid)[1..3], ["__host", "run"]);
        env.ok(&["__host", "stop", "alone"]);

        // A host binary of another version (the real one, told so).
        let other = env.dir.path().join("other");
        std::fs::create_dir(&other).unwrap();
        std::fs::hard_link(&owt, other.join("owt")).unwrap();
        let script = format!(
            "#!/bin/sh\nexec '{}' \"$@\" --owt-version 0.0.0-other\n",
            owt.with_file_name("owt-host").display()
        );
        let wrapper = other.join("owt-host");
        std::fs::write(&wrapper, script).unwrap();
        std::fs::set_permissions(
            &wrapper,
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
        let out = run_from(&other, "other");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{out:?}");
        assert!(
            stderr.contains("started by owt 0.0.0-other") && stderr.contains("install owt again"),
            "{stderr}"
        );
    });
}
