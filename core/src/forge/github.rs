//! GitHub through `gh`: the commands owt runs and the JSON they print.
//!
//! - `gh pr create --repo HOST/O/R --head B --base BASE --title T --body-file - [--draft]`
//! - `gh pr view N --repo HOST/O/R --json number,url,state,isDraft,mergeable,reviewDecision,headRefOid,statusCheckRollup,reviews,comments`
//! - `gh api repos/O/R/pulls/N/comments?per_page=100` (inline review comments)
//! - `gh run view RUN --repo HOST/O/R --log-failed`
//! - `gh api rate_limit`

use serde_json::Value;

use super::{
    args, ci_of, number_after, text, FailingCheck, Forge, ForgeComment, ForgeError, PrSnapshot,
};
use crate::feedback::excerpt;
use crate::status::feedback::{CiState, PrState, ReviewState};

/// Lines of a failing CI log typed into the agent.
pub const LOG_LINES: usize = 60;

/// The number of a pull request from its URL (`…/pull/12`).
pub fn number_of(url: &str) -> Option<u64> {
    number_after(url, "/pull/")
}

/// The last URL in `text` (gh prints the new pull request's URL last; a
/// pull request that exists already is named the same way in its error).
fn last_url(text: &str) -> Option<String> {
    text.split_whitespace()
        .rfind(|w| w.starts_with("https://") || w.starts_with("http://"))
        .map(str::to_string)
}

pub fn create_pr(
    forge: &Forge,
    head: &str,
    base: &str,
    title: &str,
    body: &str,
    draft: bool,
) -> Result<(u64, String), ForgeError> {
    let repo = forge.repo.full();
    let mut a = args(&[
        "pr",
        "create",
        "--repo",
        &repo,
        "--head",
        head,
        "--base",
        base,
        "--title",
        title,
        "--body-file",
        "-",
    ]);
    if draft {
        a.push("--draft".into());
    }
    let found = match forge.call(&a, Some(body)) {
        Ok(out) => last_url(&out.stdout),
        Err(ForgeError::Failed(text)) if text.contains("already exists") => last_url(&text),
        Err(e) => return Err(e),
    };
    let url = found.ok_or_else(|| {
        ForgeError::Failed("gh pr create did not print the pull request's URL".into())
    })?;
    let number = number_of(&url)
        .ok_or_else(|| ForgeError::Failed(format!("no pull request number in {url}")))?;
    Ok((number, url))
}

pub fn view_pr(forge: &Forge, number: u64) -> Result<PrSnapshot, ForgeError> {
    let n = number.to_string();
    let doc = forge.call_json(
        &[
            "pr",
            "view",
            &n,
            "--repo",
            &forge.repo.full(),
            "--json",
            "number,url,state,isDraft,mergeable,reviewDecision,headRefOid,statusCheckRollup,reviews,comments",
        ],
        "gh pr view",
    )?;
    let mut snapshot = parse_view(&doc);
    let comments = format!(
        "repos/{}/pulls/{number}/comments?per_page=100",
        forge.repo.path()
    );
    let inline = forge.call_json(&["api", &comments], "gh api")?;
    snapshot.comments.extend(parse_review_comments(&inline));
    Ok(snapshot)
}

/// Whether a GitHub author association (`authorAssociation` in GraphQL,
/// `author_association` in REST) is one of the repository's own people.
fn collaborator(v: &Value) -> bool {
    let association = match text(v, "authorAssociation") {
        "" => text(v, "author_association"),
        a => a,
    };
    matches!(association, "OWNER" | "MEMBER" | "COLLABORATOR")
}

fn login(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(|a| a.get("login"))
        .and_then(Value::as_str)
        .unwrap_or("someone")
        .to_string()
}

/// One entry of `statusCheckRollup`: a check run or a commit status.
fn check_state(check: &Value) -> CiState {
    if check.get("__typename").and_then(Value::as_str) == Some("StatusContext") {
        return match text(check, "state") {
            "SUCCESS" => CiState::Passing,
            "FAILURE" | "ERROR" => CiState::Failing,
            _ => CiState::Pending,
        };
    }
    if text(check, "status") != "COMPLETED" {
        return CiState::Pending;
    }
    match text(check, "conclusion") {
        "SUCCESS" | "NEUTRAL" | "SKIPPED" => CiState::Passing,
        "" | "STALE" => CiState::Pending,
        _ => CiState::Failing,
    }
}

/// `gh pr view --json …` (pure).
pub fn parse_view(doc: &Value) -> PrSnapshot {
    let checks: Vec<&Value> = doc
        .get("statusCheckRollup")
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    let failing = checks
        .iter()
        .filter(|c| check_state(c) == CiState::Failing)
        .map(|c| failing_check(c))
        .collect();
    PrSnapshot {
        number: doc.get("number").and_then(Value::as_u64).unwrap_or(0),
        url: text(doc, "url").to_string(),
        state: match text(doc, "state") {
            "MERGED" => PrState::Merged,
            "CLOSED" => PrState::Closed,
            _ => PrState::Open,
        },
        draft: doc.get("isDraft").and_then(Value::as_bool).unwrap_or(false),
        ci: ci_of(checks.iter().map(|c| check_state(c))),
        failing,
        review: match text(doc, "reviewDecision") {
            "APPROVED" => ReviewState::Approved,
            "CHANGES_REQUESTED" => ReviewState::ChangesRequested,
            "REVIEW_REQUIRED" => ReviewState::ReviewRequired,
            _ => ReviewState::None,
        },
        mergeable: match text(doc, "mergeable") {
            "MERGEABLE" => "mergeable",
            "CONFLICTING" => "conflicting",
            _ => "unknown",
        }
        .to_string(),
        head: Some(text(doc, "headRefOid").to_string()).filter(|h| !h.is_empty()),
        comments: view_comments(doc),
    }
}

/// A failed check of the rollup (a check run or a commit status): its
/// name, where to read it, and its Actions run when it is one.
fn failing_check(c: &Value) -> FailingCheck {
    let name = match text(c, "name") {
        "" => text(c, "context"),
        name => name,
    };
    let url = match text(c, "detailsUrl") {
        "" => text(c, "targetUrl"),
        url => url,
    };
    FailingCheck {
        name: name.to_string(),
        url: url.to_string(),
        run_id: url
            .split("/actions/runs/")
            .nth(1)
            .and_then(|rest| rest.split('/').next())
            .and_then(|id| id.parse().ok()),
    }
}

/// The conversation's comments, then the reviews' bodies (with their
/// verdict); empty ones left out.
fn view_comments(doc: &Value) -> Vec<ForgeComment> {
    let mut comments: Vec<ForgeComment> = doc
        .get("comments")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|c| !text(c, "body").trim().is_empty())
        .map(|c| ForgeComment {
            id: text(c, "id").to_string(),
            author: login(c, "author"),
            place: None,
            body: text(c, "body").to_string(),
            collaborator: collaborator(c),
        })
        .collect();
    comments.extend(
        doc.get("reviews")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|r| !text(r, "body").trim().is_empty())
            .map(|r| {
                let verdict = match text(r, "state") {
                    "CHANGES_REQUESTED" => "(changes requested) ",
                    "APPROVED" => "(approved) ",
                    _ => "",
                };
                ForgeComment {
                    id: text(r, "id").to_string(),
                    author: login(r, "author"),
                    place: None,
                    body: format!("{verdict}{}", text(r, "body")),
                    collaborator: collaborator(r),
                }
            }),
    );
    comments
}

/// `GET repos/O/R/pulls/N/comments` (pure): inline review comments.
pub fn parse_review_comments(doc: &Value) -> Vec<ForgeComment> {
    doc.as_array()
        .into_iter()
        .flatten()
        .filter(|c| !text(c, "body").trim().is_empty())
        .map(|c| {
            let line = c
                .get("line")
                .and_then(Value::as_u64)
                .or_else(|| c.get("original_line").and_then(Value::as_u64));
            let path = text(c, "path");
            ForgeComment {
                id: format!("rc-{}", c.get("id").and_then(Value::as_u64).unwrap_or(0)),
                author: login(c, "user"),
                place: Some(match line {
                    Some(line) => format!("{path}:{line}"),
                    None => path.to_string(),
                }),
                body: text(c, "body").to_string(),
                collaborator: collaborator(c),
            }
        })
        .collect()
}

/// `gh run view --log-failed` lines are `JOB<TAB>STEP<TAB>TIME TEXT`: the
/// text alone (pure).
pub fn strip_log_prefixes(log: &str) -> String {
    log.lines()
        .map(|line| {
            let mut parts = line.splitn(3, '\t');
            match (parts.next(), parts.next(), parts.next()) {
                (Some(_), Some(_), Some(rest)) => {
                    let (stamp, text) = rest.split_once(' ').unwrap_or((rest, ""));
                    if stamp.len() >= 20 && stamp.as_bytes()[4] == b'-' && stamp.ends_with('Z') {
                        text
                    } else {
                        rest
                    }
                }
                _ => line,
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

pub fn failed_log(forge: &Forge, check: &FailingCheck) -> Result<String, ForgeError> {
    let Some(run) = check.run_id else {
        return Ok(String::new());
    };
    let out = forge.call(
        &args(&[
            "run",
            "view",
            &run.to_string(),
            "--repo",
            &forge.repo.full(),
            "--log-failed",
        ]),
        None,
    )?;
    Ok(excerpt::tail(
        strip_log_prefixes(&out.stdout).as_bytes(),
        LOG_LINES,
    ))
}

pub fn rate_limit_reset(forge: &Forge) -> Option<i64> {
    let out = forge.call(&args(&["api", "rate_limit"]), None).ok()?;
    let doc: Value = serde_json::from_str(&out.stdout).ok()?;
    let resources = doc.get("resources")?.as_object()?;
    resources
        .values()
        .filter(|r| r.get("remaining").and_then(Value::as_i64) == Some(0))
        .filter_map(|r| r.get("reset").and_then(Value::as_i64))
        .max()
        .or_else(|| doc.get("rate")?.get("reset")?.as_i64())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Shaped as real `gh` 2.23 printed it against the test forge.
    #[test]
    fn a_pull_request_with_failing_ci_comments_and_a_review() {
        let doc = serde_json::json!({
            "comments": [{"id": "IC_6", "author": {"login": "bob"}, "body": "Please add docs"},
                         {"id": "IC_7", "author": {"login": "bob"}, "body": "  "}],
            "headRefOid": "f780c02c", "isDraft": true, "mergeable": "CONFLICTING", "number": 1,
            "reviewDecision": "CHANGES_REQUESTED",
            "reviews": [{"id": "PRR_8", "author": {"login": "alice"}, "body": "See comments",
                         "state": "CHANGES_REQUESTED"}],
            "state": "OPEN",
            "statusCheckRollup": [
                {"__typename": "CheckRun", "conclusion": "FAILURE", "status": "COMPLETED", "name": "test",
                 "detailsUrl": "https://h/o/r/actions/runs/2/job/3"},
                {"__typename": "CheckRun", "conclusion": "SUCCESS", "status": "COMPLETED", "name": "lint",
                 "detailsUrl": "https://h/o/r/actions/runs/4/job/5"},
                {"__typename": "StatusContext", "state": "PENDING", "context": "deploy"}],
            "url": "https://h/o/r/pull/1"
        });
        let pr = parse_view(&doc);
        assert_eq!(pr.ci, CiState::Failing);
        assert_eq!(
            pr.failing,
            vec![FailingCheck {
                name: "test".into(),
                url: "https://h/o/r/actions/runs/2/job/3".into(),
                run_id: Some(2)
            }]
        );
        assert_eq!(pr.review, ReviewState::ChangesRequested);
        assert_eq!(pr.mergeable, "conflicting");
        assert!(pr.draft);
        let ids: Vec<&str> = pr.comments.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, vec!["IC_6", "PRR_8"], "empty bodies are not comments");
        assert_eq!(pr.comments[1].body, "(changes requested) See comments");
        let inline = parse_review_comments(&serde_json::json!([
            {"id": 7, "path": "a.txt", "line": 3, "body": "Use a constant", "user": {"login": "alice"}},
            {"id": 9, "path": "b.txt", "line": null, "original_line": 4, "body": "Outdated", "user": {"login": "alice"}}
        ]));
        assert_eq!(inline[0].place.as_deref(), Some("a.txt:3"));
        assert_eq!(inline[1].place.as_deref(), Some("b.txt:4"));
        assert_eq!(inline[0].id, "rc-7");
    }

    #[test]
    fn log_lines_lose_job_step_and_time() {
        let log = "test\tRun tests\t2026-12-01T08:13:02Z running 3 tests\ntest\tRun tests\t2026-12-01T08:13:02.1234567Z test a ... FAILED\n";
        assert_eq!(
            strip_log_prefixes(log),
            "running 3 tests\ntest a ... FAILED"
        );
        assert_eq!(number_of("https://h/o/r/pull/12"), Some(12));
        assert_eq!(
            last_url("a pull request for branch \"feat\" into branch \"main\" already exists:\nhttps://h/o/r/pull/1\n"),
            Some("https://h/o/r/pull/1".into())
        );
    }

    /// Issue 33, item 5: the author association says who may be routed.
    #[test]
    fn owners_members_and_collaborators_are_collaborators() {
        let doc = serde_json::json!({
            "comments": [
                {"id": "IC_1", "author": {"login": "o"}, "authorAssociation": "OWNER", "body": "a"},
                {"id": "IC_2", "author": {"login": "m"}, "authorAssociation": "MEMBER", "body": "b"},
                {"id": "IC_3", "author": {"login": "x"}, "authorAssociation": "CONTRIBUTOR", "body": "c"},
                {"id": "IC_4", "author": {"login": "y"}, "authorAssociation": "NONE", "body": "d"},
                {"id": "IC_5", "author": {"login": "z"}, "body": "no association"}],
            "reviews": [{"id": "PRR_6", "author": {"login": "c"}, "authorAssociation": "COLLABORATOR",
                         "body": "e", "state": "COMMENTED"}]
        });
        let who: Vec<(String, bool)> = parse_view(&doc)
            .comments
            .into_iter()
            .map(|c| (c.author, c.collaborator))
            .collect();
        let expected = [
            ("o", true),
            ("m", true),
            ("x", false),
            ("y", false),
            ("z", false),
            ("c", true),
        ];
        let expected: Vec<(String, bool)> =
            expected.iter().map(|(a, b)| (a.to_string(), *b)).collect();
        assert_eq!(who, expected);
        let inline = parse_review_comments(&serde_json::json!([
            {"id": 7, "path": "a", "line": 1, "body": "x", "user": {"login": "m"}, "author_association": "MEMBER"},
            {"id": 8, "path": "a", "line": 1, "body": "x", "user": {"login": "d"}, "author_association": "FIRST_TIME_CONTRIBUTOR"}
        ]));
        assert_eq!(
            (inline[0].collaborator, inline[1].collaborator),
            (true, false)
        );
    }
}
