//! GitLab through `glab`: the commands owt runs and the JSON they print
//! (the shapes of GitLab's REST API, which `glab` passes through).
//!
//! - `glab mr create --repo HOST/G/R --source-branch B --target-branch BASE --title T --description D [--draft] --yes`
//! - `glab mr view N --repo HOST/G/R --output json`
//! - `glab api projects/G%2FR/merge_requests/N/notes?per_page=100`
//!
//! Failing pipeline logs are not fetched: the message names the failing
//! pipeline and its URL. (Tested on recorded JSON only: no `glab` package
//! exists where owt's tests run; see docs/user-guide.md.)

use serde_json::Value;

use super::{args, number_after, text, FailingCheck, Forge, ForgeComment, ForgeError, PrSnapshot};
use crate::status::feedback::{CiState, PrState, ReviewState};

fn number_of(url: &str) -> Option<u64> {
    number_after(url, "/merge_requests/")
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
        "mr",
        "create",
        "--repo",
        &repo,
        "--source-branch",
        head,
        "--target-branch",
        base,
        "--title",
        title,
        "--description",
        body,
        "--yes",
    ]);
    if draft {
        a.push("--draft".into());
    }
    let text = match forge.call(&a, None) {
        Ok(out) => out.stdout,
        Err(ForgeError::Failed(text)) if text.contains("already exists") => text,
        Err(e) => return Err(e),
    };
    let url = text
        .split_whitespace()
        .rfind(|w| w.contains("/merge_requests/"))
        .map(str::to_string)
        .ok_or_else(|| {
            ForgeError::Failed("glab mr create did not print the merge request's URL".into())
        })?;
    let number = number_of(&url)
        .ok_or_else(|| ForgeError::Failed(format!("no merge request number in {url}")))?;
    Ok((number, url))
}

pub fn view_pr(forge: &Forge, number: u64) -> Result<PrSnapshot, ForgeError> {
    let doc = forge.call_json(
        &[
            "mr",
            "view",
            &number.to_string(),
            "--repo",
            &forge.repo.full(),
            "--output",
            "json",
        ],
        "glab mr view",
    )?;
    let mut snapshot = parse_view(&doc);
    let project = forge.repo.path().replace('/', "%2F");
    let notes = format!("projects/{project}/merge_requests/{number}/notes?per_page=100");
    let notes = forge.call_json(&["api", &notes], "glab api")?;
    snapshot.comments = parse_notes(&notes);
    // Who may be routed by `[feedback] comment_authors = "collaborators"`;
    // unknown (the call failed) is nobody.
    let members = format!("projects/{project}/members/all?per_page=100");
    let developers = forge
        .call_json(&["api", &members], "glab api")
        .map(|doc| developers(&doc))
        .unwrap_or_default();
    for comment in &mut snapshot.comments {
        comment.collaborator = developers.contains(&comment.author);
    }
    Ok(snapshot)
}

/// GitLab's Developer access level: members with it or more work on the
/// project.
const DEVELOPER_ACCESS: u64 = 30;

/// The usernames of a project's members with Developer access or more
/// (`GET projects/:id/members/all`, pure).
pub fn developers(doc: &Value) -> Vec<String> {
    doc.as_array()
        .into_iter()
        .flatten()
        .filter(|m| m.get("access_level").and_then(Value::as_u64) >= Some(DEVELOPER_ACCESS))
        .map(|m| text(m, "username").to_string())
        .filter(|name| !name.is_empty())
        .collect()
}

/// A merge request as the API shows it (pure).
pub fn parse_view(doc: &Value) -> PrSnapshot {
    let pipeline = doc.get("head_pipeline").filter(|p| !p.is_null());
    let ci = match pipeline.map(|p| text(p, "status")) {
        None => CiState::None,
        Some("success") | Some("skipped") => CiState::Passing,
        Some("failed") | Some("canceled") => CiState::Failing,
        Some(_) => CiState::Pending,
    };
    let failing = match (ci, pipeline) {
        (CiState::Failing, Some(p)) => vec![FailingCheck {
            name: format!(
                "pipeline {}",
                p.get("id").and_then(Value::as_u64).unwrap_or(0)
            ),
            url: text(p, "web_url").to_string(),
            run_id: p.get("id").and_then(Value::as_u64),
        }],
        _ => Vec::new(),
    };
    let conflicting = doc.get("has_conflicts").and_then(Value::as_bool) == Some(true)
        || text(doc, "detailed_merge_status") == "conflict";
    PrSnapshot {
        number: doc.get("iid").and_then(Value::as_u64).unwrap_or(0),
        url: text(doc, "web_url").to_string(),
        state: match text(doc, "state") {
            "merged" => PrState::Merged,
            "closed" | "locked" => PrState::Closed,
            _ => PrState::Open,
        },
        draft: doc.get("draft").and_then(Value::as_bool).unwrap_or(false)
            || doc
                .get("work_in_progress")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        ci,
        failing,
        review: ReviewState::None,
        mergeable: if conflicting {
            "conflicting"
        } else if text(doc, "merge_status") == "can_be_merged" {
            "mergeable"
        } else {
            "unknown"
        }
        .to_string(),
        head: Some(text(doc, "sha").to_string()).filter(|s| !s.is_empty()),
        comments: Vec::new(),
    }
}

/// A merge request's notes: people's comments (not GitLab's own system
/// notes), with `path:line` for those on the diff (pure).
pub fn parse_notes(doc: &Value) -> Vec<ForgeComment> {
    doc.as_array()
        .into_iter()
        .flatten()
        .filter(|n| n.get("system").and_then(Value::as_bool) != Some(true))
        .filter(|n| !text(n, "body").trim().is_empty())
        .map(|n| {
            let place = n.get("position").filter(|p| !p.is_null()).map(|p| {
                let line = p
                    .get("new_line")
                    .and_then(Value::as_u64)
                    .or_else(|| p.get("old_line").and_then(Value::as_u64));
                let path = match text(p, "new_path") {
                    "" => text(p, "old_path"),
                    path => path,
                };
                match line {
                    Some(line) => format!("{path}:{line}"),
                    None => path.to_string(),
                }
            });
            ForgeComment {
                id: format!("note-{}", n.get("id").and_then(Value::as_u64).unwrap_or(0)),
                author: n
                    .get("author")
                    .and_then(|a| a.get("username"))
                    .and_then(Value::as_str)
                    .unwrap_or("someone")
                    .to_string(),
                place,
                body: text(n, "body").to_string(),
                collaborator: false,
            }
        })
        .collect()
}

pub fn failed_log(_forge: &Forge, _check: &FailingCheck) -> Result<String, ForgeError> {
    Ok(String::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Shaped as GitLab's API documents a merge request and its notes.
    #[test]
    fn a_merge_request_with_a_failed_pipeline_and_a_diff_note() {
        let mr = parse_view(&serde_json::json!({
            "iid": 4, "web_url": "https://gitlab.example.com/g/r/-/merge_requests/4",
            "state": "opened", "draft": true, "has_conflicts": true, "sha": "abc",
            "head_pipeline": {"id": 77, "status": "failed", "web_url": "https://gitlab.example.com/g/r/-/pipelines/77"}
        }));
        assert_eq!(
            (mr.number, mr.state, mr.ci, mr.mergeable.as_str(), mr.draft),
            (4, PrState::Open, CiState::Failing, "conflicting", true)
        );
        assert_eq!(mr.failing[0].run_id, Some(77));
        let notes = parse_notes(&serde_json::json!([
            {"id": 1, "body": "added 1 commit", "system": true, "author": {"username": "bot"}},
            {"id": 2, "body": "Rename this", "system": false, "author": {"username": "ann"},
             "position": {"new_path": "src/a.rs", "new_line": 9}},
            {"id": 3, "body": "LGTM", "system": false, "author": {"username": "ann"}, "position": null}
        ]));
        let got: Vec<(String, Option<String>)> =
            notes.into_iter().map(|n| (n.id, n.place)).collect();
        assert_eq!(
            got,
            vec![
                ("note-2".into(), Some("src/a.rs:9".into())),
                ("note-3".into(), None)
            ]
        );
        assert_eq!(
            number_of("https://gitlab.example.com/g/r/-/merge_requests/12"),
            Some(12)
        );
    }

    /// Issue 33, item 5: only members with Developer access (30) or more
    /// are the project's own people (Guest 10, Reporter 20 are not).
    #[test]
    fn developers_are_members_with_developer_access_or_more() {
        let members = developers(&serde_json::json!([
            {"username": "ann", "access_level": 50},
            {"username": "dev", "access_level": 30},
            {"username": "rep", "access_level": 20},
            {"username": "guest", "access_level": 10}
        ]));
        assert_eq!(members, vec!["ann", "dev"]);
    }
}
