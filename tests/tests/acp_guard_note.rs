//! `owt acp` adds its own context to the conversation it proxies: at the end
//! of a turn, a Conflict Guard overlap between the editor's session and
//! another one comes as an agent message (`[owt] Conflict Guard: …`); no
//! overlap, no message. The editor is this test speaking ACP over `owt
//! acp`'s stdio; the agent is the scripted ACP agent
//! (`tests/data/fake-acp-agent.py --mode ok`).

use std::io::{BufRead, BufReader, Lines, Write};
use std::process::{ChildStdin, ChildStdout, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use owt_e2e::acp::fake_acp_tool;
use owt_e2e::TestEnv;
use serde_json::{json, Value};

const WAIT: Duration = Duration::from_secs(60);

/// The editor's end of `owt acp`.
struct Editor {
    stdin: ChildStdin,
    rx: mpsc::Receiver<Value>,
    next_id: u64,
}

impl Editor {
    fn start(stdout: ChildStdout, stdin: ChildStdin) -> Editor {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let lines: Lines<BufReader<ChildStdout>> = BufReader::new(stdout).lines();
            for line in lines.map_while(Result::ok) {
                let value = serde_json::from_str(&line).unwrap_or_else(|e| {
                    panic!("owt acp sent a line that is not JSON ({e}): {line}")
                });
                if tx.send(value).is_err() {
                    return;
                }
            }
        });
        Editor {
            stdin,
            rx,
            next_id: 0,
        }
    }

    /// Sends a request; returns its result and the notifications that came
    /// before it.
    fn request(&mut self, method: &str, params: Value) -> (Value, Vec<Value>) {
        self.next_id += 1;
        let id = self.next_id;
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
        let deadline = std::time::Instant::now() + WAIT;
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let message = self
                .rx
                .recv_timeout(left)
                .unwrap_or_else(|e| panic!("no answer to {method} ({e}); seen: {seen:#?}"));
            if message["id"] == id && message.get("method").is_none() {
                if let Some(error) = message.get("error") {
                    panic!("{method} failed: {error}");
                }
                return (message["result"].clone(), seen);
            }
            seen.push(message);
        }
    }
}

/// The text of the agent messages among `updates`.
fn agent_text(updates: &[Value]) -> String {
    updates
        .iter()
        .filter(|m| m["method"] == "session/update")
        .filter(|m| m["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
        .filter_map(|m| m["params"]["update"]["content"]["text"].as_str())
        .collect()
}

#[test]
fn a_conflict_guard_overlap_comes_as_an_agent_message_at_the_end_of_a_turn() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    fake_acp_tool(&env, "ok");
    let mut child = env
        .owt_cmd(&repo, ["acp"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("owt acp");
    let mut editor = Editor::start(child.stdout.take().unwrap(), child.stdin.take().unwrap());
    editor.request(
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}}),
    );
    let (created, _) = editor.request(
        "session/new",
        json!({"cwd": repo, "mcpServers": [],
               "_meta": {"owt": {"agent": "acpfake", "name": "chat"}}}),
    );
    let id = created["sessionId"]
        .as_str()
        .expect("a session id")
        .to_string();
    let worktree = std::path::PathBuf::from(created["_meta"]["owt"]["worktree"].as_str().unwrap());

    // No overlap yet: the turn ends with the agent's reply alone.
    let (result, updates) = editor.request(
        "session/prompt",
        json!({"sessionId": id, "prompt": [{"type": "text", "text": "hello"}]}),
    );
    assert_eq!(result["stopReason"], "end_turn");
    let text = agent_text(&updates);
    assert!(text.contains("fake reply to: hello"), "{text}");
    assert!(!text.contains("[owt] Conflict Guard"), "{text}");

    // Another session changes the file this one changes.
    let other: owt_protocol::NewOutput =
        env.owt_json(&repo, ["new", "the other task", "--name", "other"]);
    std::fs::write(worktree.join("shared.txt"), "from chat\n").unwrap();
    std::fs::write(
        std::path::Path::new(&other.session.worktree).join("shared.txt"),
        "from other\n",
    )
    .unwrap();
    let (_, updates) = editor.request(
        "session/prompt",
        json!({"sessionId": id, "prompt": [{"type": "text", "text": "again"}]}),
    );
    let text = agent_text(&updates);
    assert!(text.contains("fake reply to: again"), "{text}");
    assert!(
        text.contains(
            "[owt] Conflict Guard: this session's changes overlap with other work:\n- other: "
        ),
        "{text}"
    );
    assert!(text.contains(" in shared.txt"), "{text}");
    let note_at = text.find("[owt] Conflict Guard").unwrap();
    assert!(
        note_at > text.find("fake reply to: again").unwrap(),
        "the note follows the agent's reply: {text}"
    );

    drop(editor);
    let status = child.wait().unwrap();
    assert!(status.success(), "{status}");
}
