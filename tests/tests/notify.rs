//! Notifications out (`[notify]`): a session whose agent shows a
//! permission dialog is `blocked`, and the notify command of the user's
//! configuration receives one JSON object for it on stdin, sent by the
//! session's host (once, however many owt processes look); the agent's
//! exit is told too.

mod session_common;

use std::path::Path;
use std::time::Duration;

use session_common::{wait_for, with_timeout, Env};

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
