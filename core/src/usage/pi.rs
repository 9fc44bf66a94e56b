//! Pi's records (`@mariozechner/pi-coding-agent`): one JSONL session per
//! conversation in `$PI_CODING_AGENT_DIR` (else `~/.pi/agent`)
//! `/sessions/--<cwd without its leading "/", every "/", "\" and ":" as
//! "-">--/<time>_<id>.jsonl`. Each assistant message (`"type":"message"`,
//! `message.role` `assistant`) carries Pi's own accounting in
//! `message.usage`: `input` (without cache reads and writes), `output`,
//! `cacheRead`, `cacheWrite`, and `cost.total` in US dollars from the
//! model's prices (0 when it has none).

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{parse_timestamp_ms, refresh_lines, Budget, Places, Record, Tally, UsageError};
use crate::store::{SessionRow, Store};

/// Pi's folder name for a working directory.
pub fn session_dir_name(cwd: &str) -> String {
    let trimmed = cwd
        .strip_prefix('/')
        .or_else(|| cwd.strip_prefix('\\'))
        .unwrap_or(cwd);
    let safe: String = trimmed
        .chars()
        .map(|c| {
            if matches!(c, '/' | '\\' | ':') {
                '-'
            } else {
                c
            }
        })
        .collect();
    format!("--{safe}--")
}

pub(super) fn refresh(
    store: &Store,
    budget: &Budget,
    places: &Places,
    session: &SessionRow,
) -> Result<(), UsageError> {
    let Some(agent_dir) = &places.pi_agent_dir else {
        return Ok(());
    };
    let since = session.created_at - 1000;
    let mut dirs = vec![session.worktree_path.clone()];
    if let Ok(real) = session.worktree_path.canonicalize() {
        if real != session.worktree_path {
            dirs.push(real);
        }
    }
    for cwd in dirs {
        let folder = agent_dir
            .join("sessions")
            .join(session_dir_name(&cwd.to_string_lossy()));
        for path in sessions_in(&folder) {
            refresh_lines(store, budget, session, &path, b"\"usage\"", |line, _| {
                parse_line(line, since)
            })?;
        }
    }
    Ok(())
}

fn sessions_in(folder: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    out.sort();
    out
}

/// The tokens of one assistant message line; `None` for other lines and
/// lines before `since_ms`.
pub fn parse_line(line: &[u8], since_ms: i64) -> Option<Record> {
    let v: Value = serde_json::from_slice(line).ok()?;
    if v["type"] != "message" || v["message"]["role"] != "assistant" {
        return None;
    }
    let usage = v["message"]["usage"].as_object()?;
    let at = v["timestamp"]
        .as_str()
        .and_then(parse_timestamp_ms)
        .or_else(|| v["message"]["timestamp"].as_i64())?;
    if at < since_ms {
        return None;
    }
    let n = |k: &str| usage.get(k).and_then(Value::as_i64).unwrap_or(0).max(0);
    Some((
        at,
        Tally {
            input: n("input"),
            output: n("output"),
            cache_read: n("cacheRead"),
            cache_write: n("cacheWrite"),
            cost_usd: usage.get("cost").and_then(|c| c["total"].as_f64()),
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folder_names_match_the_cli() {
        // Observed: Pi 0.73.1's folder for this working directory.
        assert_eq!(
            session_dir_name("/tmp/owt-e2e-YqKgZY/app.worktrees/pi-tokens"),
            "--tmp-owt-e2e-YqKgZY-app.worktrees-pi-tokens--"
        );
    }
}
