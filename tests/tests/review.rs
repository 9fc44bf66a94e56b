//! End-to-end tests of review with the real binary: `owt diff` (every
//! kind of change: committed, staged, unstaged, untracked, binary, rename,
//! deletion, mode, a file with no trailing newline — checked against
//! `git diff` of the same state), `owt review` (locations, mark reviewed),
//! `owt comment` / `owt comments` (a comment reaches a scripted agent as
//! one message and is addressed when the agent changes those lines), and
//! `owt ship`'s review check.

use std::path::{Path, PathBuf};
use std::time::Duration;

use owt_e2e::lsp::LspClient;
use owt_e2e::{data_file, uri, wait_until, TestEnv};
use owt_protocol::review::{CommentsOutput, DiffReport, FileStatus, ReviewedOutput};
use owt_protocol::NewOutput;
use serde_json::{json, Value};

const DEADLINE: Duration = Duration::from_secs(30);

fn numbered(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

/// A repository whose agent is the scripted fake agent, logging what it
/// is sent to `log`.
fn repo_with_logging_agent(env: &TestEnv, log: &Path) -> PathBuf {
    let repo = env.repo("app");
    std::fs::write(
        repo.join(".owt.toml"),
        format!(
            "[agent]\ndefault_tool = \"fake\"\nenv = {{ FAKE_LOG = \"{}\" }}\n\n[tools.fake]\nbinary = \"{}\"\n",
            log.display(),
            data_file("fake_agent.py").display()
        ),
    )
    .unwrap();
    std::fs::write(repo.join("a.txt"), numbered(10)).unwrap();
    std::fs::write(repo.join("old.txt"), numbered(20)).unwrap();
    std::fs::write(repo.join("gone.txt"), "bye\n").unwrap();
    std::fs::write(repo.join("nonl.txt"), "one\ntwo\n").unwrap();
    std::fs::write(repo.join("run.sh"), "echo hi\n").unwrap();
    std::fs::write(repo.join("pic.bin"), [0u8, 1, 2, 3, 0, 255]).unwrap();
    env.git(&repo, ["add", "."]);
    env.git(&repo, ["commit", "-q", "-m", "files"]);
    env.trust(&repo);
    repo
}

/// A test's world: a repository whose agent logs what it is typed (to
/// `log`), and its session `agent` (worktree `wt`).
fn logged_agent() -> (TestEnv, PathBuf, PathBuf, PathBuf) {
    let env = TestEnv::new();
    let log = env.path().join("agent.log");
    let repo = repo_with_logging_agent(&env, &log);
    let wt = new_session(&env, &repo, "agent");
    (env, log, repo, wt)
}

fn new_session(env: &TestEnv, repo: &Path, name: &str) -> PathBuf {
    let out: NewOutput = env.owt_json(repo, ["new", &format!("work on {name}"), "--name", name]);
    env.wait_settled(repo, name);
    PathBuf::from(out.session.worktree)
}

/// Every kind of change, spread over commits, the index, the files and
/// untracked ones.
fn change_everything(env: &TestEnv, wt: &Path) {
    // Committed on the branch.
    std::fs::write(
        wt.join("a.txt"),
        numbered(10).replace("line 3\n", "line three\n"),
    )
    .unwrap();
    env.git(wt, ["commit", "-q", "-am", "agent: line three"]);
    // Staged: a rename with an edit.
    env.git(wt, ["mv", "old.txt", "new.txt"]);
    std::fs::write(
        wt.join("new.txt"),
        numbered(20).replace("line 20\n", "line twenty\n"),
    )
    .unwrap();
    env.git(wt, ["add", "new.txt"]);
    // Unstaged: a deletion, no trailing newline, a mode, a binary.
    std::fs::remove_file(wt.join("gone.txt")).unwrap();
    std::fs::write(wt.join("nonl.txt"), "one\ntwo\nthree").unwrap();
    let script = wt.join("run.sh");
    let mut perms = std::fs::metadata(&script).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&script, perms).unwrap();
    std::fs::write(wt.join("pic.bin"), [0u8, 9, 9, 0, 255]).unwrap();
    // Untracked.
    std::fs::write(wt.join("fresh.txt"), "new file\n").unwrap();
}

#[test]
fn diff_shows_the_whole_working_state_as_git_diff_does() {
    let (env, _, repo, wt) = logged_agent();
    let base_commit = env.git(&repo, ["rev-parse", "HEAD"]).trim().to_string();
    change_everything(&env, &wt);

    let report: DiffReport = env.owt_json(&repo, ["diff", "agent"]);
    assert_eq!(report.merge_base.as_deref(), Some(base_commit.as_str()));
    let summary: Vec<(&str, FileStatus, bool, u32, u32)> = report
        .files
        .iter()
        .map(|f| {
            (
                f.path.as_str(),
                f.status,
                f.binary,
                f.additions,
                f.deletions,
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("a.txt", FileStatus::Modified, false, 1, 1),
            ("fresh.txt", FileStatus::Added, false, 1, 0),
            ("gone.txt", FileStatus::Deleted, false, 0, 1),
            ("new.txt", FileStatus::Renamed, false, 1, 1),
            ("nonl.txt", FileStatus::Modified, false, 1, 0),
            ("pic.bin", FileStatus::Modified, true, 0, 0),
            ("run.sh", FileStatus::ModeChanged, false, 0, 0),
        ]
    );
    let file = |path: &str| report.files.iter().find(|f| f.path == path).unwrap();
    assert_eq!(file("new.txt").old_path.as_deref(), Some("old.txt"));
    let run = file("run.sh");
    assert_eq!(
        (run.old_mode.as_deref(), run.new_mode.as_deref()),
        (Some("100644"), Some("100755"))
    );
    // Both sides' blob ids name the right contents.
    let a = file("a.txt");
    let base_blob = env.git(&repo, ["cat-file", "blob", a.base_blob.as_ref().unwrap()]);
    assert_eq!(base_blob.trim_end(), numbered(10).trim_end());
    let agent_blob = env.git(&repo, ["cat-file", "blob", a.agent_blob.as_ref().unwrap()]);
    assert_eq!(
        agent_blob.trim_end(),
        std::fs::read_to_string(wt.join("a.txt"))
            .unwrap()
            .trim_end()
    );
    assert!(file("gone.txt").agent_blob.is_none() && file("gone.txt").agent_uri.is_none());
    assert!(a.agent_uri.as_deref().unwrap().ends_with("/a.txt"));
    // Hunks carry both sides' line numbers.
    let hunk = &a.hunks[0];
    assert_eq!((hunk.old_start, hunk.new_start), (1, 1));
    let changed: Vec<(&str, &str, Option<u32>, Option<u32>)> = hunk
        .lines
        .iter()
        .filter(|l| l.origin != " ")
        .map(|l| (l.origin.as_str(), l.text.as_str(), l.old_line, l.new_line))
        .collect();
    assert_eq!(
        changed,
        [
            ("-", "line 3", Some(3), None),
            ("+", "line three", None, Some(3))
        ]
    );
    let last = file("nonl.txt").hunks[0].lines.last().unwrap();
    assert_eq!((last.text.as_str(), last.no_newline), ("three", true));

    // Not a terminal: the text is git's own diff of the same state.
    let text = env.owt_ok(&repo, ["diff", "agent"]);
    env.git(&wt, ["add", "-A"]);
    let git = env.git(
        &wt,
        [
            "diff",
            "--cached",
            "--no-color",
            "-M",
            "--no-ext-diff",
            &base_commit,
        ],
    );
    // owt leaves out git's "similarity index" line of a rename (a score
    // git2 does not expose); the rest is git's text.
    let git: String = git
        .lines()
        .filter(|l| !l.starts_with("similarity index"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(text.trim_end(), git.trim_end());
    env.git(&wt, ["reset", "-q"]);

    // One file; --stat.
    let one: DiffReport = env.owt_json(&repo, ["diff", "agent", "nonl.txt"]);
    assert_eq!(one.files.len(), 1);
    let stat = env.owt_ok(&repo, ["diff", "agent", "--stat"]);
    assert!(stat.contains(" old.txt => new.txt | 2 +-\n"), "{stat}");
    assert!(stat.contains(" pic.bin            | Bin\n"), "{stat}");
    assert!(
        stat.ends_with(" 7 files changed, 4 insertions(+), 3 deletions(-)\n"),
        "{stat}"
    );
    // Bad input: a clear error.
    let err = env.owt_err(&repo, ["diff", "agent", "../outside"]);
    assert!(err.contains("not a path inside the worktree"), "{err}");
    let err = env.owt_err(&repo, ["diff", "nobody"]);
    assert!(err.contains("no session named `nobody`"), "{err}");
}

#[test]
fn review_marks_files_and_ship_warns_or_refuses_on_unreviewed_ones() {
    let (env, _, repo, wt) = logged_agent();
    std::fs::write(
        wt.join("a.txt"),
        numbered(10).replace("line 7\n", "seven\n"),
    )
    .unwrap();
    std::fs::write(wt.join("fresh.txt"), "new\n").unwrap();

    // Locations an editor opens: the agent's copy at the change.
    let text = env.owt_ok(&repo, ["review", "agent"]);
    let a = wt.join("a.txt");
    assert!(
        text.contains(&format!(
            "{}:7: +1 -1 (modified, +1 -1, not reviewed)",
            a.display()
        )),
        "{text}"
    );

    let marked: ReviewedOutput = env.owt_json(&repo, ["review", "agent", "--mark", "a.txt"]);
    assert_eq!(marked.reviewed, ["a.txt"]);
    assert_eq!(marked.unreviewed, ["fresh.txt"]);
    let report: DiffReport = env.owt_json(&repo, ["diff", "agent"]);
    assert!(report.files.iter().any(|f| f.path == "a.txt" && f.reviewed));
    // A change after the review makes the file unreviewed again.
    std::fs::write(
        wt.join("a.txt"),
        numbered(10).replace("line 8\n", "eight\n"),
    )
    .unwrap();
    let report: DiffReport = env.owt_json(&repo, ["diff", "agent"]);
    assert!(report.files.iter().all(|f| !f.reviewed));
    let err = env.owt_err(&repo, ["review", "agent", "--mark", "README.md"]);
    assert!(
        err.contains("README.md is not among the files agent changed"),
        "{err}"
    );

    // [ship] require_review refuses, changing nothing.
    let config = std::fs::read_to_string(repo.join(".owt.toml")).unwrap();
    std::fs::write(
        repo.join(".owt.toml"),
        format!("{config}\n[ship]\nrequire_review = true\n"),
    )
    .unwrap();
    let head = env.git(&repo, ["rev-parse", "main"]);
    let err = env.owt_err(&repo, ["ship", "agent"]);
    assert!(
        err.contains(
            "not shipping `agent`: 2 files not reviewed since their last change (a.txt, fresh.txt)"
        ),
        "{err}"
    );
    assert_eq!(env.git(&repo, ["rev-parse", "main"]), head);
    assert!(wt.join("fresh.txt").exists());

    // Reviewed: it ships.
    env.owt_ok(&repo, ["review", "agent", "--mark"]);
    let out = env.owt(&repo, ["ship", "agent"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!String::from_utf8_lossy(&out.stderr).contains("not reviewed"));
    assert_eq!(
        std::fs::read_to_string(repo.join("fresh.txt")).unwrap(),
        "new\n"
    );
}

#[test]
fn ship_without_review_warns_and_ships() {
    let (env, _, repo, wt) = logged_agent();
    std::fs::write(wt.join("fresh.txt"), "new\n").unwrap();
    let out = env.owt(&repo, ["ship", "agent"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("Warning: shipping 1 file not reviewed since its last change (fresh.txt)"),
        "{stderr}"
    );
}

fn agent_lines(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str::<String>(l).expect("agent log line"))
        .collect()
}

#[test]
fn comments_given_from_two_shells_within_the_window_go_as_one_message() {
    let (env, log, repo, wt) = logged_agent();
    std::fs::write(wt.join("a.txt"), numbered(10).replace("line 5\n", "five\n")).unwrap();
    wait_until("the agent to start", Duration::from_secs(30), || {
        env.owt_ok(&repo, ["peek", "agent"])
            .contains("FAKE AGENT READY")
    });

    // The first `owt comment` waits for more; a second one, from another
    // shell while it waits, takes both to the agent as one message.
    let first = env
        .owt_cmd(&repo, ["--json", "comment", "agent", "a.txt:5", "first"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_until(
        "the first comment to be stored",
        Duration::from_secs(30),
        || {
            let all: CommentsOutput = env.owt_json(&repo, ["comments", "agent"]);
            all.comments.len() == 1
        },
    );
    let second: CommentsOutput = env.owt_json(&repo, ["comment", "agent", "a.txt:7", "second"]);
    let first = first.wait_with_output().unwrap();
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let first: CommentsOutput = serde_json::from_slice(&first.stdout).unwrap();
    assert_eq!((first.comments[0].id, second.comments[0].id), (1, 2));
    assert!(second.comments[0].delivered, "{second:?}");

    let expected = "Review comments from the human supervising you (owt review). \
                    Please change the code as asked in each:\n\n\
                    a.txt line 5:\n    five\nComment: first\n\n\
                    a.txt line 7:\n    line 7\nComment: second";
    wait_until(
        "one message with both comments",
        Duration::from_secs(30),
        || {
            agent_lines(&log)
                .iter()
                .any(|l| l.contains("Comment: second"))
        },
    );
    let messages: Vec<String> = agent_lines(&log)
        .into_iter()
        .filter(|l| l.contains("Comment: "))
        .collect();
    assert_eq!(messages, vec![expected.to_string()], "typed: {messages:#?}");
    // Both are sent: a later `owt comment --now` types only its own.
    let third: CommentsOutput =
        env.owt_json(&repo, ["comment", "--now", "agent", "a.txt:9", "third"]);
    assert!(third.comments[0].delivered);
    wait_until("the third comment alone", Duration::from_secs(30), || {
        agent_lines(&log)
            .iter()
            .any(|l| l.contains("Comment: third") && !l.contains("Comment: first"))
    });
}

#[test]
fn a_comment_reaches_the_agent_as_one_message_and_is_addressed_by_its_change() {
    let (env, log, repo, wt) = logged_agent();
    std::fs::write(
        wt.join("a.txt"),
        numbered(10).replace("line 5\n", "let x = 5;\n"),
    )
    .unwrap();
    // The agent is up (it logs what it is typed once ready).
    wait_until("the agent to start", Duration::from_secs(30), || {
        env.owt_ok(&repo, ["peek", "agent"])
            .contains("FAKE AGENT READY")
    });

    let made: CommentsOutput = env.owt_json(
        &repo,
        ["comment", "agent", "a.txt:5-6", "use", "a", "constant"],
    );
    assert_eq!(made.comments.len(), 1);
    assert!(made.comments[0].delivered);
    assert_eq!(made.comments[0].selected, "let x = 5;\nline 6");
    let expected = "Review comment from the human supervising you (owt review). \
                    Please change the code as asked:\n\n\
                    a.txt lines 5-6:\n    let x = 5;\n    line 6\nComment: use a constant";
    wait_until(
        "the comment to reach the agent",
        Duration::from_secs(30),
        || agent_lines(&log).iter().any(|l| l == expected),
    );

    // Listed while open; lines above it move it; bad input changes nothing.
    let listed: CommentsOutput = env.owt_json(&repo, ["comments", "agent"]);
    assert_eq!(listed.comments.len(), 1);
    assert_eq!(listed.comments[0].state, "open");
    std::fs::write(
        wt.join("a.txt"),
        format!(
            "added\n{}",
            numbered(10).replace("line 5\n", "let x = 5;\n")
        ),
    )
    .unwrap();
    let listed: CommentsOutput = env.owt_json(&repo, ["comments", "agent"]);
    assert_eq!(
        (listed.comments[0].start_line, listed.comments[0].end_line),
        (6, 7)
    );
    for (location, error) in [
        ("a.txt", "not a location"),
        ("a.txt:40", "line 40 is past its end"),
        ("missing.txt:1", "has no file missing.txt"),
        ("../x:1", "not a path inside the worktree"),
    ] {
        let err = env.owt_err(&repo, ["comment", "agent", location, "x"]);
        assert!(err.contains(error), "{location}: {err}");
    }

    // The agent changes those lines: addressed, no longer listed as open.
    std::fs::write(
        wt.join("a.txt"),
        format!(
            "added\n{}",
            numbered(10).replace("line 5\n", "let x = FIVE;\n")
        ),
    )
    .unwrap();
    let listed: CommentsOutput = env.owt_json(&repo, ["comments", "agent"]);
    assert!(listed.comments.is_empty(), "{listed:?}");
    let all: CommentsOutput = env.owt_json(&repo, ["comments", "agent", "--all"]);
    assert_eq!(all.comments[0].state, "addressed");

    // A second comment, resolved by hand.
    env.owt_ok(&repo, ["comment", "agent", "a.txt:1", "drop this line"]);
    let text = env.owt_ok(&repo, ["comments", "agent"]);
    assert_eq!(text.trim(), "2 a.txt:1 (open): drop this line");
    let after: CommentsOutput = env.owt_json(&repo, ["comments", "agent", "--resolve", "2"]);
    assert!(after.comments.is_empty());
}

fn lsp_code_actions(client: &mut LspClient, file: &Path, first: u32, last: u32) -> Vec<Value> {
    client
        .request(
            "textDocument/codeAction",
            json!({
                "textDocument": {"uri": uri(file)},
                "range": {"start": {"line": first, "character": 0}, "end": {"line": last, "character": 3}},
                "context": {"diagnostics": []}
            }),
        )
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[test]
fn the_lsp_serves_the_diff_batches_comments_shows_them_until_addressed_and_the_base() {
    let (env, log, repo, wt) = logged_agent();
    std::fs::write(wt.join("a.txt"), numbered(10).replace("line 2\n", "two\n")).unwrap();
    wait_until("the agent to start", Duration::from_secs(30), || {
        env.owt_ok(&repo, ["peek", "agent"])
            .contains("FAKE AGENT READY")
    });
    let mut client = LspClient::start(
        &env,
        &repo,
        json!({}),
        LspClient::default_capabilities(),
        true,
    );
    client.request("owt/board", Value::Null);

    // owt/diff: the same report as `owt diff --json`.
    let diff = client.request("owt/diff", json!({"session": "agent"}));
    let diff: DiffReport = serde_json::from_value(diff).unwrap();
    assert_eq!(diff.files.len(), 1);
    assert_eq!(diff.files[0].path, "a.txt");
    assert_eq!((diff.files[0].additions, diff.files[0].deletions), (1, 1));
    let one = client.request("owt/diff", json!({"session": "agent", "path": "nonl.txt"}));
    assert_eq!(one["files"], json!([]));
    let err = client
        .request_result("owt/diff", json!({"session": "ghost"}))
        .unwrap_err();
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("no session named `ghost`"),
        "{err}"
    );

    // A selection in the agent's copy offers the comment and the base.
    let file = wt.join("a.txt");
    let actions = lsp_code_actions(&mut client, &file, 4, 5);
    let titles: Vec<&str> = actions
        .iter()
        .map(|a| a["title"].as_str().unwrap())
        .collect();
    assert!(
        titles.contains(&"owt: ask agent to change this…"),
        "{titles:?}"
    );
    assert!(
        titles.contains(&"owt: show the base version of a.txt"),
        "{titles:?}"
    );
    let ask = actions
        .iter()
        .find(|a| a["command"]["command"] == "owt.comment")
        .unwrap();
    let mut arg = ask["command"]["arguments"][0].clone();
    assert_eq!(
        (arg["start_line"].clone(), arg["end_line"].clone()),
        (json!(5), json!(6))
    );

    // Two comments in a row: one message.
    arg["text"] = json!("rename this");
    client.request(
        "workspace/executeCommand",
        json!({"command": "owt.comment", "arguments": [arg]}),
    );
    client.request(
        "workspace/executeCommand",
        json!({"command": "owt.comment", "arguments": [{"session": "agent", "path": "a.txt", "start_line": 9, "end_line": 9, "text": "and this"}]}),
    );
    let expected = "Review comments from the human supervising you (owt review). \
                    Please change the code as asked in each:\n\n\
                    a.txt lines 5-6:\n    line 5\n    line 6\nComment: rename this\n\n\
                    a.txt line 9:\n    line 9\nComment: and this";
    wait_until(
        "the batch to reach the agent",
        Duration::from_secs(30),
        || agent_lines(&log).iter().any(|l| l == expected),
    );
    assert_eq!(
        agent_lines(&log)
            .iter()
            .filter(|l| l.contains("owt review"))
            .count(),
        1,
        "one message for both"
    );

    // Shown as Hints on those lines of the agent's copy.
    let hints = client.await_diagnostics(&uri(&file), DEADLINE, |d| d.len() == 2);
    let lines: Vec<(u64, &str, u64)> = hints
        .iter()
        .map(|d| {
            (
                d["range"]["start"]["line"].as_u64().unwrap(),
                d["source"].as_str().unwrap(),
                d["severity"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(lines, [(4, "owt-review", 4), (8, "owt-review", 4)]);

    // The agent changes line 9: that comment clears, the other stays.
    std::fs::write(
        &file,
        numbered(10)
            .replace("line 2\n", "two\n")
            .replace("line 9\n", "nine\n"),
    )
    .unwrap();
    let left = client.await_diagnostics(&uri(&file), DEADLINE, |d| d.len() == 1);
    assert_eq!(left[0]["range"]["start"]["line"], 4);

    // On the comment's Hint, a code action resolves it: the Hint goes.
    let actions: Vec<Value> = client
        .request(
            "textDocument/codeAction",
            json!({
                "textDocument": {"uri": uri(&file)},
                "range": left[0]["range"].clone(),
                "context": {"diagnostics": [left[0].clone()]}
            }),
        )
        .as_array()
        .cloned()
        .unwrap_or_default();
    let resolve = actions
        .iter()
        .find(|a| a["title"] == "owt: resolve review comment 1")
        .unwrap_or_else(|| panic!("no resolve action in {actions:?}"));
    client.request(
        "workspace/executeCommand",
        json!({"command": resolve["command"]["command"], "arguments": resolve["command"]["arguments"]}),
    );
    client.await_diagnostics(&uri(&file), DEADLINE, |d| d.is_empty());
    let all: CommentsOutput = env.owt_json(&repo, ["comments", "agent", "--all"]);
    let states: Vec<(u32, &str)> = all
        .comments
        .iter()
        .map(|c| (c.id, c.state.as_str()))
        .collect();
    assert_eq!(states, [(1, "resolved"), (2, "addressed")]);

    // The base version, read-only, through window/showDocument.
    client.request(
        "workspace/executeCommand",
        json!({"command": "owt.showBase", "arguments": [{"session": "agent", "path": "a.txt"}]}),
    );
    let shown = client.await_request("window/showDocument", DEADLINE);
    let copy = PathBuf::from(shown["uri"].as_str().unwrap().trim_start_matches("file://"));
    assert_eq!(std::fs::read_to_string(&copy).unwrap(), numbered(10));
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&copy).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o400);
}

/// READY TO SHIP rows say `reviewed` once every changed file was marked
/// reviewed, and `not reviewed` again after the agent's next change
/// (`owt --json list`; the LSP board carries the same field).
#[test]
fn ready_to_ship_sessions_say_whether_their_work_is_reviewed() {
    let (env, _, repo, wt) = logged_agent();
    std::fs::write(wt.join("a.txt"), numbered(10).replace("line 2\n", "two\n")).unwrap();
    std::fs::write(wt.join("fresh.txt"), "new\n").unwrap();
    let view = |env: &TestEnv| -> Value {
        let list: Value = env.owt_json(&repo, ["list"]);
        list["sessions"]
            .as_array()
            .and_then(|all| all.iter().find(|s| s["name"] == "agent"))
            .cloned()
            .unwrap_or_else(|| panic!("no session agent in {list}"))
    };
    // The agent is at work: no review state outside READY TO SHIP.
    assert_eq!(view(&env).get("review"), None, "{}", view(&env));
    // It ends its turn with work: READY TO SHIP, not reviewed.
    env.owt_ok(&repo, ["send", "agent", "exit 0"]);
    wait_until("the agent to exit into READY TO SHIP", DEADLINE, || {
        view(&env)["lane"] == "ready-to-ship"
    });
    assert_eq!(view(&env)["review"], "not-reviewed");
    // One file of two reviewed: still not.
    env.owt_ok(&repo, ["review", "agent", "--mark", "a.txt"]);
    assert_eq!(view(&env)["review"], "not-reviewed");
    env.owt_ok(&repo, ["review", "agent", "--mark", "fresh.txt"]);
    assert_eq!(view(&env)["review"], "reviewed");
    // A change after the review (no `owt lsp` watching: `owt list` looks).
    std::fs::write(wt.join("fresh.txt"), "newer\n").unwrap();
    assert_eq!(view(&env)["review"], "not-reviewed");
    env.owt_ok(&repo, ["review", "agent", "--mark"]);
    assert_eq!(view(&env)["review"], "reviewed");
}

/// Marking files reviewed as they were in the diff the human read (its
/// `snapshot`): a file the agent changed after that diff was taken stays
/// not reviewed, even though it is marked after the change (the editors
/// send the snapshot of the diff they showed).
#[test]
fn files_are_marked_as_they_were_in_the_diff_read_not_as_they_are_now() {
    let (env, _, repo, wt) = logged_agent();
    std::fs::write(wt.join("a.txt"), numbered(10).replace("line 2\n", "two\n")).unwrap();
    std::fs::write(wt.join("fresh.txt"), "new\n").unwrap();
    let read: DiffReport = env.owt_json(&repo, ["diff", "agent"]);
    assert!(
        !read.worktree.ends_with('/'),
        "the worktree without git's trailing /: {}",
        read.worktree
    );
    // The agent writes fresh.txt again after the human's diff was taken.
    std::fs::write(wt.join("fresh.txt"), "newer\n").unwrap();
    let marked: ReviewedOutput = env.owt_json(
        &repo,
        ["review", "agent", "--mark", "--snapshot", &read.snapshot],
    );
    assert_eq!(marked.reviewed, ["a.txt"]);
    assert_eq!(marked.unreviewed, ["fresh.txt"]);
    // Bad input: a clear error, nothing marked.
    let before = env.owt_ok(&repo, ["review", "agent"]);
    for (snapshot, error) in [
        ("nonsense", "is not the snapshot of a diff of agent"),
        (
            "0123456789012345678901234567890123456789",
            "is not the snapshot of a diff of agent",
        ),
    ] {
        let err = env.owt_err(&repo, ["review", "agent", "--mark", "--snapshot", snapshot]);
        assert!(err.contains(error), "{snapshot}: {err}");
    }
    assert_eq!(env.owt_ok(&repo, ["review", "agent"]), before);
    let err = env.owt_err(&repo, ["review", "agent", "--snapshot", &read.snapshot]);
    assert!(err.contains("--mark"), "--snapshot needs --mark: {err}");
}

/// Over the LSP: `owt.markReviewed` with the snapshot of the `owt/diff`
/// the editor showed marks only what was shown; shipping from the editor
/// (`owt.ship`) then says, as a warning, which files nobody reviewed.
#[test]
fn the_lsp_marks_what_was_shown_and_an_editor_ship_warns_about_unreviewed_files() {
    let (env, _, repo, wt) = logged_agent();
    std::fs::write(wt.join("a.txt"), numbered(10).replace("line 2\n", "two\n")).unwrap();
    std::fs::write(wt.join("fresh.txt"), "new\n").unwrap();
    let mut client = LspClient::start(
        &env,
        &repo,
        json!({}),
        LspClient::default_capabilities(),
        true,
    );
    client.request("owt/board", Value::Null);
    let shown: DiffReport =
        serde_json::from_value(client.request("owt/diff", json!({"session": "agent"}))).unwrap();
    std::fs::write(wt.join("fresh.txt"), "newer\n").unwrap();
    let marked = client.request(
        "workspace/executeCommand",
        json!({"command": "owt.markReviewed", "arguments": [{"session": "agent", "snapshot": shown.snapshot}]}),
    );
    assert_eq!(marked["reviewed"], json!(["a.txt"]), "{marked}");
    assert_eq!(marked["unreviewed"], json!(["fresh.txt"]), "{marked}");

    let shipped = client.request(
        "workspace/executeCommand",
        json!({"command": "owt.ship", "arguments": [{"session": "agent"}]}),
    );
    assert_eq!(shipped["unreviewed"], json!(["fresh.txt"]), "{shipped}");
    let said = client.await_notification("window/showMessage", DEADLINE, |p| {
        p["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("owt: shipped agent"))
    });
    assert_eq!(
        said["message"],
        "owt: shipped agent into main, with 1 file not reviewed since its last change (fresh.txt)"
    );
    assert_eq!(said["type"], 2, "a warning: {said}");
    assert_eq!(
        std::fs::read_to_string(repo.join("fresh.txt")).unwrap(),
        "newer\n"
    );
}

/// Helix's way to comment (it cannot ask for text): the code action on a
/// selection runs `owt.comment` without text (the server answers
/// `needs_text` and says how to give it), then `:lsp-workspace-command
/// owt.comment "text"` sends the text alone as a JSON string — the
/// comment lands on the selection and reaches the agent as one message.
#[test]
fn a_comment_given_as_helix_gives_it_goes_on_the_last_selection() {
    let (env, log, repo, wt) = logged_agent();
    std::fs::write(
        wt.join("a.txt"),
        numbered(10).replace("line 7\n", "seven\n"),
    )
    .unwrap();
    wait_until("the agent to start", DEADLINE, || {
        env.owt_ok(&repo, ["peek", "agent"])
            .contains("FAKE AGENT READY")
    });
    let mut client = LspClient::start(
        &env,
        &repo,
        json!({}),
        LspClient::default_capabilities(),
        true,
    );
    client.request("owt/board", Value::Null);
    // Text alone before any selection: told what to do, nothing stored.
    let err = client
        .request_result(
            "workspace/executeCommand",
            json!({"command": "owt.comment", "arguments": ["too early"]}),
        )
        .unwrap_err();
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("select the lines in an agent's file and ask for code actions first"),
        "{err}"
    );

    let file = wt.join("a.txt");
    let actions = lsp_code_actions(&mut client, &file, 6, 7);
    let ask = actions
        .iter()
        .find(|a| a["command"]["command"] == "owt.comment")
        .expect("the ask action");
    // Helix runs the action's command as it is: no text in it.
    let answer = client.request(
        "workspace/executeCommand",
        json!({"command": "owt.comment", "arguments": ask["command"]["arguments"].clone()}),
    );
    assert_eq!(answer, json!({"needs_text": true}));
    client.await_notification("window/showMessage", DEADLINE, |p| {
        p["message"].as_str().is_some_and(|m| {
            m.contains("a.txt:7-8")
                && m.contains(":lsp-workspace-command owt.comment \"your comment\"")
        })
    });
    // `:lsp-workspace-command owt.comment "keep it numeric"`.
    let made = client.request(
        "workspace/executeCommand",
        json!({"command": "owt.comment", "arguments": ["keep it numeric"]}),
    );
    assert_eq!(
        (
            made[0]["path"].clone(),
            made[0]["start_line"].clone(),
            made[0]["end_line"].clone()
        ),
        (json!("a.txt"), json!(7), json!(8))
    );
    let expected = "Review comment from the human supervising you (owt review). \
                    Please change the code as asked:\n\n\
                    a.txt lines 7-8:\n    seven\n    line 8\nComment: keep it numeric";
    wait_until("the comment to reach the agent", DEADLINE, || {
        agent_lines(&log).iter().any(|l| l == expected)
    });
    let listed: CommentsOutput = env.owt_json(&repo, ["comments", "agent"]);
    assert_eq!(listed.comments.len(), 1, "{listed:?}");
}

/// Runs `owt ARGS` in `cwd` on a real terminal (a PTY), with `extra`
/// environment; returns what it wrote to the terminal.
fn owt_on_a_terminal(env: &TestEnv, cwd: &Path, args: &[&str], extra: &[(&str, &str)]) -> String {
    use portable_pty::{native_pty_system, CommandBuilder, PtySize};
    use std::io::Read;
    let cmd = env.owt_cmd(cwd, args);
    let mut builder = CommandBuilder::new(cmd.get_program());
    builder.args(cmd.get_args());
    builder.cwd(cwd);
    builder.env_clear();
    builder.env("PATH", std::env::var("PATH").unwrap_or_default());
    builder.env("TERM", "xterm-256color");
    for (k, v) in cmd.get_envs() {
        if let Some(v) = v {
            builder.env(k, v);
        }
    }
    for (k, v) in extra {
        builder.env(k, v);
    }
    let pair = native_pty_system()
        .openpty(PtySize {
            rows: 40,
            cols: 120,
            pixel_width: 0,
            pixel_height: 0,
        })
        .expect("a PTY");
    let mut child = pair.slave.spawn_command(builder).expect("owt on the PTY");
    drop(pair.slave);
    let mut reader = pair.master.try_clone_reader().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut out = Vec::new();
        let mut buf = [0u8; 4096];
        // Until the terminal closes (EIO once owt and its pager ended).
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 {
                break;
            }
            out.extend_from_slice(&buf[..n]);
        }
        let _ = tx.send(out);
    });
    let deadline = std::time::Instant::now() + DEADLINE;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "owt {args:?} did not end on the terminal"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "owt {args:?} on a terminal: {status:?}");
    let out = rx
        .recv_timeout(DEADLINE)
        .expect("the terminal to close after owt ended");
    drop(pair.master);
    String::from_utf8_lossy(&out).into_owned()
}

/// On a terminal, `owt diff` is coloured like `git diff` and goes through
/// the pager ($PAGER, with LESS=FRX when LESS is unset); NO_COLOR turns the
/// colour off; piped (the other tests), it is git's plain text, and
/// `--json` the DiffReport.
#[test]
fn on_a_terminal_the_diff_is_coloured_and_paged() {
    let (env, _, repo, wt) = logged_agent();
    std::fs::write(
        wt.join("a.txt"),
        numbered(10).replace("line 3\n", "line three\n"),
    )
    .unwrap();
    let page = env.path().join("page.txt");
    let less = env.path().join("less.txt");
    // A pager that keeps what it is given, and the LESS it was given.
    let pager = format!(
        "sh -c 'printf %s \"$LESS\" > {}; cat > {}'",
        less.display(),
        page.display()
    );
    let screen = owt_on_a_terminal(&env, &repo, &["diff", "agent"], &[("PAGER", &pager)]);
    let paged = std::fs::read_to_string(&page).expect("the pager got the diff");
    assert!(
        paged.contains("\x1b[1mdiff --git a/a.txt b/a.txt"),
        "{paged:?}"
    );
    assert!(paged.contains("\x1b[36m@@ -1,6 +1,6 @@"), "{paged:?}");
    assert!(paged.contains("\x1b[31m-line 3\x1b[m"), "{paged:?}");
    assert!(paged.contains("\x1b[32m+line three\x1b[m"), "{paged:?}");
    assert_eq!(std::fs::read_to_string(&less).unwrap(), "FRX");
    assert!(
        !screen.contains("line three"),
        "the diff went to the pager, not the terminal: {screen:?}"
    );

    // NO_COLOR: the same text, plain.
    owt_on_a_terminal(
        &env,
        &repo,
        &["diff", "agent"],
        &[("PAGER", &pager), ("NO_COLOR", "1")],
    );
    let plain = std::fs::read_to_string(&page).unwrap();
    assert!(!plain.contains('\x1b'), "{plain:?}");
    assert_eq!(plain, env.owt_ok(&repo, ["diff", "agent"]));

    // PAGER=cat: straight to the terminal, coloured.
    let screen = owt_on_a_terminal(&env, &repo, &["diff", "agent"], &[("PAGER", "cat")]);
    assert!(screen.contains("\x1b[32m+line three"), "{screen:?}");
}

/// A selection on the base side of the review diff (`owt.comment` with
/// `side: "base"`): its lines are carried onto the agent's copy through
/// the diff's hunks — above a hunk, inside one (a replaced line, a pure
/// deletion), between and below hunks that added and removed lines — and
/// the message says what was selected on the base.
#[test]
fn a_comment_on_the_base_side_goes_on_the_agents_lines_the_hunks_map_it_to() {
    let (env, log, repo, wt) = logged_agent();
    // Base line 8 replaced by two lines, base line 16 removed: two hunks,
    // agent line = base line + 1 from 9 to 15, + 0 from 17 on.
    std::fs::write(
        wt.join("old.txt"),
        numbered(20)
            .replace("line 8\n", "eight a\neight b\n")
            .replace("line 16\n", ""),
    )
    .unwrap();
    env.git(&wt, ["mv", "run.sh", "start.sh"]);
    wait_until("the agent to start", Duration::from_secs(30), || {
        env.owt_ok(&repo, ["peek", "agent"])
            .contains("FAKE AGENT READY")
    });
    let mut client = LspClient::start(
        &env,
        &repo,
        json!({}),
        LspClient::default_capabilities(),
        true,
    );
    let diff = client.request("owt/diff", json!({"session": "agent", "path": "old.txt"}));
    assert_eq!(diff["files"][0]["hunks"].as_array().unwrap().len(), 2);
    let mut on = |path: &str, start: u32, end: u32, text: &str| -> (Value, Value, String) {
        let made = client.request(
            "workspace/executeCommand",
            json!({"command": "owt.comment", "arguments": [{"session": "agent", "path": path, "side": "base", "start_line": start, "end_line": end, "text": text}]}),
        );
        let c = &made[0];
        (
            c["start_line"].clone(),
            c["end_line"].clone(),
            c["selected"].as_str().unwrap().to_string(),
        )
    };
    assert_eq!(
        on("start.sh", 1, 1, "renamed"),
        (json!(1), json!(1), "echo hi".into()),
        "a renamed file: its base is the old path's"
    );
    let mut on_base = |start: u32, end: u32, text: &str| on("old.txt", start, end, text);
    assert_eq!(
        on_base(2, 3, "above"),
        (json!(2), json!(3), "line 2\nline 3".into()),
        "above every hunk: the same lines"
    );
    assert_eq!(
        on_base(8, 8, "replaced"),
        (json!(8), json!(9), "eight a\neight b".into()),
        "a replaced line: the lines that replaced it"
    );
    assert_eq!(
        on_base(6, 8, "into a hunk"),
        (
            json!(6),
            json!(9),
            "line 6\nline 7\neight a\neight b".into()
        )
    );
    assert_eq!(
        on_base(12, 12, "between"),
        (json!(13), json!(13), "line 12".into()),
        "below a hunk that added a line"
    );
    assert_eq!(
        on_base(16, 16, "removed"),
        (json!(17), json!(17), "line 17".into()),
        "a removed line: the agent line where it was"
    );
    assert_eq!(
        on_base(20, 20, "last"),
        (json!(20), json!(20), "line 20".into()),
        "below both hunks"
    );

    // Bad input: a clear error, nothing stored.
    for (arg, says) in [
        (
            json!({"session": "agent", "path": "old.txt", "side": "base", "start_line": 21, "text": "x"}),
            "has 20 lines",
        ),
        (
            json!({"session": "agent", "path": "old.txt", "side": "left", "start_line": 1, "text": "x"}),
            "\"side\" is \"base\" or \"agent\"",
        ),
    ] {
        let err = client
            .request_result(
                "workspace/executeCommand",
                json!({"command": "owt.comment", "arguments": [arg]}),
            )
            .unwrap_err();
        assert!(err["message"].as_str().unwrap().contains(says), "{err}");
    }

    // One message, each comment saying what was selected on the base.
    wait_until("the batch to reach the agent", DEADLINE, || {
        agent_lines(&log).iter().any(|l| l.contains("owt review"))
    });
    let message = agent_lines(&log)
        .into_iter()
        .find(|l| l.contains("owt review"))
        .unwrap();
    assert!(
        message.contains(
            "old.txt line 17:\n    line 17\nComment: (on the base version, line 16:\n    line 16)\nremoved"
        ),
        "{message}"
    );
    assert!(
        message.contains("old.txt lines 8-9:\n    eight a\n    eight b\nComment: (on the base version, line 8:\n    line 8)\nreplaced"),
        "{message}"
    );
    let all: CommentsOutput = env.owt_json(&repo, ["comments", "agent"]);
    assert_eq!(all.comments.len(), 7);
}
