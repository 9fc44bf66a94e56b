//! Every message owt types into an agent on its own, in one place (the
//! user guide quotes them: "Checks and pull requests").
//!
//! Invariant: pure; every piece of text that came from outside (command
//! output, CI logs, review comments, paths) is cleaned by
//! [`super::excerpt`] first, so nothing typed can drive a terminal.

use owt_protocol::guard::LineRange;

use super::excerpt;
use crate::status::feedback::ChecksFact;

/// Every message starts with this, so an agent (and a person reading its
/// transcript) knows who is talking.
pub const PREFIX: &str = "owt:";

fn seconds(ms: Option<u64>) -> String {
    ms.map(|ms| format!(", {:.1} s", ms as f64 / 1000.0))
        .unwrap_or_default()
}

/// Checks failed on the agent's work; `attempt` of `max` fixes.
pub fn checks_failed(fact: &ChecksFact) -> String {
    let why = fact.why();
    let mut text = format!(
        "{PREFIX} the checks failed on your work (fix {} of {}).\nCommand: {} ({why}{})\n",
        fact.attempt,
        fact.max_attempts,
        excerpt::clean(&fact.command),
        seconds(fact.duration_ms)
    );
    if let Some(log) = &fact.log {
        text.push_str(&format!("Full log: {}\n", excerpt::clean(log)));
    }
    if let Some(tail) = fact.excerpt.as_deref().filter(|t| !t.is_empty()) {
        text.push_str("Last lines of the output:\n");
        text.push_str(tail);
        text.push('\n');
    }
    text.push_str("Fix it and end your turn; owt runs the checks again when you do.");
    text
}

/// CI failed on the pull request; `excerpt` is the failing log's end.
pub fn ci_failed(
    number: u64,
    checks: &[String],
    excerpt_text: &str,
    attempt: u32,
    max: u32,
) -> String {
    let mut text = format!(
        "{PREFIX} CI failed on pull request #{number} (fix {attempt} of {max}): {}.\n",
        checks
            .iter()
            .map(|c| excerpt::clean(c))
            .collect::<Vec<_>>()
            .join(", ")
    );
    if !excerpt_text.is_empty() {
        text.push_str("Failing log, last lines:\n");
        text.push_str(excerpt_text);
        text.push('\n');
    }
    text.push_str(
        "Fix it, commit, and end your turn; owt pushes your commits to the pull request.",
    );
    text
}

/// One review comment for [`review_comments`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Comment {
    pub author: String,
    /// `path:line` of an inline comment; `None` for the conversation.
    pub place: Option<String>,
    pub body: String,
}

/// New review comments on the pull request (each told once).
pub fn review_comments(number: u64, comments: &[Comment]) -> String {
    let mut text = if comments.len() == 1 {
        format!("{PREFIX} a new review comment on pull request #{number}:\n")
    } else {
        format!(
            "{PREFIX} {} new review comments on pull request #{number}:\n",
            comments.len()
        )
    };
    for c in comments {
        let place = c
            .place
            .as_deref()
            .map(|p| format!(" on {}", excerpt::clean(p)))
            .unwrap_or_default();
        text.push_str(&format!("- @{}{place}:\n", excerpt::clean(&c.author)));
        for line in excerpt::tail(c.body.as_bytes(), 40).lines() {
            text.push_str(&format!("  {line}\n"));
        }
    }
    text.push_str(
        "Address them (or say why not), commit, and end your turn; owt pushes your commits to the pull request.",
    );
    text
}

/// The pull request no longer merges into its base.
pub fn pr_conflict(number: u64, session: &str, base: &str) -> String {
    format!(
        "{PREFIX} pull request #{number} no longer merges into `{base}` (conflicts). \
         Bring `{base}` in: run `owt sync {session}` (it updates `{base}` and merges it into your branch), \
         resolve the conflicts, commit, and end your turn."
    )
}

/// One conflicting path of a guard conflict: the path, this agent's lines
/// and the other party's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConflictPath {
    pub path: String,
    pub mine: Vec<LineRange>,
    pub theirs: Vec<LineRange>,
}

fn ranges(ranges: &[LineRange]) -> String {
    let parts: Vec<String> = ranges
        .iter()
        .map(|r| match r.lines {
            0 => format!("before {}", r.start),
            1 => format!("{}", r.start),
            n => format!("{}–{}", r.start, r.start + n - 1),
        })
        .collect();
    if parts.is_empty() {
        "the whole file".into()
    } else {
        parts.join(", ")
    }
}

/// Conflict Guard found a real conflict between this agent's work and
/// `other` (a session's name, `you`, or the base branch when `with_base`).
pub fn guard_conflict(other: &str, with_base: bool, paths: &[ConflictPath]) -> String {
    let party = if with_base {
        format!(
            "`{}`, your base branch, which moved since you started",
            excerpt::clean(other)
        )
    } else if other == crate::guard::YOU {
        "the user's own uncommitted work in the main checkout".to_string()
    } else {
        format!("the work of session `{}`", excerpt::clean(other))
    };
    let mut text = format!(
        "{PREFIX} Conflict Guard: your changes conflict with {party} (a real merge fails):\n"
    );
    for p in paths {
        text.push_str(&format!(
            "- {}: your lines {}; theirs {}\n",
            excerpt::clean(&p.path),
            ranges(&p.mine),
            ranges(&p.theirs)
        ));
    }
    if with_base {
        text.push_str(&format!(
            "Bring `{other}` in (`git merge {other}`), resolve the conflicts, and commit."
        ));
    } else {
        text.push_str(
            "Keep out of those lines if your task allows; if it does not, say so when you end your turn, so the merge can be planned.",
        );
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::feedback::ChecksState;

    #[test]
    fn the_checks_message_names_command_result_log_excerpt_and_what_to_do() {
        let fact = ChecksFact {
            state: ChecksState::Failed,
            command: "cargo test".into(),
            trigger: "turn-end".into(),
            started_at: 0,
            checked_at: 0,
            duration_ms: Some(3_250),
            exit_code: Some(101),
            timed_out: false,
            reason: None,
            log: Some("/h/logs/checks/ab-1.log".into()),
            excerpt: Some("test a ... FAILED\nassertion failed\x1b[31m!".into()),
            attempt: 2,
            max_attempts: 3,
            fixing: true,
            tree: None,
        };
        expect_test::expect![[r#"
            owt: the checks failed on your work (fix 2 of 3).
            Command: cargo test (exit code 101, 3.2 s)
            Full log: /h/logs/checks/ab-1.log
            Last lines of the output:
            test a ... FAILED
            assertion failed!
            Fix it and end your turn; owt runs the checks again when you do."#]]
        .assert_eq(&checks_failed(&ChecksFact {
            excerpt: fact.excerpt.as_deref().map(excerpt::clean),
            ..fact
        }));
    }

    #[test]
    fn review_comments_name_author_place_and_text() {
        let text = review_comments(
            7,
            &[
                Comment {
                    author: "alice".into(),
                    place: Some("src/lib.rs:42".into()),
                    body: "Use a match here.\nAnd a test.".into(),
                },
                Comment {
                    author: "bob".into(),
                    place: None,
                    body: "Looks good otherwise".into(),
                },
            ],
        );
        expect_test::expect![[r#"
            owt: 2 new review comments on pull request #7:
            - @alice on src/lib.rs:42:
              Use a match here.
              And a test.
            - @bob:
              Looks good otherwise
            Address them (or say why not), commit, and end your turn; owt pushes your commits to the pull request."#]]
        .assert_eq(&text);
    }

    #[test]
    fn guard_conflicts_name_files_lines_and_the_other_party() {
        let paths = [ConflictPath {
            path: "src/a.rs".into(),
            mine: vec![LineRange {
                start: 10,
                lines: 5,
            }],
            theirs: vec![LineRange {
                start: 12,
                lines: 1,
            }],
        }];
        expect_test::expect![[r#"
            owt: Conflict Guard: your changes conflict with the work of session `other` (a real merge fails):
            - src/a.rs: your lines 10–14; theirs 12
            Keep out of those lines if your task allows; if it does not, say so when you end your turn, so the merge can be planned."#]]
        .assert_eq(&guard_conflict("other", false, &paths));
    }
}
