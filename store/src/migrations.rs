//! Schema migrations, applied in order; `PRAGMA user_version` holds the
//! number of the last one applied.

use std::path::Path;

use rusqlite::{Connection, TransactionBehavior};

use super::{Result, StoreError};

const MIGRATIONS: &[&str] = &[
    // 1: repositories, sessions, facts, notes, messages, events.
    "CREATE TABLE repos (
        id INTEGER PRIMARY KEY,
        common_dir TEXT NOT NULL UNIQUE,
        main_worktree TEXT NOT NULL,
        created_at INTEGER NOT NULL
    );
    CREATE TABLE sessions (
        id INTEGER PRIMARY KEY,
        repo_id INTEGER NOT NULL REFERENCES repos(id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        short_id TEXT NOT NULL UNIQUE,
        task TEXT NOT NULL,
        branch TEXT NOT NULL,
        base_branch TEXT NOT NULL,
        worktree_path TEXT NOT NULL,
        provider TEXT NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('worktree', 'branch')),
        created_at INTEGER NOT NULL,
        UNIQUE (repo_id, name)
    );
    CREATE TABLE facts (
        session_id INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        kind TEXT NOT NULL,
        value TEXT NOT NULL,
        observed_at INTEGER NOT NULL,
        PRIMARY KEY (session_id, kind)
    );
    CREATE TABLE notes (
        id INTEGER PRIMARY KEY,
        repo_id INTEGER NOT NULL REFERENCES repos(id) ON DELETE CASCADE,
        text TEXT NOT NULL,
        created_at INTEGER NOT NULL
    );
    CREATE TABLE messages (
        id INTEGER PRIMARY KEY,
        repo_id INTEGER NOT NULL REFERENCES repos(id) ON DELETE CASCADE,
        from_session TEXT,
        to_session TEXT,
        body TEXT NOT NULL,
        created_at INTEGER NOT NULL
    );
    CREATE TABLE message_reads (
        message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
        session_name TEXT NOT NULL,
        PRIMARY KEY (message_id, session_name)
    );
    CREATE TABLE events (
        id INTEGER PRIMARY KEY,
        repo_id INTEGER NOT NULL REFERENCES repos(id) ON DELETE CASCADE,
        session_name TEXT NOT NULL,
        kind TEXT NOT NULL,
        detail TEXT NOT NULL,
        at INTEGER NOT NULL
    );
    CREATE INDEX events_at ON events(at);
    CREATE INDEX messages_repo ON messages(repo_id, id);",
    // 2: repository files the user trusts (`owt trust`): a file's canonical
    // path and the SHA-256 of the content trusted; any other content is not.
    "CREATE TABLE trusted_files (
        path TEXT PRIMARY KEY,
        sha256 TEXT NOT NULL,
        trusted_at INTEGER NOT NULL
    );",
    // 3: tokens the agents recorded (per session and local day; kept after
    // the session is deleted, for `owt usage`), and how far each of the
    // agents' record files has been read.
    "CREATE TABLE usage (
        repo_id INTEGER NOT NULL REFERENCES repos(id) ON DELETE CASCADE,
        session_short_id TEXT NOT NULL,
        session_name TEXT NOT NULL,
        provider TEXT NOT NULL,
        day TEXT NOT NULL,
        input_tokens INTEGER NOT NULL DEFAULT 0,
        output_tokens INTEGER NOT NULL DEFAULT 0,
        cache_read_tokens INTEGER NOT NULL DEFAULT 0,
        cache_write_tokens INTEGER NOT NULL DEFAULT 0,
        cost_usd REAL,
        updated_at INTEGER NOT NULL,
        PRIMARY KEY (session_short_id, day)
    );
    CREATE INDEX usage_repo_day ON usage(repo_id, day);
    CREATE TABLE usage_sources (
        session_short_id TEXT NOT NULL,
        path TEXT NOT NULL,
        size INTEGER NOT NULL,
        mtime_ns INTEGER NOT NULL,
        offset INTEGER NOT NULL,
        carry TEXT NOT NULL,
        PRIMARY KEY (session_short_id, path)
    );
    CREATE INDEX usage_sources_path ON usage_sources(path);",
    // 4: scale on one machine. Each session's block of TCP ports (held
    // until the session is removed); leases that keep two processes from
    // starting the same queued session; the peak resident memory each
    // agent reached (kept after its session is gone: owt learns from it
    // how much a provider's agent needs).
    "CREATE TABLE port_blocks (
        session_id INTEGER PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
        first_port INTEGER NOT NULL,
        count INTEGER NOT NULL CHECK (count > 0)
    );
    CREATE TABLE start_leases (
        session_id INTEGER PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
        owner TEXT NOT NULL,
        expires_at INTEGER NOT NULL
    );
    CREATE TABLE agent_peaks (
        short_id TEXT PRIMARY KEY,
        provider TEXT NOT NULL,
        peak_bytes INTEGER NOT NULL,
        observed_at INTEGER NOT NULL
    );
    CREATE INDEX agent_peaks_provider ON agent_peaks(provider, observed_at);",
];

/// The schema version this build writes.
pub const SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

pub(super) fn migrate(conn: &mut Connection, path: &Path) -> Result<()> {
    let current: u32 = conn.pragma_query_value(None, "user_version", |row| row.get(0))?;
    if current == SCHEMA_VERSION {
        return Ok(());
    }
    if current > SCHEMA_VERSION {
        return Err(StoreError::TooNew {
            path: path.to_path_buf(),
            found: current,
            supported: SCHEMA_VERSION,
        });
    }
    // Another process may be migrating at the same time: take the write lock
    // first, then re-read the version.
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let current: u32 = tx.pragma_query_value(None, "user_version", |row| row.get(0))?;
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(current as usize) {
        tx.execute_batch(sql)?;
        tx.pragma_update(None, "user_version", (i + 1) as u32)?;
    }
    tx.commit()?;
    Ok(())
}
