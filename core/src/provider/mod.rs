//! Providers: the agent CLIs owt can host (built-in table plus custom tools
//! from `[tools.NAME]`), how to find their binary, and the argv that starts
//! them with a first prompt.
//!
//! Invariant: a launch is always an argv vector. Templates are split into
//! words the way a shell would split them, but nothing is ever run through
//! a shell, so task text full of `$(…)`, `;` or quotes reaches the agent
//! verbatim as one argument (or as typed text).

mod builtin;
pub mod integration;
/// The variables agent CLIs set for their children, removed from every
/// agent a host starts: in owt-session, beside the host's other rules.
pub use owt_session::nesting;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::config::{expand_home, Config, PromptMode, ToolConfig};

pub use builtin::{builtin, BUILTIN_ORDER};

#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    #[error("unknown agent `{name}`; known agents: {known}")]
    Unknown { name: String, known: String },
    #[error("agent `{name}` is not installed (`{binary}` not found on PATH or in its known paths); {hint}")]
    NotInstalled {
        name: String,
        binary: String,
        hint: String,
    },
    #[error("no agent CLI is installed. Install one of:\n{hints}")]
    NoneInstalled { hints: String },
    #[error("agent `{name}`: {message}")]
    BadTemplate { name: String, message: String },
    #[error("agent `{name}` has no non-interactive (headless) form")]
    NoHeadless { name: String },
    #[error("agent `{name}` speaks no Agent Client Protocol that owt knows of; agents with an ACP server: {known} (or set `acp` under [tools.{name}])")]
    NoAcp { name: String, known: String },
    #[error("the ACP server of `{name}` is not installed (`{binary}` not found on PATH or in its known paths); {hint}")]
    AcpNotInstalled {
        name: String,
        binary: String,
        hint: String,
    },
}

/// How an agent receives its first prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PromptDelivery {
    /// `<flag> "<task>"`.
    Flag(String),
    /// `<flag>=<task>` as one argument (safe for tasks starting with `-`).
    FlagEquals(String),
    /// `"<task>"` as the last argument (a task starting with `-` gets a
    /// leading space so it is never read as an option).
    Positional,
    /// `-- "<task>"`: the CLI stops option parsing at `--`.
    AfterDashDash,
    /// Typed into the terminal once the agent's screen is ready.
    Typed,
    /// The agent gets no prompt.
    None,
}

/// Hook support of a provider (installed into new worktrees).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hooks {
    None,
    /// `.claude/settings.local.json`.
    Claude,
    /// `.factory/settings.json`.
    Droid,
    /// `.gemini/settings.json` (Conflict Guard's pre-edit hook only).
    Gemini,
}

/// A non-interactive form (`--headless`).
#[derive(Debug, Clone, PartialEq)]
pub struct Headless {
    /// Arguments before the prompt.
    pub args: Vec<String>,
    pub prompt: PromptDelivery,
}

/// One agent CLI.
#[derive(Debug, Clone, PartialEq)]
pub struct Provider {
    pub name: String,
    /// Program name or path.
    pub binary: String,
    /// Arguments of the interactive form, before the prompt. For custom
    /// tools, the template after `{binary}` (may contain `{prompt}`).
    pub args: Vec<String>,
    pub prompt: PromptDelivery,
    /// Extra arguments for plan mode (`--plan-mode` / `--workflow`).
    pub plan_args: Vec<String>,
    pub headless: Option<Headless>,
    pub install_hint: String,
    pub known_paths: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub hooks: Hooks,
    /// Its Agent Client Protocol server, if it has one (`owt new --acp`).
    pub acp: Option<AcpCommand>,
}

/// How to start an agent's ACP server (it speaks ACP on stdio).
#[derive(Debug, Clone, PartialEq)]
pub struct AcpCommand {
    /// Program name or path (`claude-agent-acp`), found like a binary.
    pub binary: String,
    pub args: Vec<String>,
    pub install_hint: String,
}

/// How an agent is started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LaunchMode {
    Interactive,
    /// Interactive, in plan mode.
    Plan,
    /// The non-interactive form, run to completion.
    Headless,
}

/// A ready-to-run launch.
#[derive(Debug, Clone, PartialEq)]
pub struct Launch {
    pub argv: Vec<String>,
    /// Text to type once the agent is ready (providers without a prompt
    /// argument).
    pub typed_prompt: Option<String>,
    /// The prompt is on the command line.
    pub prompt_in_argv: bool,
    pub env: BTreeMap<String, String>,
}

/// A provider with its binary found.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    pub provider: Provider,
    pub binary_path: PathBuf,
}

impl Provider {
    /// A provider from a `[tools.NAME]` table.
    pub fn from_config(name: &str, tool: &ToolConfig) -> Result<Provider, ProviderError> {
        let bad = |message: String| ProviderError::BadTemplate {
            name: name.to_string(),
            message,
        };
        if tool.binary.trim().is_empty() {
            return Err(bad("`binary` is empty".into()));
        }
        let args = template_args(tool.command_template.as_deref().unwrap_or("{binary}"))
            .map_err(|m| bad(format!("command_template: {m}")))?;
        let prompt = match (tool.prompt_mode, &tool.prompt_flag) {
            (Some(PromptMode::Flag), None) => {
                return Err(bad("prompt_mode = \"flag\" needs prompt_flag".into()))
            }
            (Some(PromptMode::Flag), Some(flag)) | (None, Some(flag)) => {
                PromptDelivery::Flag(flag.clone())
            }
            (Some(PromptMode::Positional), _) | (None, None) => PromptDelivery::Positional,
            (Some(PromptMode::Typed), _) => PromptDelivery::Typed,
            (Some(PromptMode::None), _) => PromptDelivery::None,
        };
        let headless = match &tool.headless_template {
            Some(t) => Some(Headless {
                args: template_args(t).map_err(|m| bad(format!("headless_template: {m}")))?,
                prompt: match &prompt {
                    PromptDelivery::Typed | PromptDelivery::None => PromptDelivery::Positional,
                    other => other.clone(),
                },
            }),
            None => None,
        };
        Ok(Provider {
            name: name.to_string(),
            binary: tool.binary.clone(),
            args,
            prompt,
            plan_args: Vec::new(),
            headless,
            install_hint: tool.install_hint.clone().unwrap_or_else(|| {
                format!("install `{}` or fix [tools.{name}] binary", tool.binary)
            }),
            known_paths: tool.known_paths.clone(),
            env: tool.env.clone(),
            hooks: Hooks::None,
            acp: match &tool.acp {
                Some(t) => {
                    Some(acp_command(&tool.binary, t).map_err(|m| bad(format!("acp: {m}")))?)
                }
                None => None,
            },
        })
    }

    /// The argv of this agent's ACP server, its program found on `PATH` or
    /// in the known paths.
    pub fn acp_argv(&self) -> Result<Vec<String>, ProviderError> {
        let acp = self.acp.as_ref().ok_or_else(|| ProviderError::NoAcp {
            name: self.name.clone(),
            known: BUILTIN_ORDER
                .iter()
                .filter(|n| builtin(n).is_some_and(|p| p.acp.is_some()))
                .copied()
                .collect::<Vec<_>>()
                .join(", "),
        })?;
        let finder = Provider {
            binary: acp.binary.clone(),
            ..self.clone()
        };
        let program = finder
            .find_binary()
            .ok_or_else(|| ProviderError::AcpNotInstalled {
                name: self.name.clone(),
                binary: acp.binary.clone(),
                hint: acp.install_hint.clone(),
            })?;
        let mut argv = vec![program.to_string_lossy().into_owned()];
        argv.extend(acp.args.iter().cloned());
        Ok(argv)
    }

    /// The argv (and typed prompt) that starts this agent on `prompt`.
    pub fn launch(
        &self,
        binary_path: &Path,
        prompt: &str,
        mode: LaunchMode,
    ) -> Result<Launch, ProviderError> {
        self.launch_with(binary_path, prompt, mode, &[])
    }

    /// Whether the agent can be started in `mode` at all (a headless
    /// session needs the agent's headless form).
    pub fn supports(&self, mode: LaunchMode) -> Result<(), ProviderError> {
        if mode == LaunchMode::Headless && self.headless.is_none() {
            return Err(ProviderError::NoHeadless {
                name: self.name.clone(),
            });
        }
        Ok(())
    }

    /// As [`Provider::launch`], with `extra` arguments after the agent's
    /// own and before the prompt (an integration's, see [`integration`]).
    pub fn launch_with(
        &self,
        binary_path: &Path,
        prompt: &str,
        mode: LaunchMode,
        extra: &[String],
    ) -> Result<Launch, ProviderError> {
        let (args, delivery) = match mode {
            LaunchMode::Headless => {
                let headless = self
                    .headless
                    .as_ref()
                    .ok_or_else(|| ProviderError::NoHeadless {
                        name: self.name.clone(),
                    })?;
                (headless.args.clone(), headless.prompt.clone())
            }
            LaunchMode::Interactive => (self.args.clone(), self.prompt.clone()),
            LaunchMode::Plan => {
                let mut args = self.args.clone();
                args.extend(self.plan_args.iter().cloned());
                (args, self.prompt.clone())
            }
        };
        let mut argv = vec![binary_path.to_string_lossy().into_owned()];
        let mut placed = false;
        for arg in args.into_iter().chain(extra.iter().cloned()) {
            if arg.contains("{prompt}") {
                placed = true;
                argv.push(arg.replace("{prompt}", prompt));
            } else {
                argv.push(arg);
            }
        }
        let mut typed_prompt = None;
        let prompt_in_argv = !prompt.is_empty()
            && (placed || !matches!(delivery, PromptDelivery::Typed | PromptDelivery::None));
        if !placed && !prompt.is_empty() {
            match delivery {
                PromptDelivery::Flag(flag) => {
                    argv.push(flag);
                    argv.push(prompt.to_string());
                }
                PromptDelivery::FlagEquals(flag) => argv.push(format!("{flag}={prompt}")),
                PromptDelivery::Positional if prompt.starts_with('-') => {
                    argv.push(format!(" {prompt}"))
                }
                PromptDelivery::Positional => argv.push(prompt.to_string()),
                PromptDelivery::AfterDashDash => {
                    argv.push("--".to_string());
                    argv.push(prompt.to_string());
                }
                PromptDelivery::Typed => typed_prompt = Some(prompt.to_string()),
                PromptDelivery::None => {}
            }
        }
        Ok(Launch {
            argv,
            typed_prompt,
            prompt_in_argv,
            env: self.env.clone(),
        })
    }

    /// Finds the binary on `PATH` or in the known paths.
    pub fn find_binary(&self) -> Option<PathBuf> {
        let binary = expand_home(&self.binary);
        if self.binary.contains('/') {
            return is_executable(&binary).then_some(binary);
        }
        if let Some(path) = std::env::var_os("PATH") {
            for dir in std::env::split_paths(&path) {
                let candidate = dir.join(&self.binary);
                if is_executable(&candidate) {
                    return Some(candidate);
                }
            }
        }
        self.known_paths
            .iter()
            .map(|p| expand_home(p))
            .find(|p| is_executable(p))
    }
}

/// An `acp` template: `{binary} args…` (the tool's own binary) or
/// `program args…`.
fn acp_command(binary: &str, template: &str) -> Result<AcpCommand, String> {
    let words =
        shlex::split(template).ok_or_else(|| format!("unbalanced quotes in `{template}`"))?;
    let mut words = words.into_iter();
    let program = match words.next() {
        Some(first) if first == "{binary}" => binary.to_string(),
        Some(first) if !first.trim().is_empty() => first,
        _ => return Err("the command is empty".into()),
    };
    Ok(AcpCommand {
        install_hint: format!("install `{program}`"),
        binary: program,
        args: words.collect(),
    })
}

/// Splits a template into words (shell quoting rules, no shell) and drops
/// the leading `{binary}`.
fn template_args(template: &str) -> Result<Vec<String>, String> {
    let words =
        shlex::split(template).ok_or_else(|| format!("unbalanced quotes in `{template}`"))?;
    let mut words = words.into_iter();
    match words.next() {
        Some(first) if first == "{binary}" => Ok(words.collect()),
        _ => Err(format!("`{template}` must start with {{binary}}")),
    }
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Every provider known under `config`: built-ins, then custom tools (a
/// custom tool of a built-in's name replaces it).
pub fn all(config: &Config) -> Result<Vec<Provider>, ProviderError> {
    let mut out: Vec<Provider> = BUILTIN_ORDER.iter().filter_map(|n| builtin(n)).collect();
    for (name, tool) in &config.tools {
        let custom = Provider::from_config(name, tool)?;
        match out.iter_mut().find(|p| &p.name == name) {
            Some(existing) => *existing = custom,
            None => out.push(custom),
        }
    }
    Ok(out)
}

/// Resolves `requested` (or the configured default, or the first installed
/// built-in) to a provider with its binary.
pub fn resolve(config: &Config, requested: Option<&str>) -> Result<Resolved, ProviderError> {
    let providers = all(config)?;
    let wanted = requested.or(config.agent.default_tool.as_deref());
    if let Some(name) = wanted {
        let provider = providers
            .iter()
            .find(|p| p.name == name)
            .cloned()
            .ok_or_else(|| ProviderError::Unknown {
                name: name.to_string(),
                known: providers
                    .iter()
                    .map(|p| p.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            })?;
        let binary_path = provider
            .find_binary()
            .ok_or_else(|| ProviderError::NotInstalled {
                name: provider.name.clone(),
                binary: provider.binary.clone(),
                hint: provider.install_hint.clone(),
            })?;
        return Ok(Resolved {
            provider,
            binary_path,
        });
    }
    for name in BUILTIN_ORDER {
        let Some(provider) = providers.iter().find(|p| p.name == *name) else {
            continue;
        };
        if let Some(binary_path) = provider.find_binary() {
            return Ok(Resolved {
                provider: provider.clone(),
                binary_path,
            });
        }
    }
    let hints = BUILTIN_ORDER
        .iter()
        .filter_map(|n| providers.iter().find(|p| p.name == *n))
        .map(|p| format!("  {:<13} {}", p.name, p.install_hint))
        .collect::<Vec<_>>()
        .join("\n");
    Err(ProviderError::NoneInstalled { hints })
}

#[cfg(test)]
mod tests;
