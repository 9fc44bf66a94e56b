//! Tokens and cost per session, read from each agent's own records.
//!
//! Every agent keeps its own account of what it spent: Claude Code writes a
//! transcript per conversation under `~/.claude/projects/<mangled cwd>/`
//! with the API's `usage` on every assistant message ([`claude`]); Codex
//! writes `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl` with running
//! `token_count` totals ([`codex`]); OpenCode keeps per-session totals in
//! its SQLite database ([`opencode`]); Aider logs each message's tokens and
//! cost to the analytics log owt asks it to write, and reports them in its
//! chat history ([`aider`]); Pi writes a JSONL session per conversation
//! under `~/.pi/agent/sessions/<mangled cwd>/` ([`pi`]); Gemini CLI writes
//! a JSONL chat record per conversation under
//! `~/.gemini/tmp/<project name>/chats/` with each answer's tokens
//! ([`gemini`]). Any other agent run as an ACP session (`owt new --acp`)
//! is counted from what it reported through the protocol ([`acp`]). A
//! record belongs to the session whose worktree it names
//! (the transcript folder, the rollout's `cwd`, OpenCode's session
//! directory, the checkout holding the chat history, Gemini CLI's project
//! registry), from the moment the session was created.
//!
//! Nothing is read twice: the store remembers, per session and file, the
//! size and modification time last seen and how far the file was read
//! ([`crate::store::UsageCursor`]); a refresh costs one `stat` per file
//! when nothing changed, and otherwise reads only what was appended, under
//! the store's write lock so that two processes never count a record
//! twice. A listing reads at most [`LISTING_BUDGET`] of new records (the
//! next listing reads on); `owt usage` and a session's last read before
//! it is deleted read everything. The tokens go to the store per session
//! and local day, and stay there after the session is deleted.
//!
//! Invariants: reads the agents' files and database, never writes them;
//! a record that cannot be parsed is skipped, never an error of the caller.

pub mod acp;
pub mod aider;
pub mod claude;
pub mod codex;
pub mod gemini;
pub mod opencode;
pub mod pi;
mod time;

use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use crate::store::{SessionRow, Store, StoreError, UsageCursor, UsageDelta};

pub use time::{local_day, parse_timestamp_ms};

#[derive(Debug, thiserror::Error)]
pub enum UsageError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("reading {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("reading OpenCode's database {path}: {source}")]
    OpenCode {
        path: PathBuf,
        source: rusqlite::Error,
    },
}

impl From<rusqlite::Error> for UsageError {
    fn from(e: rusqlite::Error) -> Self {
        UsageError::Store(StoreError::Sql(e))
    }
}

/// Tokens one record adds (signed: a later record of the same message may
/// correct an earlier one), at a moment.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Tally {
    pub input: i64,
    pub output: i64,
    pub cache_read: i64,
    pub cache_write: i64,
    pub cost_usd: Option<f64>,
}

impl Tally {
    fn minus(&self, old: &Tally) -> Tally {
        Tally {
            input: self.input - old.input,
            output: self.output - old.output,
            cache_read: self.cache_read - old.cache_read,
            cache_write: self.cache_write - old.cache_write,
            cost_usd: match (self.cost_usd, old.cost_usd) {
                (None, None) => None,
                (a, b) => Some(a.unwrap_or(0.0) - b.unwrap_or(0.0)),
            },
        }
    }

    fn is_zero(&self) -> bool {
        self.input == 0
            && self.output == 0
            && self.cache_read == 0
            && self.cache_write == 0
            && self.cost_usd.is_none_or(|c| c == 0.0)
    }

    fn to_json(self) -> serde_json::Value {
        serde_json::json!([
            self.input,
            self.output,
            self.cache_read,
            self.cache_write,
            self.cost_usd
        ])
    }

    fn from_json(v: &serde_json::Value) -> Option<Tally> {
        let a = v.as_array()?;
        Some(Tally {
            input: a.first()?.as_i64()?,
            output: a.get(1)?.as_i64()?,
            cache_read: a.get(2)?.as_i64()?,
            cache_write: a.get(3)?.as_i64()?,
            cost_usd: a.get(4).and_then(serde_json::Value::as_f64),
        })
    }
}

/// How many message ids a reader remembers to recognise the repeated
/// lines of one message across reads.
const RECENT_IDS: usize = 64;

/// The tokens a record of message `key` adds when the agent writes a
/// message again as it grows (Claude Code: one line per content block;
/// Gemini CLI: again with its tool calls): `tally` minus what earlier
/// records of the same message counted, remembered in `carry` (the last
/// [`RECENT_IDS`] messages).
fn latest_of(carry: &mut serde_json::Value, key: String, tally: Tally) -> Tally {
    if !carry.is_array() {
        *carry = serde_json::Value::Array(Vec::new());
    }
    let Some(recent) = carry.as_array_mut() else {
        return tally;
    };
    let seen = recent
        .iter()
        .position(|e| e[0].as_str() == Some(key.as_str()));
    let delta = match seen {
        Some(i) => {
            let old = Tally::from_json(&recent[i][1]).unwrap_or_default();
            recent.remove(i);
            tally.minus(&old)
        }
        None => tally,
    };
    recent.push(serde_json::json!([key, tally.to_json()]));
    if recent.len() > RECENT_IDS {
        recent.remove(0);
    }
    delta
}

/// A record's tokens and when it was made (Unix milliseconds).
pub type Record = (i64, Tally);

/// Records added up per local day.
pub fn by_day(records: &[Record]) -> Vec<UsageDelta> {
    let mut days: BTreeMap<String, UsageDelta> = BTreeMap::new();
    for (at, t) in records {
        if t.is_zero() {
            continue;
        }
        let day = local_day(*at);
        let d = days.entry(day.clone()).or_insert_with(|| UsageDelta {
            day,
            ..UsageDelta::default()
        });
        d.input_tokens += t.input;
        d.output_tokens += t.output;
        d.cache_read_tokens += t.cache_read;
        d.cache_write_tokens += t.cache_write;
        if let Some(c) = t.cost_usd {
            d.cost_usd = Some(d.cost_usd.unwrap_or(0.0) + c);
        }
    }
    days.into_values().collect()
}

/// Where the agents keep their records, as the agents started by owt see
/// it (owt's own environment, with `[agent] env` of the configuration on
/// top).
#[derive(Debug, Clone, PartialEq)]
pub struct Places {
    /// `$CLAUDE_CONFIG_DIR`, else `~/.claude`.
    pub claude_config: Option<PathBuf>,
    /// `$CODEX_HOME`, else `~/.codex`.
    pub codex_home: Option<PathBuf>,
    /// `$XDG_DATA_HOME/opencode/opencode.db`, else
    /// `~/.local/share/opencode/opencode.db`.
    pub opencode_db: Option<PathBuf>,
    /// `$PI_CODING_AGENT_DIR`, else `~/.pi/agent`.
    pub pi_agent_dir: Option<PathBuf>,
    /// `$GEMINI_CLI_HOME/.gemini`, else `~/.gemini`.
    pub gemini_dir: Option<PathBuf>,
    /// `$OWT_HOME/usage`: the logs owt asks agents to write (Aider's
    /// analytics log).
    pub owt_usage: PathBuf,
}

impl Places {
    /// From `lookup` (an environment variable's value).
    pub fn from_lookup(owt_home: &Path, lookup: impl Fn(&str) -> Option<String>) -> Places {
        let var = |name: &str| lookup(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        let home = var("HOME");
        Places {
            claude_config: var("CLAUDE_CONFIG_DIR")
                .or_else(|| home.as_ref().map(|h| h.join(".claude"))),
            codex_home: var("CODEX_HOME").or_else(|| home.as_ref().map(|h| h.join(".codex"))),
            opencode_db: var("XDG_DATA_HOME")
                .or_else(|| home.as_ref().map(|h| h.join(".local/share")))
                .map(|d| d.join("opencode/opencode.db")),
            pi_agent_dir: var("PI_CODING_AGENT_DIR")
                .or_else(|| home.as_ref().map(|h| h.join(".pi/agent"))),
            gemini_dir: var("GEMINI_CLI_HOME")
                .or_else(|| home.clone())
                .map(|h| h.join(".gemini")),
            owt_usage: owt_home.join("usage"),
        }
    }

    /// From this process's environment with `overrides` (the agents'
    /// `[agent] env`) on top.
    pub fn from_env(owt_home: &Path, overrides: &BTreeMap<String, String>) -> Places {
        Places::from_lookup(owt_home, |name| {
            overrides
                .get(name)
                .cloned()
                .or_else(|| std::env::var(name).ok())
        })
    }
}

/// Environment variables an agent is started with so that it keeps a
/// record owt can read exactly (Aider: its analytics log, local only),
/// unless the user already chose where it goes.
pub fn agent_env(
    provider: &str,
    places: &Places,
    short_id: &str,
    user_env: impl Fn(&str) -> bool,
) -> Vec<(String, String)> {
    match provider {
        "aider" if !user_env(aider::ANALYTICS_LOG_VAR) => vec![(
            aider::ANALYTICS_LOG_VAR.to_string(),
            aider::analytics_log(places, short_id)
                .to_string_lossy()
                .into_owned(),
        )],
        _ => Vec::new(),
    }
}

/// How much of the agents' new records one refresh may read: a listing
/// reads at most [`LISTING_BUDGET`] (the rest on the next one), a report
/// or a session's last read everything.
#[derive(Debug)]
pub struct Budget(std::cell::Cell<u64>);

/// Bytes of new records one listing reads at most (two reads of
/// [`MAX_READ`]; about a second of parsing on a loaded 2-core machine,
/// once: `bench/usage.py` measures the first listing).
pub const LISTING_BUDGET: u64 = 32 * 1024 * 1024;

impl Budget {
    pub fn listing() -> Budget {
        Budget(std::cell::Cell::new(LISTING_BUDGET))
    }

    pub fn unlimited() -> Budget {
        Budget(std::cell::Cell::new(u64::MAX))
    }

    /// Takes `want` bytes if that many are left (a read is never cut
    /// short by the budget, so a line is never cut by it either).
    fn take(&self, want: u64) -> bool {
        let left = self.0.get();
        if left < want {
            return false;
        }
        self.0.set(left - want);
        true
    }

    fn give_back(&self, unused: u64) {
        self.0.set(self.0.get().saturating_add(unused));
    }
}

/// Reads what the agents of `sessions` recorded since the last refresh,
/// within a listing's [`Budget`]. Failures are logged, never returned:
/// usage is never a reason for a listing to fail.
pub fn refresh(store: &Store, places: &Places, sessions: &[SessionRow]) {
    refresh_within(store, &Budget::listing(), places, sessions);
}

/// [`refresh`] with no limit: everything recorded so far is read.
pub fn refresh_all(store: &Store, places: &Places, sessions: &[SessionRow]) {
    refresh_within(store, &Budget::unlimited(), places, sessions);
}

/// Whether owt reads `provider`'s token records from its own files (the
/// others report through ACP).
fn reads_own_records(provider: &str) -> bool {
    matches!(
        provider,
        "claude" | "codex" | "opencode" | "aider" | "pi" | "gemini"
    )
}

fn refresh_within(store: &Store, budget: &Budget, places: &Places, sessions: &[SessionRow]) {
    let mut codex_sessions = Vec::new();
    // The agents reporting through ACP: which of them reported anything
    // new, asked of all in one read of the store (most did not).
    let acp_news: Vec<bool> = store.reading(|store| {
        sessions
            .iter()
            .map(|session| {
                reads_own_records(&session.provider) || acp::changed(store, session).unwrap_or(true)
            })
            .collect()
    });
    for (session, news) in sessions.iter().zip(acp_news) {
        if !news {
            continue;
        }
        let result = match session.provider.as_str() {
            "claude" => claude::refresh(store, budget, places, session),
            "codex" => {
                codex_sessions.push(session.clone());
                Ok(())
            }
            "opencode" => opencode::refresh(store, places, session),
            "aider" => aider::refresh(store, budget, places, session),
            "pi" => pi::refresh(store, budget, places, session),
            "gemini" => gemini::refresh(store, budget, places, session),
            // Any other agent: what it reported through ACP, if it ran so.
            _ => acp::refresh(store, session),
        };
        if let Err(e) = result {
            tracing::warn!(session = %session.name, "reading the agent's token records failed: {e}");
        }
    }
    if !codex_sessions.is_empty() {
        if let Err(e) = codex::refresh(store, budget, places, &codex_sessions) {
            tracing::warn!("reading Codex's token records failed: {e}");
        }
    }
}

/// Removes the record files owt asked a deleted session's agent to keep
/// (their tokens are in the store).
pub fn forget(places: &Places, session: &SessionRow) {
    let log = aider::analytics_log(places, &session.short_id);
    if let Err(e) = std::fs::remove_file(&log) {
        if e.kind() != std::io::ErrorKind::NotFound {
            tracing::warn!("removing {}: {e}", log.display());
        }
    }
}

/// Reads at most this much of one file per refresh (the rest on the next).
const MAX_READ: u64 = 16 * 1024 * 1024;

/// Size and modification time (ns) of `path`, `None` if it does not exist.
fn stat(path: &Path) -> Result<Option<(u64, i64)>, UsageError> {
    use std::os::unix::fs::MetadataExt;
    match std::fs::metadata(path) {
        Ok(m) => Ok(Some((m.len(), m.mtime() * 1_000_000_000 + m.mtime_nsec()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(UsageError::Io {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Reads the lines appended to `path` since the session's cursor and
/// records the tokens `parse` finds in them. `parse` sees each complete
/// line (lines that do not contain `needle` are skipped unparsed) and the
/// reader's carry. Returns whether anything was recorded.
fn refresh_lines(
    store: &Store,
    budget: &Budget,
    session: &SessionRow,
    path: &Path,
    needle: &[u8],
    mut parse: impl FnMut(&[u8], &mut serde_json::Value) -> Option<Record>,
) -> Result<bool, UsageError> {
    let Some((size, mtime_ns)) = stat(path)? else {
        return Ok(false);
    };
    let key = path.to_string_lossy();
    if let Some(c) = store.usage_cursor(&session.short_id, &key)? {
        if c.size == size && c.mtime_ns == mtime_ns {
            return Ok(false);
        }
    }
    let mut recorded = false;
    // One transaction per MAX_READ bytes, until caught up or out of budget.
    loop {
        let mut caught_up = true;
        let advanced = store.advance_usage::<UsageError>(session, &key, |before| {
            let read = read_appended(path, (size, mtime_ns), before, budget, needle, &mut parse)?;
            caught_up = read.as_ref().is_none_or(|(_, _, done)| *done);
            Ok(read.map(|(cursor, records, _)| (cursor, by_day(&records))))
        })?;
        recorded |= advanced;
        if !advanced || caught_up {
            return Ok(recorded);
        }
    }
}

/// The records appended to `path` (now `size` bytes, modified at
/// `mtime_ns`) after the cursor `before`: the new cursor, the records, and
/// whether the file was read to its end. `None`: nothing to read now (read
/// meanwhile by another process, or the budget is spent).
fn read_appended(
    path: &Path,
    (size, mtime_ns): (u64, i64),
    before: Option<UsageCursor>,
    budget: &Budget,
    needle: &[u8],
    parse: &mut impl FnMut(&[u8], &mut serde_json::Value) -> Option<Record>,
) -> Result<Option<(UsageCursor, Vec<Record>, bool)>, UsageError> {
    let mut cursor = before.unwrap_or(UsageCursor {
        carry: serde_json::Value::Null,
        ..UsageCursor::default()
    });
    if cursor.size == size && cursor.mtime_ns == mtime_ns {
        return Ok(None);
    }
    if size < cursor.offset {
        // Rewritten or truncated: what it held was counted already.
        tracing::warn!(path = %path.display(), "an agent's record file shrank; reading it from its new end");
        cursor.offset = size;
        cursor.size = size;
        cursor.mtime_ns = mtime_ns;
        return Ok(Some((cursor, Vec::new(), true)));
    }
    let want = (size - cursor.offset).min(MAX_READ);
    if !budget.take(want) {
        return Ok(None);
    }
    let io_err = |source| UsageError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut file = std::fs::File::open(path).map_err(io_err)?;
    file.seek(SeekFrom::Start(cursor.offset)).map_err(io_err)?;
    let mut buf = Vec::with_capacity(want as usize);
    file.take(want).read_to_end(&mut buf).map_err(io_err)?;
    budget.give_back(want - buf.len() as u64);
    let mut complete = buf.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    if complete == 0 && buf.len() as u64 == MAX_READ {
        // One line longer than MAX_READ (a huge tool output, never a usage
        // record): skipped; its rest fails to parse and is skipped too.
        complete = buf.len();
    }
    let mut records = Vec::new();
    for line in buf[..complete].split(|b| *b == b'\n') {
        if line.is_empty() || !contains(line, needle) {
            continue;
        }
        if let Some(record) = parse(line, &mut cursor.carry) {
            records.push(record);
        }
    }
    cursor.offset += complete as u64;
    let done = complete == 0 || cursor.offset == size;
    // A partial read (MAX_READ, the budget, or a line still being written)
    // leaves the size unmatched so the next refresh reads on.
    cursor.size = if cursor.offset == size {
        size
    } else {
        cursor.offset
    };
    cursor.mtime_ns = mtime_ns;
    Ok(Some((cursor, records, done)))
}

/// The `.jsonl` files in `dir` and in `<each folder of dir>/<nested>`
/// (the agents' subagent records), modified since `since_ms`, sorted.
fn recent_jsonl(dir: &Path, nested: &str, since_ms: i64) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(meta) = entry.metadata() else { continue };
        if meta.is_dir() {
            if let Ok(sub) = std::fs::read_dir(path.join(nested)) {
                out.extend(
                    sub.flatten()
                        .map(|e| e.path())
                        .filter(|p| is_recent_jsonl(p, since_ms)),
                );
            }
        } else if is_recent_jsonl(&path, since_ms) {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// Whether `path` is a `.jsonl` file modified since `since_ms`.
fn is_recent_jsonl(path: &Path, since_ms: i64) -> bool {
    path.extension().is_some_and(|e| e == "jsonl")
        && std::fs::metadata(path)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .is_some_and(|d| d.as_millis() as i64 >= since_ms)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || haystack.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests;
