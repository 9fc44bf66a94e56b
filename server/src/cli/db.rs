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
    /// Size, row counts, WAL and integrity of the store.
    Health {
        /// Exit non-zero when a threshold is exceeded or the integrity check fails (for CI).
        #[arg(long)]
        check: bool,
    },
    /// Delete messages, history and trash (files `owt delete` kept) older than N days.
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
            };
            out.emit(&doc, || {
                format!(
                    "Deleted {messages} messages, {events} history events and {} trash folder{} older than {days} days.",
                    trash.len(),
                    if trash.len() == 1 { "" } else { "s" }
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
