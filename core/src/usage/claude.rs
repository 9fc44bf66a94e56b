//! Claude Code's records: one JSONL transcript per conversation in
//! `<config dir>/projects/<mangled cwd>/<conversation id>.jsonl` (and its
//! subagents' in `<conversation id>/subagents/*.jsonl`). Each
//! `"type":"assistant"` line carries the API's `message.usage`
//! (`input_tokens`, `cache_creation_input_tokens`,
//! `cache_read_input_tokens`, `output_tokens`); a message with several
//! content blocks is written as several lines with the same `message.id`,
//! each repeating the usage, the last one final. Claude Code 2.x records
//! no cost (older versions wrote `costUSD`, read when present).

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{
    latest_of, parse_timestamp_ms, recent_jsonl, refresh_lines, Budget, Places, Record, Tally,
    UsageError,
};
use crate::store::{SessionRow, Store};

/// Claude Code's folder name for a project path: every character other
/// than an ASCII letter or digit becomes `-` (per UTF-16 unit, as in
/// JavaScript); names longer than 200 are cut and suffixed with a hash.
pub fn project_dir_name(path: &str) -> String {
    const MAX: usize = 200;
    let mangled: String = path
        .encode_utf16()
        .map(|u| match char::from_u32(u32::from(u)) {
            Some(c) if c.is_ascii_alphanumeric() => c,
            _ => '-',
        })
        .collect();
    if mangled.len() <= MAX {
        return mangled;
    }
    // JavaScript's `(h << 5) - h + code | 0` over UTF-16 units, printed in
    // base 36 of its absolute value.
    let mut h: i32 = 0;
    for u in path.encode_utf16() {
        h = h.wrapping_shl(5).wrapping_sub(h).wrapping_add(i32::from(u));
    }
    format!(
        "{}-{}",
        &mangled[..MAX],
        base36(u64::from(h.unsigned_abs()))
    )
}

fn base36(mut n: u64) -> String {
    const DIGITS: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    if n == 0 {
        return "0".into();
    }
    let mut out = Vec::new();
    while n > 0 {
        out.push(DIGITS[(n % 36) as usize]);
        n /= 36;
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

/// The newest Claude Code transcript (`*.jsonl`) of `worktree`: its
/// conversation id is the file's stem (`claude --resume ID`).
pub fn newest_transcript(config_dir: &Path, worktree: &Path) -> Option<PathBuf> {
    project_dirs(config_dir, worktree)
        .iter()
        .filter_map(|dir| {
            std::fs::read_dir(dir)
                .ok()?
                .filter_map(Result::ok)
                .filter(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
                .filter_map(|e| Some((e.path(), e.metadata().ok()?.modified().ok()?)))
                .max_by_key(|(_, modified)| *modified)
        })
        .max_by_key(|(_, modified)| *modified)
        .map(|(path, _)| path)
}

/// The transcript folders of a worktree (its path as stored and, if
/// different, as the agent sees it after resolving symbolic links).
pub fn project_dirs(config_dir: &Path, worktree: &Path) -> Vec<PathBuf> {
    let projects = config_dir.join("projects");
    let mut dirs = vec![projects.join(project_dir_name(&worktree.to_string_lossy()))];
    if let Ok(real) = worktree.canonicalize() {
        let dir = projects.join(project_dir_name(&real.to_string_lossy()));
        if !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    dirs
}

pub(super) fn refresh(
    store: &Store,
    budget: &Budget,
    places: &Places,
    session: &SessionRow,
) -> Result<(), UsageError> {
    let Some(config) = &places.claude_config else {
        return Ok(());
    };
    // A worktree path can be reused by a later session of the same name:
    // only what was written since this one was created is its own.
    let since = session.created_at - 1000;
    for dir in project_dirs(config, &session.worktree_path) {
        // <conversation>.jsonl, <conversation>/subagents/*.jsonl
        for path in recent_jsonl(&dir, "subagents", since) {
            refresh_lines(
                store,
                budget,
                session,
                &path,
                b"\"usage\"",
                |line, carry| parse_line(line, carry, since),
            )?;
        }
    }
    Ok(())
}

/// The tokens one transcript line adds, given what earlier lines of the
/// same message counted (kept in `carry`); `None` for lines that are not
/// an assistant message with usage, or older than `since_ms`.
pub fn parse_line(line: &[u8], carry: &mut Value, since_ms: i64) -> Option<Record> {
    let v: Value = serde_json::from_slice(line).ok()?;
    if v["type"] != "assistant" {
        return None;
    }
    let usage = v["message"]["usage"].as_object()?;
    let at = parse_timestamp_ms(v["timestamp"].as_str()?)?;
    if at < since_ms {
        return None;
    }
    let n = |k: &str| usage.get(k).and_then(Value::as_i64).unwrap_or(0).max(0);
    let tally = Tally {
        input: n("input_tokens"),
        output: n("output_tokens"),
        cache_read: n("cache_read_input_tokens"),
        cache_write: n("cache_creation_input_tokens"),
        cost_usd: v["costUSD"].as_f64(),
    };
    let Some(id) = v["message"]["id"].as_str() else {
        return Some((at, tally));
    };
    let key = match v["requestId"].as_str() {
        Some(req) => format!("{id}:{req}"),
        None => id.to_string(),
    };
    Some((at, latest_of(carry, key, tally)))
}
