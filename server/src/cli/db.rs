//! `owt db health|purge|vacuum`.

use std::process::ExitCode;

use anyhow::Context as _;
use owt_protocol::{DbHealth, DbPurge};

use crate::ops::owt_home;
use crate::store::Store;

/// `db health --check` fails above these.
const MAX_DB_BYTES: u64 = 256 * 1024 * 1024;
const MAX_WAL_BYTES: u64 = 64 * 1024 * 1024;
const MAX_MESSAGES: u64 = 100_000;

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Size, row counts (token counts and record read positions too), WAL
    /// and integrity of the store.
    Health {
        /// Exit non-zero when a threshold is exceeded or the integrity check fails (for CI).
        #[arg(long)]
        check: bool,
    },
    /// Delete messages, history, trash (files `owt delete` kept) and deleted sessions' token
    /// counts older than N days, and read positions of agent records no session needs.
    Purge {
        #[arg(long, default_value_t = 30)]
        days: u32,
    },
    /// Checkpoint the WAL and compact the database.
    Vacuum,
}

pub fn run(out: &super::Out, cmd: Command) -> anyhow::Result<ExitCode> {
    let store = Store::open(&owt_home()?)?;
    match cmd {
        Command::Health { check } => {
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
                if health.integrity != "ok" {
                    health
                        .problems
                        .push(format!("integrity check: {}", health.integrity));
                }
                if size > MAX_DB_BYTES {
                    health.problems.push(format!(
                        "database is {size} bytes (limit {MAX_DB_BYTES}); run `owt db vacuum`"
                    ));
                }
                if wal > MAX_WAL_BYTES {
                    health.problems.push(format!(
                        "WAL is {wal} bytes (limit {MAX_WAL_BYTES}); run `owt db vacuum`"
                    ));
                }
                if health.messages > MAX_MESSAGES {
                    health.problems.push(format!(
                        "{} messages (limit {MAX_MESSAGES}); run `owt db purge`",
                        health.messages
                    ));
                }
                if health.usage_sources_stale > 0 {
                    health.problems.push(format!(
                        "{} read positions of agent records no session needs; run `owt db purge`",
                        health.usage_sources_stale
                    ));
                }
            }
            out.emit(&health, || {
                let mut lines = vec![
                    format!("Store: {}", health.path),
                    format!(
                        "Schema version {}, journal {}, integrity {}",
                        health.schema_version, health.journal_mode, health.integrity
                    ),
                    format!(
                        "Size {} bytes, WAL {} bytes",
                        health.size_bytes, health.wal_bytes
                    ),
                    format!(
                        "{} repositories, {} sessions, {} facts, {} messages, {} notes, {} events",
                        health.repositories,
                        health.sessions,
                        health.facts,
                        health.messages,
                        health.notes,
                        health.events
                    ),
                    format!(
                        "Tokens: {} rows ({} of deleted sessions), {} record files read ({} no session needs)",
                        health.usage_rows,
                        health.usage_rows_deleted_sessions,
                        health.usage_sources,
                        health.usage_sources_stale
                    ),
                ];
                lines.extend(health.problems.iter().map(|p| format!("Problem: {p}")));
                lines.join("\n")
            })?;
            Ok(if health.problems.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
        Command::Purge { days } => {
            let (messages, events) = store.purge(days)?;
            let usage = store.purge_usage(crate::store::now_ms() - i64::from(days) * 86_400_000)?;
            let home = owt_home()?;
            let trash: Vec<String> = crate::ops::trash::purge(&home, days)
                .with_context(|| format!("emptying the trash under {}", home.display()))?
                .into_iter()
                .map(|p| p.display().to_string())
                .collect();
            let doc = DbPurge {
                days,
                messages_deleted: messages,
                events_deleted: events,
                trash_deleted: trash.clone(),
                usage_rows_deleted: usage.rows,
                usage_sources_deleted: usage.sources,
            };
            out.emit(&doc, || {
                format!(
                    "Deleted {messages} messages, {events} history events, {} trash folder{} and {} token count{} of deleted sessions older than {days} days, and {} read position{} no session needs.",
                    trash.len(),
                    if trash.len() == 1 { "" } else { "s" },
                    usage.rows,
                    if usage.rows == 1 { "" } else { "s" },
                    usage.sources,
                    if usage.sources == 1 { "" } else { "s" },
                )
            })?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Vacuum => {
            store.vacuum()?;
            let size = std::fs::metadata(store.path())
                .map(|m| m.len())
                .unwrap_or(0);
            out.emit(&serde_json::json!({"size_bytes": size}), || {
                format!("Compacted the store to {size} bytes.")
            })?;
            Ok(ExitCode::SUCCESS)
        }
    }
}
