//! `owt db health|purge|vacuum`: the store's size, counts and integrity,
//! and its upkeep.

use anyhow::Context as _;
use owt_protocol::{DbHealth, DbPurge};

use super::owt_home;
use crate::store::Store;

/// `db health --check` fails above these.
const MAX_DB_BYTES: u64 = 256 * 1024 * 1024;
const MAX_WAL_BYTES: u64 = 64 * 1024 * 1024;
const MAX_MESSAGES: u64 = 100_000;

fn open() -> anyhow::Result<Store> {
    Ok(Store::open(&owt_home()?)?)
}

/// Size, row counts, WAL and integrity of the store; with `check`, the
/// thresholds exceeded in `problems`.
pub fn health(check: bool) -> anyhow::Result<DbHealth> {
    let store = open()?;
    let path = store.path().to_path_buf();
    let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    let wal = std::fs::metadata(path.with_extension("db-wal"))
        .map(|m| m.len())
        .unwrap_or(0);
    let mut health = DbHealth {
        path: path.display().to_string(),
        schema_version: store.schema_version()?,
        size_bytes: size,
        wal_bytes: wal,
        journal_mode: store.journal_mode()?,
        integrity: store.integrity_check()?,
        repositories: store.count("repos")?,
        sessions: store.count("sessions")?,
        facts: store.count("facts")?,
        messages: store.count("messages")?,
        notes: store.count("notes")?,
        events: store.count("events")?,
        usage_rows: store.count("usage")?,
        usage_rows_deleted_sessions: store.usage_rows_of_deleted_sessions()?,
        usage_sources: store.count("usage_sources")?,
        usage_sources_stale: store.stale_usage_sources()?.len() as u64,
        problems: Vec::new(),
    };
    if check {
        health.problems = problems(&health);
    }
    Ok(health)
}

/// The thresholds `health` exceeds.
fn problems(health: &DbHealth) -> Vec<String> {
    let mut problems = Vec::new();
    if health.integrity != "ok" {
        problems.push(format!("integrity check: {}", health.integrity));
    }
    let size = health.size_bytes;
    if size > MAX_DB_BYTES {
        problems.push(format!(
            "database is {size} bytes (limit {MAX_DB_BYTES}); run `owt db vacuum`"
        ));
    }
    let wal = health.wal_bytes;
    if wal > MAX_WAL_BYTES {
        problems.push(format!(
            "WAL is {wal} bytes (limit {MAX_WAL_BYTES}); run `owt db vacuum`"
        ));
    }
    if health.messages > MAX_MESSAGES {
        problems.push(format!(
            "{} messages (limit {MAX_MESSAGES}); run `owt db purge`",
            health.messages
        ));
    }
    if health.usage_sources_stale > 0 {
        problems.push(format!(
            "{} read positions of agent records no session needs; run `owt db purge`",
            health.usage_sources_stale
        ));
    }
    problems
}

/// Deletes messages, history, trash folders (what `owt delete` kept) and
/// deleted sessions' token counts older than `days`, and the read
/// positions in agent records no session needs.
pub fn purge(days: u32) -> anyhow::Result<DbPurge> {
    let store = open()?;
    let (messages, events) = store.purge(days)?;
    let usage = store.purge_usage(crate::store::now_ms() - i64::from(days) * 86_400_000)?;
    let home = owt_home()?;
    let trash = super::trash::purge(&home, days)
        .with_context(|| format!("emptying the trash under {}", home.display()))?
        .into_iter()
        .map(|p| p.display().to_string())
        .collect();
    Ok(DbPurge {
        days,
        messages_deleted: messages,
        events_deleted: events,
        trash_deleted: trash,
        usage_rows_deleted: usage.rows,
        usage_sources_deleted: usage.sources,
    })
}

/// Checkpoints the WAL and compacts the store; its size after.
pub fn vacuum() -> anyhow::Result<u64> {
    let store = open()?;
    store.vacuum()?;
    Ok(std::fs::metadata(store.path())
        .map(|m| m.len())
        .unwrap_or(0))
}
