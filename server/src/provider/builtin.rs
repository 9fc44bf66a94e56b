//! The built-in provider table.
//!
//! Flags checked against each CLI's real `--help` (versions in
//! `docs/providers.md`); where a CLI could not be installed here the entry
//! says "unverified" there.

use std::collections::BTreeMap;

use super::{Headless, Hooks, PromptDelivery, Provider};

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

fn flag(f: &str) -> PromptDelivery {
    PromptDelivery::Flag(f.to_string())
}

/// The built-in provider called `name`.
pub fn builtin(name: &str) -> Option<Provider> {
    use PromptDelivery::{Positional, Typed};
    // (binary, interactive args, prompt, plan args, headless args, headless prompt, install hint, hooks)
    let (binary, args, prompt, plan, headless, install_hint, hooks) = match name {
        "claude" => (
            "claude",
            "",
            Positional,
            "--permission-mode plan",
            Some(("-p", Positional)),
            "npm install -g @anthropic-ai/claude-code",
            Hooks::Claude,
        ),
        "codex" => (
            "codex",
            "",
            Positional,
            "",
            Some(("exec", Positional)),
            "npm install -g @openai/codex",
            Hooks::None,
        ),
        "opencode" => (
            "opencode",
            "",
            flag("--prompt"),
            "",
            Some(("run", Positional)),
            "npm install -g opencode-ai",
            Hooks::None,
        ),
        "pi" => (
            "pi",
            "",
            Positional,
            "",
            Some(("-p", Positional)),
            "npm install -g @mariozechner/pi-coding-agent",
            Hooks::None,
        ),
        "droid" => (
            "droid",
            "",
            Positional,
            "",
            Some(("exec", Positional)),
            "npm install -g @factory/cli",
            Hooks::Droid,
        ),
        "aider" => (
            "aider",
            "",
            Typed,
            "",
            Some(("--yes-always --message", Positional)),
            "pip install aider-chat",
            Hooks::None,
        ),
        "gemini" => (
            "gemini",
            "",
            flag("--prompt-interactive"),
            "",
            Some(("--prompt", Positional)),
            "npm install -g @google/gemini-cli",
            Hooks::None,
        ),
        "cursor-agent" => (
            "cursor-agent",
            "",
            Positional,
            "",
            Some(("-p", Positional)),
            "see https://cursor.com/cli (curl https://cursor.com/install -fsS | bash)",
            Hooks::None,
        ),
        "amp" => (
            "amp",
            "",
            Typed,
            "",
            Some(("-x", Positional)),
            "npm install -g @sourcegraph/amp",
            Hooks::None,
        ),
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
    })
}
