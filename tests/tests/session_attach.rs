//! `owt attach` through a real PTY: the current screen at once, keys in,
//! output out, detach leaves the agent running, re-attach shows the same
//! screen, and window-size changes reach the agent. Each behaviour in both
//! modes: direct (the host takes the terminal, the default) and relayed
//! (`--relay`, and whenever stdout is not the terminal).

use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::session_common::{holds_open, owt_bin, wait_for, with_timeout, AttachClient, Env, WAIT};

const DIRECT: &[&str] = &[];
const RELAY: &[&str] = &["--relay"];

fn shows_the_screen_types_keys_detaches_and_reattaches(mode: &'static [&'static str]) {
    with_timeout(Duration::from_secs(90), move || {
        let env = Env::new();
        let s = env.spawn_fake("alpha", &[]);
        env.wait_screen("alpha", "FAKE AGENT READY");
        env.ok(&["send", "alpha", "draw"]);
        env.wait_screen("alpha", "| box  |");

        // The current screen, before the agent writes anything new.
        let mut client = AttachClient::start_with(&env, "alpha", 24, 80, mode);
        let first = client.wait_contains("| box  |");
        assert!(first.contains("FAKE AGENT READY"), "{first}");
        // Direct: the host has the client's terminal open; relayed: not.
        assert_eq!(
            holds_open(s.host_pid, &client.tty()),
            mode == DIRECT,
            "the host holding {:?} (mode {mode:?})",
            client.tty()
        );

        // Typed keys reach the agent; its echo and answer reach the client.
        client.type_bytes(b"hello from the keyboard\r");
        env.wait_agent_line(&s, "hello from the keyboard");
        client.wait_contains("got: hello from the keyboard");

        // Output the agent writes for other reasons reaches the client too.
        env.ok(&["send", "alpha", "sent while attached"]);
        client.wait_contains("got: sent while attached");

        // Detach: Ctrl-\ then d. The client exits 0 and its terminal is
        // cooked again, no longer open in the host; the agent keeps running.
        client.type_bytes(b"\x1cd");
        assert_eq!(client.wait_exit(), 0);
        assert!(
            client.raw_text().contains("Detached from alpha"),
            "{}",
            client.raw_text()
        );
        assert!(client.cooked(), "the terminal was left in raw mode");
        assert!(client.output_ended(), "someone still holds the terminal");
        assert!(owt_e2e::pid_alive(s.agent_pid), "the agent died on detach");
        let (_, status) = env.wait_json("alpha", "0");
        assert_ne!(status["status"], "exited", "{status}");

        // Re-attach: the same screen, immediately.
        let before = env.peek("alpha");
        let again = AttachClient::start_with(&env, "alpha", 24, 80, mode);
        let text = again.wait_contains("got: sent while attached");
        for line in before.lines().filter(|l| !l.trim().is_empty()) {
            assert!(
                text.contains(line.trim_end()),
                "re-attach lost {line:?}:\n{text}"
            );
        }
    });
}

#[test]
fn attach_shows_the_screen_types_keys_detaches_and_reattaches() {
    shows_the_screen_types_keys_detaches_and_reattaches(DIRECT);
}

#[test]
fn relayed_attach_shows_the_screen_types_keys_detaches_and_reattaches() {
    shows_the_screen_types_keys_detaches_and_reattaches(RELAY);
}

fn prefix_twice_types_one_literal_prefix(mode: &'static [&'static str]) {
    with_timeout(Duration::from_secs(60), move || {
        let env = Env::new();
        let s = env.spawn_fake("lit", &[]);
        env.wait_screen("lit", "FAKE AGENT READY");
        let mut client = AttachClient::start_with(&env, "lit", 24, 80, mode);
        client.wait_contains("FAKE AGENT READY");
        client.type_bytes(b"a\x1c\x1cb\r");
        env.wait_agent_line(&s, "a\u{1c}b");
    });
}

#[test]
fn the_prefix_twice_types_one_literal_prefix() {
    prefix_twice_types_one_literal_prefix(DIRECT);
}

#[test]
fn relayed_the_prefix_twice_types_one_literal_prefix() {
    prefix_twice_types_one_literal_prefix(RELAY);
}

fn resize_reaches(mode: &'static [&'static str]) {
    with_timeout(Duration::from_secs(60), move || {
        let env = Env::new();
        let s = env.spawn_fake("sizes", &[]);
        env.wait_screen("sizes", "FAKE AGENT READY");
        let mut client = AttachClient::start_with(&env, "sizes", 24, 80, mode);
        client.wait_contains("FAKE AGENT READY");
        client.type_bytes(b"size\r");
        client.wait_contains("stty size: 24 80");

        client.resize(30, 100);
        client.wait_contains("resized 30x100");
        client.type_bytes(b"size\r");
        client.wait_contains("stty size: 30 100");
        env.wait_agent_line(&s, "size");
    });
}

#[test]
fn resize_reaches_the_agent() {
    resize_reaches(DIRECT);
}

#[test]
fn relayed_resize_reaches_the_agent() {
    resize_reaches(RELAY);
}

#[test]
fn attach_to_a_stopped_host_is_refused_with_the_boards_reason() {
    with_timeout(Duration::from_secs(60), || {
        let env = Env::new();
        let s = env.spawn_fake("gone", &[]);
        env.wait_screen("gone", "FAKE AGENT READY");
        env.ok(&["__host", "stop", "gone"]);
        assert!(!owt_e2e::pid_alive(s.host_pid));
        let mut client = AttachClient::start(&env, "gone", 24, 80);
        assert_ne!(client.wait_exit(), 0);
        let text = client.raw_text();
        // Refused before connecting, with the board's reason (the same
        // check every verb makes).
        assert!(
            text.contains("not attaching to `gone`") && text.contains("exited"),
            "{text}"
        );
        assert!(client.cooked(), "the terminal was left in raw mode");
    });
}

/// The agent exiting ends a direct attach with its exit status, and the
/// terminal comes back cooked.
#[test]
fn the_agent_exiting_ends_a_direct_attach() {
    with_timeout(Duration::from_secs(60), || {
        let env = Env::new();
        let _s = env.spawn_fake("ends", &[]);
        env.wait_screen("ends", "FAKE AGENT READY");
        let mut client = AttachClient::start(&env, "ends", 24, 80);
        client.wait_contains("FAKE AGENT READY");
        client.type_bytes(b"exit 3\r");
        assert_eq!(client.wait_exit(), 0);
        let text = client.raw_text();
        assert!(text.contains("ends exited with code 3."), "{text}");
        assert!(client.cooked(), "the terminal was left in raw mode");
        assert!(client.output_ended(), "someone still holds the terminal");
    });
}

/// A direct client killed outright (SIGKILL: no detach said): the host
/// lets go of its terminal, and a second attach works.
#[test]
fn a_killed_direct_client_loses_the_terminal_and_another_attaches() {
    with_timeout(Duration::from_secs(90), || {
        let env = Env::new();
        let s = env.spawn_fake("killed", &[]);
        env.wait_screen("killed", "FAKE AGENT READY");
        let first = AttachClient::start(&env, "killed", 24, 80);
        first.wait_contains("FAKE AGENT READY");
        let tty = first.tty();
        assert!(holds_open(s.host_pid, &tty), "not a direct attach");

        // SAFETY: kill has no memory preconditions.
        assert_eq!(
            unsafe { libc::kill(first.pid() as libc::pid_t, libc::SIGKILL) },
            0
        );
        // Nobody holds the first terminal any more: the host closed its
        // copy when the client's socket closed, so it can write no more.
        wait_for("the first terminal to be let go", WAIT, || {
            if first.output_ended() {
                Ok(())
            } else {
                Err(format!("host holds it: {}", holds_open(s.host_pid, &tty)))
            }
        });
        let seen = first.raw_text();

        let mut second = AttachClient::start(&env, "killed", 24, 80);
        second.wait_contains("FAKE AGENT READY");
        second.type_bytes(b"after the kill\r");
        second.wait_contains("got: after the kill");
        env.wait_agent_line(&s, "after the kill");
        assert_eq!(first.raw_text(), seen, "the first terminal got more output");
    });
}

/// A direct client told to quit (SIGTERM, as on a closing terminal tab)
/// detaches: the host lets go of the terminal, the agent runs on.
#[test]
fn a_signal_to_quit_detaches_a_direct_client() {
    with_timeout(Duration::from_secs(60), || {
        let env = Env::new();
        let s = env.spawn_fake("quits", &[]);
        env.wait_screen("quits", "FAKE AGENT READY");
        let mut client = AttachClient::start(&env, "quits", 24, 80);
        client.wait_contains("FAKE AGENT READY");
        assert!(holds_open(s.host_pid, &client.tty()), "not a direct attach");
        // SAFETY: kill has no memory preconditions.
        assert_eq!(
            unsafe { libc::kill(client.pid() as libc::pid_t, libc::SIGTERM) },
            0
        );
        assert_eq!(client.wait_exit(), 0);
        let text = client.raw_text();
        assert!(text.contains("Detached from quits"), "{text}");
        assert!(client.cooked(), "the terminal was left in raw mode");
        assert!(client.output_ended(), "someone still holds the terminal");
        assert!(owt_e2e::pid_alive(s.agent_pid), "the agent died");
    });
}

/// One direct and one relayed client at once: both get the output, both
/// type into the agent.
#[test]
fn direct_and_relayed_clients_share_the_agent() {
    with_timeout(Duration::from_secs(90), || {
        let env = Env::new();
        let s = env.spawn_fake("both", &[]);
        env.wait_screen("both", "FAKE AGENT READY");
        let mut direct = AttachClient::start(&env, "both", 24, 80);
        direct.wait_contains("FAKE AGENT READY");
        let mut relayed = AttachClient::start_with(&env, "both", 24, 80, RELAY);
        relayed.wait_contains("FAKE AGENT READY");
        assert!(holds_open(s.host_pid, &direct.tty()));
        assert!(!holds_open(s.host_pid, &relayed.tty()));

        direct.type_bytes(b"from direct\r");
        relayed.wait_contains("got: from direct");
        direct.wait_contains("got: from direct");
        relayed.type_bytes(b"from relayed\r");
        direct.wait_contains("got: from relayed");
        relayed.wait_contains("got: from relayed");
        env.wait_agent_line(&s, "from relayed");

        // The direct one detaches; the relayed one still gets the output.
        direct.type_bytes(b"\x1cd");
        assert_eq!(direct.wait_exit(), 0);
        env.ok(&["send", "both", "after one left"]);
        relayed.wait_contains("got: after one left");
    });
}

/// A paste bigger than the agent's terminal holds, typed while the agent
/// reads no input: the host reads a direct terminal's keys on the thread
/// that reads the agent's output, and never waits there for the agent to
/// take them, so the agent's output still reaches the client meanwhile;
/// once the agent reads, every byte arrives, in order.
#[test]
fn a_paste_the_agent_does_not_read_yet_never_stalls_its_output() {
    with_timeout(Duration::from_secs(90), || {
        const N: usize = 256 * 1024;
        let env = Env::new();
        let go = env.dir.path().join("go");
        let got = env.dir.path().join("got");
        let script = format!(
            "stty raw -echo; i=0; while [ ! -e '{go}' ]; do echo tick$i; i=$((i+1)); sleep 0.05; done; \
             head -c {N} > '{got}'; echo READ-ALL; exec sleep 600",
            go = go.display(),
            got = got.display()
        );
        env.spawn(&[
            "__host", "spawn", "--name", "paste", "--", "sh", "-c", &script,
        ]);
        let mut client = AttachClient::start(&env, "paste", 24, 80);
        client.wait_contains("tick");
        let last_tick = |text: &str| {
            text.split("tick")
                .filter_map(|rest| {
                    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
                    digits.parse::<u64>().ok()
                })
                .max()
                .unwrap_or(0)
        };
        let payload: Vec<u8> = (0..)
            .flat_map(|i: u32| format!("{i:06} ").into_bytes())
            .take(N)
            .collect();
        client.type_bytes(&payload);
        let typed = last_tick(&client.raw_text());
        wait_for("the agent's output while its input waits", WAIT, || {
            let text = client.raw_text();
            (last_tick(&text) >= typed + 5)
                .then_some(())
                .ok_or_else(|| format!("last tick {} (tick{typed} when typed)", last_tick(&text)))
        });
        std::fs::write(&go, "").expect("go");
        client.wait_contains("READ-ALL");
        let read = std::fs::read(&got).expect("what the agent read");
        assert_eq!(read.len(), N, "bytes the agent read");
        assert!(read == payload, "the paste arrived out of order");
    });
}

/// Standard output not a terminal (a pipe): relayed, the terminal stays
/// with the client, and the output comes out of the pipe.
#[test]
fn stdout_not_a_terminal_relays() {
    with_timeout(Duration::from_secs(60), || {
        let env = Env::new();
        let s = env.spawn_fake("piped", &[]);
        env.wait_screen("piped", "FAKE AGENT READY");
        let (master, slave) = open_pty();
        let tty = tty_path(&slave);
        let mut child = env
            .command(owt_bin())
            .args(["-C", &env.repo.to_string_lossy(), "attach", "piped"])
            .env("TERM", "xterm-256color")
            .stdin(Stdio::from(slave))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawning owt attach");
        let out = Arc::new(Mutex::new(Vec::new()));
        let reader = {
            let out = out.clone();
            let mut stdout = child.stdout.take().expect("stdout");
            std::thread::spawn(move || {
                let mut buf = [0u8; 8192];
                while let Ok(n) = stdout.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    out.lock().unwrap().extend_from_slice(&buf[..n]);
                }
            })
        };
        let text = || String::from_utf8_lossy(&out.lock().unwrap()).into_owned();
        wait_for("the redraw on stdout", WAIT, || {
            let t = text();
            t.contains("FAKE AGENT READY").then_some(()).ok_or(t)
        });
        assert!(!holds_open(s.host_pid, &tty), "the host took the terminal");
        let mut keys = std::fs::File::from(master.try_clone().expect("dup"));
        std::io::Write::write_all(&mut keys, b"typed in a pty\r").expect("typing");
        env.wait_agent_line(&s, "typed in a pty");
        wait_for("the answer on stdout", WAIT, || {
            let t = text();
            t.contains("got: typed in a pty").then_some(()).ok_or(t)
        });
        std::io::Write::write_all(&mut keys, b"\x1cd").expect("detaching");
        let status = wait_for("owt attach to exit", WAIT, || {
            child
                .try_wait()
                .map_err(|e| e.to_string())?
                .ok_or_else(text)
        });
        // The process has exited, but what it wrote last may still sit in
        // the pipe: read it to the end before looking for the sentence.
        wait_for("stdout to reach its end", WAIT, || {
            reader.is_finished().then_some(()).ok_or_else(text)
        });
        reader.join().expect("the stdout reader");
        assert!(status.success(), "{status:?}: {}", text());
        assert!(text().contains("Detached from piped"), "{}", text());
        drop(master);
    });
}

/// A fresh PTY pair (24×80, cooked).
fn open_pty() -> (OwnedFd, OwnedFd) {
    let (mut master, mut slave) = (-1, -1);
    let size = libc::winsize {
        ws_row: 24,
        ws_col: 80,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: valid out-pointers; no name buffer; default termios.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            &size,
        )
    };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: openpty returned two fresh descriptors we now own.
    unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) }
}

fn tty_path(fd: &OwnedFd) -> std::path::PathBuf {
    use std::os::fd::AsRawFd;
    std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())).expect("the pty's path")
}

/// #34.7: `owt attach` without a name attaches to the repository's one
/// session; with several it lists them and fails; a unique prefix names
/// a session.
#[test]
fn attach_without_a_name_takes_the_one_session_and_lists_several() {
    with_timeout(Duration::from_secs(90), || {
        let env = Env::new();
        let _s = env.spawn_fake("alpha", &[]);
        env.wait_screen("alpha", "FAKE AGENT READY");
        // No name: `owt attach --relay` (start_with puts its "name" first).
        let mut client = AttachClient::start_with(&env, "--relay", 24, 80, &[]);
        client.wait_contains("FAKE AGENT READY");
        client.type_bytes(b"\x1cd");
        assert_eq!(client.wait_exit(), 0);
        assert!(
            client.raw_text().contains("Detached from alpha"),
            "{}",
            client.raw_text()
        );

        let _t = env.spawn_fake("alpine", &[]);
        let out = env.run(&["attach"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{stderr}");
        assert!(
            stderr.contains(
                "this repository has 2 sessions: alpha, alpine; name one: owt attach NAME"
            ) || stderr.contains(
                "this repository has 2 sessions: alpine, alpha; name one: owt attach NAME"
            ),
            "{stderr}"
        );
        // A unique prefix names a session; a shared one is refused.
        env.wait_screen("alpin", "FAKE AGENT READY");
        let out = env.run(&["peek", "alp"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success());
        assert!(
            stderr.contains("`alp` is the start of several sessions"),
            "{stderr}"
        );
    });
}
