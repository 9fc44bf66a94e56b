//! Tokens per session from each agent's own records, end to end: the real
//! CLI (pinned, `scripts/install-agents`) runs a turn under `owt new`
//! against the scripted model (`tests/model/`), whose answers report a
//! different `usage` per request (cache reads and writes too, where the
//! API has them); `owt list --json` and `owt usage --json` must show
//! exactly what the model reported for the requests the agent records,
//! in the agent's own accounting, and keep it after the session is gone
//! (until `owt db purge` drops it).

use std::time::{Duration, Instant};

use owt_e2e::agents::{setup_offline, Agent, Model, ModelRequest};
use owt_e2e::TestEnv;
use owt_protocol::{DbHealth, DbPurge, SessionList, TokenUsage, UsageOutput};
use serde_json::json;

/// Deadline for the agent's turn (start, two model round trips).
const AGENT: Duration = Duration::from_secs(120);
/// Deadline for the agent to write its record and owt to read it.
const NOTICE: Duration = Duration::from_secs(30);

/// What each step's answer reports: different numbers per request, so
/// only the right sum matches. The Responses and Chat Completions APIs
/// have no cache writes.
fn step_usage(agent: Agent, step: u64) -> serde_json::Value {
    let cache_write = |n: u64| if agent == Agent::Claude { n } else { 0 };
    match step {
        0 => json!({"input_tokens": 1234, "output_tokens": 31,
                    "cache_read_tokens": 700, "cache_write_tokens": cache_write(90)}),
        _ => json!({"input_tokens": 1517, "output_tokens": 47,
                    "cache_read_tokens": 950, "cache_write_tokens": cache_write(130)}),
    }
}

fn n(v: &serde_json::Value, key: &str) -> u64 {
    v[key].as_u64().unwrap_or(0)
}

/// The tokens `agent` records for the scripted model's `requests`, in
/// owt's terms (`input_tokens` without cache reads and writes): what a
/// correct reading of the agent's records must show.
fn expected(agent: Agent, requests: &[ModelRequest]) -> TokenUsage {
    let mut sum = TokenUsage::default();
    // The agents record their conversation's requests, not their side
    // requests (titles, Aider's commit message).
    for r in requests.iter().filter(|r| r.is_main() && r.end.is_some()) {
        let u = &r.usage;
        let (input, cache_read, cache_write) = match agent {
            // Anthropic's input_tokens exclude the cache.
            Agent::Claude => (
                n(u, "input_tokens"),
                n(u, "cache_read_tokens"),
                n(u, "cache_write_tokens"),
            ),
            // OpenAI's and Gemini's input tokens include the cached ones.
            Agent::Codex | Agent::OpenCode | Agent::Pi | Agent::Gemini => (
                n(u, "input_tokens") - n(u, "cache_read_tokens"),
                n(u, "cache_read_tokens"),
                0,
            ),
            // Aider counts every token it sent as sent.
            Agent::Aider => (n(u, "input_tokens"), 0, 0),
        };
        sum.input_tokens += input;
        sum.output_tokens += n(u, "output_tokens");
        sum.cache_read_tokens += cache_read;
        sum.cache_write_tokens += cache_write;
    }
    sum.cost_usd = match agent {
        // The prices the tests give the model: OpenCode's opencode.json
        // (US dollars per million tokens), Aider's price list (per token).
        Agent::OpenCode => Some(
            (sum.input_tokens as f64 * 3.0
                + sum.output_tokens as f64 * 15.0
                + sum.cache_read_tokens as f64 * 0.3)
                / 1e6,
        ),
        Agent::Aider => {
            Some(sum.input_tokens as f64 * 0.000001 + sum.output_tokens as f64 * 0.000002)
        }
        // Pi: its models.json, US dollars per million tokens.
        Agent::Pi => Some(
            (sum.input_tokens as f64 * 3.0
                + sum.output_tokens as f64 * 15.0
                + sum.cache_read_tokens as f64 * 0.3)
                / 1e6,
        ),
        Agent::Claude | Agent::Codex | Agent::Gemini => None,
    };
    sum
}

fn same(a: &TokenUsage, b: &TokenUsage) -> bool {
    let cost = match (a.cost_usd, b.cost_usd) {
        (None, None) => true,
        (Some(x), Some(y)) => (x - y).abs() < 1e-9,
        _ => false,
    };
    cost && (
        a.input_tokens,
        a.output_tokens,
        a.cache_read_tokens,
        a.cache_write_tokens,
    ) == (
        b.input_tokens,
        b.output_tokens,
        b.cache_read_tokens,
        b.cache_write_tokens,
    )
}

fn tokens_of_a_turn(agent: Agent) {
    let mut env = TestEnv::new();
    let repo = env.repo("app");
    let name = format!("{}-tokens", agent.name());
    let worktree = env.path().join("app.worktrees").join(&name);
    let model = Model::start(
        &env.path().join("model"),
        &json!({"turns": [{"steps": [
            {"write": {"path": "hello.txt", "content": "hello from the scripted model\n"},
             "usage": step_usage(agent, 0)},
            {"text": "I wrote hello.txt.", "usage": step_usage(agent, 1)}]}]}),
    );
    setup_offline(
        &mut env,
        agent,
        &model,
        &[repo.clone(), worktree.clone()],
        false,
    );
    match agent {
        Agent::OpenCode => {
            // Prices, so that OpenCode computes a cost.
            let file = env.home.join(".config/opencode/opencode.json");
            let mut config: serde_json::Value =
                serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
            config["provider"]["mock"]["models"]["mock-model"]["cost"] =
                json!({"input": 3, "output": 15, "cache_read": 0.3});
            std::fs::write(&file, serde_json::to_vec_pretty(&config).unwrap()).unwrap();
        }
        Agent::Aider => {
            // Streamed, Aider reports its own count of the text; not
            // streamed, the API's usage.
            env.extra_env.push(("AIDER_STREAM".into(), "false".into()));
        }
        Agent::Pi => {
            // Prices, so that Pi computes a cost.
            let file = env.home.join(".pi/agent/models.json");
            let mut config: serde_json::Value =
                serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
            config["providers"]["mock"]["models"][0]["cost"] =
                json!({"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75});
            std::fs::write(&file, serde_json::to_vec_pretty(&config).unwrap()).unwrap();
        }
        _ => {}
    }
    env.owt_ok(
        &repo,
        [
            "new",
            "Create hello.txt with a greeting",
            "--name",
            &name,
            "--ai-tool",
            agent.name(),
        ],
    );
    // Aider has no tools: the model answers its whole turn in one reply.
    model.wait_step_answered(if agent == Agent::Aider { 0 } else { 1 }, AGENT);

    // owt list --json: the session's tokens, once the agent wrote them.
    wait_for_match(
        || home_files(&env.home),
        agent,
        &model,
        "owt list --json",
        || {
            let list: SessionList = env.owt_json(&repo, ["list"]);
            list.sessions
                .iter()
                .find(|s| s.name == name)
                .and_then(|s| s.usage.clone())
        },
    );
    // The turn did its work (Aider logs the reply's tokens before it
    // writes the file: under load the file may come a moment later).
    let deadline = Instant::now() + NOTICE;
    loop {
        let text = std::fs::read_to_string(worktree.join("hello.txt")).unwrap_or_default();
        if text.trim() == "hello from the scripted model" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{}: hello.txt holds {text:?} after {NOTICE:?}",
            agent.name()
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    // owt usage --json: the same tokens per session, agent and day.
    let mut report: Option<UsageOutput> = None;
    let want = wait_for_match(
        || home_files(&env.home),
        agent,
        &model,
        "owt usage --json",
        || {
            let usage: UsageOutput = env.owt_json(&repo, ["usage", "--days", "1"]);
            let session = usage.sessions.iter().find(|s| s.name == name).cloned();
            report = Some(usage);
            session.filter(|s| s.live).map(|s| s.tokens)
        },
    );
    let usage = report.unwrap();
    let by_agent = usage
        .by_agent
        .iter()
        .find(|a| a.provider == agent.name())
        .unwrap();
    assert!(same(&by_agent.tokens, &want), "{usage:#?}");
    assert_eq!(usage.by_day.len(), 1, "{usage:#?}");
    assert!(same(&usage.by_day[0].tokens, &want), "{usage:#?}");
    assert!(same(&usage.tokens, &want), "{usage:#?}");

    // Deleted, its tokens still count (all of them: the last records are
    // read before the agent's worktree goes).
    env.owt_ok(&repo, ["delete", &name, "--force"]);
    let want = expected(agent, &model.requests());
    let usage: UsageOutput = env.owt_json(&repo, ["usage", "--days", "1"]);
    let session = usage.sessions.iter().find(|s| s.name == name).unwrap();
    assert!(
        !session.live && same(&session.tokens, &want),
        "{want:?} expected after the delete: {usage:#?}"
    );
    let rows = usage.by_day.len() as u64;

    // The store's health counts them; `owt db purge` drops them once they
    // are older than its --days, and the read positions at once.
    let health: DbHealth = env.owt_json(&repo, ["db", "health", "--check"]);
    assert!(
        health.usage_rows >= rows
            && health.usage_rows_deleted_sessions == rows
            && health.usage_sources_stale == 0
            && health.problems.is_empty(),
        "{health:#?}"
    );
    let purged: DbPurge = env.owt_json(&repo, ["db", "purge", "--days", "1"]);
    assert_eq!(purged.usage_rows_deleted, 0, "{purged:#?}");
    let usage: UsageOutput = env.owt_json(&repo, ["usage", "--days", "1"]);
    assert!(usage.sessions.iter().any(|s| s.name == name), "{usage:#?}");
    let purged: DbPurge = env.owt_json(&repo, ["db", "purge", "--days", "0"]);
    assert_eq!(purged.usage_rows_deleted, rows, "{purged:#?}");
    let usage: UsageOutput = env.owt_json(&repo, ["usage", "--days", "1"]);
    assert!(!usage.sessions.iter().any(|s| s.name == name), "{usage:#?}");
    let health: DbHealth = env.owt_json(&repo, ["db", "health"]);
    assert_eq!(health.usage_rows_deleted_sessions, 0, "{health:#?}");
}

/// Polls `shown` until it equals what the model's log says the agent
/// recorded (recomputed each time: an agent may still be sending); fails
/// loudly with both after [`NOTICE`]. Returns the tokens matched.
fn wait_for_match(
    files_in_home: impl Fn() -> String,
    agent: Agent,
    model: &Model,
    what: &str,
    mut shown: impl FnMut() -> Option<TokenUsage>,
) -> TokenUsage {
    let deadline = Instant::now() + NOTICE;
    loop {
        let want = expected(agent, &model.requests());
        let got = shown();
        if got.as_ref().is_some_and(|u| same(u, &want)) {
            return want;
        }
        if Instant::now() >= deadline {
            panic!(
                "{}: {what} shows {got:?}, the model reported {want:?}; its log:\n{}\nfiles in HOME:\n{}",
                agent.name(),
                std::fs::read_to_string(&model.log).unwrap_or_default(),
                files_in_home()
            );
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// The agent's files in the test's HOME (where its records are).
fn home_files(home: &std::path::Path) -> String {
    let out = std::process::Command::new("find")
        .arg(home)
        .args([
            "-path",
            "*/node_modules",
            "-prune",
            "-o",
            "-type",
            "f",
            "-print",
        ])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    out.lines()
        .filter(|l| !l.contains("/skills/") && !l.contains("/snapshot/"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn pi_tokens() {
    tokens_of_a_turn(Agent::Pi);
}

#[test]
fn claude_code_tokens() {
    tokens_of_a_turn(Agent::Claude);
}

#[test]
fn codex_tokens() {
    tokens_of_a_turn(Agent::Codex);
}

#[test]
fn opencode_tokens() {
    tokens_of_a_turn(Agent::OpenCode);
}

#[test]
fn aider_tokens() {
    tokens_of_a_turn(Agent::Aider);
}

#[test]
fn gemini_tokens() {
    tokens_of_a_turn(Agent::Gemini);
}
