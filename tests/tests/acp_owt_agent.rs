//! `owt acp` (owt as an ACP agent on stdio) with a real ACP client: the
//! official TypeScript SDK `@agentclientprotocol/sdk` in Node
//! (`tests/data/acp-client.mjs`), in front of the real Claude adapter
//! (`@zed-industries/claude-agent-acp`) driven by the scripted model.
//!
//! `session/new` creates an owt session with its worktree; the agent's
//! permission request reaches the client, whose answer lets the agent
//! write; `session/list` shows the session, and a second connection (an
//! editor restarted) lists it, `session/load`s its transcript and prompts
//! it again.

use std::time::Duration;

use owt_e2e::acp::{node, setup_acp};
use owt_e2e::agents::{agents_dir, Agent, Model};
use owt_e2e::{data_file, owt_bin, TestEnv};
use owt_protocol::{SessionList, Status};
use serde_json::{json, Value};

#[test]
fn an_editor_on_owt_acp_gets_an_owt_session_per_conversation() {
    let mut env = TestEnv::new();
    let repo = env.repo("app");
    let model = Model::start(
        &env.path().join("model"),
        &json!({"turns": [
            {"steps": [
                {"write": {"path": "hello.txt", "content": "hello from the scripted model\n"}},
                {"text": "I wrote hello.txt."}]},
            {"steps": [{"text": "Second turn: nothing more to write."}]}
        ]}),
    );
    // The worktree's name is owt's choice: trust the folder that holds them.
    let worktrees = env.path().join("app.worktrees");
    setup_acp(
        &mut env,
        Agent::Claude,
        &model,
        &[repo.clone(), worktrees],
        true,
    );
    let sdk = agents_dir().join("npm/node_modules/@agentclientprotocol/sdk");
    let mut cmd = node(
        &env,
        &repo,
        &data_file("acp-client.mjs"),
        &[sdk.as_os_str(), owt_bin().as_os_str(), repo.as_os_str()],
    );
    let out = run_with_deadline(&mut cmd, Duration::from_secs(180));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the client failed ({}):\n{stderr}",
        out.status
    );
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{stderr}", String::from_utf8_lossy(&out.stdout)));
    let fail = |what: &str| format!("{what}\nreport: {report:#}\nowt acp's log:\n{stderr}");

    assert_eq!(report["agentInfo"]["name"], "owt", "{}", fail("agentInfo"));
    assert_eq!(report["loadSession"], true);

    // session/new made an owt session with its worktree and branch.
    let id = report["sessionId"]
        .as_str()
        .expect("a session id")
        .to_string();
    let list: SessionList = env.owt_json(&repo, ["list"]);
    let session = list
        .sessions
        .iter()
        .find(|s| s.id == id)
        .unwrap_or_else(|| panic!("{}", fail("no owt session with the editor's session id")));
    assert_eq!(session.transport, owt_protocol::host::Transport::Acp);
    assert_eq!(report["owt"]["session"], session.name.as_str());
    assert_eq!(report["owt"]["worktree"], session.worktree.as_str());
    let worktree = std::path::PathBuf::from(&session.worktree);
    assert!(worktree.join(".git").exists(), "{}", fail("no worktree"));
    assert_eq!(
        std::process::Command::new("git")
            .args(["rev-parse", "--abbrev-ref", "HEAD"])
            .current_dir(&worktree)
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default(),
        session.branch
    );

    // The agent's permission request reached the client, once; its answer
    // let the agent write, in the worktree only.
    let permissions = report["permissions"].as_array().unwrap();
    assert_eq!(permissions.len(), 1, "{}", fail("permission requests"));
    assert_eq!(permissions[0]["sessionId"], id.as_str());
    assert!(
        permissions[0]["title"]
            .as_str()
            .unwrap_or("")
            .contains("hello.txt"),
        "{}",
        fail("the question")
    );
    assert!(permissions[0]["options"]
        .as_array()
        .unwrap()
        .iter()
        .any(|k| k == "reject_once"));
    assert_eq!(report["firstStop"], "end_turn");
    assert!(
        report["firstReply"]
            .as_str()
            .unwrap()
            .contains("I wrote hello.txt."),
        "{}",
        fail("reply")
    );
    assert_eq!(
        std::fs::read_to_string(worktree.join("hello.txt")).unwrap_or_default(),
        "hello from the scripted model\n",
        "{}",
        fail("hello.txt")
    );
    assert!(!repo.join("hello.txt").exists());

    // session/list, then on a second connection list, load, prompt.
    let listed = report["listed"].as_array().unwrap();
    assert!(
        listed
            .iter()
            .any(|s| s["sessionId"] == id.as_str() && s["cwd"] == session.worktree.as_str()),
        "{}",
        fail("session/list")
    );
    assert!(report["relisted"]
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s == id.as_str()));
    assert!(
        report["replayedUser"]
            .as_str()
            .unwrap()
            .contains("Create hello.txt with a greeting"),
        "{}",
        fail("replay")
    );
    assert!(
        report["replayedReply"]
            .as_str()
            .unwrap()
            .contains("I wrote hello.txt."),
        "{}",
        fail("replay")
    );
    assert_eq!(report["secondStop"], "end_turn");
    assert!(
        report["secondReply"]
            .as_str()
            .unwrap()
            .contains("Second turn: nothing more to write."),
        "{}",
        fail("second turn")
    );
    assert!(
        report["unknownLoad"].as_str().unwrap().contains("nope"),
        "{}",
        fail("loading an unknown session")
    );

    // owt's own view agrees: two turns, waiting for the human.
    let list: SessionList = env.owt_json(&repo, ["list"]);
    let session = list.sessions.iter().find(|s| s.id == id).unwrap();
    assert_eq!(session.status, Status::NeedsInput, "{}", fail("status"));
    assert_eq!(session.acp.as_ref().map(|a| a.turns), Some(2));
}

/// Runs `cmd` to its end; kills it and panics after `deadline`.
fn run_with_deadline(cmd: &mut std::process::Command, deadline: Duration) -> std::process::Output {
    let child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("running node");
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(deadline) {
        Ok(out) => out.expect("waiting for node"),
        Err(_) => {
            // SAFETY: kill has no memory preconditions; pid is our child.
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
            let out = rx.recv().expect("node's output").expect("node");
            panic!(
                "the ACP client did not finish in {deadline:?}:\n{}\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}
