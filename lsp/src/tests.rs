//! Fixture tests of the diagnostics `owt lsp` publishes, in process
//! ([`super::test_server::TestServer`]) over real repositories, worktrees
//! and stores.
//!
//! `check(fixture, edits, expect![...])`: the fixture is the repository —
//! `//- PATH` sections are committed on `main`, `//- @NAME PATH` sections
//! are session NAME's uncommitted copy in its own worktree — and each edit
//! is an unsaved buffer of the main checkout (`PATH`, its whole text). The
//! expectation is every diagnostic and message published after the server
//! starts and after each edit. `UPDATE_EXPECT=1` rewrites expectations.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use expect_test::{expect, Expect};
use owt_e2e::{ten_lines, with_line, TestEnv};
use serde_json::{json, Value};

use super::test_server::{path_of, TestServer};
use owt_core::ops::Context;
use owt_core::store::NewSession;

/// A repository made from a fixture: its main checkout and every session's
/// worktree.
struct Fixture {
    env: TestEnv,
    repo: PathBuf,
}

/// Splits a fixture into `(session, path, text)` sections.
fn sections(fixture: &str) -> Vec<(Option<String>, String, String)> {
    let mut out: Vec<(Option<String>, String, String)> = Vec::new();
    for line in fixture.trim_start_matches('\n').lines() {
        let line = line.trim_start();
        if let Some(header) = line.strip_prefix("//- ") {
            let (session, path) = match header.strip_prefix('@') {
                Some(rest) => {
                    let (name, path) = rest.split_once(' ').expect("//- @NAME PATH");
                    (Some(name.to_string()), path.to_string())
                }
                None => (None, header.to_string()),
            };
            out.push((session, path, String::new()));
        } else if let Some((_, _, text)) = out.last_mut() {
            text.push_str(line);
            text.push('\n');
        }
    }
    out
}

impl Fixture {
    fn new(fixture: &str) -> Fixture {
        let env = TestEnv::new();
        let repo = env.repo("repo");
        let sections = sections(fixture);
        for (session, path, text) in &sections {
            if session.is_none() {
                write(&repo.join(path), text);
            }
        }
        env.git(&repo, ["add", "."]);
        env.git(&repo, ["commit", "-q", "-m", "fixture"]);
        let mut ctx = Context::open_in(Some(&repo), &env.owt_home).expect("a context");
        let mut sessions: Vec<&str> = sections.iter().filter_map(|s| s.0.as_deref()).collect();
        sessions.dedup();
        for name in sessions {
            let worktree = env.path().join("wt").join(name);
            // (`Fixture::worktree` names the same folder.)
            let branch = format!("owt/{name}");
            env.git(
                &repo,
                [
                    "worktree",
                    "add",
                    "-q",
                    "-b",
                    &branch,
                    &worktree.to_string_lossy(),
                    "main",
                ],
            );
            let worktree_text = worktree.to_string_lossy().into_owned();
            let repo_id = ctx.repo_row.id;
            ctx.store
                .insert_session(
                    &NewSession {
                        repo_id,
                        name,
                        task: "fixture",
                        branch_template: &branch,
                        base_branch: "main",
                        worktree_template: &worktree_text,
                        provider: "fake",
                        kind: owt_protocol::SessionKind::Worktree,
                    },
                    |_| false,
                )
                .expect("a session row");
            for (_, path, text) in sections.iter().filter(|s| s.0.as_deref() == Some(name)) {
                write(&worktree.join(path), text);
            }
        }
        Fixture { env, repo }
    }

    fn worktree(&self, session: &str) -> PathBuf {
        self.env.path().join("wt").join(session)
    }

    fn server(&self) -> TestServer {
        let capabilities =
            json!({"textDocument": {"publishDiagnostics": {"relatedInformation": true}}});
        TestServer::start(&self.env.owt_home, &self.repo, json!({}), capabilities)
    }
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("creating folders");
    std::fs::write(path, text).expect("writing a fixture file");
}

/// Every diagnostic, one line each: `PATH:LINES CODE SEVERITY: MESSAGE`,
/// then its related information (`(cleared)`: an empty list).
fn render(root: &Path, published: &BTreeMap<String, Vec<Value>>) -> String {
    let mut out = String::new();
    for (uri, diagnostics) in published {
        let path = path_of(uri);
        let path = path
            .strip_prefix(root)
            .unwrap_or(&path)
            .display()
            .to_string();
        if diagnostics.is_empty() {
            writeln!(out, "{path}: (cleared)").unwrap();
        }
        for d in diagnostics {
            let first = d["range"]["start"]["line"].as_u64().unwrap_or(0) + 1;
            let last = d["range"]["end"]["line"].as_u64().unwrap_or(0);
            let severity = match d["severity"].as_u64() {
                Some(1) => "error",
                Some(2) => "warning",
                Some(3) => "information",
                _ => "hint",
            };
            let code = d["code"].as_str().unwrap_or("?");
            writeln!(
                out,
                "{path}:{first}-{last} {code} {severity}: {}",
                d["message"].as_str().unwrap_or("")
            )
            .unwrap();
            for related in d["relatedInformation"].as_array().into_iter().flatten() {
                let other = path_of(related["location"]["uri"].as_str().unwrap_or(""));
                let line = related["location"]["range"]["start"]["line"]
                    .as_u64()
                    .unwrap_or(0)
                    + 1;
                let name = other
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                writeln!(
                    out,
                    "  related: {name}:{line} {}",
                    related["message"].as_str().unwrap_or("")
                )
                .unwrap();
            }
        }
    }
    if out.is_empty() {
        out.push_str("(nothing published)\n");
    }
    out
}

/// The diagnostics and messages the server sent since the last call.
fn render_sent(root: &Path, server: &mut TestServer) -> String {
    let mut out = render(root, &server.published());
    for message in server.seen.drain(..) {
        if message["method"] == "window/showMessage" {
            writeln!(
                out,
                "message: {}",
                message["params"]["message"].as_str().unwrap_or("")
            )
            .unwrap();
        }
    }
    out
}

/// See the module doc.
fn check(fixture: &str, edits: &[(&str, &str)], expect: Expect) {
    let fixture = Fixture::new(fixture);
    let mut server = fixture.server();
    let root = std::fs::canonicalize(&fixture.repo).expect("the repository");
    let mut actual = String::from("-- start\n");
    server.flush();
    actual.push_str(&render_sent(&root, &mut server));
    for (i, (path, text)) in edits.iter().enumerate() {
        let file = fixture.repo.join(path);
        if i == 0 || edits[..i].iter().all(|(p, _)| p != path) {
            server.open(&file, text);
        } else {
            server.change(&file, i as i32 + 1, text);
        }
        server.flush();
        writeln!(actual, "-- {path} edited").unwrap();
        actual.push_str(&render_sent(&root, &mut server));
    }
    expect.assert_eq(&actual);
}

#[test]
fn an_agents_change_shows_once_you_touch_the_file_and_is_a_hint_again_when_you_undo() {
    let base = ten_lines();
    let agent = with_line(&base, 3, "agent 3");
    let fixture = format!("//- a.txt\n{base}//- @agent-1 a.txt\n{agent}");
    check(
        &fixture,
        &[
            ("a.txt", &with_line(&base, 4, "mine 4")),
            ("a.txt", &with_line(&base, 9, "mine 9")),
            ("a.txt", &base),
        ],
        expect![[r#"
            -- start
            (nothing published)
            -- a.txt edited
            a.txt:3-3 conflict error: agent-1 (fake, starting) changed line 3 here (+1 −1); merging it with your changes will conflict
              related: a.txt:3 agent-1's copy
            message: owt: agent-1 and you now conflict in a.txt
            -- a.txt edited
            a.txt:3-3 overlap information: agent-1 (fake, starting) changed line 3 here (+1 −1); you changed other lines of this file
              related: a.txt:3 agent-1's copy
            -- a.txt edited
            a.txt:3-3 aware hint: agent-1 (fake, starting) is changing line 3 here (+1 −1)
        "#]],
    );
}

#[test]
fn two_agents_on_the_same_lines_conflict_in_your_unopened_file() {
    let base = ten_lines();
    let fixture = format!(
        "//- a.txt\n{base}//- @agent-1 a.txt\n{}//- @agent-2 a.txt\n{}",
        with_line(&base, 5, "one"),
        with_line(&base, 5, "two"),
    );
    check(
        &fixture,
        &[],
        expect![[r#"
        -- start
        a.txt:5-5 conflict error: agent-1 (fake, starting) and agent-2 (fake, starting) changed line 5 here (+1 −1); merging them will conflict
          related: a.txt:5 agent-1's copy
    "#]],
    );
}

/// The watcher's path: an agent's write after the server started reaches
/// the editor as a delta (here, the agent undoing its change clears the
/// conflict).
#[test]
fn an_agent_write_after_start_arrives_through_the_watcher() {
    let base = ten_lines();
    let fixture = Fixture::new(&format!(
        "//- a.txt\n{base}//- @agent-1 a.txt\n{}",
        with_line(&base, 5, "agent")
    ));
    let mut server = fixture.server();
    let file = fixture.repo.join("a.txt");
    server.open(&file, &with_line(&base, 5, "mine"));
    let uri = super::test_server::uri(&std::fs::canonicalize(&file).unwrap());
    let has = |n: usize| {
        let uri = uri.clone();
        move |params: &Value| {
            params["uri"] == uri.as_str()
                && params["diagnostics"].as_array().map(Vec::len) == Some(n)
        }
    };
    let shown = server.await_notification("textDocument/publishDiagnostics", has(1));
    assert_eq!(shown["diagnostics"][0]["code"], "conflict");
    write(&fixture.worktree("agent-1").join("a.txt"), &base);
    server.await_notification("textDocument/publishDiagnostics", has(0));
}

/// Regression (the Neovim diagnostics test under load): code actions asked
/// right after a diagnostic appeared saw the session as the store last had
/// it — no changed files yet, so no ship — because the git facts reached
/// the views only after the git refresher's next pass. The facts the guard
/// read come with its update now.
#[test]
fn code_actions_on_a_fresh_diagnostic_see_the_agents_changes() {
    let base = ten_lines();
    // A session with nothing changed yet when the server starts.
    let fixture = Fixture::new(&format!("//- a.txt\n{base}//- @agent-1 a.txt\n{base}"));
    let mut server = fixture.server();
    let file = fixture.repo.join("a.txt");
    server.open(&file, &with_line(&base, 5, "mine"));
    server.flush();
    write(
        &fixture.worktree("agent-1").join("a.txt"),
        &with_line(&base, 5, "agent"),
    );
    let uri = super::test_server::uri(&std::fs::canonicalize(&file).unwrap());
    let published = server.await_notification("textDocument/publishDiagnostics", |params| {
        params["uri"] == uri.as_str()
            && params["diagnostics"]
                .as_array()
                .is_some_and(|d| !d.is_empty())
    });
    let diagnostic = published["diagnostics"][0].clone();
    let actions = server
        .request(
            "textDocument/codeAction",
            json!({
                "textDocument": {"uri": uri},
                "range": diagnostic["range"],
                "context": {"diagnostics": [diagnostic]},
            }),
        )
        .expect("code actions");
    let commands: Vec<&str> = actions
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|a| a["command"]["command"].as_str())
        .collect();
    assert!(commands.contains(&"owt.ship"), "{commands:?}");
    assert!(
        !commands.contains(&"owt.merge"),
        "no commits yet: {commands:?}"
    );
}
