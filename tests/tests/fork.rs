//! `owt fork NAME --name NEW`: NEW starts from NAME's working state (its
//! commits, uncommitted and untracked files; not its ignored files) and
//! NAME is not touched (its status, HEAD, branch, index and files the
//! same bytes); bad input is refused and creates nothing.

use std::path::Path;
use std::time::Duration;

use owt_e2e::{read_file, wait_until, write_file, TestEnv};
use owt_protocol::NewOutput;

/// What fork must leave exactly as it was in a checkout.
#[derive(Debug, PartialEq)]
struct Untouched {
    index: Vec<u8>,
    head: String,
    branch_tip: String,
    files: Vec<(String, Option<Vec<u8>>)>,
}

fn untouched(env: &TestEnv, worktree: &Path, branch: &str, files: &[&str]) -> Untouched {
    let git_dir = env.git(worktree, ["rev-parse", "--absolute-git-dir"]);
    Untouched {
        index: std::fs::read(Path::new(git_dir.trim()).join("index")).unwrap(),
        head: env.git(worktree, ["rev-parse", "HEAD"]),
        branch_tip: env.git(worktree, ["rev-parse", &format!("refs/heads/{branch}")]),
        files: files
            .iter()
            .map(|f| (f.to_string(), std::fs::read(worktree.join(f)).ok()))
            .collect(),
    }
}

#[test]
fn fork_keeps_uncommitted_and_untracked_work_and_leaves_the_original_untouched() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    write_file(&repo, ".gitignore", "*.log\n");
    env.git(&repo, ["add", ".gitignore"]);
    env.git(&repo, ["commit", "-q", "-m", "ignore logs"]);
    let orig: NewOutput = env.owt_json(&repo, ["new", "first approach", "--name", "orig"]);
    env.wait_settled(&repo, "orig");
    let wt = Path::new(&orig.session.worktree).to_path_buf();
    // A commit of its own, then uncommitted work of every kind.
    write_file(&wt, "lib.txt", "committed on orig\n");
    env.git(&wt, ["add", "lib.txt"]);
    env.git(&wt, ["commit", "-q", "-m", "orig's commit"]);
    write_file(&wt, "README.md", "# test repository\nan unstaged edit\n");
    write_file(&wt, "staged.txt", "staged, never committed\n");
    env.git(&wt, ["add", "staged.txt"]);
    write_file(&wt, "staged.txt", "staged, then edited again\n");
    write_file(&wt, "notes/untracked.txt", "untracked\n");
    write_file(&wt, "debug.log", "ignored\n");
    std::fs::remove_file(wt.join("lib.txt")).unwrap();
    let files = [
        "README.md",
        "staged.txt",
        "notes/untracked.txt",
        "debug.log",
        "lib.txt",
    ];
    let status_before = env.git(&wt, ["status", "--porcelain", "--untracked-files=all"]);
    let before = untouched(&env, &wt, &orig.session.branch, &files);

    let forked: NewOutput = env.owt_json(&repo, ["fork", "orig", "--name", "copy", "carry on"]);

    // The original: the same bytes everywhere (its index read before git
    // status runs again, which may refresh it).
    assert_eq!(untouched(&env, &wt, &orig.session.branch, &files), before);
    let status_after = env.git(&wt, ["status", "--porcelain", "--untracked-files=all"]);
    assert_eq!(status_after, status_before);
    // The fork: orig's work, the uncommitted and untracked files included
    // (their worktree contents), the ignored file left out.
    assert_eq!(forked.session.name, "copy");
    let new_wt = Path::new(&forked.session.worktree);
    assert_eq!(
        read_file(&new_wt.join("README.md")),
        "# test repository\nan unstaged edit\n"
    );
    assert_eq!(
        read_file(&new_wt.join("staged.txt")),
        "staged, then edited again\n"
    );
    assert_eq!(
        read_file(&new_wt.join("notes/untracked.txt")),
        "untracked\n"
    );
    assert!(!new_wt.join("debug.log").exists());
    assert!(!new_wt.join("lib.txt").exists());
    assert_eq!(forked.session.base, orig.session.base);
    // Its branch: orig's HEAD, then one commit with the working state.
    let parent = env.git(new_wt, ["rev-parse", "HEAD^"]);
    assert_eq!(parent, before.head);
    let clean = env.git(new_wt, ["status", "--porcelain"]);
    assert_eq!(clean, "", "the fork's checkout holds the state committed");
    // Its agent (not Claude Code) was told what orig did.
    wait_until("the fork's first prompt", Duration::from_secs(15), || {
        env.owt_ok(&repo, ["peek", "copy"])
            .contains("## Forked from session orig")
    });
    let listed = env.sessions(&repo);
    assert_eq!(listed.sessions.len(), 2);
}

#[test]
fn forking_an_unknown_session_or_onto_a_taken_name_is_refused_and_creates_nothing() {
    let env = TestEnv::new();
    let repo = env.repo("app");
    env.owt_json::<NewOutput, _, _>(&repo, ["new", "one", "--name", "one"]);
    env.owt_json::<NewOutput, _, _>(&repo, ["new", "two", "--name", "two"]);
    env.wait_settled(&repo, "one");
    let state = || {
        (
            env.git(&repo, ["branch", "--list"]),
            env.git(&repo, ["worktree", "list", "--porcelain"]),
            env.sessions(&repo)
                .sessions
                .iter()
                .map(|s| s.name.clone())
                .collect::<Vec<_>>(),
        )
    };
    let before = state();
    let err = env.owt_err(&repo, ["fork", "nosuch", "--name", "three"]);
    assert!(err.contains("no session named `nosuch`"), "{err}");
    let err = env.owt_err(&repo, ["fork", "one", "--name", "two"]);
    assert!(
        err.contains("a session named `two` already exists; pick another --name"),
        "{err}"
    );
    // A branch of that name, not a session's: taken too.
    env.git(&repo, ["branch", "owt/taken"]);
    let before = (env.git(&repo, ["branch", "--list"]), before.1, before.2);
    let err = env.owt_err(&repo, ["fork", "one", "--name", "taken"]);
    assert!(
        err.contains("branch `owt/taken` already exists; pick another --name"),
        "{err}"
    );
    let err = env.owt_err(&repo, ["fork", "one", "--name", "!!"]);
    assert!(
        err.contains("--name must contain a letter or digit"),
        "{err}"
    );
    assert_eq!(state(), before);
}

/// Deadline for anything a real agent does (start, a model round trip).
const AGENT: Duration = Duration::from_secs(120);

#[test]
fn a_claude_code_fork_carries_the_original_conversation_into_its_first_request() {
    use owt_e2e::agents::{setup_offline, Agent, Model, ModelRequest, StatusLog};
    use owt_protocol::Status;
    use serde_json::json;

    let mut env = TestEnv::new();
    let repo = env.repo("app");
    let worktrees = env.path().join("app.worktrees");
    let model = Model::start(
        &env.path().join("model"),
        &json!({"turns": [
            {"steps": [{"text": "Noted: the word is PINEAPPLE."}]},
            {"steps": [{"text": "The word was PINEAPPLE."}]}]}),
    );
    let trusted = [repo.clone(), worktrees.join("orig"), worktrees.join("copy")];
    setup_offline(&mut env, Agent::Claude, &model, &trusted, true);
    let task = "Remember the word PINEAPPLE";
    env.owt_json::<NewOutput, _, _>(
        &repo,
        ["new", task, "--name", "orig", "--ai-tool", "claude"],
    );
    model.wait_step_answered(0, AGENT);
    let status = StatusLog::start(&env, &repo, "orig", false, Duration::from_millis(200));
    status.wait_for("orig waits after its first turn", 0.0, AGENT, |o| {
        o.status == Status::NeedsInput
    });
    let question = "Which word was it?";
    let forked: NewOutput = env.owt_json(&repo, ["fork", "orig", "--name", "copy", question]);
    assert_eq!(forked.session.provider, "claude");
    let asked =
        |r: &ModelRequest| r.is_main() && r.user_messages.iter().any(|m| m.contains(question));
    let log = model.wait_for("the fork's first request", AGENT, |rs| rs.iter().any(asked));
    let first = log.iter().find(|r| asked(r)).unwrap();
    // The earlier conversation came along: orig's task in the same
    // request as the fork's (a fresh agent would have only the latter).
    assert!(
        first.user_messages.iter().any(|m| m.contains(task)),
        "the fork's first request lacks orig's conversation: {:?}",
        first.user_messages
    );
    // Through Claude Code's own fork (a new conversation from orig's).
    let argvs: Vec<Vec<String>> = env
        .session_processes(&forked.session.id)
        .into_iter()
        .map(|pid| owt_e2e::cmdline(pid as u32))
        .collect();
    assert!(
        argvs
            .iter()
            .any(|a| a.iter().any(|x| x == "--fork-session")),
        "{argvs:?}"
    );
    assert_eq!(env.session(&repo, "orig").status, Status::NeedsInput);
}
