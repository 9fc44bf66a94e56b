//! Gemini CLI's records (`@google/gemini-cli` 0.61): one JSONL chat
//! record per conversation in `$GEMINI_CLI_HOME` (else `~`)
//! `/.gemini/tmp/<project>/chats/session-<time>-<id>.jsonl` (a subagent's
//! in `chats/<parent session id>/<id>.jsonl`). `<project>` is the short
//! name Gemini CLI gave the working directory in `~/.gemini/projects.json`
//! (`{"projects": {"<cwd>": "<name>"}}`; `tmp/<name>/.project_root` holds
//! the directory back). Each model answer is a `"type":"gemini"` message
//! line with the API's `usageMetadata` as `tokens`: `input`
//! (`promptTokenCount`, cached tokens included), `output`
//! (`candidatesTokenCount`), `cached`, `thoughts`, `tool`
//! (`toolUsePromptTokenCount`). A message is written again, whole, when it
//! grows (its tool calls, their results): the same `id`, the same tokens.
//! `{"$set": …}` lines update the conversation's metadata (and may repeat
//! its messages): never counted. No cost.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{
    latest_of, parse_timestamp_ms, recent_jsonl, refresh_lines, Budget, Places, Record, Tally,
    UsageError,
};
use crate::store::{SessionRow, Store};

/// The folders under `<gemini dir>/tmp` that hold the chat records of a
/// working directory (its path as stored and, if different, as the agent
/// sees it after resolving symbolic links): the names `projects.json`
/// gives them, when `.project_root` does not name another directory.
pub fn project_dirs(gemini_dir: &Path, worktree: &Path) -> Vec<PathBuf> {
    let Ok(text) = std::fs::read(gemini_dir.join("projects.json")) else {
        return Vec::new();
    };
    let Ok(registry) = serde_json::from_slice::<Value>(&text) else {
        return Vec::new();
    };
    let mut paths = vec![worktree.to_path_buf()];
    if let Ok(real) = worktree.canonicalize() {
        if real != worktree {
            paths.push(real);
        }
    }
    let mut dirs = Vec::new();
    for path in paths {
        let Some(name) = registry["projects"][path.to_string_lossy().as_ref()].as_str() else {
            continue;
        };
        // Its own names only: no way out of tmp/.
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
            continue;
        }
        let dir = gemini_dir.join("tmp").join(name);
        let owner = std::fs::read_to_string(dir.join(".project_root")).ok();
        if owner.is_some_and(|o| Path::new(o.trim()) != path) || dirs.contains(&dir) {
            continue;
        }
        dirs.push(dir);
    }
    dirs
}

pub(super) fn refresh(
    store: &Store,
    budget: &Budget,
    places: &Places,
    session: &SessionRow,
) -> Result<(), UsageError> {
    let Some(gemini_dir) = &places.gemini_dir else {
        return Ok(());
    };
    // A worktree path can be reused by a later session of the same name
    // (and keeps its project name): only what was written since this one
    // was created is its own.
    let since = session.created_at - 1000;
    for dir in project_dirs(gemini_dir, &session.worktree_path) {
        // chats/session-*.jsonl, chats/<parent session>/*.jsonl
        for path in recent_jsonl(&dir.join("chats"), "", since) {
            refresh_lines(
                store,
                budget,
                session,
                &path,
                b"\"tokens\"",
                |line, carry| parse_line(line, carry, since),
            )?;
        }
    }
    Ok(())
}

/// The id of the newest main conversation Gemini CLI recorded in
/// `worktree` since `since_ms` (the `sessionId` on the first line of its
/// `chats/session-*.jsonl`): what `gemini --resume <id>` takes.
pub fn latest_conversation(gemini_dir: &Path, worktree: &Path, since_ms: i64) -> Option<String> {
    use std::io::BufRead;
    project_dirs(gemini_dir, worktree)
        .iter()
        .flat_map(|dir| recent_jsonl(&dir.join("chats"), "", since_ms))
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("session-"))
        })
        .filter_map(|path| {
            let modified = std::fs::metadata(&path).ok()?.modified().ok()?;
            let mut first = String::new();
            std::io::BufReader::new(std::fs::File::open(&path).ok()?)
                .read_line(&mut first)
                .ok()?;
            let v: Value = serde_json::from_str(&first).ok()?;
            Some((modified, v["sessionId"].as_str()?.to_string()))
        })
        .max_by_key(|(modified, _)| *modified)
        .map(|(_, id)| id)
}

/// The tokens one chat record line adds, given what earlier lines of the
/// same message counted (kept in `carry`); `None` for lines that are not
/// a model message with tokens, or older than `since_ms`.
pub fn parse_line(line: &[u8], carry: &mut Value, since_ms: i64) -> Option<Record> {
    let v: Value = serde_json::from_slice(line).ok()?;
    if v["type"] != "gemini" {
        return None;
    }
    let tokens = v["tokens"].as_object()?;
    let at = parse_timestamp_ms(v["timestamp"].as_str()?)?;
    if at < since_ms {
        return None;
    }
    let n = |k: &str| tokens.get(k).and_then(Value::as_i64).unwrap_or(0).max(0);
    let cached = n("cached");
    let tally = Tally {
        // The prompt's count includes the cached part; the tool-use
        // prompt is counted apart.
        input: (n("input") - cached).max(0) + n("tool"),
        output: n("output") + n("thoughts"),
        cache_read: cached,
        cache_write: 0,
        cost_usd: None,
    };
    match v["id"].as_str() {
        Some(id) => Some((at, latest_of(carry, id.to_string(), tally))),
        None => Some((at, tally)),
    }
}
