//! The built-in provider table.
//!
//! Every flag was checked against the real CLI's `--help` and a run in a PTY
//! (versions and quoted help lines in `docs/providers.md`): claude 2.1.332,
//! codex 0.171.0, opencode 1.18.33, gemini 0.61.0, pi 0.73.1, droid 0.225.2,
//! amp 0.0.1790142911, aider 0.86.2. cursor-agent and goose could not be
//! installed here; their entries are unverified.

use std::collections::BTreeMap;

use super::{AcpCommand, Headless, Hooks, PromptDelivery, Provider};

/// Auto-detection order: the built-in agents' names (kept in `config`,
/// which refuses a repository's `[tools.NAME]` for them).
pub const BUILTIN_ORDER: &[&str] = crate::config::BUILTIN_TOOLS;

/// The names of the rows of the built-in table (tests).
#[cfg(test)]
pub(super) fn table_names() -> Vec<&'static str> {
    TABLE.iter().map(|row| row.name).collect()
}

fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_string).collect()
}

/// One agent of the table, as written: arguments as words.
struct Builtin {
    name: &'static str,
    binary: &'static str,
    /// Interactive arguments.
    args: &'static str,
    prompt: Prompt,
    /// Arguments of plan mode.
    plan: &'static str,
    /// Arguments and prompt of the headless form.
    headless: Option<(&'static str, Prompt)>,
    install_hint: &'static str,
    hooks: Hooks,
}

/// How the table says a prompt is given (a constant form of
/// [`PromptDelivery`]).
#[derive(Clone, Copy)]
enum Prompt {
    AfterDashDash,
    Positional,
    Typed,
    FlagEquals(&'static str),
}

impl Prompt {
    fn delivery(self) -> PromptDelivery {
        match self {
            Prompt::AfterDashDash => PromptDelivery::AfterDashDash,
            Prompt::Positional => PromptDelivery::Positional,
            Prompt::Typed => PromptDelivery::Typed,
            Prompt::FlagEquals(flag) => PromptDelivery::FlagEquals(flag.to_string()),
        }
    }
}

/// The built-in agents.
const TABLE: &[Builtin] = &[
    // `claude [options] [prompt]`; `--` accepted; `-p, --print`.
    Builtin {
        name: "claude",
        binary: "claude",
        args: "",
        prompt: Prompt::AfterDashDash,
        plan: "--permission-mode plan",
        headless: Some(("-p", Prompt::AfterDashDash)),
        install_hint: "npm install -g @anthropic-ai/claude-code",
        hooks: Hooks::Claude,
    },
    // `codex [OPTIONS] [PROMPT]`; `codex exec [PROMPT]`; `--` accepted.
    Builtin {
        name: "codex",
        binary: "codex",
        args: "",
        prompt: Prompt::AfterDashDash,
        plan: "",
        headless: Some(("exec", Prompt::AfterDashDash)),
        install_hint: "npm install -g @openai/codex",
        hooks: Hooks::None,
    },
    // The positional of `opencode` is a project path, not a prompt: use `--prompt=`.
    Builtin {
        name: "opencode",
        binary: "opencode",
        args: "",
        prompt: Prompt::FlagEquals("--prompt"),
        plan: "--agent plan",
        headless: Some(("run", Prompt::AfterDashDash)),
        install_hint: "npm install -g opencode-ai",
        hooks: Hooks::None,
    },
    // `pi [options] [messages...]`; rejects `--` and messages starting with `-`.
    Builtin {
        name: "pi",
        binary: "pi",
        args: "",
        prompt: Prompt::Positional,
        plan: "",
        headless: Some(("-p", Prompt::Positional)),
        install_hint: "npm install -g @mariozechner/pi-coding-agent",
        hooks: Hooks::None,
    },
    // `droid [options] [prompt...]`; `droid exec [prompt]`; spec mode is its plan mode.
    Builtin {
        name: "droid",
        binary: "droid",
        args: "",
        prompt: Prompt::AfterDashDash,
        plan: "--use-spec",
        headless: Some(("exec", Prompt::AfterDashDash)),
        install_hint: "npm install -g @factory/cli",
        hooks: Hooks::Droid,
    },
    // No interactive prompt argument (`-m` is one-shot): typed after start.
    Builtin {
        name: "aider",
        binary: "aider",
        args: "",
        prompt: Prompt::Typed,
        plan: "--chat-mode ask",
        headless: Some(("--yes-always --message", Prompt::Positional)),
        install_hint: "pip install aider-chat",
        hooks: Hooks::None,
    },
    // A prompt after `--` is silently dropped: use `--prompt-interactive=`.
    Builtin {
        name: "gemini",
        binary: "gemini",
        args: "",
        prompt: Prompt::FlagEquals("--prompt-interactive"),
        plan: "--approval-mode plan",
        headless: Some(("", Prompt::FlagEquals("--prompt"))),
        install_hint: "npm install -g @google/gemini-cli",
        hooks: Hooks::Gemini,
    },
    // Unverified (not installable here).
    Builtin {
        name: "cursor-agent",
        binary: "cursor-agent",
        args: "",
        prompt: Prompt::Positional,
        plan: "",
        headless: Some(("-p", Prompt::Positional)),
        install_hint: "see https://cursor.com/cli",
        hooks: Hooks::None,
    },
    // No interactive prompt argument: typed after start; `-x, --execute`.
    Builtin {
        name: "amp",
        binary: "amp",
        args: "",
        prompt: Prompt::Typed,
        plan: "",
        headless: Some(("", Prompt::FlagEquals("--execute"))),
        install_hint: "npm install -g @sourcegraph/amp",
        hooks: Hooks::None,
    },
    // Unverified (not installable here).
    Builtin {
        name: "goose",
        binary: "goose",
        args: "session",
        prompt: Prompt::Typed,
        plan: "",
        headless: Some(("run -t", Prompt::Positional)),
        install_hint: "see https://block.github.io/goose/docs/getting-started/installation",
        hooks: Hooks::None,
    },
];

/// The built-in provider called `name`.
pub fn builtin(name: &str) -> Option<Provider> {
    let row = TABLE.iter().find(|row| row.name == name)?;
    let binary = row.binary;
    Some(Provider {
        name: name.to_string(),
        binary: binary.to_string(),
        args: words(row.args),
        prompt: row.prompt.delivery(),
        plan_args: words(row.plan),
        headless: row.headless.map(|(args, prompt)| Headless {
            args: words(args),
            prompt: prompt.delivery(),
        }),
        install_hint: row.install_hint.to_string(),
        known_paths: vec![
            format!("~/.local/bin/{binary}"),
            format!("~/.npm-global/bin/{binary}"),
        ],
        env: BTreeMap::new(),
        hooks: row.hooks,
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
