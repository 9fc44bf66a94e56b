//! `owt db health|purge|vacuum`.

use std::process::ExitCode;

use crate::ops::db;

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
    match cmd {
        Command::Health { check } => {
            let health = db::health(check)?;
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
            let doc = db::purge(days)?;
            let trash = doc.trash_deleted.len();
            let (rows, sources) = (doc.usage_rows_deleted, doc.usage_sources_deleted);
            let s = |n: u64| if n == 1 { "" } else { "s" };
            out.emit(&doc, || {
                format!(
                    "Deleted {} messages, {} history events, {trash} trash folder{} and {rows} token count{} of deleted sessions older than {days} days, and {sources} read position{} no session needs.",
                    doc.messages_deleted,
                    doc.events_deleted,
                    s(trash as u64),
                    s(rows),
                    s(sources),
                )
            })?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Vacuum => {
            let size = db::vacuum()?;
            out.emit(&serde_json::json!({"size_bytes": size}), || {
                format!("Compacted the store to {size} bytes.")
            })?;
            Ok(ExitCode::SUCCESS)
        }
    }
}
