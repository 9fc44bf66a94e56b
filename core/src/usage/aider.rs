//! Aider's records. After each reply Aider reports the message's tokens
//! and, when it knows the model's prices, its cost: on screen and in the
//! chat history of the checkout (`.aider.chat.history.md`:
//! `> Tokens: 1.1k sent, 44 received. Cost: $0.0038 message, $0.0038
//! session.`), with counts above 999 rounded (`1.1k`). owt starts Aider
//! with `AIDER_ANALYTICS_LOG` pointing at `$OWT_HOME/usage/<id>.aider.jsonl`
//! (a local file; analytics stay off), where the same report is exact: a
//! `message_send` event with `prompt_tokens`, `completion_tokens` and
//! `cost`. That log is read when it exists, else the chat history.
//!
//! Aider reports what the API returned when it returns usage (it does for
//! replies that are not streamed, `--no-stream`); for streamed replies it
//! reports its own count of the text sent and received. It reports no
//! cache reads: its "sent" counts all input.

use std::path::PathBuf;

use serde_json::Value;

use super::{refresh_lines, Budget, Places, Record, Tally, UsageError};
use crate::store::{now_ms, SessionRow, Store};

/// The environment variable (Aider's `--analytics-log`) owt sets.
pub const ANALYTICS_LOG_VAR: &str = "AIDER_ANALYTICS_LOG";

/// The chat history Aider writes in its working directory.
pub const CHAT_HISTORY: &str = ".aider.chat.history.md";

/// `$OWT_HOME/usage/<short id>.aider.jsonl`.
pub fn analytics_log(places: &Places, short_id: &str) -> PathBuf {
    places.owt_usage.join(format!("{short_id}.aider.jsonl"))
}

pub(super) fn refresh(
    store: &Store,
    budget: &Budget,
    places: &Places,
    session: &SessionRow,
) -> Result<(), UsageError> {
    let log = analytics_log(places, &session.short_id);
    if log.exists() {
        refresh_lines(
            store,
            budget,
            session,
            &log,
            b"\"message_send\"",
            |line, _| parse_analytics_line(line),
        )?;
    } else {
        let history = session.worktree_path.join(CHAT_HISTORY);
        let read_at = now_ms();
        refresh_lines(store, budget, session, &history, b"> ", |line, _| {
            parse_history_line(line, read_at)
        })?;
    }
    Ok(())
}

/// Creates `$OWT_HOME/usage` so Aider can write its log there.
pub fn prepare(places: &Places) -> std::io::Result<()> {
    std::fs::create_dir_all(&places.owt_usage)
}

/// A `message_send` event of the analytics log.
pub fn parse_analytics_line(line: &[u8]) -> Option<Record> {
    let v: Value = serde_json::from_slice(line).ok()?;
    if v["event"] != "message_send" {
        return None;
    }
    let p = &v["properties"];
    let at = v["time"].as_i64()? * 1000;
    Some((
        at,
        Tally {
            input: p["prompt_tokens"].as_i64()?.max(0),
            output: p["completion_tokens"].as_i64()?.max(0),
            cache_read: 0,
            cache_write: 0,
            // Aider logs 0 when it does not know the model's prices (and
            // then prints no cost): unknown, not free.
            cost_usd: p["cost"].as_f64().filter(|c| *c != 0.0),
        },
    ))
}

/// A `> Tokens: …` or `> Cost: …` line of the chat history (the cost is
/// on the tokens' line, or on the next one when Aider reports cache
/// tokens); `at_ms` is when it was read (the history has no time per
/// line).
pub fn parse_history_line(line: &[u8], at_ms: i64) -> Option<Record> {
    let line = std::str::from_utf8(line).ok()?.trim();
    let body = line.strip_prefix('>')?.trim();
    let mut tally = Tally::default();
    let mut found = false;
    if let Some(tokens) = body.strip_prefix("Tokens:") {
        let tokens = tokens.split("Cost:").next().unwrap_or_default();
        for part in tokens.split(',') {
            let part = part.trim().trim_end_matches('.');
            let (number, what) = part.split_once(' ')?;
            let n = count(number)?;
            match what.trim() {
                "sent" => tally.input += n,
                "received" => tally.output += n,
                // Part of "sent" already.
                "cache write" | "cache hit" => {}
                _ => return None,
            }
        }
        found = true;
    }
    if let Some((_, cost)) = body.split_once("Cost: $") {
        let amount = cost.split_whitespace().next()?;
        if cost.split_whitespace().nth(1)?.starts_with("message") {
            tally.cost_usd = Some(amount.parse().ok()?);
            found = true;
        }
    }
    found.then_some((at_ms, tally))
}

/// Aider's token count: `593`, `1.1k`, `12k`.
fn count(text: &str) -> Option<i64> {
    match text.strip_suffix('k') {
        Some(k) => Some((k.parse::<f64>().ok()? * 1000.0).round() as i64),
        None => text.parse().ok(),
    }
}
