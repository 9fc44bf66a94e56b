//! The record readers on files the real CLIs wrote (Claude Code 2.1.197,
//! Codex 0.171.0, Aider 0.86.2, Gemini CLI 0.61.0, run against a scripted model whose
//! `usage` differed per request; trimmed of long prompt text), and the
//! incremental reading through a real store.

use std::io::Write;
use std::path::{Path, PathBuf};

use owt_protocol::TokenUsage;
use serde_json::Value;

use super::*;
use crate::store::{NewSession, SessionRow, Store};

const CLAUDE: &str = include_str!("testdata/claude-2.1.197.jsonl");
const CODEX: &str = include_str!("testdata/codex-0.171.0.jsonl");
const AIDER_LOG: &str = include_str!("testdata/aider-0.86.2.analytics.jsonl");
const AIDER_HISTORY: &str = include_str!("testdata/aider-0.86.2.chat.history.md");
const GEMINI: &str = include_str!("testdata/gemini-0.61.0.jsonl");

/// Adds what `parse` finds in every line of `text`, as the store would.
fn sum_lines(text: &str, mut parse: impl FnMut(&[u8], &mut Value) -> Option<Record>) -> Tally {
    let mut carry = Value::Null;
    let mut sum = Tally::default();
    for line in text.lines() {
        if let Some((_, t)) = parse(line.as_bytes(), &mut carry) {
            sum.input += t.input;
            sum.output += t.output;
            sum.cache_read += t.cache_read;
            sum.cache_write += t.cache_write;
            if let Some(c) = t.cost_usd {
                sum.cost_usd = Some(sum.cost_usd.unwrap_or(0.0) + c);
            }
        }
    }
    sum
}

fn tally(input: i64, output: i64, cache_read: i64, cache_write: i64, cost: Option<f64>) -> Tally {
    Tally {
        input,
        output,
        cache_read,
        cache_write,
        cost_usd: cost,
    }
}

#[test]
fn claude_transcript_counts_each_message_once() {
    // The model answered two requests: usage (1007 in, 23 out, 511 cache
    // read, 45 cache write) with a text and a tool_use block (two lines,
    // the same message id), then (1014, 26, 522, 50).
    let sum = sum_lines(CLAUDE, |line, carry| claude::parse_line(line, carry, 0));
    assert_eq!(sum, tally(1007 + 1014, 23 + 26, 511 + 522, 45 + 50, None));
}

#[test]
fn claude_lines_before_the_session_do_not_count() {
    let last = CLAUDE
        .lines()
        .rev()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["type"] == "assistant")
        .unwrap();
    let last_ms = parse_timestamp_ms(last["timestamp"].as_str().unwrap()).unwrap();
    let sum = sum_lines(CLAUDE, |line, carry| {
        claude::parse_line(line, carry, last_ms)
    });
    assert_eq!(sum, tally(1014, 26, 522, 50, None));
}

#[test]
fn claude_later_line_of_a_message_corrects_the_earlier() {
    // Streaming may write a block before the final output count.
    let line = |out: u32| {
        format!(
            r#"{{"type":"assistant","timestamp":"2026-12-01T05:26:30.599Z","requestId":"req_1","message":{{"id":"msg_1","usage":{{"input_tokens":10,"output_tokens":{out},"cache_read_input_tokens":0,"cache_creation_input_tokens":0}}}}}}"#
        )
    };
    let text = [line(1), line(40)].join("\n");
    let sum = sum_lines(&text, |l, c| claude::parse_line(l, c, 0));
    assert_eq!(sum, tally(10, 40, 0, 0, None));
}

#[test]
fn claude_project_folder_names_match_the_cli() {
    // Observed: the folders Claude Code 2.1.197 made for these working
    // directories.
    assert_eq!(
        claude::project_dir_name("/tmp/usage-deps/proj-c"),
        "-tmp-usage-deps-proj-c"
    );
    let long = format!("/tmp/usage-deps/{}/{}_é", "a".repeat(120), "b".repeat(90));
    let expected = format!(
        "-tmp-usage-deps-{}-{}-6gfc67",
        "a".repeat(120),
        "b".repeat(63)
    );
    assert_eq!(claude::project_dir_name(&long), expected);
}

#[test]
fn codex_rollout_totals_become_per_call_tokens() {
    // Two calls: (1021 in of which 533 cached, 29 out), (1028 / 544, 32).
    let sum = sum_lines(CODEX, |line, carry| codex::parse_line(line, carry, 0));
    assert_eq!(
        sum,
        tally(1021 - 533 + 1028 - 544, 29 + 32, 533 + 544, 0, None)
    );
    let meta = CODEX.lines().next().unwrap();
    let (cwd, started) = codex::session_meta(meta.as_bytes()).unwrap();
    assert_eq!(cwd, "/tmp/usage-deps/proj-x");
    assert_eq!(
        started,
        parse_timestamp_ms("2026-12-01T05:26:45.974Z").unwrap()
    );
}

#[test]
fn aider_analytics_log_is_exact() {
    let sum = sum_lines(AIDER_LOG, |line, _| aider::parse_analytics_line(line));
    assert_eq!(sum.input, 1056 + 1063);
    assert_eq!(sum.output, 44 + 47);
    assert!((sum.cost_usd.unwrap() - (0.003828 + 0.003894)).abs() < 1e-9);
}

#[test]
fn aider_chat_history_reports_are_read_as_printed() {
    // "593 sent, 4 received." then "1.1k sent, 44 received. Cost: $0.0038
    // message" and "1.1k sent, 47 received. Cost: $0.0039 message".
    let sum = sum_lines(AIDER_HISTORY, |line, _| aider::parse_history_line(line, 0));
    assert_eq!((sum.input, sum.output), (593 + 1100 + 1100, 4 + 44 + 47));
    assert!((sum.cost_usd.unwrap() - 0.0077).abs() < 1e-9);
    // The cost on a line of its own (Aider's form with cache counts).
    let (_, t) = aider::parse_history_line(
        b"> Tokens: 2.3k sent, 1.0k cache write, 12k cache hit, 95 received.",
        0,
    )
    .unwrap();
    assert_eq!(t, tally(2300, 95, 0, 0, None));
    let (_, t) = aider::parse_history_line(b"> Cost: $0.02 message, $0.05 session.", 0).unwrap();
    assert_eq!(t.cost_usd, Some(0.02));
    assert_eq!(aider::parse_history_line(b"> Tokens: lots sent", 0), None);
    assert_eq!(
        aider::parse_history_line(b"Tokens: 5 sent, 1 received.", 0),
        None
    );
}

#[test]
fn gemini_chat_record_counts_each_answer_once() {
    // The model answered two requests: usageMetadata (1234 prompt, 700
    // of them cached, 31 out), a write_file call whose message Gemini CLI
    // wrote twice (again with the call's result), then (1517, 950, 47).
    let sum = sum_lines(GEMINI, |line, carry| gemini::parse_line(line, carry, 0));
    assert_eq!(
        sum,
        tally(1234 - 700 + 1517 - 950, 31 + 47, 700 + 950, 0, None)
    );
}

#[test]
fn gemini_thoughts_are_output_and_tool_prompts_input() {
    let line = r#"{"id":"m1","timestamp":"2026-12-01T08:53:38.141Z","type":"gemini","content":"","tokens":{"input":100,"output":10,"cached":40,"thoughts":7,"tool":5,"total":122}}"#;
    let sum = sum_lines(line, |line, carry| gemini::parse_line(line, carry, 0));
    assert_eq!(sum, tally(100 - 40 + 5, 10 + 7, 40, 0, None));
    // Before the session, or not a model message: nothing.
    let at = parse_timestamp_ms("2026-12-01T08:53:38.141Z").unwrap();
    assert_eq!(
        gemini::parse_line(line.as_bytes(), &mut Value::Null, at + 1),
        None
    );
    let user = line.replace(r#""type":"gemini""#, r#""type":"user""#);
    assert_eq!(
        gemini::parse_line(user.as_bytes(), &mut Value::Null, 0),
        None
    );
}

// --- incremental reading through a real store ---

struct Fixture {
    dir: tempfile::TempDir,
    store: Store,
    places: Places,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("owt")).unwrap();
        let root = dir.path().to_path_buf();
        let places = Places::from_lookup(&dir.path().join("owt"), |name| match name {
            "HOME" => Some(root.join("home").to_string_lossy().into_owned()),
            _ => None,
        });
        Fixture { dir, store, places }
    }

    fn session(&mut self, name: &str, provider: &str) -> SessionRow {
        let repo = self
            .store
            .ensure_repo(
                &self.dir.path().join("repo/.git"),
                &self.dir.path().join("repo"),
            )
            .unwrap();
        let worktree = self.dir.path().join("wt/{name}");
        let template = worktree.to_string_lossy().into_owned();
        let row = self
            .store
            .insert_session(
                &NewSession {
                    repo_id: repo.id,
                    name,
                    task: "t",
                    branch_template: "owt/{name}",
                    base_branch: "main",
                    worktree_template: &template,
                    provider,
                    kind: owt_protocol::SessionKind::Worktree,
                },
                |_| false,
            )
            .unwrap();
        std::fs::create_dir_all(&row.worktree_path).unwrap();
        // The fixtures' records (2026-12-01) come after the session began.
        self.store
            .conn()
            .execute("UPDATE sessions SET created_at = 0 WHERE id = ?1", [row.id])
            .unwrap();
        SessionRow {
            created_at: 0,
            ..row
        }
    }

    fn usage(&self, session: &SessionRow) -> Option<TokenUsage> {
        self.store.session_usage(&session.short_id).unwrap()
    }
}

fn append(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    f.write_all(text.as_bytes()).unwrap();
}

fn tokens(
    input: u64,
    output: u64,
    cache_read: u64,
    cache_write: u64,
    cost: Option<f64>,
) -> TokenUsage {
    TokenUsage {
        input_tokens: input,
        output_tokens: output,
        cache_read_tokens: cache_read,
        cache_write_tokens: cache_write,
        cost_usd: cost,
    }
}

#[test]
fn claude_transcript_is_read_incrementally_and_never_twice() {
    let mut fx = Fixture::new();
    let session = fx.session("c", "claude");
    let folder = fx
        .places
        .claude_config
        .clone()
        .unwrap()
        .join("projects")
        .join(claude::project_dir_name(
            &session.worktree_path.to_string_lossy(),
        ));
    let transcript = folder.join("0be5b925.jsonl");
    assert_eq!(fx.usage(&session), None, "no records, no usage");

    // Cut in the middle of the first message (after its text line) and in
    // the middle of a line.
    let first_assistant = CLAUDE.find("\"type\":\"assistant\"").unwrap();
    let cut = first_assistant + CLAUDE[first_assistant..].find('\n').unwrap() + 1;
    let (a, rest) = CLAUDE.split_at(cut);
    let (b, c) = rest.split_at(rest.len() / 2);
    append(&transcript, a);
    claude::refresh(&fx.store, &Budget::unlimited(), &fx.places, &session).unwrap();
    assert_eq!(fx.usage(&session), Some(tokens(1007, 23, 511, 45, None)));
    append(&transcript, b);
    refresh(&fx.store, &fx.places, std::slice::from_ref(&session));
    append(&transcript, c);
    refresh(&fx.store, &fx.places, std::slice::from_ref(&session));
    let full = tokens(1007 + 1014, 23 + 26, 511 + 522, 45 + 50, None);
    assert_eq!(fx.usage(&session), Some(full.clone()));
    // Nothing new: nothing changes (and the file is not read again).
    refresh(&fx.store, &fx.places, std::slice::from_ref(&session));
    assert_eq!(fx.usage(&session), Some(full.clone()));
    let cursor = fx
        .store
        .usage_cursor(&session.short_id, &transcript.to_string_lossy())
        .unwrap()
        .unwrap();
    assert_eq!(cursor.offset, CLAUDE.len() as u64);

    // A second process's store sees the same and adds nothing.
    let other = Store::open(&fx.dir.path().join("owt")).unwrap();
    refresh(&other, &fx.places, std::slice::from_ref(&session));
    assert_eq!(fx.usage(&session), Some(full.clone()));

    // The tokens outlive the session.
    fx.store.remove_session(&session, "deleted").unwrap();
    assert_eq!(fx.usage(&session), Some(full));
    assert_eq!(
        fx.store
            .usage_cursor(&session.short_id, &transcript.to_string_lossy())
            .unwrap(),
        None
    );
}

#[test]
fn a_listing_reads_within_its_budget_and_the_next_reads_on() {
    let mut fx = Fixture::new();
    let session = fx.session("c", "claude");
    let transcript = fx
        .places
        .claude_config
        .clone()
        .unwrap()
        .join("projects")
        .join(claude::project_dir_name(
            &session.worktree_path.to_string_lossy(),
        ))
        .join("t.jsonl");
    // A line longer than one read (a huge tool output), then the records.
    let huge = format!(
        "{{\"type\":\"user\",\"pad\":\"{}\"}}\n",
        "x".repeat(MAX_READ as usize + 10)
    );
    append(&transcript, &huge);
    append(&transcript, CLAUDE);
    let full = tokens(1007 + 1014, 23 + 26, 511 + 522, 45 + 50, None);
    let mut listings = 0;
    while fx.usage(&session).as_ref() != Some(&full) {
        listings += 1;
        assert!(listings < 100, "never caught up: {:?}", fx.usage(&session));
        let budget = Budget(std::cell::Cell::new(MAX_READ));
        refresh_within(
            &fx.store,
            &budget,
            &fx.places,
            std::slice::from_ref(&session),
        );
    }
    // 16 MiB and a bit, 16 MiB per listing.
    assert_eq!(listings, 2, "read in {listings} listings");
    // Unlimited, one refresh reads everything.
    let other = fx.session("d", "claude");
    let folder = transcript
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join(claude::project_dir_name(
            &other.worktree_path.to_string_lossy(),
        ));
    append(&folder.join("t.jsonl"), &huge);
    append(&folder.join("t.jsonl"), CLAUDE);
    refresh_all(&fx.store, &fx.places, std::slice::from_ref(&other));
    assert_eq!(fx.usage(&other), Some(full));
}

#[test]
fn codex_rollouts_are_attributed_by_working_directory() {
    let mut fx = Fixture::new();
    let mine = fx.session("x", "codex");
    let worktree = mine.worktree_path.to_string_lossy().into_owned();
    let day = fx.places.codex_home.clone().unwrap().join(format!(
        "sessions/{}",
        local_day(crate::store::now_ms()).replace('-', "/")
    ));
    let ours = CODEX.replace("/tmp/usage-deps/proj-x", &worktree);
    let theirs = CODEX.replace("/tmp/usage-deps/proj-x", "/somewhere/else");
    append(
        &day.join("rollout-2026-12-01T05-26-45-theirs.jsonl"),
        &theirs,
    );
    // Only the first line so far.
    let (meta, rest) = ours.split_at(ours.find('\n').unwrap() + 1);
    let rollout = day.join("rollout-2026-12-01T05-26-46-ours.jsonl");
    append(&rollout, meta);
    refresh(&fx.store, &fx.places, std::slice::from_ref(&mine));
    assert_eq!(
        fx.store
            .usage_source_owner(&rollout.to_string_lossy())
            .unwrap(),
        Some(mine.short_id.clone())
    );
    assert_eq!(
        fx.store
            .usage_source_owner(
                &day.join("rollout-2026-12-01T05-26-45-theirs.jsonl")
                    .to_string_lossy()
            )
            .unwrap(),
        Some(crate::store::NO_SESSION.to_string())
    );
    append(&rollout, rest);
    refresh(&fx.store, &fx.places, std::slice::from_ref(&mine));
    assert_eq!(
        fx.usage(&mine),
        Some(tokens(1021 - 533 + 1028 - 544, 29 + 32, 533 + 544, 0, None))
    );
}

/// Gemini CLI's project registry and folder for `worktree`, as it makes
/// them (`~/.gemini/projects.json`, `tmp/<name>/.project_root`).
fn gemini_project(places: &Places, worktree: &Path, name: &str) -> PathBuf {
    let gemini = places.gemini_dir.clone().unwrap();
    let registry = gemini.join("projects.json");
    let mut projects: Value = std::fs::read(&registry)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_else(|| serde_json::json!({"projects": {}}));
    projects["projects"][worktree.to_string_lossy().as_ref()] = Value::from(name);
    std::fs::create_dir_all(&gemini).unwrap();
    std::fs::write(&registry, projects.to_string()).unwrap();
    let dir = gemini.join("tmp").join(name);
    append(&dir.join(".project_root"), &worktree.to_string_lossy());
    dir
}

#[test]
fn gemini_chats_are_found_through_its_project_registry() {
    let mut fx = Fixture::new();
    let mine = fx.session("x", "gemini");
    let other = fx.session("y", "gemini");
    let full = tokens(1234 - 700 + 1517 - 950, 31 + 47, 700 + 950, 0, None);
    let dir = gemini_project(&fx.places, &mine.worktree_path, "x");
    // Half the conversation, then the rest: read on, never twice (the
    // message written again with its tool call's result counts once).
    let cut = GEMINI.find(r#""toolCalls""#).unwrap();
    let cut = GEMINI[..cut].rfind('\n').unwrap() + 1;
    let chat = dir.join("chats/session-2026-12-01T08-53-bb652395.jsonl");
    append(&chat, &GEMINI[..cut]);
    refresh(&fx.store, &fx.places, std::slice::from_ref(&mine));
    assert_eq!(fx.usage(&mine), Some(tokens(1234 - 700, 31, 700, 0, None)));
    append(&chat, &GEMINI[cut..]);
    refresh(&fx.store, &fx.places, std::slice::from_ref(&mine));
    refresh(&fx.store, &fx.places, std::slice::from_ref(&mine));
    assert_eq!(fx.usage(&mine), Some(full.clone()));
    // A subagent's record counts for its session too.
    append(&dir.join("chats/bb652395/sub-1.jsonl"), GEMINI);
    refresh(&fx.store, &fx.places, std::slice::from_ref(&mine));
    assert_eq!(
        fx.usage(&mine).map(|u| u.output_tokens),
        Some(2 * (31 + 47))
    );
    // Another worktree's project is not this session's; nor is a folder
    // whose .project_root names another directory.
    let theirs = gemini_project(&fx.places, &other.worktree_path, "y");
    std::fs::write(theirs.join(".project_root"), "/somewhere/else").unwrap();
    append(
        &theirs.join("chats/session-2026-12-01T08-54-aaaaaaaa.jsonl"),
        GEMINI,
    );
    refresh(&fx.store, &fx.places, std::slice::from_ref(&other));
    assert_eq!(fx.usage(&other), None);
    // A name that would leave tmp/ is not followed.
    let registry = fx.places.gemini_dir.clone().unwrap().join("projects.json");
    let mut projects: Value = serde_json::from_slice(&std::fs::read(&registry).unwrap()).unwrap();
    projects["projects"][other.worktree_path.to_string_lossy().as_ref()] = Value::from("../x");
    std::fs::write(&registry, projects.to_string()).unwrap();
    assert!(
        gemini::project_dirs(fx.places.gemini_dir.as_ref().unwrap(), &other.worktree_path)
            .is_empty()
    );
}

/// OpenCode 1.18.33's `session` table, as its CLI created it.
const OPENCODE_SESSION_TABLE: &str = "CREATE TABLE `session` (
  `id` text PRIMARY KEY, `project_id` text NOT NULL, `workspace_id` text, `parent_id` text,
  `slug` text NOT NULL, `directory` text NOT NULL, `path` text, `title` text NOT NULL,
  `version` text NOT NULL, `share_url` text, `summary_additions` integer,
  `summary_deletions` integer, `summary_files` integer, `summary_diffs` text, `metadata` text,
  `cost` real DEFAULT 0 NOT NULL, `tokens_input` integer DEFAULT 0 NOT NULL,
  `tokens_output` integer DEFAULT 0 NOT NULL, `tokens_reasoning` integer DEFAULT 0 NOT NULL,
  `tokens_cache_read` integer DEFAULT 0 NOT NULL, `tokens_cache_write` integer DEFAULT 0 NOT NULL,
  `revert` text, `permission` text, `agent` text, `model` text,
  `time_created` integer NOT NULL, `time_updated` integer NOT NULL,
  `time_compacting` integer, `time_archived` integer)";

fn opencode_db(path: &Path) -> rusqlite::Connection {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.pragma_update(None, "journal_mode", "WAL").unwrap();
    conn.execute_batch(OPENCODE_SESSION_TABLE).unwrap();
    conn
}

fn opencode_session(conn: &rusqlite::Connection, id: &str, dir: &str, t: [i64; 5], cost: f64) {
    let now = crate::store::now_ms();
    conn.execute(
        "INSERT INTO session (id, project_id, slug, directory, title, version, cost, tokens_input,
             tokens_output, tokens_reasoning, tokens_cache_read, tokens_cache_write, time_created, time_updated)
         VALUES (?1, 'global', 's', ?2, 't', '1.18.33', ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?9)
         ON CONFLICT(id) DO UPDATE SET cost = excluded.cost, tokens_input = excluded.tokens_input,
             tokens_output = excluded.tokens_output, tokens_reasoning = excluded.tokens_reasoning,
             tokens_cache_read = excluded.tokens_cache_read, tokens_cache_write = excluded.tokens_cache_write,
             time_updated = excluded.time_updated",
        rusqlite::params![id, dir, cost, t[0], t[1], t[2], t[3], t[4], now],
    )
    .unwrap();
}

#[test]
fn opencode_session_totals_are_read_as_deltas() {
    let mut fx = Fixture::new();
    let mine = fx.session("o", "opencode");
    let worktree = mine.worktree_path.to_string_lossy().into_owned();
    let db_path: PathBuf = fx.places.opencode_db.clone().unwrap();
    let db = opencode_db(&db_path);
    // As OpenCode recorded the observed call: 1042 in of which 566 cached, 38 out.
    opencode_session(&db, "ses_a", &worktree, [476, 38, 0, 566, 0], 0.0);
    opencode_session(&db, "ses_other", "/somewhere/else", [9, 9, 9, 9, 9], 1.0);
    refresh(&fx.store, &fx.places, std::slice::from_ref(&mine));
    assert_eq!(fx.usage(&mine), Some(tokens(476, 38, 566, 0, Some(0.0))));
    // The conversation goes on, a subagent's starts.
    opencode_session(&db, "ses_a", &worktree, [900, 80, 4, 1200, 10], 0.25);
    opencode_session(&db, "ses_b", &worktree, [100, 10, 0, 0, 0], 0.5);
    refresh(&fx.store, &fx.places, std::slice::from_ref(&mine));
    refresh(&fx.store, &fx.places, std::slice::from_ref(&mine));
    assert_eq!(
        fx.usage(&mine),
        Some(tokens(1000, 94, 1200, 10, Some(0.75)))
    );
}

#[test]
fn aider_prefers_the_analytics_log_to_the_chat_history() {
    let mut fx = Fixture::new();
    let a = fx.session("a", "aider");
    let b = fx.session("b", "aider");
    append(&a.worktree_path.join(aider::CHAT_HISTORY), AIDER_HISTORY);
    append(&b.worktree_path.join(aider::CHAT_HISTORY), AIDER_HISTORY);
    append(&aider::analytics_log(&fx.places, &b.short_id), AIDER_LOG);
    refresh(&fx.store, &fx.places, &[a.clone(), b.clone()]);
    let a_usage = fx.usage(&a).unwrap();
    assert_eq!((a_usage.input_tokens, a_usage.output_tokens), (2793, 95));
    let b_usage = fx.usage(&b).unwrap();
    assert_eq!((b_usage.input_tokens, b_usage.output_tokens), (2119, 91));
}

#[test]
fn agent_env_names_aider_log_unless_the_user_did() {
    let fx = Fixture::new();
    let env = agent_env("aider", &fx.places, "abcd1234", |_| false);
    assert_eq!(
        env,
        vec![(
            "AIDER_ANALYTICS_LOG".to_string(),
            fx.places
                .owt_usage
                .join("abcd1234.aider.jsonl")
                .to_string_lossy()
                .into_owned()
        )]
    );
    assert!(agent_env("aider", &fx.places, "abcd1234", |v| v
        == "AIDER_ANALYTICS_LOG")
    .is_empty());
    assert!(agent_env("claude", &fx.places, "abcd1234", |_| false).is_empty());
}

#[test]
fn days_split_records() {
    let day_ms = 86_400_000;
    let noon = 20_000 * day_ms + day_ms / 2;
    let deltas = by_day(&[
        (noon, tally(1, 2, 3, 4, None)),
        (noon + 60_000, tally(1, 0, 0, 0, Some(0.5))),
        (noon + day_ms, tally(5, 0, 0, 0, None)),
        (noon + day_ms, Tally::default()),
    ]);
    assert_eq!(deltas.len(), 2);
    assert_eq!(deltas[0].day, local_day(noon));
    assert_eq!((deltas[0].input_tokens, deltas[0].cost_usd), (2, Some(0.5)));
    assert_eq!((deltas[1].input_tokens, deltas[1].cost_usd), (5, None));
}

#[test]
fn acp_totals_of_an_agent_without_records_are_counted_once() {
    use crate::status::kind;
    let mut fx = Fixture::new();
    let custom = fx.session("mine", "myagent");
    let claude = fx.session("cl", "claude");
    let report = |turns, input, output, cost| owt_protocol::AcpView {
        turns,
        input_tokens: input,
        output_tokens: output,
        cache_read_tokens: 7 * turns,
        cache_write_tokens: 0,
        thought_tokens: 5,
        cost_usd: cost,
        ..owt_protocol::AcpView::default()
    };
    let both = [custom.clone(), claude.clone()];
    refresh(&fx.store, &fx.places, &both);
    assert_eq!(fx.usage(&custom), None, "no fact, no usage");

    for row in &both {
        fx.store
            .record_fact_at(
                row.id,
                kind::ACP_USAGE,
                &report(1, 100, 20, Some(0.5)),
                1_000,
            )
            .unwrap();
    }
    refresh(&fx.store, &fx.places, &both);
    refresh(&fx.store, &fx.places, &both);
    assert_eq!(fx.usage(&custom), Some(tokens(100, 20, 7, 0, Some(0.5))));
    // Claude's adapter: its own records count, not the protocol's report.
    assert_eq!(fx.usage(&claude), None);

    // The next turn adds its part; a second store (another process) and
    // `owt usage`'s full read count nothing twice.
    fx.store
        .record_fact_at(
            custom.id,
            kind::ACP_USAGE,
            &report(2, 250, 50, Some(1.25)),
            2_000,
        )
        .unwrap();
    let other = Store::open(&fx.dir.path().join("owt")).unwrap();
    refresh(&other, &fx.places, std::slice::from_ref(&custom));
    refresh_all(&fx.store, &fx.places, std::slice::from_ref(&custom));
    assert_eq!(fx.usage(&custom), Some(tokens(250, 50, 14, 0, Some(1.25))));
    let rows = fx.store.usage_rows(None, "1970-01-01").unwrap();
    assert!(
        rows.iter()
            .all(|r| r.session_short_id == custom.short_id && r.provider == "myagent"),
        "{rows:?}"
    );
}
