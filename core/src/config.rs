//! Configuration: `.owt.toml` at the repository root, then the user's
//! `~/.config/owt/config.toml` (`$XDG_CONFIG_HOME/owt/config.toml`).
//!
//! Values in the repository file win over the user's; tables merge key by
//! key. Unknown keys and wrong types are errors that name the file, the key
//! and the line. Invariant: loading never writes anything.
//!
//! A repository is not trusted until the user says so (`owt trust`): the
//! keys of its file that run programs, set an agent's environment or choose
//! where owt writes outside the repository's parent folder ([`gated_keys`])
//! take effect only when [`Trust`] vouches for the exact bytes read, and a
//! repository may never redefine a built-in agent.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {error}")]
    Read {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{path}:{line}: {message}")]
    Invalid {
        path: PathBuf,
        line: usize,
        /// Dotted key, when known.
        key: Option<String>,
        message: String,
    },
    #[error("invalid configuration: {0}")]
    Merged(String),
}

/// The whole configuration. Every section and key is optional.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub worktree: WorktreeConfig,
    pub agent: AgentConfig,
    /// Custom agents (and overrides of built-in ones), by name.
    pub tools: BTreeMap<String, ToolConfig>,
    pub guard: GuardConfig,
    pub ship: ShipConfig,
    pub attach: AttachConfig,
    pub environment: EnvironmentConfig,
    /// Custom task templates for `owt new --template NAME`.
    pub templates: BTreeMap<String, TemplateConfig>,
    /// Local checks run on an agent's work (`owt checks`).
    pub checks: ChecksConfig,
    /// What owt tells agents on its own (conflicts).
    pub feedback: FeedbackConfig,
    /// Pull requests (`owt pr`, `owt watch`).
    pub pr: PrConfig,
    /// Machines agents may run on (`owt new --on NAME`), reached over SSH.
    pub remotes: BTreeMap<String, RemoteConfig>,
}

/// `[remotes.NAME]`: a machine reached with the user's own `ssh`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RemoteConfig {
    /// What `ssh` is given: an alias of `~/.ssh/config`, `user@host`, …
    pub host: String,
    /// The repository's clone there (`~/src/app`, or absolute).
    pub path: String,
    /// The owt binary there (a name on its `PATH`, `~/.local/bin` included,
    /// or a path).
    pub owt: String,
}

impl Default for RemoteConfig {
    fn default() -> Self {
        RemoteConfig {
            host: String::new(),
            path: String::new(),
            owt: "owt".into(),
        }
    }
}

/// A custom template: a protocol kind plus extra instructions.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TemplateConfig {
    /// `feature`, `bugfix`, `hotfix`, `refactor`, `test` or `docs` (default: detected from the task).
    pub kind: Option<String>,
    /// Added to the protocol section of the prompt.
    pub instructions: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WorktreeConfig {
    /// Where worktrees go; relative paths are relative to the repository
    /// root. Default: `<repo-parent>/<repo-name>.worktrees`.
    pub base_directory: Option<String>,
    /// Files copied from the main checkout into every new worktree.
    pub copy_files: Vec<String>,
    /// Sessions idle or exited longer than this are stale (`owt cleanup`).
    pub auto_cleanup_days: u32,
    /// Globs of ignored files and folders `owt delete` may remove without
    /// keeping a copy in the trash (caches: `["node_modules", "target"]`).
    /// A pattern without `/` matches a name at any depth.
    pub disposable: Vec<String>,
    /// How many TCP ports each session gets (a block of consecutive free
    /// ports, held while the session lives; `OWT_PORT` and `OWT_PORTS` for
    /// the agent and the setup script). 0: none.
    pub ports: u16,
}

impl Default for WorktreeConfig {
    fn default() -> Self {
        WorktreeConfig {
            base_directory: None,
            copy_files: vec![".env".into()],
            auto_cleanup_days: 14,
            disposable: Vec::new(),
            ports: 0,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AgentConfig {
    /// Provider used when `--ai-tool` is not given (default: auto-detect).
    pub default_tool: Option<String>,
    /// Extra environment for every agent.
    pub env: BTreeMap<String, String>,
    /// Agents that may run at once on this machine (every repository of
    /// the store counts); `owt new` beyond it queues the session. Default:
    /// as many as memory holds (what is available now, against how much
    /// each provider's agents were seen to need).
    pub max_running: Option<u32>,
    /// No agent is started while less memory than this is available
    /// (`"2 GiB"`, `"512 MiB"`). Default: a tenth of the machine's memory,
    /// at most 2 GiB.
    pub min_free_memory: Option<ByteSize>,
    /// Lines of scrollback each session host keeps (tmux's default, 2000).
    pub scrollback: Option<u32>,
}

/// An amount of memory, written with a unit: `"2 GiB"`, `"512 MiB"`,
/// `"800M"`, `"0"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ByteSize(pub u64);

impl ByteSize {
    /// Parses `"2 GiB"`, `"1.5G"`, `"512 MiB"`, `"300MB"`, `"4096 KiB"`,
    /// `"0"` (a plain number is bytes). Units are powers of 1024.
    pub fn parse(text: &str) -> Result<ByteSize, String> {
        let t = text.trim();
        let split = t
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(t.len());
        let (number, unit) = t.split_at(split);
        let number: f64 = number.parse().map_err(|_| {
            format!("`{text}` is not a size; write it like \"2 GiB\" or \"512 MiB\"")
        })?;
        let scale: f64 = match unit.trim().to_ascii_lowercase().as_str() {
            "" | "b" => 1.0,
            "k" | "kb" | "kib" => 1024.0,
            "m" | "mb" | "mib" => 1024.0 * 1024.0,
            "g" | "gb" | "gib" => 1024.0 * 1024.0 * 1024.0,
            "t" | "tb" | "tib" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
            other => {
                return Err(format!(
                    "unknown unit `{other}` in `{text}`; use B, KiB, MiB, GiB or TiB"
                ))
            }
        };
        Ok(ByteSize((number * scale) as u64))
    }
}

impl std::fmt::Display for ByteSize {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&human_bytes(self.0))
    }
}

/// `1.5 GiB`, `512 MiB`, `900 KiB`, `12 B`.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if value >= 100.0 || value.fract() < 0.05 {
        format!("{value:.0} {}", UNITS[unit])
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

impl Serialize for ByteSize {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<ByteSize, D::Error> {
        let text = String::deserialize(d)?;
        ByteSize::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// How a custom tool receives its first prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PromptMode {
    /// `{binary} … <prompt_flag> "<task>"`.
    Flag,
    /// `{binary} … "<task>"`.
    Positional,
    /// Typed into the agent's terminal once it is ready.
    Typed,
    /// Not passed at all.
    None,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ToolConfig {
    /// Program name (looked up on `PATH` and in `known_paths`) or a path.
    pub binary: String,
    /// Argv template, split like a shell would split words but never run
    /// through a shell. `{binary}` is the resolved binary; `{prompt}`, if
    /// present, is replaced by the task as one argument.
    pub command_template: Option<String>,
    /// Flag that precedes the task (`-p`).
    pub prompt_flag: Option<String>,
    /// Default: `flag` when `prompt_flag` is set, else `positional`.
    pub prompt_mode: Option<PromptMode>,
    /// Non-interactive form for `--headless` (same placeholders).
    pub headless_template: Option<String>,
    pub known_paths: Vec<String>,
    pub install_hint: Option<String>,
    pub env: BTreeMap<String, String>,
    /// Accepted for compatibility with the seed's config; hooks are
    /// installed for the built-in providers that have them.
    pub supports_hooks: bool,
    /// The agent's Agent Client Protocol server, for `owt new --acp`:
    /// `{binary} acp`, or another program (`my-agent-acp --stdio`). Split
    /// into words like `command_template`, never run through a shell.
    pub acp: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GuardConfig {
    /// Globs whose same-file overlaps are not reported (conflicts always are).
    pub ignore: Vec<String>,
    /// `owt lsp`: a hint on the lines another participant is changing in a
    /// document you have open, before you edit it (`aware`).
    pub awareness: bool,
    /// What an agent's pre-edit hook (`owt hook --pre-edit`) answers when
    /// another participant is changing the lines it is about to edit.
    pub pre_edit: PreEdit,
}

impl Default for GuardConfig {
    fn default() -> Self {
        GuardConfig {
            ignore: Vec::new(),
            awareness: true,
            pre_edit: PreEdit::Warn,
        }
    }
}

/// `[guard] pre_edit`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PreEdit {
    /// Let the edit through and tell the agent who else is there.
    #[default]
    Warn,
    /// Refuse the edit with a message the agent can act on.
    Block,
    /// Say nothing.
    Off,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ShipConfig {
    /// `owt ship` refuses while a changed file is not marked reviewed
    /// since its last change (`owt review NAME --mark`); otherwise it
    /// only warns.
    pub require_review: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AttachConfig {
    /// Prefix key of the detach sequence (`<prefix> d`): `ctrl-\`, `ctrl-]`,
    /// or `ctrl-<letter>`.
    pub detach_key: String,
}

impl Default for AttachConfig {
    fn default() -> Self {
        AttachConfig {
            detach_key: "ctrl-\\".into(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EnvironmentConfig {
    /// Install dependencies in new worktrees.
    pub auto_install_deps: bool,
    /// Copy `[worktree] copy_files` (`.env` by default) into new worktrees.
    pub copy_env_file: bool,
}

impl Default for EnvironmentConfig {
    fn default() -> Self {
        EnvironmentConfig {
            auto_install_deps: false,
            copy_env_file: true,
        }
    }
}

/// When owt runs `[checks] command` on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ChecksWhen {
    /// When an agent ends a turn with new changes, and before `owt ship`.
    #[default]
    TurnEnd,
    /// Before `owt ship` and `owt pr` only.
    Ship,
    /// Only on `owt checks NAME --run`.
    Manual,
}

impl ChecksWhen {
    pub fn as_str(self) -> &'static str {
        match self {
            ChecksWhen::TurnEnd => "turn-end",
            ChecksWhen::Ship => "ship",
            ChecksWhen::Manual => "manual",
        }
    }
}

/// `[checks]`: the command that says whether an agent's work is good.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ChecksConfig {
    /// Split into argv words like `command_template` (shell quoting rules)
    /// and run without a shell (write `sh -c "…"` for one). Unset: no checks.
    pub command: Option<String>,
    /// Seconds before the run is killed (its whole process group).
    pub timeout: u64,
    pub when: ChecksWhen,
    /// Type the failure into the agent and ask it to fix it.
    pub auto_fix: bool,
    /// Failed runs in a row (auto-fix attempts) before the session needs you.
    pub max_attempts: u32,
    /// Lines of the output's end kept as the failure excerpt.
    pub excerpt_lines: u32,
}

impl Default for ChecksConfig {
    fn default() -> Self {
        ChecksConfig {
            command: None,
            timeout: 600,
            when: ChecksWhen::TurnEnd,
            auto_fix: true,
            max_attempts: 3,
            excerpt_lines: 60,
        }
    }
}

/// `[feedback] conflicts`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ConflictFeedback {
    /// Type a short message into the agent, once per new conflict.
    #[default]
    Tell,
    Off,
}

/// `[feedback]`: what owt tells agents on its own.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FeedbackConfig {
    /// A new real conflict with the base or another session.
    pub conflicts: ConflictFeedback,
}

/// Which forge hosts the remote.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ForgeKind {
    Github,
    Gitlab,
}

impl ForgeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ForgeKind::Github => "github",
            ForgeKind::Gitlab => "gitlab",
        }
    }

    /// The forge's own command-line client.
    pub fn default_cli(self) -> &'static str {
        match self {
            ForgeKind::Github => "gh",
            ForgeKind::Gitlab => "glab",
        }
    }
}

/// What happens to a session whose pull request was merged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OnMerged {
    /// Shown in READY TO CLEAN until you delete it.
    #[default]
    Keep,
    /// Deleted as `owt delete` would (never with uncommitted work).
    Delete,
}

/// `[pr]`: pull requests through the forge's own CLI.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PrConfig {
    /// `github` or `gitlab`; default: told from the remote's URL.
    pub forge: Option<ForgeKind>,
    /// The forge CLI to run (default `gh` or `glab`, looked up on `PATH`).
    pub cli: Option<String>,
    /// The remote to push to (default: the base branch's upstream remote,
    /// else `origin`, else the only remote).
    pub remote: Option<String>,
    /// Open pull requests as drafts.
    pub draft: bool,
    /// Open a pull request when a session's checks pass.
    pub auto: bool,
    /// Seconds between two looks at an open pull request (doubling while
    /// nothing changes, up to `poll_max`).
    pub poll_interval: u64,
    pub poll_max: u64,
    pub on_merged: OnMerged,
}

impl Default for PrConfig {
    fn default() -> Self {
        PrConfig {
            forge: None,
            cli: None,
            remote: None,
            draft: true,
            auto: false,
            poll_interval: 30,
            poll_max: 300,
            on_merged: OnMerged::Keep,
        }
    }
}

/// A loaded configuration and the files it came from.
#[derive(Debug, Clone, Default)]
pub struct Loaded {
    pub config: Config,
    /// Files read, highest priority first.
    pub sources: Vec<PathBuf>,
    /// Where each set value came from: dotted key → file.
    pub origins: BTreeMap<String, PathBuf>,
    /// Keys of a seed-format file that owt does not use (e.g. `backend.mode`).
    pub ignored: Vec<String>,
    /// The repository file's keys that were not applied (not trusted, or
    /// never allowed), when there were any.
    pub withheld: Option<Withheld>,
}

/// Keys of the repository's configuration file that owt did not apply.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Withheld {
    pub file: PathBuf,
    /// Keys that need trust, ignored because the user has not trusted this
    /// file's current content (`owt trust`).
    pub untrusted: Vec<String>,
    /// Keys a repository may never set, trusted or not: `[tools.NAME]`
    /// tables that would redefine a built-in agent.
    pub refused: Vec<String>,
}

/// Whether the user trusts a repository file with exactly these bytes.
pub trait Trust {
    fn trusts(&self, path: &Path, bytes: &[u8]) -> bool;
}

impl<F: Fn(&Path, &[u8]) -> bool> Trust for F {
    fn trusts(&self, path: &Path, bytes: &[u8]) -> bool {
        self(path, bytes)
    }
}

/// Trusts nothing: a repository's gated keys are ignored.
pub struct TrustNothing;

impl Trust for TrustNothing {
    fn trusts(&self, _: &Path, _: &[u8]) -> bool {
        false
    }
}

/// The keys of a repository's configuration table that need trust, and
/// the ones a repository may never set.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Gated {
    /// Paths of keys (`["tools", "x"]`, `["agent", "env", "NODE_OPTIONS"]`).
    pub need_trust: Vec<Vec<String>>,
    pub refused: Vec<Vec<String>>,
}

/// `["tools", "x"]` → `tools.x` (keys that are not bare words quoted).
pub fn dotted(path: &[String]) -> String {
    path.iter()
        .map(|k| {
            if !k.is_empty()
                && k.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            {
                k.clone()
            } else {
                format!("{k:?}")
            }
        })
        .collect::<Vec<_>>()
        .join(".")
}

/// Which keys of a repository's (translated) configuration table run
/// programs, set an agent's environment, or choose where owt writes
/// outside the repository's parent folder, or lift the machine's limits on
/// running agents: `[tools.*]`, `agent.default_tool`, `agent.max_running`,
/// `agent.min_free_memory`, `agent.env.*`, `environment.auto_install_deps =
/// true`, and a `worktree.base_directory` that is not a plain
/// (non-hidden) folder beside the repository at `repo_root`.
/// `[tools.NAME]` of a built-in agent is refused outright. `[remotes.*]`
/// needs trust too: it makes owt run `ssh` and a program on another machine.
pub fn gated_keys(table: &toml::Table, repo_root: &Path) -> Gated {
    let mut gated = Gated::default();
    let key = |parts: &[&str]| parts.iter().map(|p| p.to_string()).collect::<Vec<_>>();
    if let Some(toml::Value::Table(remotes)) = table.get("remotes") {
        for name in remotes.keys() {
            gated.need_trust.push(key(&["remotes", name]));
        }
    }
    if let Some(toml::Value::Table(tools)) = table.get("tools") {
        for name in tools.keys() {
            let path = key(&["tools", name]);
            if crate::provider::builtin(name).is_some() {
                gated.refused.push(path);
            } else {
                gated.need_trust.push(path);
            }
        }
    }
    if let Some(toml::Value::Table(agent)) = table.get("agent") {
        if agent.contains_key("default_tool") {
            gated.need_trust.push(key(&["agent", "default_tool"]));
        }
        // What keeps the machine from running out of memory is the
        // user's: a cloned repository may not lift it.
        for limit in ["max_running", "min_free_memory"] {
            if agent.contains_key(limit) {
                gated.need_trust.push(key(&["agent", limit]));
            }
        }
        if let Some(toml::Value::Table(env)) = agent.get("env") {
            for name in env.keys() {
                gated.need_trust.push(key(&["agent", "env", name]));
            }
        }
    }
    if let Some(toml::Value::Table(worktree)) = table.get("worktree") {
        if let Some(toml::Value::String(dir)) = worktree.get("base_directory") {
            // Without trust: only a plain folder beside the repository.
            let parent = normalize(repo_root.parent().unwrap_or(repo_root));
            let resolved = normalize(&resolve_base_directory(dir, repo_root));
            let sibling = resolved.parent() == Some(parent.as_path())
                && resolved
                    .file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| !n.starts_with('.'));
            if !sibling {
                gated.need_trust.push(key(&["worktree", "base_directory"]));
            }
        }
    }
    if let Some(toml::Value::Table(environment)) = table.get("environment") {
        if environment.get("auto_install_deps") == Some(&toml::Value::Boolean(true)) {
            gated
                .need_trust
                .push(key(&["environment", "auto_install_deps"]));
        }
    }
    gate_feedback_keys(table, &mut gated);
    gated
}

/// `checks.command` and `pr.cli` run programs; `pr.auto = true` pushes to
/// a remote unasked.
fn gate_feedback_keys(table: &toml::Table, gated: &mut Gated) {
    let key = |parts: &[&str]| parts.iter().map(|p| p.to_string()).collect::<Vec<_>>();
    if let Some(toml::Value::Table(checks)) = table.get("checks") {
        if checks.contains_key("command") {
            gated.need_trust.push(key(&["checks", "command"]));
        }
    }
    if let Some(toml::Value::Table(pr)) = table.get("pr") {
        if pr.contains_key("cli") {
            gated.need_trust.push(key(&["pr", "cli"]));
        }
        if pr.get("auto") == Some(&toml::Value::Boolean(true)) {
            gated.need_trust.push(key(&["pr", "auto"]));
        }
    }
}

/// The value at `path` in `table`, if any.
pub fn value_at<'t>(table: &'t toml::Table, path: &[String]) -> Option<&'t toml::Value> {
    let (last, parents) = path.split_last()?;
    let mut current = table;
    for part in parents {
        current = current.get(part)?.as_table()?;
    }
    current.get(last)
}

/// Removes the value at `path` from `table` (and tables it leaves empty).
fn remove_at(table: &mut toml::Table, path: &[String]) {
    let Some((first, rest)) = path.split_first() else {
        return;
    };
    if rest.is_empty() {
        table.remove(first);
        return;
    }
    if let Some(toml::Value::Table(inner)) = table.get_mut(first) {
        remove_at(inner, rest);
        if inner.is_empty() {
            table.remove(first);
        }
    }
}

/// The repository's configuration file in use: `.owt.toml`, else the
/// seed's `.worktreerc` / `.worktreerc.toml`.
pub fn repo_config_file(repo_root: &Path) -> Option<PathBuf> {
    let owt = repo_config_path(repo_root);
    if owt.exists() {
        return Some(owt);
    }
    SEED_FILES
        .iter()
        .map(|f| repo_root.join(f))
        .find(|p| p.is_file())
}

/// One configuration file as read: its bytes, its table (translated from
/// the seed's format if need be) and the seed keys it dropped.
pub type ConfigFile = (Vec<u8>, toml::Table, Vec<String>);

/// Reads and parses one file (translating the seed's format); `None` when
/// it does not exist.
pub fn read_config_file(path: &Path) -> Result<Option<ConfigFile>, ConfigError> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(ConfigError::Read {
                path: path.to_path_buf(),
                error: source,
            })
        }
    };
    let text = std::str::from_utf8(&bytes).map_err(|e| ConfigError::Read {
        path: path.to_path_buf(),
        error: std::io::Error::new(std::io::ErrorKind::InvalidData, e),
    })?;
    let mut ignored = Vec::new();
    let table = if is_seed_file(path) {
        let raw: toml::Table = toml::from_str(text).map_err(|e| ConfigError::Invalid {
            path: path.to_path_buf(),
            line: e.span().map_or(1, |s| locate(text, s.start).0),
            key: None,
            message: e.message().to_string(),
        })?;
        let (table, dropped) = translate_seed(raw);
        ignored.extend(
            dropped
                .into_iter()
                .map(|k| format!("{k} ({})", path.display())),
        );
        Config::deserialize(table.clone()).map_err(|e| ConfigError::Invalid {
            path: path.to_path_buf(),
            line: 1,
            key: None,
            message: e.to_string(),
        })?;
        table
    } else {
        parse_file(path, text)?
    };
    Ok(Some((bytes, table, ignored)))
}

/// The user's config file path.
pub fn user_config_path() -> Option<PathBuf> {
    if let Some(xdg) = std::env::var_os("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(xdg).join("owt/config.toml"));
    }
    std::env::var_os("HOME")
        .filter(|v| !v.is_empty())
        .map(|home| PathBuf::from(home).join(".config/owt/config.toml"))
}

/// The repository's config file path.
pub fn repo_config_path(repo_root: &Path) -> PathBuf {
    repo_root.join(".owt.toml")
}

/// The seed's (open-orchestrator's) repository config files, read when the
/// repository has no `.owt.toml`.
pub const SEED_FILES: &[&str] = &[".worktreerc", ".worktreerc.toml"];

/// Loads and merges the repository's and the user's configuration. A
/// repository without `.owt.toml` but with the seed's `.worktreerc` /
/// `.worktreerc.toml` has that read instead (translated). The repository
/// file's gated keys ([`gated_keys`]) apply only when `trust` vouches for
/// its bytes; keys redefining a built-in agent never apply.
pub fn load(repo_root: Option<&Path>, trust: &dyn Trust) -> Result<Loaded, ConfigError> {
    let mut layers = Vec::new();
    let mut withheld = None;
    // The user's file first (lowest priority), so its errors come first.
    if let Some(user) = user_config_path() {
        if let Some((_, table, ignored)) = read_config_file(&user)? {
            layers.push((user, table, ignored));
        }
    }
    if let Some(root) = repo_root {
        if let Some(path) = repo_config_file(root) {
            if let Some((bytes, mut table, ignored)) = read_config_file(&path)? {
                let gated = gated_keys(&table, root);
                let trusted = gated.need_trust.is_empty() || trust.trusts(&path, &bytes);
                let mut held = Withheld {
                    file: path.clone(),
                    ..Withheld::default()
                };
                for key in &gated.refused {
                    remove_at(&mut table, key);
                    held.refused.push(dotted(key));
                }
                if !trusted {
                    for key in &gated.need_trust {
                        remove_at(&mut table, key);
                        held.untrusted.push(dotted(key));
                    }
                }
                if !held.refused.is_empty() || !held.untrusted.is_empty() {
                    tracing::info!(file = %path.display(), untrusted = ?held.untrusted, refused = ?held.refused, "repository configuration keys withheld");
                    withheld = Some(held);
                }
                layers.insert(0, (path, table, ignored));
            }
        }
    }
    let mut loaded = merge_layers(layers)?;
    loaded.withheld = withheld;
    Ok(loaded)
}

/// Whether `path` is in the seed's format.
fn is_seed_file(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| SEED_FILES.contains(&n))
}

/// Translates a seed-format table (`[worktree]`, `[tmux] ai_tool`,
/// `[environment]`, `[tools.*]`) into owt's; returns the keys it dropped.
pub fn translate_seed(seed: toml::Table) -> (toml::Table, Vec<String>) {
    let mut out = toml::Table::new();
    let mut ignored = Vec::new();
    for (section, value) in seed {
        let toml::Value::Table(table) = value else {
            ignored.push(section);
            continue;
        };
        match section.as_str() {
            "worktree" => {
                let mut worktree = toml::Table::new();
                for (k, v) in table {
                    match k.as_str() {
                        "base_directory" | "auto_cleanup_days" => {
                            worktree.insert(k, v);
                        }
                        _ => ignored.push(format!("worktree.{k}")),
                    }
                }
                out.insert("worktree".into(), toml::Value::Table(worktree));
            }
            "tmux" => {
                for (k, v) in table {
                    if k == "ai_tool" {
                        let mut agent = toml::Table::new();
                        agent.insert("default_tool".into(), v);
                        out.insert("agent".into(), toml::Value::Table(agent));
                    } else {
                        ignored.push(format!("tmux.{k}"));
                    }
                }
            }
            "environment" => {
                let mut env = toml::Table::new();
                for (k, v) in table {
                    match k.as_str() {
                        "auto_install_deps" | "copy_env_file" => {
                            env.insert(k, v);
                        }
                        _ => ignored.push(format!("environment.{k}")),
                    }
                }
                out.insert("environment".into(), toml::Value::Table(env));
            }
            "tools" => {
                out.insert("tools".into(), toml::Value::Table(table));
            }
            other => ignored.push(other.to_string()),
        }
    }
    (out, ignored)
}

/// Loads `files` (highest priority first), skipping missing ones, every
/// key applied (no trust check: for files the user wrote).
pub fn load_files(files: &[PathBuf]) -> Result<Loaded, ConfigError> {
    let mut layers = Vec::new();
    // Lowest priority first, so an error names the user's file first.
    for path in files.iter().rev() {
        if let Some((_, table, ignored)) = read_config_file(path)? {
            layers.insert(0, (path.clone(), table, ignored));
        }
    }
    merge_layers(layers)
}

/// Merges parsed files, highest priority first.
fn merge_layers(layers: Vec<(PathBuf, toml::Table, Vec<String>)>) -> Result<Loaded, ConfigError> {
    let mut merged = toml::Table::new();
    let mut sources = Vec::new();
    let mut origins = BTreeMap::new();
    let mut ignored = Vec::new();
    // Lowest priority first, so later files override.
    for (path, table, dropped) in layers.into_iter().rev() {
        ignored.extend(dropped);
        record_origins(&table, "", &path, &mut origins);
        merge(&mut merged, table);
        sources.insert(0, path);
    }
    let config = Config::deserialize(merged).map_err(|e| ConfigError::Merged(e.to_string()))?;
    Ok(Loaded {
        config,
        sources,
        origins,
        ignored,
        withheld: None,
    })
}

/// Parses and validates one file on its own, so errors point into it.
pub fn parse_file(path: &Path, text: &str) -> Result<toml::Table, ConfigError> {
    let invalid = |e: toml::de::Error| {
        let (line, key) = match e.span() {
            Some(span) => locate(text, span.start),
            None => (1, None),
        };
        ConfigError::Invalid {
            path: path.to_path_buf(),
            line,
            message: match &key {
                Some(key) => format!("key `{key}`: {}", e.message()),
                None => e.message().to_string(),
            },
            key,
        }
    };
    let table: toml::Table = toml::from_str(text).map_err(invalid)?;
    toml::from_str::<Config>(text).map_err(invalid)?;
    Ok(table)
}

/// Line number (1-based) of byte `offset`, and the dotted key written on
/// that line, if any.
fn locate(text: &str, offset: usize) -> (usize, Option<String>) {
    let offset = offset.min(text.len());
    let line = text[..offset].matches('\n').count() + 1;
    let mut section = String::new();
    let mut key = None;
    for (i, raw) in text.lines().enumerate() {
        let trimmed = raw.trim();
        if i + 1 > line {
            break;
        }
        if trimmed.starts_with('[') {
            section = trimmed
                .trim_matches(|c| c == '[' || c == ']')
                .trim()
                .to_string();
            if i + 1 == line {
                key = Some(section.clone());
            }
        } else if i + 1 == line {
            if let Some((k, _)) = trimmed.split_once('=') {
                let k = k.trim().trim_matches('"');
                key = Some(if section.is_empty() {
                    k.to_string()
                } else {
                    format!("{section}.{k}")
                });
            }
        }
    }
    (line, key)
}

fn record_origins(
    table: &toml::Table,
    prefix: &str,
    path: &Path,
    out: &mut BTreeMap<String, PathBuf>,
) {
    for (key, value) in table {
        let dotted = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        match value {
            toml::Value::Table(inner) => record_origins(inner, &dotted, path, out),
            _ => {
                out.insert(dotted, path.to_path_buf());
            }
        }
    }
}

fn merge(into: &mut toml::Table, from: toml::Table) {
    for (key, value) in from {
        match (into.get_mut(&key), value) {
            (Some(toml::Value::Table(existing)), toml::Value::Table(new)) => merge(existing, new),
            (_, value) => {
                into.insert(key, value);
            }
        }
    }
}

impl Config {
    /// Whether `rel` (a path in a worktree; a folder may end in `/`) is a
    /// cache `[worktree] disposable` lets owt remove without a copy.
    pub fn is_disposable(&self, rel: &str) -> bool {
        let rel = rel.trim_end_matches('/');
        let name = rel.rsplit('/').next().unwrap_or(rel);
        self.worktree.disposable.iter().any(|pattern| {
            let pattern = pattern.trim_end_matches('/');
            let subject = if pattern.contains('/') { rel } else { name };
            globset::Glob::new(pattern.trim_start_matches('/'))
                .map(|g| g.compile_matcher().is_match(subject))
                .unwrap_or(false)
        })
    }

    /// Where worktrees of the repository at `repo_root` go.
    pub fn base_directory(&self, repo_root: &Path) -> PathBuf {
        match &self.worktree.base_directory {
            Some(dir) => resolve_base_directory(dir, repo_root),
            None => crate::names::worktrees_folder(
                repo_root,
                crate::git::outermost_enclosing_checkout(repo_root).as_deref(),
            ),
        }
    }

    /// The configured detach prefix as a byte.
    pub fn detach_byte(&self) -> Result<u8, String> {
        parse_ctrl_key(&self.attach.detach_key)
    }
}

/// `ctrl-\` → 0x1c, `ctrl-]` → 0x1d, `ctrl-a` → 0x01.
pub fn parse_ctrl_key(key: &str) -> Result<u8, String> {
    let lower = key.to_ascii_lowercase();
    let Some(rest) = lower.strip_prefix("ctrl-") else {
        return Err(format!(
            "detach key `{key}` must look like `ctrl-\\` or `ctrl-a`"
        ));
    };
    match rest.as_bytes() {
        [c @ b'a'..=b'z'] => Ok(c - b'a' + 1),
        [b'\\'] => Ok(0x1c),
        [b']'] => Ok(0x1d),
        [b'^'] => Ok(0x1e),
        [b'_'] => Ok(0x1f),
        _ => Err(format!(
            "detach key `{key}` must look like `ctrl-\\` or `ctrl-a`"
        )),
    }
}

/// A configured `base_directory` as a path: `~/` expanded, relative paths
/// taken from `repo_root`.
pub fn resolve_base_directory(dir: &str, repo_root: &Path) -> PathBuf {
    let dir = expand_home(dir);
    if dir.is_absolute() {
        dir
    } else {
        repo_root.join(dir)
    }
}

/// Resolves `.` and `..` without touching the file system.
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// `~/x` → `$HOME/x`.
pub fn expand_home(path: &str) -> PathBuf {
    if let Some(rest) = path.strip_prefix("~/") {
        if let Some(home) = std::env::var_os("HOME") {
            return PathBuf::from(home).join(rest);
        }
    }
    PathBuf::from(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err_of(text: &str) -> ConfigError {
        parse_file(Path::new("/r/.owt.toml"), text).unwrap_err()
    }

    #[test]
    fn unknown_key_names_file_key_and_line() {
        let err = err_of("[worktree]\ncopy_files = []\nbase_dir = \"x\"\n");
        let ConfigError::Invalid { line, key, .. } = &err else {
            panic!("{err}")
        };
        assert_eq!(*line, 3);
        assert_eq!(key.as_deref(), Some("worktree.base_dir"));
        let text = err.to_string();
        assert!(
            text.starts_with("/r/.owt.toml:3: key `worktree.base_dir`"),
            "{text}"
        );
    }

    #[test]
    fn wrong_type_names_key_and_line() {
        let err = err_of("\n[worktree]\nauto_cleanup_days = \"soon\"\n");
        let ConfigError::Invalid { line, key, .. } = &err else {
            panic!("{err}")
        };
        assert_eq!(
            (*line, key.as_deref()),
            (3, Some("worktree.auto_cleanup_days"))
        );
    }

    #[test]
    fn repo_file_wins_key_by_key() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo.toml");
        let user = dir.path().join("user.toml");
        std::fs::write(&repo, "[worktree]\nauto_cleanup_days = 3\n").unwrap();
        std::fs::write(
            &user,
            "[worktree]\nauto_cleanup_days = 9\nbase_directory = \"/wt\"\n[agent]\ndefault_tool = \"codex\"\n",
        )
        .unwrap();
        let loaded = load_files(&[repo.clone(), user.clone()]).unwrap();
        assert_eq!(loaded.config.worktree.auto_cleanup_days, 3);
        assert_eq!(
            loaded.config.worktree.base_directory.as_deref(),
            Some("/wt")
        );
        assert_eq!(loaded.config.agent.default_tool.as_deref(), Some("codex"));
        assert_eq!(loaded.sources, vec![repo, user]);
    }

    #[test]
    fn seed_worktreerc_is_translated() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(".worktreerc.toml"),
            "[worktree]\nbase_directory = \"../wt\"\nauto_cleanup_days = 7\n\n[tmux]\nai_tool = \"codex\"\nauto_start_ai = true\n\n[environment]\nauto_install_deps = true\ncopy_env_file = false\n\n[backend]\nmode = \"tmux\"\n\n[tools.mytool]\nbinary = \"my-ai\"\nprompt_flag = \"-p\"\nsupports_hooks = false\n",
        )
        .unwrap();
        let files = [dir.path().join(".worktreerc.toml")];
        let loaded = load_files(&files).unwrap();
        let c = &loaded.config;
        assert_eq!(c.worktree.base_directory.as_deref(), Some("../wt"));
        assert_eq!(c.worktree.auto_cleanup_days, 7);
        assert_eq!(c.agent.default_tool.as_deref(), Some("codex"));
        assert!(c.environment.auto_install_deps && !c.environment.copy_env_file);
        assert_eq!(c.tools["mytool"].prompt_flag.as_deref(), Some("-p"));
        assert_eq!(loaded.origins["agent.default_tool"], files[0]);
        assert!(
            loaded.ignored.iter().any(|k| k.starts_with("backend")),
            "{:?}",
            loaded.ignored
        );
        assert!(loaded
            .ignored
            .iter()
            .any(|k| k.starts_with("tmux.auto_start_ai")));
    }

    fn gated(text: &str) -> (Vec<String>, Vec<String>) {
        let table: toml::Table = toml::from_str(text).unwrap();
        let g = gated_keys(&table, Path::new("/home/u/src/app"));
        (
            g.need_trust.iter().map(|k| dotted(k)).collect(),
            g.refused.iter().map(|k| dotted(k)).collect(),
        )
    }

    #[test]
    fn keys_that_run_programs_or_write_elsewhere_need_trust() {
        let (need, refused) = gated(
            "[agent]\ndefault_tool = \"x\"\nenv = { NODE_OPTIONS = \"--require ./evil.js\" }\n\n[tools.x]\nbinary = \"./evil.sh\"\n\n[tools.claude]\nbinary = \"/bin/sh\"\n\n[worktree]\nbase_directory = \"~/.config/autostart\"\ncopy_files = [\".env\"]\n\n[environment]\nauto_install_deps = true\n\n[guard]\nignore = [\"*.lock\"]\n",
        );
        assert_eq!(
            need,
            vec![
                "tools.x",
                "agent.default_tool",
                "agent.env.NODE_OPTIONS",
                "worktree.base_directory",
                "environment.auto_install_deps"
            ]
        );
        assert_eq!(refused, vec!["tools.claude"]);
        // A plain folder beside the repository needs no trust; anything else does.
        for (dir, needs) in [
            ("../app-wt", false),
            ("/home/u/src/wt", false),
            ("../.config", true),
            ("../other/deeper", true),
            ("../..", true),
            ("/tmp/x", true),
        ] {
            let (need, _) = gated(&format!("[worktree]\nbase_directory = {dir:?}\n"));
            assert_eq!(!need.is_empty(), needs, "{dir}");
        }
        let (need, _) = gated("[environment]\nauto_install_deps = false\n");
        assert!(need.is_empty());
        let (need, _) = gated(
            "[agent]\nmax_running = 500\nmin_free_memory = \"0 B\"\nscrollback = 100\n[worktree]\nports = 4\n",
        );
        assert_eq!(
            need,
            vec!["agent.max_running", "agent.min_free_memory"],
            "the machine's limits on agents need trust; scrollback and ports do not"
        );
    }

    #[test]
    fn a_repositorys_remotes_need_trust_and_parse_with_defaults() {
        let (need, refused) = gated(
            "[remotes.devbox]\nhost = \"me@devbox\"\npath = \"~/src/app\"\n[remotes.gpu]\nhost = \"gpu\"\npath = \"/srv/app\"\nowt = \"/opt/owt/bin/owt\"\n",
        );
        assert_eq!(need, vec!["remotes.devbox", "remotes.gpu"]);
        assert!(refused.is_empty());
        let config: Config =
            toml::from_str("[remotes.devbox]\nhost = \"me@devbox\"\npath = \"~/src/app\"\n")
                .unwrap();
        assert_eq!(
            config.remotes["devbox"],
            RemoteConfig {
                host: "me@devbox".into(),
                path: "~/src/app".into(),
                owt: "owt".into()
            }
        );
        let err = parse_file(
            Path::new("/u/config.toml"),
            "[remotes.devbox]\nhost = \"devbox\"\nport = 22\n",
        )
        .unwrap_err();
        assert!(err.to_string().contains("unknown field `port`"), "{err}");
    }

    #[test]
    fn untrusted_repository_keys_are_withheld_and_builtins_never_redefined() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("app");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(
            root.join(".owt.toml"),
            "[agent]\ndefault_tool = \"x\"\n[tools.x]\nbinary = \"./evil.sh\"\n[tools.claude]\nbinary = \"/bin/sh\"\n[guard]\nignore = [\"*.lock\"]\n",
        )
        .unwrap();
        let untrusted = load(Some(&root), &TrustNothing).unwrap();
        assert!(untrusted.config.tools.is_empty());
        assert_eq!(untrusted.config.agent.default_tool, None);
        assert_eq!(
            untrusted.config.guard.ignore,
            vec!["*.lock"],
            "safe keys apply"
        );
        let withheld = untrusted.withheld.unwrap();
        assert_eq!(withheld.untrusted, vec!["tools.x", "agent.default_tool"]);
        assert_eq!(withheld.refused, vec!["tools.claude"]);
        let trusted = load(Some(&root), &|_: &Path, _: &[u8]| true).unwrap();
        assert_eq!(trusted.config.agent.default_tool.as_deref(), Some("x"));
        assert!(trusted.config.tools.contains_key("x"));
        assert!(
            !trusted.config.tools.contains_key("claude"),
            "never a built-in"
        );
    }

    #[test]
    fn disposable_globs_match_names_at_any_depth_and_paths_from_the_root() {
        let mut config = Config::default();
        config.worktree.disposable = vec![
            "node_modules".into(),
            "target/".into(),
            "web/dist".into(),
            "*.tmp".into(),
        ];
        for (rel, disposable) in [
            ("node_modules/", true),
            ("pkg/node_modules/", true),
            ("target/", true),
            ("web/dist/", true),
            ("dist/", false),
            ("a.tmp", true),
            ("build/", false),
            (".env", false),
        ] {
            assert_eq!(config.is_disposable(rel), disposable, "{rel}");
        }
    }

    #[test]
    fn default_base_directory_is_a_sibling() {
        let config = Config::default();
        assert_eq!(
            config.base_directory(Path::new("/src/app")),
            PathBuf::from("/src/app.worktrees")
        );
    }

    #[test]
    fn ctrl_keys() {
        assert_eq!(parse_ctrl_key("ctrl-\\"), Ok(0x1c));
        assert_eq!(parse_ctrl_key("Ctrl-A"), Ok(1));
        assert!(parse_ctrl_key("alt-x").is_err());
    }
}
