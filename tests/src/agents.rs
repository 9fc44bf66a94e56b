//! The real agent CLIs against the scripted model, for tests and the status
//! benchmark.
//!
//! [`Model`] runs `tests/model/server.py` on 127.0.0.1 with a script and
//! reads its request log (the truth: when each request arrived and ended,
//! what it carried, what usage it reported). [`setup_offline`] makes one
//! agent CLI talk to it from a [`TestEnv`]'s throwaway `HOME` (config
//! files, environment, trust of the test's folders, telemetry and update
//! checks off: `tests/model/README.md`). The CLIs are the pinned ones
//! `scripts/install-agents` puts in `.test-deps/agents/`.
//! [`StatusLog`] polls `owt --json list` (and the agent's screen) in the
//! background, so a test can compare what owt said, and when, with the
//! model's log.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use owt_protocol::{SessionList, Status};
use serde::Deserialize;

use crate::TestEnv;

/// The folder `scripts/install-agents` filled: `$OWT_TEST_AGENTS`, else
/// `<workspace>/.test-deps/agents`. Panics with the command to run when
/// the CLIs are missing.
pub fn agents_dir() -> PathBuf {
    let dir = std::env::var_os("OWT_TEST_AGENTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join(".test-deps/agents"));
    assert!(
        dir.join(".stamp").is_file(),
        "the agent CLIs are not installed in {}: run scripts/install-agents \
         (scripts/test does) or point OWT_TEST_AGENTS at its folder",
        dir.display()
    );
    dir
}

pub fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

/// Seconds since the Unix epoch (the model log's clock).
pub fn now_s() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// One request as the scripted model logged it (`begin` and `end` lines
/// joined by `seq`).
#[derive(Debug, Clone, Deserialize)]
pub struct ModelRequest {
    pub seq: u64,
    /// When it arrived (Unix seconds).
    #[serde(rename = "t")]
    pub begin: f64,
    /// When its answer was finished.
    #[serde(skip)]
    pub end: Option<f64>,
    pub method: String,
    pub path: String,
    #[serde(default)]
    pub api: Option<String>,
    #[serde(default)]
    pub stream: bool,
    /// `main` (a step of the script) or `aux` (a title, a commit message).
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub step: Option<u64>,
    /// `text`, `call` or `custom`.
    #[serde(default)]
    pub answer: Option<String>,
    #[serde(default)]
    pub tool: Option<String>,
    /// The user messages of the request (context blocks the agents add,
    /// such as `<system-reminder>`, left out).
    #[serde(default)]
    pub user_messages: Vec<String>,
    #[serde(default)]
    pub usage: serde_json::Value,
    /// The whole request body ([`Model::start_logging_bodies`] only).
    #[serde(default)]
    pub body: Option<serde_json::Value>,
}

impl ModelRequest {
    pub fn is_main(&self) -> bool {
        self.kind.as_deref() == Some("main")
    }
}

/// The scripted model server (`tests/model/server.py`), killed on drop.
pub struct Model {
    child: Child,
    pub port: u16,
    pub log: PathBuf,
}

impl Model {
    /// Starts the server with `script` (`{"turns": [{"steps": [...]}]}`),
    /// its script and log in `dir`.
    pub fn start(dir: &Path, script: &serde_json::Value) -> Model {
        Model::start_with(dir, script, false)
    }

    /// As [`Model::start`], the log also holding each request's whole body
    /// (what a tool result said to the model, say).
    pub fn start_logging_bodies(dir: &Path, script: &serde_json::Value) -> Model {
        Model::start_with(dir, script, true)
    }

    fn start_with(dir: &Path, script: &serde_json::Value, bodies: bool) -> Model {
        std::fs::create_dir_all(dir).unwrap();
        let script_file = dir.join("model-script.json");
        std::fs::write(&script_file, serde_json::to_vec_pretty(script).unwrap()).unwrap();
        let log = dir.join("model-log.jsonl");
        let mut child = Command::new("python3")
            .arg(workspace_root().join("tests/model/server.py"))
            .arg("--script")
            .arg(&script_file)
            .arg("--log")
            .arg(&log)
            .args(bodies.then_some("--log-bodies"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("starting python3 tests/model/server.py");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .trim()
            .strip_prefix("PORT ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("the scripted model did not start: {line:?}"));
        Model { child, port, log }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<ModelRequest> {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let mut out: Vec<ModelRequest> = Vec::new();
        for line in text.lines() {
            let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
                continue;
            };
            match v["event"].as_str() {
                Some("begin") => {
                    if let Ok(r) = serde_json::from_value(v) {
                        out.push(r);
                    }
                }
                Some("end") => {
                    let seq = v["seq"].as_u64();
                    if let Some(r) = out.iter_mut().find(|r| Some(r.seq) == seq) {
                        r.end = v["t"].as_f64();
                    }
                }
                _ => {}
            }
        }
        out
    }

    /// The requests of the script's steps (not titles or commit messages).
    pub fn main_requests(&self) -> Vec<ModelRequest> {
        self.requests()
            .into_iter()
            .filter(|r| r.is_main())
            .collect()
    }

    /// Waits until `done` holds for the log; returns it.
    pub fn wait_for(
        &self,
        what: &str,
        timeout: Duration,
        done: impl Fn(&[ModelRequest]) -> bool,
    ) -> Vec<ModelRequest> {
        let deadline = Instant::now() + timeout;
        loop {
            let requests = self.requests();
            if done(&requests) {
                return requests;
            }
            if Instant::now() >= deadline {
                panic!(
                    "timed out after {timeout:?} waiting for the model to see {what}; its log:\n{}",
                    std::fs::read_to_string(&self.log).unwrap_or_default()
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Waits until the answer of step `step` is finished; returns that request.
    pub fn wait_step_answered(&self, step: u64, timeout: Duration) -> ModelRequest {
        let log = self.wait_for(&format!("step {step} answered"), timeout, |rs| {
            rs.iter()
                .any(|r| r.is_main() && r.step == Some(step) && r.end.is_some())
        });
        log.into_iter()
            .rfind(|r| r.is_main() && r.step == Some(step) && r.end.is_some())
            .unwrap()
    }
}

impl Drop for Model {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The agent CLIs the tests drive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Agent {
    Claude,
    Codex,
    OpenCode,
    Aider,
    Pi,
    Gemini,
}

impl Agent {
    /// owt's provider name.
    pub fn name(self) -> &'static str {
        match self {
            Agent::Claude => "claude",
            Agent::Codex => "codex",
            Agent::OpenCode => "opencode",
            Agent::Aider => "aider",
            Agent::Pi => "pi",
            Agent::Gemini => "gemini",
        }
    }

    /// Whether the agent asks before it writes a file or runs a command
    /// (Pi never does).
    pub fn has_permission_dialog(self) -> bool {
        self != Agent::Pi
    }

    /// What `owt send` types to approve the agent's permission dialog
    /// (followed by Enter).
    pub fn approve_text(self) -> &'static str {
        match self {
            // "❯ 1. Yes": the digit picks it.
            Agent::Claude => "1",
            // "Would you like to run the following command?": `y`.
            Agent::Codex => "y",
            // "Allow once" is selected: Enter alone.
            Agent::OpenCode => "",
            // "(Y)es/(N)o [Yes]:".
            Agent::Aider => "y",
            // No dialog.
            Agent::Pi => "",
            // "Apply this change? ● 1. Allow once": Enter alone.
            Agent::Gemini => "",
        }
    }
}

/// Makes `agent` talk to `model` only, from `env`'s throwaway `HOME`:
/// writes its configuration there and adds its environment (and the
/// pinned CLIs on `PATH`) to `env.extra_env`. `trusted` are the folders
/// the agent may work in without asking (the repository and the
/// worktrees the test will create). With `ask`, the agent asks before
/// writing a file (its permission dialog); without, it writes freely.
pub fn setup_offline(
    env: &mut TestEnv,
    agent: Agent,
    model: &Model,
    trusted: &[PathBuf],
    ask: bool,
) {
    let dir = agents_dir();
    let home = env.home.clone();
    let path = format!(
        "{}:{}",
        dir.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut vars: Vec<(&str, String)> = vec![("PATH", path)];
    let url = model.url();
    match agent {
        Agent::Claude => {
            let projects: serde_json::Map<String, serde_json::Value> = trusted
                .iter()
                .map(|p| {
                    (
                        p.display().to_string(),
                        serde_json::json!({"hasTrustDialogAccepted": true}),
                    )
                })
                .collect();
            write_json(
                &home.join(".claude.json"),
                &serde_json::json!({"hasCompletedOnboarding": true, "projects": projects}),
            );
            let mode = if ask { "default" } else { "acceptEdits" };
            write_json(
                &home.join(".claude/settings.json"),
                &serde_json::json!({"permissions": {"defaultMode": mode}}),
            );
            vars.extend([
                ("ANTHROPIC_BASE_URL", url),
                ("ANTHROPIC_AUTH_TOKEN", "scripted".into()),
                ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".into()),
                ("DISABLE_TELEMETRY", "1".into()),
                ("DISABLE_AUTOUPDATER", "1".into()),
            ]);
        }
        Agent::Codex => {
            let mut toml = format!(
                "model = \"mock-model\"\nmodel_provider = \"mock\"\napproval_policy = \"{}\"\n\
                 sandbox_mode = \"workspace-write\"\n\n[model_providers.mock]\nname = \"Mock\"\n\
                 base_url = \"{url}/v1\"\nenv_key = \"MOCK_API_KEY\"\nwire_api = \"responses\"\n",
                if ask { "on-request" } else { "never" }
            );
            for p in trusted {
                toml.push_str(&format!(
                    "\n[projects.\"{}\"]\ntrust_level = \"trusted\"\n",
                    p.display()
                ));
            }
            write(&home.join(".codex/config.toml"), &toml);
            vars.push(("MOCK_API_KEY", "scripted".into()));
        }
        Agent::OpenCode => {
            let config = home.join(".config/opencode");
            write_json(
                &config.join("opencode.json"),
                &serde_json::json!({
                    "$schema": "https://opencode.ai/config.json",
                    "provider": {"mock": {
                        "npm": "@ai-sdk/openai-compatible",
                        "name": "Mock",
                        "options": {"baseURL": format!("{url}/v1"), "apiKey": "scripted"},
                        "models": {"mock-model": {"name": "Mock", "tool_call": true,
                            "limit": {"context": 100000, "output": 4096}}}
                    }},
                    "model": "mock/mock-model",
                    "small_model": "mock/mock-model",
                    "enabled_providers": ["mock"],
                    "autoupdate": false,
                    "share": "disabled",
                    "permission": if ask {
                        serde_json::json!({"edit": "ask", "bash": "ask"})
                    } else {
                        serde_json::json!({"edit": "allow", "bash": "allow"})
                    },
                }),
            );
            // Its plugin SDK, already installed: else OpenCode fetches it
            // from npm on every start.
            copy_tree(
                &dir.join("opencode-config/node_modules"),
                &config.join("node_modules"),
            );
            std::fs::copy(
                dir.join("opencode-config/package.json"),
                config.join("package.json"),
            )
            .unwrap();
            vars.extend([
                (
                    "XDG_CONFIG_HOME",
                    home.join(".config").display().to_string(),
                ),
                (
                    "XDG_DATA_HOME",
                    home.join(".local/share").display().to_string(),
                ),
                (
                    "XDG_STATE_HOME",
                    home.join(".local/state").display().to_string(),
                ),
                ("XDG_CACHE_HOME", home.join(".cache").display().to_string()),
                ("OPENCODE_DISABLE_MODELS_FETCH", "1".into()),
                ("OPENCODE_DISABLE_AUTOUPDATE", "1".into()),
                ("OPENCODE_DISABLE_SHARE", "1".into()),
                ("OPENCODE_DISABLE_LSP_DOWNLOAD", "1".into()),
                ("OPENCODE_DISABLE_DEFAULT_PLUGINS", "1".into()),
            ]);
        }
        Agent::Aider => {
            // A price list that knows the model: else Aider downloads one.
            write_json(
                &home.join(".aider/caches/model_prices_and_context_window.json"),
                &serde_json::json!({"openai/mock-model": {
                    "max_input_tokens": 100000, "max_output_tokens": 4096,
                    "input_cost_per_token": 0.000001, "output_cost_per_token": 0.000002,
                    "litellm_provider": "openai", "mode": "chat"}}),
            );
            vars.extend([
                ("AIDER_MODEL", "openai/mock-model".into()),
                ("OPENAI_API_BASE", format!("{url}/v1")),
                ("OPENAI_API_KEY", "scripted".into()),
                ("AIDER_ANALYTICS_DISABLE", "true".into()),
                ("AIDER_CHECK_UPDATE", "false".into()),
                ("AIDER_SHOW_MODEL_WARNINGS", "false".into()),
                ("AIDER_SHOW_RELEASE_NOTES", "false".into()),
                ("LITELLM_LOCAL_MODEL_COST_MAP", "True".into()),
            ]);
            if !ask {
                vars.push(("AIDER_YES_ALWAYS", "true".into()));
            }
        }
        Agent::Pi => {
            let agent_dir = home.join(".pi/agent");
            write_json(
                &agent_dir.join("models.json"),
                &serde_json::json!({"providers": {"mock": {
                    "baseUrl": format!("{url}/v1"),
                    "api": "openai-completions",
                    "apiKey": "scripted",
                    "compat": {"supportsDeveloperRole": false, "supportsReasoningEffort": false},
                    "models": [{"id": "mock-model"}]}}}),
            );
            write_json(
                &agent_dir.join("settings.json"),
                &serde_json::json!({"defaultProvider": "mock", "defaultModel": "mock-model"}),
            );
            // No downloads of fd and ripgrep.
            vars.push(("PI_OFFLINE", "1".into()));
        }
        Agent::Gemini => {
            write_json(
                &home.join(".gemini/settings.json"),
                &serde_json::json!({
                    "security": {"auth": {"selectedType": "gemini-api-key"}},
                    "general": {
                        "disableAutoUpdate": true,
                        "disableUpdateNag": true,
                        // ("tools.autoAccept" does not cover its edit tools.)
                        "defaultApprovalMode": if ask { "default" } else { "auto_edit" },
                    },
                    "privacy": {"usageStatisticsEnabled": false},
                    "telemetry": {"enabled": false},
                    "tools": {"autoAccept": !ask},
                }),
            );
            let folders: serde_json::Map<String, serde_json::Value> = trusted
                .iter()
                .map(|p| (p.display().to_string(), serde_json::json!("TRUST_FOLDER")))
                .collect();
            write_json(
                &home.join(".gemini/trustedFolders.json"),
                &serde_json::Value::Object(folders),
            );
            vars.extend([
                ("GEMINI_API_KEY", "scripted".into()),
                ("GOOGLE_GEMINI_BASE_URL", url),
            ]);
        }
    }
    for (k, v) in vars {
        env.extra_env.retain(|(key, _)| key != k);
        env.extra_env.push((k.to_string(), v));
    }
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn write_json(path: &Path, v: &serde_json::Value) {
    write(path, &serde_json::to_string_pretty(v).unwrap());
}

fn copy_tree(from: &Path, to: &Path) {
    let status = Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .status()
        .expect("cp");
    assert!(
        status.success(),
        "cp -a {} {}",
        from.display(),
        to.display()
    );
}

/// One observation of a session by [`StatusLog`].
#[derive(Debug, Clone)]
pub struct Observation {
    /// When the answer came back (Unix seconds).
    pub t: f64,
    pub status: Status,
    pub text: String,
    /// The agent's screen at about that time (every poll, when asked).
    pub screen: Option<String>,
}

/// Polls `owt --json list` (and optionally `owt peek`) for one session in
/// the background, as fast as the CLI answers (at most every `every`).
pub struct StatusLog {
    observations: Arc<Mutex<Vec<Observation>>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl StatusLog {
    pub fn start(
        env: &TestEnv,
        repo: &Path,
        session: &str,
        peek: bool,
        every: Duration,
    ) -> StatusLog {
        let observations = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let mut list = env.owt_cmd(repo, ["--json", "list"]);
        let mut peek_cmd = env.owt_cmd(repo, ["peek", session]);
        let session = session.to_string();
        let thread = {
            let observations = observations.clone();
            let stop = stop.clone();
            std::thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    let started = Instant::now();
                    let screen = peek
                        .then(|| peek_cmd.output().ok())
                        .flatten()
                        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned());
                    // The store is read at the start of the call.
                    let t = now_s();
                    let Ok(out) = list.output() else { break };
                    if let Ok(list) = serde_json::from_slice::<SessionList>(&out.stdout) {
                        if let Some(view) = list.sessions.iter().find(|s| s.name == session) {
                            observations.lock().unwrap().push(Observation {
                                t,
                                status: view.status,
                                text: view.status_text.clone(),
                                screen,
                            });
                        }
                    }
                    if let Some(rest) = every.checked_sub(started.elapsed()) {
                        std::thread::sleep(rest);
                    }
                }
            })
        };
        StatusLog {
            observations,
            stop,
            thread: Some(thread),
        }
    }

    pub fn observations(&self) -> Vec<Observation> {
        self.observations.lock().unwrap().clone()
    }

    /// Waits for an observation after `since` that `want` accepts;
    /// returns it. Panics with the whole log after `timeout`.
    pub fn wait_for(
        &self,
        what: &str,
        since: f64,
        timeout: Duration,
        want: impl Fn(&Observation) -> bool,
    ) -> Observation {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(o) = self
                .observations()
                .into_iter()
                .find(|o| o.t >= since && want(o))
            {
                return o;
            }
            if Instant::now() >= deadline {
                panic!(
                    "timed out after {timeout:?} waiting for {what}; owt said:\n{}",
                    self.summary()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The statuses seen, one line per change (for failure messages).
    pub fn summary(&self) -> String {
        let obs = self.observations();
        let t0 = obs.first().map_or(0.0, |o| o.t);
        let mut out = String::new();
        let mut last: Option<&str> = None;
        for o in &obs {
            if last != Some(o.text.as_str()) {
                out.push_str(&format!("  +{:6.2}s {}\n", o.t - t0, o.text));
                last = Some(o.text.as_str());
            }
        }
        if let Some(screen) = obs.iter().rev().find_map(|o| o.screen.as_deref()) {
            out.push_str("last screen:\n");
            out.push_str(screen);
        }
        out
    }

    pub fn stop(&mut self) -> Vec<Observation> {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.observations()
    }
}

impl Drop for StatusLog {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The share of `observations` inside any of `windows` (Unix seconds,
/// begin–end) whose status is `status`; and how many were inside.
pub fn share_in_windows(
    observations: &[Observation],
    windows: &[(f64, f64)],
    status: Status,
) -> (f64, usize) {
    let inside: Vec<&Observation> = observations
        .iter()
        .filter(|o| windows.iter().any(|(b, e)| o.t >= *b && o.t <= *e))
        .collect();
    if inside.is_empty() {
        return (0.0, 0);
    }
    let hits = inside.iter().filter(|o| o.status == status).count();
    (hits as f64 / inside.len() as f64, inside.len())
}

/// The model's requests and owt's observations on one clock, relative to
/// the first of either (for failure messages).
pub fn timeline(requests: &[ModelRequest], observations: &[Observation]) -> String {
    let mut events: Vec<(f64, String)> = Vec::new();
    for r in requests {
        let what = format!(
            "{} request {} (step {:?}, {})",
            r.kind.as_deref().unwrap_or("?"),
            r.seq,
            r.step,
            r.answer.as_deref().unwrap_or("")
        );
        events.push((r.begin, format!("model: {what} begins")));
        if let Some(end) = r.end {
            events.push((end, format!("model: {what} ends")));
        }
    }
    let mut last: Option<&str> = None;
    for o in observations {
        if last != Some(o.text.as_str()) {
            events.push((o.t, format!("owt:   {}", o.text)));
            last = Some(o.text.as_str());
        }
    }
    events.sort_by(|a, b| a.0.total_cmp(&b.0));
    let t0 = events.first().map_or(0.0, |e| e.0);
    events
        .iter()
        .map(|(t, e)| format!("  +{:6.2}s {e}\n", t - t0))
        .collect()
}
