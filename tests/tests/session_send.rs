//! `owt send` delivers text verbatim (multi-line as one bracketed paste,
//! shell metacharacters untouched), to one session or `--all`; a typed
//! first prompt arrives once the agent is ready; with nobody attached the
//! host answers the agent's terminal queries.

use std::time::Duration;

use crate::session_common::{with_timeout, Env};

#[test]
fn send_delivers_multi_line_text_and_metacharacters_verbatim() {
    with_timeout(Duration::from_secs(60), || {
        let env = Env::new();
        let s = env.spawn_fake("verbatim", &[]);
        env.wait_screen("verbatim", "FAKE AGENT READY");

        let one_line =
            r#"echo $(rm -rf /) `id` ; 'single' "double" \back & | > < * ? ~ # ${HOME} 100%"#;
        env.ok(&["send", "verbatim", one_line]);
        env.wait_agent_line(&s, one_line);

        let multi = "first line $PATH\nsecond; line && true\n\ttabbed \"quoted\"\nlast ünïcödé ✓";
        env.ok(&["send", "verbatim", multi]);
        env.wait_agent_line(&s, multi);

        // Exactly two submissions, nothing split or mangled.
        assert_eq!(
            env.agent_lines(&s),
            vec![one_line.to_string(), multi.to_string()]
        );
    });
}

#[test]
fn send_all_reaches_every_running_session() {
    with_timeout(Duration::from_secs(60), || {
        let env = Env::new();
        let a = env.spawn_fake("one", &[]);
        let b = env.spawn_fake("two", &[]);
        env.wait_screen("one", "FAKE AGENT READY");
        env.wait_screen("two", "FAKE AGENT READY");
        let out = env.ok(&["send", "--all", "to everyone"]);
        assert!(
            out.contains("Sent to one.") && out.contains("Sent to two."),
            "{out}"
        );
        env.wait_agent_line(&a, "to everyone");
        env.wait_agent_line(&b, "to everyone");
    });
}

#[test]
fn a_typed_prompt_is_typed_once_the_agent_is_ready() {
    with_timeout(Duration::from_secs(60), || {
        let env = Env::new();
        let s = env.spawn_fake("typed", &["--typed-prompt", "fix the bug; then $(test)"]);
        env.wait_agent_line(&s, "fix the bug; then $(test)");
        env.wait_screen("typed", "got: fix the bug; then $(test)");
        assert_eq!(env.agent_lines(&s).len(), 1);
    });
}

#[test]
fn the_host_answers_terminal_queries_when_nobody_is_attached() {
    with_timeout(Duration::from_secs(60), || {
        let env = Env::new();
        env.spawn_fake("asks", &["--env", "FAKE_QUERY_AT_START=1"]);
        // The agent asks right after its banner on row 1: the answer is
        // the cursor position there, from the host's screen model.
        let screen = env.wait_screen("asks", "startup cursor answer:");
        let banner = screen.lines().next().unwrap_or_default();
        let expected = format!(
            "startup cursor answer: ESC[1;{}R",
            banner.chars().count() + 1
        );
        assert!(
            screen.contains(&expected),
            "expected {expected:?} in:\n{screen}"
        );
        assert!(!screen.contains("no answer"), "{screen}");
        env.ok(&["send", "asks", "query"]);
        env.wait_screen("asks", "cursor answer: ESC[");
    });
}

#[test]
fn send_to_a_stopped_session_fails_clearly() {
    with_timeout(Duration::from_secs(60), || {
        let env = Env::new();
        env.spawn_fake("stopped", &[]);
        env.wait_screen("stopped", "FAKE AGENT READY");
        env.ok(&["__host", "stop", "stopped"]);
        let out = env.run(&["send", "stopped", "hello"]);
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        // The board's reason for Send on that session, as `owt list` shows.
        assert!(
            err.contains("not typing into `stopped`: the agent exited (Hangup)"),
            "{err}"
        );
    });
}

/// Regression (issue 33, item 13): a stopped host (SIGSTOP) answered
/// `peek` and `send` with "Resource temporarily unavailable (os error 11)"
/// after 10 s. Now the error names the session, says its host does not
/// answer, and how to resume or end it.
#[test]
fn regression_a_stopped_host_is_named_as_not_answering() {
    with_timeout(Duration::from_secs(90), || {
        let env = Env::new();
        let s = env.spawn_fake("frozen", &[]);
        env.wait_screen("frozen", "FAKE AGENT READY");
        let host = s.host_pid as libc::pid_t;
        // SAFETY: signals to the host this test started.
        assert_eq!(unsafe { libc::kill(host, libc::SIGSTOP) }, 0);
        let peek = env.run(&["peek", "frozen"]);
        let send = env.run(&["send", "frozen", "hello"]);
        // SAFETY: as above.
        assert_eq!(unsafe { libc::kill(host, libc::SIGCONT) }, 0);
        for (verb, out) in [("peek", peek), ("send", send)] {
            assert!(!out.status.success(), "{verb}");
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(
                err.contains("frozen: the session host does not answer")
                    && err.contains("it is stopped or hung")
                    && err.contains(&format!("kill -CONT {host}"))
                    && err.contains("owt delete frozen"),
                "{verb}: {err}"
            );
            assert!(!err.contains("os error 11"), "{verb}: {err}");
        }
        // Resumed, it answers again.
        env.ok(&["send", "frozen", "after"]);
        env.wait_agent_line(&s, "after");
    });
}

/// Regression (issue 33, item 9): `owt peek --scrollback` of a large
/// scrollback failed with "frame of N bytes is larger than 16777216". It
/// reads the scrollback a page (4 MiB) at a time: here 99 000 lines of 172
/// characters (some 17.5 MB of JSON, over the frame limit), every one, in
/// order.
#[test]
fn regression_peek_scrollback_reads_a_large_scrollback_in_pages() {
    with_timeout(Duration::from_secs(180), || {
        let env = Env::new();
        let lines = 99_000;
        let script = format!(
            "import sys, time\n\
             for i in range({lines}):\n    sys.stdout.write('%06d %s\\n' % (i, 'y' * 165))\n\
             sys.stdout.write('ALL WRITTEN\\n'); sys.stdout.flush(); time.sleep(300)\n"
        );
        env.spawn(&[
            "__host",
            "spawn",
            "--name",
            "long",
            "--cols",
            "180",
            "--scrollback",
            "100000",
            "--",
            "python3",
            "-c",
            &script,
        ]);
        env.wait_screen("long", "ALL WRITTEN");
        let out = env.ok(&["--json", "peek", "long", "--scrollback"]);
        let view: serde_json::Value = serde_json::from_str(&out).unwrap();
        let mut numbers: Vec<usize> = view["screen"]["scrollback"]
            .as_array()
            .unwrap()
            .iter()
            .chain(view["screen"]["lines"].as_array().unwrap())
            .filter_map(|l| l.as_str()?.split_whitespace().next()?.parse().ok())
            .collect();
        numbers.dedup();
        let gaps: Vec<(usize, usize)> = numbers
            .windows(2)
            .filter(|w| w[1] != w[0] + 1)
            .map(|w| (w[0], w[1]))
            .take(10)
            .collect();
        assert_eq!(
            numbers.len(),
            lines,
            "every line once; first {:?}, gaps {gaps:?}, {} scrollback lines",
            numbers.first(),
            view["screen"]["scrollback"].as_array().unwrap().len()
        );
        assert!(numbers.iter().enumerate().all(|(i, n)| i == *n), "in order");
    });
}
