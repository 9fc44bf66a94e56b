//! Review use cases: an agent's diff (`owt diff`, `owt/diff`), the files
//! the human marked reviewed (`owt review --mark`, ship's check), and
//! review comments typed back into the agent (`owt comment`, `owt
//! comments`, the LSP's `owt.comment`).
//!
//! The diff is taken from the Conflict Guard's snapshot of the agent's
//! checkout (committed + staged + unstaged + untracked, owt's own files
//! left out), so what is reviewed is exactly what `owt ship` commits.
//!
//! Two facts per session: [`REVIEWED_FACT`] (path → the agent's blob and
//! mode seen when it was marked) and [`COMMENTS_FACT`] (every comment, with
//! the agent's blob it was made on, so later changes to those lines are
//! told apart from changes elsewhere in the file).
//!
//! Invariants: reads the worktree, never writes it (the snapshot writes
//! git objects only); a comment is stored before it is typed, so one that
//! could not be delivered is still listed; every change to the two facts
//! is one store transaction (`Store::update_fact`), so concurrent writers
//! (the LSP, the CLI) lose nothing.

use std::collections::BTreeMap;
use std::path::{Component, Path};

use anyhow::Context as _;
use owt_protocol::review::{
    CommentsOutput, DiffFile, DiffReport, FileStatus, ReviewComment, ReviewedOutput,
};
use serde::{Deserialize, Serialize};

use super::Context;
use crate::guard::patch;
use crate::guard::snapshot::WorkState;
use crate::session;
use crate::store::{now_ms, SessionRow};

/// Fact kind: [`Reviewed`].
pub const REVIEWED_FACT: &str = crate::status::kind::REVIEWED;
/// Fact kind: `Vec<StoredComment>`.
pub const COMMENTS_FACT: &str = "review_comments";

/// What the human has reviewed: path → [`seen_key`] of the file then.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Reviewed {
    pub files: BTreeMap<String, String>,
    /// The snapshot tree of the agent's whole working state when every
    /// changed file was reviewed (`None` while some file is not): the
    /// board says `reviewed` while the agent's state is still this tree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<String>,
}

/// A comment as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredComment {
    pub id: u32,
    pub path: String,
    pub start_line: u32,
    pub end_line: u32,
    pub selected: String,
    pub text: String,
    pub created_at: i64,
    /// The agent's blob of `path` the lines refer to.
    pub blob: Option<String>,
    #[serde(default)]
    pub resolved: bool,
    #[serde(default)]
    pub delivered: bool,
}

/// A comment to make: lines `start_line..=end_line` (1-based) of `path`
/// in the agent's copy.
#[derive(Debug, Clone, PartialEq)]
pub struct NewComment {
    pub path: String,
    pub start_line: u32,
    pub end_line: u32,
    pub text: String,
}

/// The agent's working state, scanned now (its session host's journal
/// first, as the guard does).
fn scan(ctx: &Context, row: &SessionRow) -> anyhow::Result<WorkState> {
    if let Some((remote, path)) = row.remote() {
        // Its files are on the remote; nothing here to diff or comment on.
        let name = row
            .name
            .split_once(':')
            .map_or(row.name.as_str(), |(_, n)| n);
        anyhow::bail!(
            "{} runs on {remote}: its files are there, and owt cannot review a remote session from this machine yet; on {remote}, run `owt diff {name}` (or `owt review`, `owt comment`) in {path}",
            row.name
        );
    }
    if !row.worktree_path.is_dir() {
        anyhow::bail!(
            "the worktree of {} is gone ({}); `owt doctor` can repair the session",
            row.name,
            row.worktree_path.display()
        );
    }
    let mut state = WorkState::open(&row.worktree_path, &row.base_branch)
        .with_context(|| format!("opening the checkout of {}", row.name))?;
    state.journal = Some(std::sync::Arc::new(session::HostJournal::new(
        session::socket_path(&ctx.home, &row.short_id),
    )));
    state
        .scan_full()
        .with_context(|| format!("reading the working state of {}", row.name))?;
    Ok(state)
}

/// What marks a file's current content (and mode) as seen.
fn seen_key(file: &DiffFile) -> String {
    format!(
        "{}:{}",
        file.agent_blob.as_deref().unwrap_or("deleted"),
        file.new_mode.as_deref().unwrap_or("-")
    )
}

fn reviewed(ctx: &Context, row: &SessionRow) -> anyhow::Result<Reviewed> {
    Ok(ctx
        .store
        .fact::<Reviewed>(row.id, REVIEWED_FACT)?
        .map(|(r, _)| r)
        .unwrap_or_default())
}

/// A `file://` URI for an absolute path.
fn file_uri(path: &Path) -> String {
    let mut url = String::from("file://");
    for b in path.to_string_lossy().bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'/' | b'.' | b'_' | b'-' | b'~' => {
                url.push(b as char)
            }
            _ => url.push_str(&format!("%{b:02X}")),
        }
    }
    url
}

fn report(
    ctx: &Context,
    row: &SessionRow,
    only: Option<&str>,
    with_hunks: bool,
) -> anyhow::Result<DiffReport> {
    let state = scan(ctx, row)?;
    let snapshot = state
        .snapshot
        .with_context(|| format!("no snapshot of {}", row.name))?;
    let mut files = patch::file_diffs(
        state.repo(),
        state.merge_base_tree,
        snapshot,
        only,
        with_hunks,
    )
    .with_context(|| format!("diffing {}", row.name))?;
    let seen = reviewed(ctx, row)?;
    for file in &mut files {
        file.reviewed = seen.files.get(&file.path) == Some(&seen_key(file));
        if file.status != FileStatus::Deleted {
            file.agent_uri = Some(file_uri(&state.worktree.join(&file.path)));
        }
    }
    Ok(DiffReport {
        session: row.name.clone(),
        worktree: state.worktree.to_string_lossy().into_owned(),
        base: row.base_branch.clone(),
        merge_base: state.merge_base.map(|c| c.to_string()),
        snapshot: snapshot.to_string(),
        additions: files.iter().map(|f| f.additions).sum(),
        deletions: files.iter().map(|f| f.deletions).sum(),
        files,
    })
}

/// `owt diff NAME [PATH]` / `owt/diff`: the agent's whole working state
/// against its merge base.
pub fn diff(ctx: &Context, name: &str, only: Option<&str>) -> anyhow::Result<DiffReport> {
    let row = ctx.session(name)?;
    if let Some(path) = only {
        check_relative(path)?;
    }
    report(ctx, &row, only, true)
}

/// A path given by a person or an editor: relative, inside the worktree.
fn check_relative(path: &str) -> anyhow::Result<()> {
    let plain = !path.is_empty()
        && Path::new(path)
            .components()
            .all(|c| matches!(c, Component::Normal(n) if n != ".git"));
    if !plain {
        anyhow::bail!("`{path}` is not a path inside the worktree (give it relative to its root, e.g. src/main.rs)");
    }
    Ok(())
}

/// `owt review NAME --mark [PATH…]`: marks the files (every changed file
/// when `paths` is empty) reviewed as they are now.
pub fn mark_reviewed(
    ctx: &Context,
    name: &str,
    paths: &[String],
) -> anyhow::Result<ReviewedOutput> {
    let row = ctx.session(name)?;
    let diff = report(ctx, &row, None, false)?;
    for path in paths {
        if !diff.files.iter().any(|f| &f.path == path) {
            anyhow::bail!(
                "{path} is not among the files {name} changed; `owt diff {name} --stat` lists them"
            );
        }
    }
    // One transaction: files marked meanwhile (the editor marks each file
    // it opens) are kept.
    ctx.store.update_fact(
        row.id,
        REVIEWED_FACT,
        |seen: Option<Reviewed>| -> anyhow::Result<_> {
            let mut seen = seen.unwrap_or_default();
            for file in &diff.files {
                if paths.is_empty() || paths.contains(&file.path) {
                    seen.files.insert(file.path.clone(), seen_key(file));
                }
            }
            // Files no longer changed are forgotten.
            seen.files
                .retain(|path, _| diff.files.iter().any(|f| &f.path == path));
            let state = review_state(&row, &diff, &seen);
            seen.snapshot = state.unreviewed.is_empty().then(|| diff.snapshot.clone());
            Ok((seen, state))
        },
    )
}

fn review_state(row: &SessionRow, diff: &DiffReport, seen: &Reviewed) -> ReviewedOutput {
    let (reviewed, unreviewed): (Vec<&DiffFile>, Vec<&DiffFile>) = diff
        .files
        .iter()
        .partition(|f| seen.files.get(&f.path) == Some(&seen_key(f)));
    ReviewedOutput {
        session: row.name.clone(),
        reviewed: reviewed.iter().map(|f| f.path.clone()).collect(),
        unreviewed: unreviewed.iter().map(|f| f.path.clone()).collect(),
    }
}

/// The snapshot tree of `row`'s whole working state now (what
/// [`Reviewed::snapshot`] is compared with), scanned as the guard does.
pub fn current_snapshot(ctx: &Context, row: &SessionRow) -> anyhow::Result<String> {
    let state = scan(ctx, row)?;
    let snapshot = state
        .snapshot
        .with_context(|| format!("no snapshot of {}", row.name))?;
    Ok(snapshot.to_string())
}

/// Which of the agent's changed files are reviewed as they are now.
pub fn review_status(ctx: &Context, name: &str) -> anyhow::Result<ReviewedOutput> {
    let row = ctx.session(name)?;
    let diff = report(ctx, &row, None, false)?;
    let seen = reviewed(ctx, &row)?;
    Ok(review_state(&row, &diff, &seen))
}

fn stored_comments(ctx: &Context, row: &SessionRow) -> anyhow::Result<Vec<StoredComment>> {
    Ok(ctx
        .store
        .fact::<Vec<StoredComment>>(row.id, COMMENTS_FACT)?
        .map(|(c, _)| c)
        .unwrap_or_default())
}

/// The message typed into the agent for `comments` (one message, however
/// many).
pub fn comment_message(comments: &[StoredComment]) -> String {
    let mut text = String::from(if comments.len() == 1 {
        "Review comment from the human supervising you (owt review). Please change the code as asked:\n"
    } else {
        "Review comments from the human supervising you (owt review). Please change the code as asked in each:\n"
    });
    for c in comments {
        let lines = if c.start_line == c.end_line {
            format!("line {}", c.start_line)
        } else {
            format!("lines {}-{}", c.start_line, c.end_line)
        };
        text.push_str(&format!("\n{} {lines}:\n", c.path));
        for line in c.selected.lines() {
            text.push_str(&format!("    {line}\n"));
        }
        text.push_str(&format!("Comment: {}\n", c.text.trim()));
    }
    text.trim_end().to_string()
}

/// `owt comment` / `owt.comment`: stores `new` comments on `name`'s files
/// and types them into the agent as one message. Returns the comments as
/// stored and, when the agent could not be reached, why.
pub fn comment(
    ctx: &Context,
    name: &str,
    new: &[NewComment],
) -> anyhow::Result<(Vec<ReviewComment>, Option<anyhow::Error>)> {
    let mut made = record_comments(ctx, name, new)?;
    let ids: Vec<u32> = made.iter().map(|c| c.id).collect();
    let failure = deliver(ctx, name, &ids).err();
    if failure.is_none() {
        for c in &mut made {
            c.delivered = true;
        }
    }
    Ok((made, failure))
}

/// Stores `new` comments on `name`'s files (not typed yet: [`deliver`]),
/// each with the text of its lines in the agent's copy now.
pub fn record_comments(
    ctx: &Context,
    name: &str,
    new: &[NewComment],
) -> anyhow::Result<Vec<ReviewComment>> {
    let row = ctx.session(name)?;
    if new.is_empty() {
        anyhow::bail!("no comment given");
    }
    let state = scan(ctx, &row)?;
    let snapshot = state
        .snapshot
        .with_context(|| format!("no snapshot of {}", row.name))?;
    let tree = state.repo().find_tree(snapshot)?;
    let mut made = Vec::new();
    for c in new {
        check_relative(&c.path)?;
        if c.text.trim().is_empty() {
            anyhow::bail!("the comment on {} is empty", c.path);
        }
        if c.start_line == 0 || c.end_line < c.start_line {
            anyhow::bail!(
                "bad line range {}-{} (lines count from 1; give START-END with START ≤ END)",
                c.start_line,
                c.end_line
            );
        }
        let entry = tree.get_path(Path::new(&c.path)).with_context(|| {
            format!(
                "{} has no file {} (a comment goes on the agent's copy of a file)",
                row.name, c.path
            )
        })?;
        let blob = state
            .repo()
            .find_blob(entry.id())
            .with_context(|| format!("{} is not a file", c.path))?;
        let content = String::from_utf8_lossy(blob.content());
        let lines: Vec<&str> = content.lines().collect();
        if c.end_line as usize > lines.len() {
            anyhow::bail!(
                "{} has {} lines in {}'s copy; line {} is past its end",
                c.path,
                lines.len(),
                row.name,
                c.end_line
            );
        }
        let selected = lines[c.start_line as usize - 1..c.end_line as usize].join("\n");
        made.push(StoredComment {
            // Numbered when stored, after the ones there then.
            id: 0,
            path: c.path.clone(),
            start_line: c.start_line,
            end_line: c.end_line,
            selected,
            text: c.text.trim().to_string(),
            created_at: now_ms(),
            blob: Some(entry.id().to_string()),
            resolved: false,
            delivered: false,
        });
    }
    // One transaction: a comment stored meanwhile by another process (the
    // LSP, another `owt comment`) is neither lost nor given the same id.
    let made = ctx.store.update_fact(
        row.id,
        COMMENTS_FACT,
        |all: Option<Vec<StoredComment>>| -> anyhow::Result<_> {
            let mut all = all.unwrap_or_default();
            let first_id = all.iter().map(|c| c.id).max().unwrap_or(0) + 1;
            for (id, c) in (first_id..).zip(made.iter_mut()) {
                c.id = id;
            }
            all.extend(made.iter().cloned());
            Ok((all, made))
        },
    )?;
    Ok(made
        .iter()
        .map(|c| ReviewComment {
            id: c.id,
            path: c.path.clone(),
            start_line: c.start_line,
            end_line: c.end_line,
            selected: c.selected.clone(),
            text: c.text.clone(),
            created_at: c.created_at,
            state: "open".into(),
            delivered: false,
        })
        .collect())
}

/// Types the stored comments `ids` into `name`'s agent as one message and
/// marks them delivered.
pub fn deliver(ctx: &Context, name: &str, ids: &[u32]) -> anyhow::Result<()> {
    let row = ctx.session(name)?;
    let batch: Vec<StoredComment> = stored_comments(ctx, &row)?
        .into_iter()
        .filter(|c| ids.contains(&c.id))
        .collect();
    if batch.is_empty() {
        return Ok(());
    }
    session::send(&ctx.home, &row, &comment_message(&batch), true)
        .map_err(anyhow::Error::from)
        .with_context(|| format!("typing the comment into {name}"))?;
    ctx.store.update_fact(
        row.id,
        COMMENTS_FACT,
        |all: Option<Vec<StoredComment>>| -> anyhow::Result<_> {
            let mut all = all.unwrap_or_default();
            for c in all.iter_mut().filter(|c| ids.contains(&c.id)) {
                c.delivered = true;
            }
            Ok((all, ()))
        },
    )
}

/// Whether `name` has comments that are not resolved (cheap: the store
/// only).
pub fn has_open_comments(ctx: &Context, name: &str) -> bool {
    ctx.session(name)
        .ok()
        .and_then(|row| stored_comments(ctx, &row).ok())
        .is_some_and(|all| all.iter().any(|c| !c.resolved))
}

/// Where a comment stands in `repo`'s snapshot `tree`: `open` with its
/// lines moved by the changes above them, `addressed` when the agent has
/// changed those lines (or removed the file), or `resolved`.
fn comment_now(
    repo: &git2::Repository,
    tree: &git2::Tree<'_>,
    c: &StoredComment,
) -> anyhow::Result<ReviewComment> {
    let mut shown = ReviewComment {
        id: c.id,
        path: c.path.clone(),
        start_line: c.start_line,
        end_line: c.end_line,
        selected: c.selected.clone(),
        text: c.text.clone(),
        created_at: c.created_at,
        state: "open".into(),
        delivered: c.delivered,
    };
    if c.resolved {
        shown.state = "resolved".into();
        return Ok(shown);
    }
    let now = tree.get_path(Path::new(&c.path)).ok().map(|e| e.id());
    let then = c.blob.as_deref().and_then(|b| git2::Oid::from_str(b).ok());
    if now == then {
        return Ok(shown);
    }
    let Some(now) = now else {
        shown.state = "addressed".into();
        return Ok(shown);
    };
    let Some(hunks) = patch::blob_hunks(repo, then, Some(now))? else {
        shown.state = "addressed".into();
        return Ok(shown);
    };
    let mut shift: i64 = 0;
    for h in hunks {
        // The old lines this hunk replaces (a pure insertion goes after
        // line `old_start`).
        let (first, last) = if h.old_lines == 0 {
            (h.old_start + 1, h.old_start)
        } else {
            (h.old_start, h.old_start + h.old_lines - 1)
        };
        let touches = if h.old_lines == 0 {
            // Inserted between two commented lines.
            h.old_start >= c.start_line && h.old_start < c.end_line
        } else {
            first <= c.end_line && last >= c.start_line
        };
        if touches {
            shown.state = "addressed".into();
            return Ok(shown);
        }
        if last < c.start_line {
            shift += i64::from(h.new_lines) - i64::from(h.old_lines);
        }
    }
    shown.start_line = (i64::from(c.start_line) + shift).max(1) as u32;
    shown.end_line = (i64::from(c.end_line) + shift).max(1) as u32;
    Ok(shown)
}

/// `owt comments NAME`: the session's comments as they stand now (open
/// ones on the lines they are on now); resolved and addressed ones only
/// with `all`.
pub fn comments(ctx: &Context, name: &str, all: bool) -> anyhow::Result<CommentsOutput> {
    let row = ctx.session(name)?;
    let stored = stored_comments(ctx, &row)?;
    let mut out = Vec::new();
    if !stored.is_empty() {
        let state = scan(ctx, &row)?;
        let snapshot = state
            .snapshot
            .with_context(|| format!("no snapshot of {}", row.name))?;
        let tree = state.repo().find_tree(snapshot)?;
        for c in &stored {
            let now = comment_now(state.repo(), &tree, c)?;
            if all || now.state == "open" {
                out.push(now);
            }
        }
    }
    Ok(CommentsOutput {
        session: row.name,
        comments: out,
    })
}

/// `owt comments NAME --resolve ID…`: marks comments resolved.
pub fn resolve(ctx: &Context, name: &str, ids: &[u32]) -> anyhow::Result<CommentsOutput> {
    let row = ctx.session(name)?;
    ctx.store.update_fact(
        row.id,
        COMMENTS_FACT,
        |stored: Option<Vec<StoredComment>>| -> anyhow::Result<_> {
            let mut stored = stored.unwrap_or_default();
            for id in ids {
                match stored.iter_mut().find(|c| c.id == *id) {
                    Some(c) => c.resolved = true,
                    None => anyhow::bail!(
                        "{name} has no comment {id}; `owt comments {name} --all` lists them"
                    ),
                }
            }
            Ok((stored, ()))
        },
    )?;
    comments(ctx, name, false)
}

/// A read-only copy of the base version of `path` (as the agent's branch
/// started from it; the old path of a rename) under `$OWT_HOME/review/`,
/// for editors to show beside the agent's copy. Returns its path.
pub fn base_copy(ctx: &Context, name: &str, path: &str) -> anyhow::Result<std::path::PathBuf> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    check_relative(path)?;
    let row = ctx.session(name)?;
    let state = scan(ctx, &row)?;
    let snapshot = state
        .snapshot
        .with_context(|| format!("no snapshot of {}", row.name))?;
    let changed = patch::file_diffs(
        state.repo(),
        state.merge_base_tree,
        snapshot,
        Some(path),
        false,
    )?;
    let blob = match changed.first() {
        Some(file) => file.base_blob.clone(),
        None => state
            .merge_base_tree
            .and_then(|t| state.repo().find_tree(t).ok())
            .and_then(|t| t.get_path(Path::new(path)).ok())
            .map(|e| e.id().to_string()),
    }
    .with_context(|| format!("{path} is new in {name}: the base has no version of it"))?;
    let content = state
        .repo()
        .find_blob(git2::Oid::from_str(&blob)?)
        .with_context(|| format!("the base version of {path} is not a file"))?
        .content()
        .to_vec();
    let base = state
        .merge_base
        .map(|c| c.to_string()[..12].to_string())
        .unwrap_or_else(|| "none".into());
    let copy = ctx
        .home
        .join("review")
        .join(&row.short_id)
        .join(base)
        .join(path);
    let folder = copy.parent().context("a file path")?;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(folder)
        .with_context(|| format!("creating {}", folder.display()))?;
    // Ours (written here before): replaced.
    if copy.exists() {
        std::fs::remove_file(&copy).with_context(|| format!("replacing {}", copy.display()))?;
    }
    crate::store::write_private(&copy, &content)
        .with_context(|| format!("writing {}", copy.display()))?;
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o400))?;
    Ok(copy)
}

#[cfg(test)]
mod tests {
    /// The board's review state reads the guard's snapshot by its kind.
    #[test]
    fn status_reads_the_guard_fact_by_the_guards_kind() {
        assert_eq!(crate::status::kind::GUARD, crate::guard::kind::GUARD);
    }
}
