//! Limits as a status: the scripted model answers every request with the
//! provider's real 429 (headers and body, `tests/model/limits.py`); the
//! real agent shows it on its screen, and owt says `limited` (lane NEEDS
//! YOU) within 2 s of that.

use std::time::Duration;

use owt_e2e::agents::{self, setup_offline, Agent, Model, StatusLog};
use owt_e2e::TestEnv;
use owt_protocol::{SessionList, Status};
use serde_json::json;

/// Deadline for the agent to start and show the error.
const AGENT: Duration = Duration::from_secs(120);

#[test]
fn claude_code_answered_429_is_limited_within_2_s() {
    limited_within_2_s(
        Agent::Claude,
        |s| s.contains("API Error") && s.contains("429"),
        |t| t == "limited",
    );
}

/// Codex retries a 429 itself (5 times by default, waiting the
/// `retry-after` out): its provider here has `request_max_retries` and
/// `stream_max_retries` 0, so it says "exceeded retry limit, last status:
/// 429 Too Many Requests" at once.
#[test]
fn codex_answered_429_is_limited_within_2_s() {
    limited_within_2_s(
        Agent::Codex,
        |s| s.contains("exceeded retry limit, last status: 429"),
        |t| t == "limited",
    );
}

/// Gemini CLI reads the 429's `RetryInfo` (an hour: more than the 300 s it
/// retries within) and asks at once: "Usage limit reached for … Access
/// resets at 2:58 PM UTC."
#[test]
fn gemini_cli_answered_429_is_limited_within_2_s() {
    limited_within_2_s(
        Agent::Gemini,
        |s| s.contains("Usage limit reached for") && s.contains("Access resets at"),
        |t| t.starts_with("limited (resets ") && t.ends_with(" UTC)"),
    );
}

/// OpenCode retries a 429 itself after its `retry-after` (an hour here)
/// and says so: "Rate limit reached for mock-model … [retrying in 59m
/// attempt #1]"; owt reports the reset time that gives.
#[test]
fn opencode_answered_429_is_limited_within_2_s() {
    limited_within_2_s(
        Agent::OpenCode,
        |s| s.contains("limit reached for mock-model") && s.contains("[retrying in"),
        |t| t.starts_with("limited (resets ") && t.ends_with(" UTC)"),
    );
}

/// Aider (through litellm) prints the error and retries by itself for a
/// minute (1 s, 2 s, 4 s, …): "litellm.RateLimitError: … Rate limit
/// reached for mock-model … Please try again in 3600s. The API provider
/// has rate limited you."; owt reports the reset time that gives.
#[test]
fn aider_answered_429_is_limited_within_2_s() {
    limited_within_2_s(
        Agent::Aider,
        |s| s.contains("The API provider has rate limited you"),
        |t| t.starts_with("limited (resets ") && t.ends_with(" UTC)"),
    );
}

/// `agent`, every request answered 429, shows it (`shows` on its screen)
/// and owt says `limited` within 2 s, in NEEDS YOU.
fn limited_within_2_s(agent: Agent, shows: fn(&str) -> bool, text: fn(&str) -> bool) {
    let mut env = TestEnv::new();
    let repo = env.repo("app");
    let name = format!("{}-limited", agent.name());
    let name = name.as_str();
    let worktree = env.path().join("app.worktrees").join(name);
    let model = Model::start(
        &env.path().join("model"),
        &json!({"rate_limit": {"reset_s": 3600},
                "turns": [{"steps": [{"text": "never said"}]}]}),
    );
    setup_offline(
        &mut env,
        agent,
        &model,
        &[repo.clone(), worktree.clone()],
        true,
    );
    if agent == Agent::Codex {
        no_codex_retries(&env);
    }
    let started = agents::now_s();
    env.owt_ok(
        &repo,
        ["new", "Say hi", "--name", name, "--ai-tool", agent.name()],
    );
    let status = StatusLog::start(&env, &repo, name, true, Duration::from_millis(200));
    let shown = status.wait_for("the agent showing the 429", started, AGENT, |o| {
        o.screen.as_deref().is_some_and(shows)
    });
    let limited = status.wait_for("limited", started, AGENT, |o| o.status == Status::Limited);
    let late = limited.t - shown.t;
    eprintln!(
        "{}: limited {late:.2}s after the screen showed the 429",
        agent.name()
    );
    assert!(
        late <= 2.0,
        "limited {late:.2}s after the screen showed it:\n{}",
        status.summary()
    );
    // Its text (with the reset time, when the agent says it), also
    // within 2 s of the screen showing the limit (OpenCode draws its
    // "[retrying in …]" a moment after the error).
    let said = status.wait_for("limited's text", started, AGENT, |o| {
        o.status == Status::Limited && text(&o.text)
    });
    assert!(
        said.t - shown.t <= 2.0,
        "{:?} {:.2}s after the screen showed the limit:\n{}",
        said.text,
        said.t - shown.t,
        status.summary()
    );
    // The model answered 429 (and nothing else).
    let requests = model.requests();
    assert!(
        !requests.is_empty()
            && requests
                .iter()
                .filter(|r| r.method == "POST")
                .all(|r| r.kind.as_deref() == Some("rate-limited")),
        "{requests:?}"
    );
    // It stays limited, in NEEDS YOU.
    std::thread::sleep(Duration::from_secs(2));
    let list: SessionList = env.owt_json(&repo, ["list"]);
    let view = list.sessions.iter().find(|s| s.name == name).unwrap();
    assert_eq!(view.status, Status::Limited, "{}", status.summary());
    assert_eq!(view.lane, owt_protocol::Lane::NeedsYou);
}

/// Codex's provider retries nothing: a 429 is its word at once.
fn no_codex_retries(env: &TestEnv) {
    let config = env.home.join(".codex/config.toml");
    let toml = std::fs::read_to_string(&config).unwrap();
    let provider = "wire_api = \"responses\"\n";
    assert!(toml.contains(provider), "{toml}");
    let toml = toml.replacen(
        provider,
        &format!("{provider}request_max_retries = 0\nstream_max_retries = 0\n"),
        1,
    );
    std::fs::write(&config, toml).unwrap();
}
