//! What the verbs about owt itself print: trust, doctor, trash, db,
//! config, version, and the form of an error.

use serde::{Deserialize, Serialize};

/// `owt trust --json` (also with `--show` and `--revoke`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrustOutput {
    /// The repository's main checkout.
    pub repository: String,
    /// `show`, `trusted` or `revoked`.
    pub action: String,
    /// The repository's files that can make owt run programs or write
    /// outside the repository: its configuration and `.owt/setup.sh`.
    pub files: Vec<TrustFile>,
}

/// One file of a repository that needs trust.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrustFile {
    pub path: String,
    /// `config` or `setup-script`.
    pub kind: String,
    /// SHA-256 of the content (what `owt trust` records).
    pub sha256: String,
    /// `trusted`, `untrusted`, `changed` (trusted once, different content
    /// now) or `not-needed` (sets nothing that needs trust).
    pub state: String,
    /// When the user trusted it (Unix ms), if ever.
    pub trusted_at: Option<i64>,
    /// Keys that apply only when the file is trusted, with their values.
    pub keys: Vec<TrustKey>,
    /// Keys a repository may never set (ignored even when trusted).
    pub refused: Vec<String>,
    /// What owt would run because of this file, one item each.
    pub runs: Vec<String>,
    /// A setup script's text.
    pub script: Option<String>,
}

/// A key that needs trust and its value (TOML).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrustKey {
    pub key: String,
    pub value: String,
}

/// One problem found by `owt doctor`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DoctorFinding {
    /// `orphan-worktree-folder`, `missing-worktree`, `missing-branch`,
    /// `prunable-git-worktree`, `interrupted-merge`, `stale-git-lock`,
    /// `git-lock`, `lost-session`, `old-trash`, `untrusted-config`.
    pub kind: String,
    pub detail: String,
    pub path: Option<String>,
    pub session: Option<String>,
    /// Whether `--fix` repaired it in this run.
    pub fixed: bool,
    /// Why `--fix` left it alone, when it did.
    pub skipped_reason: Option<String>,
}

/// `owt doctor --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DoctorReport {
    pub findings: Vec<DoctorFinding>,
    /// What the trash holds (`$OWT_HOME/trash`), oldest first.
    #[serde(default)]
    pub trash: Vec<TrashEntry>,
}

/// One folder of the trash: the files `owt delete` kept from a worktree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrashEntry {
    pub path: String,
    pub session: Option<String>,
    pub repository: Option<String>,
    /// The worktree the files came from.
    pub worktree: Option<String>,
    /// Unix ms.
    pub created_at: i64,
    pub bytes: u64,
    /// Paths inside (relative to the worktree they came from).
    pub files: Vec<String>,
}

/// `owt db health --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DbHealth {
    pub path: String,
    pub schema_version: u32,
    pub size_bytes: u64,
    pub wal_bytes: u64,
    pub journal_mode: String,
    pub integrity: String,
    pub repositories: u64,
    pub sessions: u64,
    pub facts: u64,
    pub messages: u64,
    pub notes: u64,
    pub events: u64,
    /// Rows of token counts (a session and local day; a deleted session's
    /// are kept for `owt usage` until `owt db purge`).
    #[serde(default)]
    pub usage_rows: u64,
    /// Of those, the rows of sessions that no longer exist.
    #[serde(default)]
    pub usage_rows_deleted_sessions: u64,
    /// How far each agent record file was read (per session and file).
    #[serde(default)]
    pub usage_sources: u64,
    /// Of those, the ones no session will read on (of sessions that no
    /// longer exist, or files no session owns that are gone): what `owt db
    /// purge` deletes; `--check` reports them.
    #[serde(default)]
    pub usage_sources_stale: u64,
    /// Thresholds exceeded (only filled by `--check`).
    pub problems: Vec<String>,
}

/// `owt db purge --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DbPurge {
    pub days: u32,
    pub messages_deleted: u64,
    pub events_deleted: u64,
    /// Trash folders (`$OWT_HOME/trash/…`) older than `days`, deleted.
    #[serde(default)]
    pub trash_deleted: Vec<String>,
    /// Token counts (a session and day) of sessions that no longer exist,
    /// last added to more than `days` days ago, deleted.
    #[serde(default)]
    pub usage_rows_deleted: u64,
    /// Read positions in agent record files no session will read on,
    /// deleted.
    #[serde(default)]
    pub usage_sources_deleted: u64,
}

/// `owt config show --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfigShow {
    /// Files read, highest priority first.
    pub sources: Vec<String>,
    /// The effective configuration.
    pub config: serde_json::Value,
    /// Where each value that is set came from: dotted key → file.
    #[serde(default)]
    pub origins: std::collections::BTreeMap<String, String>,
    /// Keys of a seed-format `.worktreerc` that owt does not use.
    #[serde(default)]
    pub ignored: Vec<String>,
    /// Keys of the repository's file ignored because it is not trusted
    /// (`owt trust`).
    #[serde(default)]
    pub untrusted: Vec<String>,
    /// Keys of the repository's file that a repository may never set
    /// (redefinitions of built-in agents).
    #[serde(default)]
    pub refused: Vec<String>,
}

/// `owt version --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VersionOutput {
    pub version: String,
    pub host_protocol: u32,
    /// The protocol of `owt __bridge` (remotes over SSH).
    #[serde(default)]
    pub bridge_protocol: u32,
}

/// Error document printed on stderr by `owt --json` when a verb fails.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct ErrorOutput {
    pub error: String,
    pub hint: Option<String>,
}
