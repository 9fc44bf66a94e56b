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
