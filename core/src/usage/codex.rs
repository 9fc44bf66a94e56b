//! Codex's records: one JSONL "rollout" per conversation in
//! `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`, for every
//! checkout. The first line (`session_meta`) names the conversation's
//! `cwd`: that is how a rollout is attributed to a session (once; the
//! answer is remembered in the store, also for rollouts of no session).
//! `event_msg` lines of type `token_count` carry the conversation's
//! running totals (`info.total_token_usage`: `input_tokens`, which include
//! `cached_input_tokens`, `output_tokens`); each total minus the previous
//! is what the model call in between spent. Codex records no cost.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{parse_timestamp_ms, refresh_lines, Budget, Places, Record, Tally, UsageError};
use crate::clock::civil_from_days;
use crate::store::{SessionRow, Store, NO_SESSION};

/// A rollout's first line can hold the whole system prompt; read at most
/// this much of it.
const MAX_META_LINE: u64 = 4 * 1024 * 1024;

pub(super) fn refresh(
    store: &Store,
    budget: &Budget,
    places: &Places,
    sessions: &[SessionRow],
) -> Result<(), UsageError> {
    let Some(codex_home) = &places.codex_home else {
        return Ok(());
    };
    let Some(since) = sessions.iter().map(|s| s.created_at - 1000).min() else {
        return Ok(());
    };
    for path in rollouts(&codex_home.join("sessions"), since, crate::store::now_ms()) {
        let key = path.to_string_lossy().into_owned();
        let owner = match store.usage_source_owner(&key)? {
            Some(owner) => owner,
            None => match attribute(store, &path)? {
                Some(owner) => owner,
                None => continue, // its first line is not complete yet
            },
        };
        let Some(session) = sessions.iter().find(|s| s.short_id == owner) else {
            // No session's, or another repository's (read when that one is
            // listed): remembered, so its first line is read only once.
            store.claim_usage_source(&owner, &key)?;
            continue;
        };
        let since = session.created_at - 1000;
        refresh_lines(
            store,
            budget,
            session,
            &path,
            b"token_count",
            |line, carry| parse_line(line, carry, since),
        )?;
    }
    Ok(())
}

/// The session a new rollout belongs to (by its `cwd` and start time), or
/// [`NO_SESSION`]; `None` while its first line is incomplete.
fn attribute(store: &Store, path: &Path) -> Result<Option<String>, UsageError> {
    use std::io::{BufRead, Read};
    let io_err = |source| UsageError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::open(path).map_err(io_err)?;
    let mut first = Vec::new();
    std::io::BufReader::new(file.take(MAX_META_LINE))
        .read_until(b'\n', &mut first)
        .map_err(io_err)?;
    if first.last() != Some(&b'\n') {
        return Ok((first.len() as u64 >= MAX_META_LINE).then(|| NO_SESSION.to_string()));
    }
    let Some((cwd, started)) = session_meta(&first) else {
        return Ok(Some(NO_SESSION.to_string()));
    };
    // The latest session in that folder created before the conversation
    // began (a folder can be reused by a later session of the same name).
    let owner = store
        .sessions_in_worktree(&cwd)?
        .into_iter()
        .rfind(|s| s.created_at - 1000 <= started)
        .map_or_else(|| NO_SESSION.to_string(), |s| s.short_id);
    Ok(Some(owner))
}

/// `(cwd, start time)` of a rollout's `session_meta` line.
pub fn session_meta(line: &[u8]) -> Option<(String, i64)> {
    let v: Value = serde_json::from_slice(line).ok()?;
    if v["type"] != "session_meta" {
        return None;
    }
    let payload = &v["payload"];
    let cwd = payload["cwd"].as_str()?.to_string();
    let at = payload["timestamp"]
        .as_str()
        .or(v["timestamp"].as_str())
        .and_then(parse_timestamp_ms)?;
    Some((cwd, at))
}

/// The id of the newest conversation Codex had in `worktree` (its path
/// as stored or as Codex sees it after resolving symbolic links) since
/// `since_ms`: the `session_meta` id of the most recently written rollout
/// whose `cwd` is the worktree. What `codex resume <id>` takes.
pub fn latest_conversation(codex_home: &Path, worktree: &Path, since_ms: i64) -> Option<String> {
    use std::io::{BufRead, Read};
    let mut paths = vec![worktree.to_string_lossy().into_owned()];
    if let Ok(real) = worktree.canonicalize() {
        paths.push(real.to_string_lossy().into_owned());
    }
    let mut found: Option<(std::time::SystemTime, String)> = None;
    for path in rollouts(
        &codex_home.join("sessions"),
        since_ms,
        crate::store::now_ms(),
    ) {
        let Ok(file) = std::fs::File::open(&path) else {
            continue;
        };
        let mut first = Vec::new();
        if std::io::BufReader::new(file.take(MAX_META_LINE))
            .read_until(b'\n', &mut first)
            .is_err()
        {
            continue;
        }
        let Some((cwd, _)) = session_meta(&first) else {
            continue;
        };
        let id = serde_json::from_slice::<Value>(&first)
            .ok()
            .and_then(|v| v["payload"]["id"].as_str().map(str::to_string));
        let modified = std::fs::metadata(&path).and_then(|m| m.modified()).ok();
        if let (true, Some(id), Some(modified)) = (paths.contains(&cwd), id, modified) {
            if found.as_ref().is_none_or(|(t, _)| modified > *t) {
                found = Some((modified, id));
            }
        }
    }
    found.map(|(_, id)| id)
}

/// Rollout files under `sessions` (the `YYYY/MM/DD` folders from the day
/// before `since_ms`, at most 400 days back, to the day after `now_ms`)
/// modified since `since_ms`.
fn rollouts(sessions: &Path, since_ms: i64, now_ms: i64) -> Vec<PathBuf> {
    let mut out = Vec::new();
    // At most a year and a bit of folders.
    let last_day = now_ms.div_euclid(86_400_000) + 1;
    let first_day = (since_ms.div_euclid(86_400_000) - 1).max(last_day - 400);
    for day in first_day..=last_day {
        let (y, m, d) = civil_from_days(day);
        let dir = sessions.join(format!("{y:04}/{m:02}/{d:02}"));
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if !(name.starts_with("rollout-") && name.ends_with(".jsonl")) {
                continue;
            }
            let recent = entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .is_some_and(|t| t.as_millis() as i64 >= since_ms);
            if recent {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The tokens spent since the previous `token_count` line (its totals are
/// kept in `carry`); `None` for other lines and lines before `since_ms`.
pub fn parse_line(line: &[u8], carry: &mut Value, since_ms: i64) -> Option<Record> {
    let v: Value = serde_json::from_slice(line).ok()?;
    if v["type"] != "event_msg" || v["payload"]["type"] != "token_count" {
        return None;
    }
    let total = v["payload"]["info"]["total_token_usage"].as_object()?;
    let at = parse_timestamp_ms(v["timestamp"].as_str()?)?;
    let n = |k: &str| total.get(k).and_then(Value::as_i64).unwrap_or(0).max(0);
    let cached = n("cached_input_tokens");
    let cache_write = n("cache_write_input_tokens");
    let totals = Tally {
        input: (n("input_tokens") - cached - cache_write).max(0),
        output: n("output_tokens"),
        cache_read: cached,
        cache_write,
        cost_usd: None,
    };
    let previous = Tally::from_json(carry).unwrap_or_default();
    *carry = totals.to_json();
    let delta = totals.minus(&previous);
    // Totals only grow within a conversation; if they went down, a new
    // count began.
    let delta =
        if delta.input < 0 || delta.output < 0 || delta.cache_read < 0 || delta.cache_write < 0 {
            totals
        } else {
            delta
        };
    (at >= since_ms).then_some((at, delta))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_days_round_trip() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_788), (2026, 12, 1));
        assert_eq!(civil_from_days(19_782), (2024, 2, 29));
    }
}
