//! Notifications out (`[notify]`): a session whose agent shows a
//! permission dialog is `blocked`, and the notify command of the user's
//! configuration receives one JSON object for it on stdin, sent by the
//! session's host (once, however many owt processes look); the agent's
//! exit is told too.

use std::path::Path;
use std::time::Duration;

use crate::session_common::{wait_for, with_timeout, Env};

/// How long the host may take to tell a status: it must hold 750 ms, is
/// looked at every 250 ms, then the program runs.
const TELL: Duration = Duration::from_secs(10);

/// The events the notify script wrote, one JSON object a line.
fn events(file: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{line:?}: {e}")))
        .collect()
}

/// Writes the user's configuration: `[notify] command` appends its stdin
/// to `out`.
fn configure_notify(env: &Env, out: &Path) {
    let config = env.dir.path().join("config/owt");
    std::fs::create_dir_all(&config).unwrap();
    let script = env.dir.path().join("notify.sh");
    std::fs::write(&script, format!("#!/bin/sh\ncat >> '{}'\n", out.display())).unwrap();
    let toml = format!(
        "[agent]\nmax_running = 64\n\n[notify]\ncommand = [\"sh\", \"{}\"]\n",
        script.display()
    );
    std::fs::write(config.join("config.toml"), toml).unwrap();
}

#[test]
fn a_blocked_session_is_told_to_the_notify_command_once() {
    with_timeout(Duration::from_secs(90), || {
        let env = Env::new();
        let out = env.dir.path().join("events.jsonl");
        configure_notify(&env, &out);
        env.spawn_fake("asker", &[]);
        env.wait_screen("asker", "FAKE AGENT READY");
        env.ok(&["send", "asker", "perm"]);
        env.wait_screen("asker", "Do you want to proceed?");
        // Other owt processes looking meanwhile send nothing themselves.
        for _ in 0..3 {
            env.ok(&["list"]);
        }
        let blocked = wait_for("the blocked event", TELL, || {
            let all = events(&out);
            all.iter()
                .find(|e| e["event"] == "blocked")
                .cloned()
                .ok_or_else(|| format!("events so far: {all:?}"))
        });
        assert_eq!(blocked["session"], "asker", "{blocked}");
        assert_eq!(blocked["status"], "blocked", "{blocked}");
        assert_eq!(blocked["text"], "blocked", "{blocked}");
        let repo = std::fs::canonicalize(&env.repo).unwrap();
        assert_eq!(
            std::fs::canonicalize(blocked["repository"].as_str().unwrap()).unwrap(),
            repo,
            "{blocked}"
        );
        let time = blocked["time"].as_str().unwrap();
        assert!(
            time.len() == 24 && time.ends_with('Z') && time.contains('T'),
            "{time}"
        );
        // The agent ends: its exit is told as well, and the blocked state
        // was told exactly once.
        env.ok(&["send", "asker", "y"]);
        env.ok(&["send", "asker", "exit 3"]);
        let exited = wait_for("the exited event", TELL, || {
            let all = events(&out);
            all.iter()
                .find(|e| e["event"] == "exited")
                .cloned()
                .ok_or_else(|| format!("events so far: {all:?}"))
        });
        assert_eq!(exited["session"], "asker", "{exited}");
        let all = events(&out);
        let blocked_count = all.iter().filter(|e| e["event"] == "blocked").count();
        assert_eq!(blocked_count, 1, "{all:?}");
    });
}

/// `[agent] on_limit = "wait"`: an agent that says it hit a rate limit and
/// when to try again is `limited` in IN FLIGHT, told to the notify
/// command, and its host types "continue" once the limit reset — not
/// before.
#[test]
fn a_limit_is_told_and_waited_out_with_on_limit_wait() {
    with_timeout(Duration::from_secs(90), || {
        let env = Env::new();
        let out = env.dir.path().join("events.jsonl");
        configure_notify(&env, &out);
        let config = env.dir.path().join("config/owt/config.toml");
        let text = std::fs::read_to_string(&config).unwrap();
        let text = text.replace("[agent]\n", "[agent]\non_limit = \"wait\"\n");
        std::fs::write(&config, text).unwrap();
        let s = env.spawn_fake("waiter", &[]);
        env.wait_screen("waiter", "FAKE AGENT READY");
        let sent = std::time::Instant::now();
        // The fake agent echoes it: its screen says it.
        env.ok(&[
            "send",
            "waiter",
            "Rate limit reached for requests. Please try again in 3s.",
        ]);
        // The host may judge a screen that shows the limit's first words
        // before the rest ("… try again in 3s."): `limited` comes first,
        // then the same status with its reset once that is on screen.
        let limited = wait_for("limited, with its reset", TELL, || {
            let (_, status) = env.wait_json("waiter", "0");
            let timed = status["text"]
                .as_str()
                .is_some_and(|t| t.starts_with("limited (resets "));
            if status["status"] == "limited" && timed {
                Ok(status)
            } else {
                Err(status.to_string())
            }
        });
        let text = limited["text"].as_str().unwrap();
        assert!(
            text.starts_with("limited (resets ") && text.ends_with(" UTC)"),
            "{limited}"
        );
        let list: serde_json::Value = serde_json::from_str(&env.ok(&["--json", "list"])).unwrap();
        assert_eq!(list["sessions"][0]["lane"], "in-flight", "{list}");
        // Told as `limited`.
        wait_for("the limited event", TELL, || {
            let all = events(&out);
            all.iter()
                .find(|e| e["event"] == "limited")
                .cloned()
                .ok_or_else(|| format!("events so far: {all:?}"))
        });
        // "continue" once the limit reset, and not before.
        env.wait_agent_line(&s, "continue");
        assert!(
            sent.elapsed() >= Duration::from_secs(3),
            "continue typed {:?} after the limit was shown",
            sent.elapsed()
        );
    });
}
