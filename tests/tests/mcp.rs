//! `owt mcp` end to end: the real binary spawned as three agent sessions
//! (and as the human), spoken to over the MCP stdio transport (one JSON-RPC
//! message per line): every tool is called, and what one session does is
//! checked from another session's view and from `owt --json list`.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use owt_e2e::{wait_until, TestEnv};
use owt_protocol::{NewOutput, SessionList, Status};
use serde_json::{json, Value};

/// How long any one MCP answer may take.
const ANSWER: Duration = Duration::from_secs(20);

/// An MCP client over the stdio transport of a spawned `owt mcp`.
struct McpClient {
    who: String,
    child: Child,
    stdin: Option<ChildStdin>,
    rx: Receiver<Value>,
    next_id: i64,
    /// Answers that came while another was awaited, by request id.
    early: HashMap<i64, Value>,
    stderr_path: PathBuf,
}

impl McpClient {
    /// Spawns `owt mcp` in `cwd` as session `short_id` (the human when
    /// `None`) and runs initialize / notifications/initialized.
    fn start(env: &TestEnv, cwd: &Path, short_id: Option<&str>) -> McpClient {
        let who = short_id.unwrap_or("human").to_string();
        let stderr_path = env.path().join(format!("mcp-{who}.stderr"));
        let mut cmd = env.owt_cmd(cwd, ["mcp"]);
        cmd.env_remove("OWT_SESSION");
        if let Some(id) = short_id {
            cmd.env("OWT_SESSION", id);
        }
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr_path).unwrap());
        let mut child = cmd.spawn().expect("spawning owt mcp");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                let value: Value = serde_json::from_str(&line).unwrap_or_else(|e| {
                    panic!("owt mcp wrote a line that is not JSON ({e}): {line}")
                });
                if tx.send(value).is_err() {
                    return;
                }
            }
        });
        let mut client = McpClient {
            who,
            child,
            stdin,
            rx,
            next_id: 0,
            early: HashMap::new(),
            stderr_path,
        };
        let init = client
            .request(
                "initialize",
                json!({
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "owt-e2e", "version": "1"}
                }),
            )
            .unwrap_or_else(|e| panic!("initialize failed: {e}"));
        assert_eq!(init["serverInfo"]["name"], "owt", "{init}");
        assert!(init["capabilities"]["tools"].is_object(), "{init}");
        client.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        client
    }

    fn send(&mut self, message: Value) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        let mut line = serde_json::to_string(&message).unwrap();
        line.push('\n');
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.flush().unwrap();
    }

    /// Sends a request and waits (with a deadline) for its response:
    /// `Ok(result)` or `Err(error)`.
    fn request(&mut self, method: &str, params: Value) -> Result<Value, Value> {
        let id = self.begin(method, params);
        self.answer(method, id)
    }

    /// Sends a request without waiting for its answer; its id.
    fn begin(&mut self, method: &str, params: Value) -> i64 {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// Whether the answer to request `id` has come (without waiting).
    fn answered(&mut self, id: i64) -> bool {
        while let Ok(message) = self.rx.try_recv() {
            self.keep(message);
        }
        self.early.contains_key(&id)
    }

    fn keep(&mut self, message: Value) {
        // Notifications have no id.
        if let Some(id) = message["id"].as_i64() {
            self.early.insert(id, message);
        }
    }

    /// Waits (with a deadline) for the answer to request `id`, keeping the
    /// answers to others for later.
    fn answer(&mut self, method: &str, id: i64) -> Result<Value, Value> {
        let deadline = Instant::now() + ANSWER;
        loop {
            if let Some(message) = self.early.remove(&id) {
                if let Some(error) = message.get("error") {
                    return Err(error.clone());
                }
                return Ok(message["result"].clone());
            }
            let left = deadline.saturating_duration_since(Instant::now());
            let message = self.rx.recv_timeout(left).unwrap_or_else(|e| {
                panic!(
                    "no answer to {method} from owt mcp ({}) within {ANSWER:?}: {e}\nstderr:\n{}",
                    self.who,
                    std::fs::read_to_string(&self.stderr_path).unwrap_or_default()
                )
            });
            self.keep(message);
        }
    }

    /// Calls a tool: `Ok(structured result)`, or `Err(the tool error text)`.
    fn call(&mut self, tool: &str, arguments: Value) -> Result<Value, String> {
        let result = self
            .request("tools/call", json!({"name": tool, "arguments": arguments}))
            .unwrap_or_else(|e| panic!("{tool} was a protocol error: {e}"));
        let text = result["content"][0]["text"]
            .as_str()
            .unwrap_or("")
            .to_string();
        if result["isError"] == json!(true) {
            return Err(text);
        }
        let structured = result["structuredContent"].clone();
        let parsed: Value = serde_json::from_str(&text).expect("text content is the JSON result");
        assert_eq!(parsed, structured, "text and structured content agree");
        Ok(structured)
    }

    fn ok(&mut self, tool: &str, arguments: Value) -> Value {
        self.call(tool, arguments)
            .unwrap_or_else(|e| panic!("{tool} failed for {}: {e}", self.who))
    }

    fn tool_error(&mut self, tool: &str, arguments: Value) -> String {
        match self.call(tool, arguments.clone()) {
            Ok(v) => panic!("{tool} {arguments} should have failed, gave {v}"),
            Err(text) => text,
        }
    }

    fn messages(&mut self) -> Vec<(String, String, String)> {
        let inbox = self.ok("check_messages", json!({}));
        inbox["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                (
                    m["from"].as_str().unwrap().to_string(),
                    m["to"].as_str().unwrap().to_string(),
                    m["text"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    }
}

impl Drop for McpClient {
    /// Closing stdin ends the session: the server must exit by itself.
    fn drop(&mut self) {
        drop(self.stdin.take());
        let deadline = Instant::now() + ANSWER;
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => {
                    if !std::thread::panicking() {
                        assert!(
                            status.success(),
                            "owt mcp ({}) exited with {status}",
                            self.who
                        );
                    }
                    return;
                }
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                _ => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    if !std::thread::panicking() {
                        panic!("owt mcp ({}) did not exit after stdin closed", self.who);
                    }
                    return;
                }
            }
        }
    }
}

struct Fixture {
    env: TestEnv,
    repo: PathBuf,
}

impl Fixture {
    fn new() -> Fixture {
        let env = TestEnv::new();
        let repo = env.repo("proj");
        Fixture { env, repo }
    }

    /// Starts a session; returns its short id (from `owt --json list`) and
    /// worktree.
    fn session(&self, name: &str) -> (String, PathBuf) {
        let out: NewOutput = self.env.owt_json(
            &self.repo,
            ["new", &format!("task of {name}"), "--name", name],
        );
        let worktree = PathBuf::from(&out.session.worktree);
        let list = self.list();
        let view = list.sessions.iter().find(|s| s.name == name).unwrap();
        (view.id.clone(), worktree)
    }

    fn list(&self) -> SessionList {
        self.env.owt_json(&self.repo, ["list"])
    }

    fn status(&self, name: &str) -> Status {
        self.list()
            .sessions
            .into_iter()
            .find(|s| s.name == name)
            .unwrap()
            .status
    }
}

fn names(peers: &Value) -> Vec<String> {
    peers["peers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap().to_string())
        .collect()
}

fn peer<'a>(list: &'a Value, name: &str) -> &'a Value {
    list["peers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("{name} not in {list}"))
}

#[test]
fn every_tool_between_three_sessions() {
    let f = Fixture::new();
    let (alpha_id, alpha_wt) = f.session("alpha");
    let (beta_id, _) = f.session("beta");
    let (gamma_id, _) = f.session("gamma");
    // From its worktree, as an agent would run it.
    let mut a = McpClient::start(&f.env, &alpha_wt, Some(&alpha_id));
    // From elsewhere: the session id alone picks the repository.
    let mut b = McpClient::start(&f.env, f.env.path(), Some(&beta_id));
    let mut c = McpClient::start(&f.env, &f.repo, Some(&gamma_id));

    // tools/list: six tools, each with an object schema and a description.
    let tools = a.request("tools/list", json!({})).unwrap();
    let listed: Vec<&str> = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            assert_eq!(t["inputSchema"]["type"], "object", "{t}");
            assert!(
                t["description"].as_str().is_some_and(|d| !d.is_empty()),
                "{t}"
            );
            t["name"].as_str().unwrap()
        })
        .collect();
    assert_eq!(
        listed,
        [
            "list_peers",
            "send_message",
            "check_messages",
            "set_summary",
            "get_peer_files",
            "report_status"
        ]
    );

    // list_peers: everyone but the caller, with a derived status.
    let peers = a.ok("list_peers", json!({}));
    assert_eq!(peers["you"], "alpha");
    assert_eq!(names(&peers), ["beta", "gamma"]);
    let beta = peer(&peers, "beta");
    assert_eq!(beta["branch"], f.list().sessions[1].branch.as_str());
    assert_eq!(beta["task"], "task of beta");
    assert!(
        beta["status"].is_string() && beta["summary"].is_null(),
        "{beta}"
    );
    assert_eq!(names(&b.ok("list_peers", json!({}))), ["alpha", "gamma"]);

    // send_message to one peer: only that peer gets it, exactly once.
    let sent = a.ok("send_message", json!({"to": "beta", "text": "hello beta"}));
    assert_eq!(sent["recipients"], json!(["beta"]));
    assert_eq!(
        b.messages(),
        [("alpha".into(), "beta".into(), "hello beta".into())]
    );
    assert_eq!(b.messages(), [], "a message is read once");
    assert_eq!(c.messages(), [], "not addressed to gamma");

    // Broadcast: every other session, never the sender.
    let sent = a.ok("send_message", json!({"to": "*", "text": "all hands"}));
    assert_eq!(sent["recipients"], json!(["beta", "gamma"]));
    assert_eq!(
        b.messages(),
        [("alpha".into(), "*".into(), "all hands".into())]
    );
    assert_eq!(
        c.messages(),
        [("alpha".into(), "*".into(), "all hands".into())]
    );
    assert_eq!(
        a.messages(),
        [],
        "the sender does not get its own broadcast"
    );
    assert_eq!(b.messages(), []);

    // set_summary shows in list_peers from the other side.
    let set = a.ok("set_summary", json!({"summary": "refactoring the parser"}));
    assert_eq!(set["summary"], "refactoring the parser");
    let seen_by_b = b.ok("list_peers", json!({}));
    assert_eq!(
        peer(&seen_by_b, "alpha")["summary"],
        "refactoring the parser"
    );

    // get_peer_files: a file alpha wrote in its worktree, seen by beta
    // (from git: no Conflict Guard has scanned it in this test).
    let before = b.ok("get_peer_files", json!({"peer": "alpha"}));
    assert_eq!(before["files"], json!([]), "{before}");
    std::fs::create_dir_all(alpha_wt.join("src")).unwrap();
    std::fs::write(alpha_wt.join("src/parser.rs"), "fn parse() {}\n").unwrap();
    let files = b.ok("get_peer_files", json!({"peer": "alpha"}));
    assert_eq!(files["peer"], "alpha");
    assert_eq!(files["source"], "git");
    let paths: Vec<&str> = files["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert!(paths.contains(&"src/parser.rs"), "{files}");

    // report_status done: `owt list` shows alpha done, and so does beta's view.
    wait_until("alpha's screen to settle", ANSWER, || {
        !matches!(f.status("alpha"), Status::Starting | Status::Working)
    });
    let reported = a.ok(
        "report_status",
        json!({"kind": "done", "text": "parser refactored"}),
    );
    assert_eq!(reported["kind"], "done");
    assert_eq!(reported["status"], "done");
    assert_eq!(f.status("alpha"), Status::Done);
    let seen_by_b = b.ok("list_peers", json!({}));
    let alpha = peer(&seen_by_b, "alpha");
    assert_eq!(alpha["status"], "done", "{alpha}");
    assert_eq!(
        alpha["report"],
        json!({"kind": "done", "text": "parser refactored"})
    );
    // Blocked makes gamma blocked; beta's status is untouched.
    c.ok(
        "report_status",
        json!({"kind": "blocked", "text": "need the schema from alpha"}),
    );
    assert_eq!(f.status("gamma"), Status::Blocked);
    assert_ne!(f.status("beta"), Status::Blocked);

    // Mistakes are tool errors an agent can act on; the server keeps going.
    let unknown = a.tool_error("send_message", json!({"to": "delta", "text": "hi"}));
    assert!(
        unknown.contains("no peer named `delta`") && unknown.contains("beta, gamma"),
        "{unknown}"
    );
    let to_self = a.tool_error("send_message", json!({"to": "alpha", "text": "hi"}));
    assert!(to_self.contains("is you"), "{to_self}");
    let missing = a.tool_error("send_message", json!({"to": "beta"}));
    assert!(missing.contains("missing field `text`"), "{missing}");
    let bad_kind = a.tool_error("report_status", json!({"kind": "finished", "text": "x"}));
    assert!(
        bad_kind.contains("unknown variant `finished`"),
        "{bad_kind}"
    );
    let extra = a.tool_error("set_summary", json!({"summary": "x", "colour": "red"}));
    assert!(extra.contains("unknown field `colour`"), "{extra}");
    let empty = a.tool_error("set_summary", json!({"summary": "  "}));
    assert!(empty.contains("`summary` is empty"), "{empty}");
    let no_peer = a.tool_error("get_peer_files", json!({"peer": "zeta"}));
    assert!(no_peer.contains("peers: beta, gamma"), "{no_peer}");
    let protocol = a
        .request(
            "tools/call",
            json!({"name": "no_such_tool", "arguments": {}}),
        )
        .unwrap_err();
    assert_eq!(protocol["code"], -32602, "{protocol}");
    assert!(
        protocol["message"].as_str().unwrap().contains("list_peers"),
        "{protocol}"
    );
    assert_eq!(names(&a.ok("list_peers", json!({}))), ["beta", "gamma"]);
    assert_eq!(b.messages(), [], "failed sends delivered nothing");
}

#[test]
fn the_human_outside_a_session() {
    let f = Fixture::new();
    let (alpha_id, _) = f.session("alpha");
    let mut human = McpClient::start(&f.env, &f.repo, None);
    let peers = human.ok("list_peers", json!({}));
    assert_eq!(peers["you"], "human");
    assert_eq!(names(&peers), ["alpha"]);

    let sent = human.ok(
        "send_message",
        json!({"to": "alpha", "text": "rebase please"}),
    );
    assert_eq!(sent["recipients"], json!(["alpha"]));
    let mut a = McpClient::start(&f.env, &f.repo, Some(&alpha_id));
    assert_eq!(
        a.messages(),
        [("human".into(), "alpha".into(), "rebase please".into())]
    );
    // A human broadcast reaches every session.
    human.ok("send_message", json!({"to": "*", "text": "lunch"}));
    assert_eq!(a.messages(), [("human".into(), "*".into(), "lunch".into())]);

    for (tool, args) in [
        ("check_messages", json!({})),
        ("set_summary", json!({"summary": "x"})),
        ("report_status", json!({"kind": "note", "text": "x"})),
    ] {
        let err = human.tool_error(tool, args);
        assert!(err.contains("only inside an owt session"), "{tool}: {err}");
    }
    assert_eq!(
        human.ok("get_peer_files", json!({"peer": "alpha"}))["files"],
        json!([])
    );
}

#[test]
fn an_unknown_session_id_fails_at_start_with_a_reason() {
    let f = Fixture::new();
    f.session("alpha");
    let out = f
        .env
        .owt_cmd(&f.repo, ["mcp"])
        .env("OWT_SESSION", "deadbeef")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("OWT_SESSION=deadbeef names no session"),
        "{stderr}"
    );
}

/// The tool names `client` is offered.
fn tool_names(client: &mut McpClient) -> Vec<String> {
    let listed = client.request("tools/list", json!({})).unwrap();
    listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_conductor_spawns_children_within_max_children_and_a_child_cannot_conduct() {
    let f = Fixture::new();
    let config = f.env.home.join(".config/owt/config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("\n[mcp]\nmax_children = 2\n");
    std::fs::write(&config, text).unwrap();
    let boss: NewOutput = f
        .env
        .owt_json(&f.repo, ["new", "--conductor", "conduct", "--name", "boss"]);
    let (plain_id, _) = f.session("plain");
    let conductor_tools = [
        "spawn_session",
        "list_sessions",
        "wait_session",
        "session_diff",
        "send_to_session",
        "ship_session",
    ];
    // A session started without --conductor has none of the tools.
    let mut plain = McpClient::start(&f.env, &f.repo, Some(&plain_id));
    let tools = tool_names(&mut plain);
    assert!(
        conductor_tools
            .iter()
            .all(|t| !tools.iter().any(|x| x == t)),
        "{tools:?}"
    );
    let err = plain.tool_error("spawn_session", json!({"task": "x"}));
    assert!(
        err.contains("`plain` is not a conductor: start it with `owt new --conductor`"),
        "{err}"
    );
    drop(plain);
    // The conductor has them all, and spawns up to max_children.
    let mut conductor = McpClient::start(&f.env, &f.repo, Some(&boss.session.id));
    let tools = tool_names(&mut conductor);
    assert!(
        conductor_tools.iter().all(|t| tools.iter().any(|x| x == t)),
        "{tools:?}"
    );
    for kid in ["kid-a", "kid-b"] {
        let spawned = conductor.ok(
            "spawn_session",
            json!({"task": format!("task of {kid}"), "name": kid}),
        );
        assert_eq!(spawned["parent"], "boss", "{spawned}");
        assert_eq!(spawned["started"], true, "{spawned}");
    }
    let err = conductor.tool_error(
        "spawn_session",
        json!({"task": "one too many", "name": "kid-c"}),
    );
    assert!(
        err.contains("`boss` already has 2 children ([mcp] max_children = 2)"),
        "{err}"
    );
    let listed = f.list();
    assert!(
        listed.sessions.iter().all(|s| s.name != "kid-c"),
        "kid-c was created"
    );
    let parent = |name: &str| {
        listed
            .sessions
            .iter()
            .find(|s| s.name == name)
            .unwrap()
            .parent
            .clone()
    };
    assert_eq!(parent("kid-a").as_deref(), Some("boss"));
    assert_eq!(parent("kid-b").as_deref(), Some("boss"));
    assert_eq!(parent("boss"), None);
    assert_eq!(parent("plain"), None);
    let children = conductor.ok("list_sessions", json!({}));
    assert_eq!(names_of(&children["children"]), ["kid-a", "kid-b"]);
    // It waits for, types into and reads its children, and only its own.
    let waited = conductor.ok("wait_session", json!({"name": "kid-a", "timeout_secs": 15}));
    assert_eq!(waited["outcome"], "needs-you", "{waited}");
    conductor.ok(
        "send_to_session",
        json!({"name": "kid-a", "text": "hello kid"}),
    );
    wait_until("kid-a to get the text", ANSWER, || {
        f.env
            .owt_ok(&f.repo, ["peek", "kid-a"])
            .contains("got: hello kid")
    });
    let diff = conductor.ok("session_diff", json!({"name": "kid-a"}));
    assert_eq!(diff["files"], json!([]), "{diff}");
    let err = conductor.tool_error("wait_session", json!({"name": "plain"}));
    assert!(err.contains("`plain` is not a child of `boss`"), "{err}");
    // Shipping is a human's unless [mcp] conductor_can_ship.
    let err = conductor.tool_error("ship_session", json!({"name": "kid-a"}));
    assert!(
        err.contains("a human ships `kid-a` from NEEDS YOU (`owt ship kid-a`)"),
        "{err}"
    );
    assert!(f.list().sessions.iter().any(|s| s.name == "kid-a"));
    drop(conductor);
    // Depth 1: a child has no conductor tools, even asked by name.
    let kid_id = f
        .list()
        .sessions
        .iter()
        .find(|s| s.name == "kid-a")
        .unwrap()
        .id
        .clone();
    let mut kid = McpClient::start(&f.env, &f.repo, Some(&kid_id));
    let tools = tool_names(&mut kid);
    assert!(!tools.iter().any(|t| t == "spawn_session"), "{tools:?}");
    let err = kid.tool_error("spawn_session", json!({"task": "grandchild"}));
    assert!(
        err.contains("`kid-a` was spawned by `boss`: a child cannot conduct"),
        "{err}"
    );
    assert_eq!(f.list().sessions.len(), 4);
}

fn names_of(list: &Value) -> Vec<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_conductor_ships_its_child_only_with_conductor_can_ship() {
    let f = Fixture::new();
    let config = f.env.home.join(".config/owt/config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("\n[mcp]\nconductor = true\nconductor_can_ship = true\n");
    std::fs::write(&config, text).unwrap();
    // [mcp] conductor = true: a session started without --conductor conducts.
    let (boss_id, _) = f.session("boss");
    let mut conductor = McpClient::start(&f.env, &f.repo, Some(&boss_id));
    let spawned = conductor.ok(
        "spawn_session",
        json!({"task": "add a file", "name": "kid"}),
    );
    let worktree = PathBuf::from(spawned["worktree"].as_str().unwrap());
    let waited = conductor.ok("wait_session", json!({"name": "kid", "timeout_secs": 15}));
    assert_eq!(waited["outcome"], "needs-you", "{waited}");
    std::fs::write(worktree.join("kid.txt"), "the kid's work\n").unwrap();
    let diff = conductor.ok("session_diff", json!({"name": "kid"}));
    assert_eq!(diff["files"][0]["path"], "kid.txt", "{diff}");
    let shipped = conductor.ok("ship_session", json!({"name": "kid"}));
    assert!(shipped["committed"].is_string(), "{shipped}");
    // Merged into main and the child is gone; the conductor stays.
    let main_files = f.env.git(&f.repo, ["ls-tree", "--name-only", "main"]);
    assert!(main_files.lines().any(|l| l == "kid.txt"), "{main_files}");
    let names: Vec<String> = f.list().sessions.into_iter().map(|s| s.name).collect();
    assert_eq!(names, ["boss"]);
}

/// `wait_session` blocks for as long as the child works, and the other
/// tools answer meanwhile: the conductor can look around while it waits.
#[test]
fn the_other_tools_answer_while_a_conductor_waits() {
    let f = Fixture::new();
    // The child runs the scripted agent whose `busy S` works for S seconds.
    let config = f.env.home.join(".config/owt/config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(&format!(
        "\n[tools.busy]\nbinary = \"python3\"\ncommand_template = \"{{binary}} {}\"\n\
         prompt_mode = \"none\"\n",
        owt_e2e::data_file("fake_agent.py").display()
    ));
    std::fs::write(&config, text).unwrap();
    let boss: NewOutput = f
        .env
        .owt_json(&f.repo, ["new", "--conductor", "conduct", "--name", "boss"]);
    let mut conductor = McpClient::start(&f.env, &f.repo, Some(&boss.session.id));
    conductor.ok(
        "spawn_session",
        json!({"task": "kid's task", "name": "kid", "agent": "busy"}),
    );
    wait_until("kid's agent to start", ANSWER, || {
        f.env
            .owt_ok(&f.repo, ["peek", "kid"])
            .contains("FAKE AGENT READY")
    });
    let waited = conductor.ok("wait_session", json!({"name": "kid", "timeout_secs": 15}));
    assert_eq!(waited["outcome"], "needs-you", "{waited}");
    // 15 s of work: longer than any answer below may take.
    conductor.ok("send_to_session", json!({"name": "kid", "text": "busy 15"}));
    wait_until("kid to work", ANSWER, || f.status("kid") == Status::Working);
    let wait = conductor.begin(
        "tools/call",
        json!({"name": "wait_session", "arguments": {"name": "kid", "timeout_secs": 60}}),
    );
    let children = conductor.ok("list_sessions", json!({}));
    assert_eq!(names_of(&children["children"]), ["kid"]);
    conductor.ok("session_diff", json!({"name": "kid"}));
    assert!(
        !conductor.answered(wait),
        "wait_session answered before the child's work was over"
    );
    // The wait ends when the child is back at its prompt.
    let done = conductor
        .answer("wait_session", wait)
        .unwrap_or_else(|e| panic!("wait_session was a protocol error: {e}"));
    assert_eq!(done["isError"], json!(false), "{done}");
    assert_eq!(done["structuredContent"]["outcome"], "needs-you", "{done}");
}
