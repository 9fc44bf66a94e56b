//! An agent started by owt from inside another agent (`owt new` typed in
//! Claude Code's shell, a conductor's `spawn_session`) does not inherit
//! the variables that would make it think it is nested in that agent
//! (`provider::nesting`), while the rest of the environment, and a marker
//! the session's own `--env` sets, reach it.

use std::time::Duration;

use crate::session_common::{with_timeout, Env};

#[test]
fn an_agent_started_from_inside_another_gets_no_nesting_markers() {
    with_timeout(Duration::from_secs(60), || {
        let env = Env::new();
        let log = env.dir.path().join("nested.agent-log");
        let agent = crate::session_common::fake_agent();
        let log_env = format!("FAKE_LOG={}", log.display());
        let out = env
            .owt(&[
                "__host",
                "spawn",
                "--name",
                "nested",
                "--env",
                &log_env,
                "--env",
                "OPENCODE=set-by-the-session",
                "--",
                "python3",
                &agent.to_string_lossy(),
            ])
            // What Claude Code, Codex and Gemini CLI give their shells.
            .env("CLAUDECODE", "1")
            .env("CLAUDE_CODE_ENTRYPOINT", "cli")
            .env("CODEX_SANDBOX_NETWORK_DISABLED", "1")
            .env("GEMINI_CLI", "1")
            .env("OPENCODE", "1")
            .env("KEEP_ME", "kept")
            .output()
            .expect("owt __host spawn");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        env.parse_spawned(&String::from_utf8_lossy(&out.stdout));
        env.wait_screen("nested", "FAKE AGENT READY");
        for (name, expected) in [
            ("CLAUDECODE", "<unset>"),
            ("CLAUDE_CODE_ENTRYPOINT", "<unset>"),
            ("CODEX_SANDBOX_NETWORK_DISABLED", "<unset>"),
            ("GEMINI_CLI", "<unset>"),
            ("OPENCODE", "set-by-the-session"),
            ("KEEP_ME", "kept"),
        ] {
            env.ok(&["send", "nested", &format!("env {name}")]);
            env.wait_screen("nested", &format!("env {name}={expected}"));
        }
    });
}

/// The value of `name` in the environment agent `pid` (`sleep 300`)
/// started with.
fn started_with(pid: u32, name: &str) -> Option<String> {
    crate::session_common::environ_of(pid, &["300"])
        .get(std::ffi::OsStr::new(name))
        .map(|v| v.to_string_lossy().into_owned())
}

/// Gemini CLI reads `CI=true` or `GITHUB_ACTIONS=true` as "headless" and,
/// resumed with no prompt on its command line, quits at once. In owt's
/// terminal it is interactive whatever CI owt itself runs in: its
/// interactive agents do not get them; its headless runs, other agents
/// and a session that sets them itself do.
#[test]
fn an_interactive_gemini_is_not_told_it_runs_in_ci() {
    with_timeout(Duration::from_secs(60), || {
        let env = Env::new();
        // name, provider, extra arguments, then CI and GITHUB_ACTIONS as
        // the agent was started with them.
        for (name, provider, extra, ci, actions) in [
            ("gemini-tty", "gemini", &[][..], None, None),
            (
                "gemini-headless",
                "gemini",
                &["--headless"][..],
                Some("true"),
                Some("true"),
            ),
            (
                "gemini-set",
                "gemini",
                &["--env", "CI=1"][..],
                Some("1"),
                None,
            ),
            ("claude-tty", "claude", &[][..], Some("true"), Some("true")),
        ] {
            let mut args = vec!["__host", "spawn", "--name", name, "--provider", provider];
            args.extend_from_slice(extra);
            args.extend(["--", "sleep", "300"]);
            let out = env
                .owt(&args)
                .env("CI", "true")
                .env("GITHUB_ACTIONS", "true")
                .output()
                .expect("owt __host spawn");
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let s = env.parse_spawned(&String::from_utf8_lossy(&out.stdout));
            assert_ne!(s.agent_pid, 0, "{name}: no agent pid in {out:?}");
            assert_eq!(started_with(s.agent_pid, "CI").as_deref(), ci, "{name}: CI");
            assert_eq!(
                started_with(s.agent_pid, "GITHUB_ACTIONS").as_deref(),
                actions,
                "{name}: GITHUB_ACTIONS"
            );
        }
    });
}
