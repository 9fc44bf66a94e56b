//! The built-in provider table.
//!
//! Every flag was checked against the real CLI's `--help` and a run in a PTY
//! (versions and quoted help lines in `docs/providers.md`): claude 2.1.332,
//! codex 0.171.0, opencode 1.18.33, gemini 0.61.0, pi 0.73.1, droid 0.225.2,
//! amp 0.0.1790142911, aider 0.86.2. cursor-agent and goose could not be
//! installed here; their entries are unverified.

use std::collections::BTreeMap;

use super::{AcpCommand, Headless, Hooks, PromptDelivery, Provider};

/// Auto-detection order.
pub const BUILTIN_ORDER: &[&str] = &[
    "claude",
    "codex",
    "opencode",
    "pi",
    "droid",
    "aider",
    "gemini",
    "cursor-agent",
    "amp",
    "goose",
];

fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_string).collect()
}

fn flag_eq(f: &str) -> PromptDelivery {
    PromptDelivery::FlagEquals(f.to_string())
}

/// The built-in provider called `name`.
pub fn builtin(name: &str) -> Option<Provider> {
    use PromptDelivery::{AfterDashDash, Positional, Typed};
    // (binary, interactive args, prompt, plan args, (headless args, headless prompt), install hint, hooks)
    let (binary, args, prompt, plan, headless, install_hint, hooks) = match name {
        // `claude [options] [prompt]`; `--` accepted; `-p, --print`.
        "claude" => (
            "claude",
            "",
            AfterDashDash,
            "--permission-mode plan",
            Some(("-p", AfterDashDash)),
            "npm install -g @anthropic-ai/claude-code",
            Hooks::Claude,
        ),
        // `codex [OPTIONS] [PROMPT]`; `codex exec [PROMPT]`; `--` accepted.
        "codex" => (
            "codex",
            "",
            AfterDashDash,
            "",
            Some(("exec", AfterDashDash)),
            "npm install -g @openai/codex",
            Hooks::None,
        ),
        // The positional of `opencode` is a project path, not a prompt: use `--prompt=`.
        "opencode" => (
            "opencode",
            "",
            flag_eq("--prompt"),
            "--agent plan",
            Some(("run", AfterDashDash)),
            "npm install -g opencode-ai",
            Hooks::None,
        ),
        // `pi [options] [messages...]`; rejects `--` and messages starting with `-`.
        "pi" => (
            "pi",
            "",
            Positional,
            "",
            Some(("-p", Positional)),
            "npm install -g @mariozechner/pi-coding-agent",
            Hooks::None,
        ),
        // `droid [options] [prompt...]`; `droid exec [prompt]`; spec mode is its plan mode.
        "droid" => (
            "droid",
            "",
            AfterDashDash,
            "--use-spec",
            Some(("exec", AfterDashDash)),
            "npm install -g @factory/cli",
            Hooks::Droid,
        ),
        // No interactive prompt argument (`-m` is one-shot): typed after start.
        "aider" => (
            "aider",
            "",
            Typed,
            "--chat-mode ask",
            Some(("--yes-always --message", Positional)),
            "pip install aider-chat",
            Hooks::None,
        ),
        // A prompt after `--` is silently dropped: use `--prompt-interactive=`.
        "gemini" => (
            "gemini",
            "",
            flag_eq("--prompt-interactive"),
            "--approval-mode plan",
            Some(("", flag_eq("--prompt"))),
            "npm install -g @google/gemini-cli",
            Hooks::None,
        ),
        // Unverified (not installable here).
        "cursor-agent" => (
            "cursor-agent",
            "",
            Positional,
            "",
            Some(("-p", Positional)),
            "see https://cursor.com/cli",
            Hooks::None,
        ),
        // No interactive prompt argument: typed after start; `-x, --execute`.
        "amp" => (
            "amp",
            "",
            Typed,
            "",
            Some(("", flag_eq("--execute"))),
            "npm install -g @sourcegraph/amp",
            Hooks::None,
        ),
        // Unverified (not installable here).
        "goose" => (
            "goose",
            "session",
            Typed,
            "",
            Some(("run -t", Positional)),
            "see https://block.github.io/goose/docs/getting-started/installation",
            Hooks::None,
        ),
        _ => return None,
    };
    Some(Provider {
        name: name.to_string(),
        binary: binary.to_string(),
        args: words(args),
        prompt,
        plan_args: words(plan),
        headless: headless.map(|(args, prompt)| Headless {
            args: words(args),
            prompt,
        }),
        install_hint: install_hint.to_string(),
        known_paths: vec![
            format!("~/.local/bin/{binary}"),
            format!("~/.npm-global/bin/{binary}"),
        ],
        env: BTreeMap::new(),
        hooks,
        acp: acp(name),
    })
}

/// The ACP server of a built-in agent: its own (`opencode acp`, `gemini
/// --acp`) or Zed's adapter from npm (checked with the versions pinned in
/// scripts/install-agents: claude-agent-acp 0.23.1, codex-acp 0.16.0).
fn acp(name: &str) -> Option<AcpCommand> {
    let (binary, args, hint) = match name {
        "claude" => (
            "claude-agent-acp",
            "",
            "npm install -g @zed-industries/claude-agent-acp",
        ),
        "codex" => ("codex-acp", "", "npm install -g @zed-industries/codex-acp"),
        "opencode" => ("opencode", "acp", "npm install -g opencode-ai"),
        // `--experimental-acp` is deprecated since 0.61 (`--acp`).
        "gemini" => ("gemini", "--acp", "npm install -g @google/gemini-cli"),
        _ => return None,
    };
    Some(AcpCommand {
        binary: binary.to_string(),
        args: words(args),
        install_hint: hint.to_string(),
    })
}
