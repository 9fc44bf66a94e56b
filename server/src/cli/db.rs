//! `owt db health|purge|vacuum`.

use std::process::ExitCode;

use crate::ops::db;

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
            out.emit(&doc, || {
                format!(
                    "Deleted {} messages, {} history events and {trash} trash folder{} older than {days} days.",
                    doc.messages_deleted,
                    doc.events_deleted,
                    if trash == 1 { "" } else { "s" }
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
