//! `owt attach` through a real PTY: the current screen at once, keys in,
//! output out, detach leaves the agent running, re-attach shows the same
//! screen, and window-size changes reach the agent.

mod session_common;

use std::time::Duration;

use session_common::{with_timeout, AttachClient, Env};

#[test]
fn attach_shows_the_screen_types_keys_detaches_and_reattaches() {
    with_timeout(Duration::from_secs(90), || {
        let env = Env::new();
        let s = env.spawn_fake("alpha", &[]);
        env.wait_screen("alpha", "FAKE AGENT READY");
        env.ok(&["send", "alpha", "draw"]);
        env.wait_screen("alpha", "| box  |");

        // The current screen, before the agent writes anything new.
        let mut client = AttachClient::start(&env, "alpha", 24, 80);
        let first = client.wait_contains("| box  |");
        assert!(first.contains("FAKE AGENT READY"), "{first}");

        // Typed keys reach the agent; its echo and answer reach the client.
        client.type_bytes(b"hello from the keyboard\r");
        env.wait_agent_line(&s, "hello from the keyboard");
        client.wait_contains("got: hello from the keyboard");

        // Output the agent writes for other reasons reaches the client too.
        env.ok(&["send", "alpha", "sent while attached"]);
        client.wait_contains("got: sent while attached");

        // Detach: Ctrl-\ then d. The client exits 0; the agent keeps running.
        client.type_bytes(b"\x1cd");
        assert_eq!(client.wait_exit(), 0);
        assert!(
            client.raw_text().contains("Detached from alpha"),
            "{}",
            client.raw_text()
        );
        assert!(owt_e2e::pid_alive(s.agent_pid), "the agent died on detach");
        let (_, status) = env.wait_json("alpha", "0");
        assert_ne!(status["status"], "exited", "{status}");

        // Re-attach: the same screen, immediately.
        let before = env.peek("alpha");
        let again = AttachClient::start(&env, "alpha", 24, 80);
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
fn the_prefix_twice_types_one_literal_prefix() {
    with_timeout(Duration::from_secs(60), || {
        let env = Env::new();
        let s = env.spawn_fake("lit", &[]);
        env.wait_screen("lit", "FAKE AGENT READY");
        let mut client = AttachClient::start(&env, "lit", 24, 80);
        client.wait_contains("FAKE AGENT READY");
        client.type_bytes(b"a\x1c\x1cb\r");
        env.wait_agent_line(&s, "a\u{1c}b");
    });
}

#[test]
fn resize_reaches_the_agent() {
    with_timeout(Duration::from_secs(60), || {
        let env = Env::new();
        let s = env.spawn_fake("sizes", &[]);
        env.wait_screen("sizes", "FAKE AGENT READY");
        let mut client = AttachClient::start(&env, "sizes", 24, 80);
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
fn attach_to_a_missing_host_fails_clearly() {
    with_timeout(Duration::from_secs(60), || {
        let env = Env::new();
        let s = env.spawn_fake("gone", &[]);
        env.wait_screen("gone", "FAKE AGENT READY");
        env.ok(&["__host", "stop", "gone"]);
        assert!(!owt_e2e::pid_alive(s.host_pid));
        let mut client = AttachClient::start(&env, "gone", 24, 80);
        assert_ne!(client.wait_exit(), 0);
        let text = client.raw_text();
        assert!(text.contains("no session host answers"), "{text}");
    });
}
