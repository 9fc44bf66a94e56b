//! The environment variables agent CLIs set for the processes they start,
//! which make an agent CLI started under them believe it is nested inside
//! another agent (or one of its tool calls): owt removes them from every
//! agent it starts, so a session started from inside an agent — `owt new`
//! typed in an agent's shell, a conductor's `spawn_session` through owt's
//! MCP server, which its agent started — runs as a top-level agent.
//! Read from the CLIs' own code (Claude Code 2.1, Codex 0.171, Gemini CLI,
//! OpenCode 1.18); a key the session's `[agent] env` sets is kept.

/// Every marker, in one place.
pub const NESTING_MARKERS: &[&str] = &[
    // Claude Code: its shells, hooks and MCP servers get these; with
    // `CLAUDECODE` set, Claude Code refuses to start ("cannot be launched
    // inside another Claude Code session").
    "CLAUDECODE",
    "CLAUDE_CODE_ENTRYPOINT",
    "CLAUDE_CODE_SESSION_ID",
    "CLAUDE_CODE_CHILD_SESSION",
    "CLAUDE_CODE_SESSION_ATTENDED",
    "CLAUDE_CODE_LAUNCHED_BY_SESSION_IDS",
    "CLAUDE_PID",
    "CLAUDE_PROJECT_DIR",
    // Codex: the sandbox its commands run in, and its thread.
    "CODEX_SANDBOX",
    "CODEX_SANDBOX_NETWORK_DISABLED",
    "CODEX_THREAD_ID",
    // Gemini CLI: `GEMINI_CLI=1` for its shells; its relaunched process's
    // marker (a nested one would not relaunch with its memory settings).
    "GEMINI_CLI",
    "GEMINI_CLI_NO_RELAUNCH",
    // OpenCode: `OPENCODE=1` and its pid in its process, its terminal's
    // marker, and the client it serves (`acp`).
    "OPENCODE",
    "OPENCODE_PID",
    "OPENCODE_TERMINAL",
    "OPENCODE_CLIENT",
];

/// Variables that make an agent CLI started in owt's terminal believe no
/// one is at that terminal: Gemini CLI takes `CI=true` or
/// `GITHUB_ACTIONS=true` for headless mode (its `isHeadlessMode`, 0.61)
/// and, with no prompt on its command line (a resume), quits at once
/// ("No input provided via stdin"). owt removes them from the
/// interactive agents of `provider` only; a headless run keeps them.
pub fn headless_markers(provider: &str) -> &'static [&'static str] {
    match provider {
        "gemini" => &["CI", "GITHUB_ACTIONS"],
        _ => &[],
    }
}

/// The markers to remove from the environment of an agent whose own
/// variables (`[agent] env`, the integrations') are `set`: all those
/// `set` does not name.
pub fn markers_to_remove<'a>(set: impl IntoIterator<Item = &'a str>) -> Vec<&'static str> {
    let set: Vec<&str> = set.into_iter().collect();
    NESTING_MARKERS
        .iter()
        .copied()
        .filter(|marker| !set.contains(marker))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_agents_markers_go_but_those_the_session_sets() {
        let removed = markers_to_remove([]);
        for marker in [
            "CLAUDECODE",
            "CLAUDE_CODE_ENTRYPOINT",
            "CODEX_SANDBOX",
            "GEMINI_CLI",
            "OPENCODE",
        ] {
            assert!(removed.contains(&marker), "{marker}");
        }
        assert_eq!(removed.len(), NESTING_MARKERS.len());
        // `[agent] env = { CLAUDE_CODE_ENTRYPOINT = "…" }` is the user's word.
        let removed = markers_to_remove(["CLAUDE_CODE_ENTRYPOINT", "PATH"]);
        assert!(!removed.contains(&"CLAUDE_CODE_ENTRYPOINT"));
        assert!(removed.contains(&"CLAUDECODE"));
        assert!(!removed.contains(&"PATH"));
    }

    #[test]
    fn only_gemini_loses_the_ci_markers() {
        assert_eq!(headless_markers("gemini"), ["CI", "GITHUB_ACTIONS"]);
        assert!(headless_markers("claude").is_empty());
        assert!(headless_markers("codex").is_empty());
    }
}
