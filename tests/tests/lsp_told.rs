//! Conflict feedback while `owt lsp` runs (`[feedback] conflicts = "tell"`,
//! the default): its pull-request watcher types each new real conflict
//! into the agents concerned, taking the pairs from the live Conflict
//! Guard, as the files on disk make them: the human's unsaved buffers
//! show in the editor and are never told to an agent as "the user's own
//! uncommitted work". Real `owt lsp` over stdio, real worktrees, the
//! scripted agent (`tests/data/fake_agent.py`) in real session hosts.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use owt_e2e::lsp::LspClient;
use owt_e2e::{data_file, ten_lines, uri, with_line, TestEnv};
use owt_protocol::{NewOutput, SessionList};
use serde_json::json;

/// The watcher's conflict pass runs every `[pr] poll_interval` (at least
/// 30 s): a conflict made after one pass is told at the next.
const WAIT: Duration = Duration::from_secs(90);

fn repo(env: &TestEnv, agent_log: &Path) -> PathBuf {
    let repo = env.untrusted_repo("app");
    std::fs::write(
        repo.join(".owt.toml"),
        format!(
            "[agent]\ndefault_tool = \"fake\"\n\n\
             [tools.fake]\nbinary = \"python3\"\ncommand_template = \"{{binary}} {}\"\n\
             prompt_mode = \"none\"\nenv = {{ FAKE_LOG = \"{}\" }}\n",
            data_file("fake_agent.py").display(),
            agent_log.display(),
        ),
    )
    .unwrap();
    std::fs::write(repo.join("src.txt"), ten_lines()).unwrap();
    env.git(&repo, ["add", "."]);
    env.git(&repo, ["commit", "-q", "-m", "ten lines"]);
    env.trust(&repo);
    repo.canonicalize().unwrap()
}

/// A session whose agent waits at its prompt (it can be told things).
fn session(env: &TestEnv, repo: &Path, name: &str) -> PathBuf {
    let out: NewOutput = env.owt_json(repo, ["new", "--name", name, "edit src"]);
    let deadline = Instant::now() + WAIT;
    loop {
        let list: SessionList = env.owt_json(repo, ["list"]);
        let s = list.sessions.iter().find(|s| s.name == name).unwrap();
        if s.status == owt_protocol::Status::NeedsInput {
            return PathBuf::from(out.session.worktree);
        }
        assert!(
            Instant::now() < deadline,
            "{name} never reached its prompt: {s:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// What owt typed into the agents so far.
fn told(agent_log: &Path) -> Vec<String> {
    std::fs::read_to_string(agent_log)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str::<String>(l).unwrap())
        .filter(|l| l.starts_with("owt:"))
        .collect()
}

#[test]
fn agents_hear_of_each_others_conflicts_and_never_of_unsaved_buffers() {
    let env = TestEnv::new();
    let agent_log = env.path().join("agent.log");
    let repo = repo(&env, &agent_log);
    let a = session(&env, &repo, "a");
    let b = session(&env, &repo, "b");
    let mut client = LspClient::start(
        &env,
        &repo,
        json!({}),
        LspClient::default_capabilities(),
        true,
    );
    let file = repo.join("src.txt");
    client.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri(&file), "languageId": "text", "version": 1,
               "text": ten_lines()}}),
    );
    // The human changes line 5 without saving; so does agent a, on disk:
    // a conflict in the editor.
    client.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri(&file), "version": 2},
               "contentChanges": [{"text": with_line(&ten_lines(), 5, "human 5")}]}),
    );
    std::fs::write(a.join("src.txt"), with_line(&ten_lines(), 5, "a 5")).unwrap();
    client.await_diagnostics(&uri(&file), WAIT, |d| {
        d.iter()
            .any(|x| x["code"] == "conflict" && x["data"]["session"] == "a")
    });
    // Agent b changes the same line: a and b conflict on disk.
    std::fs::write(b.join("src.txt"), with_line(&ten_lines(), 5, "b 5")).unwrap();
    client.await_diagnostics(&uri(&file), WAIT, |d| {
        d.iter()
            .any(|x| x["code"] == "conflict" && x["data"]["session"] == "b")
    });
    let deadline = Instant::now() + WAIT;
    let messages = loop {
        let messages = told(&agent_log);
        let heard = |other: &str| {
            messages
                .iter()
                .any(|m| m.contains(&format!("conflict with the work of session `{other}`")))
        };
        if heard("a") && heard("b") {
            break messages;
        }
        assert!(
            Instant::now() < deadline,
            "the agents were not told of their conflict; told: {messages:#?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(
        messages.iter().all(|m| !m.contains("the user's own")),
        "an unsaved buffer was told to an agent: {messages:#?}"
    );
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        ten_lines(),
        "nothing was saved"
    );
    // One message each: nothing about the human, nothing twice.
    assert_eq!(messages.len(), 2, "{messages:#?}");
}
