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

mod base_lines;
mod comments;

use std::collections::BTreeMap;
use std::path::{Component, Path};

use anyhow::Context as _;
use owt_protocol::review::{DiffFile, DiffReport, FileStatus, ReviewedOutput};
use serde::{Deserialize, Serialize};

use super::Context;
use crate::guard::patch;
use crate::guard::snapshot::WorkState;
use crate::session;
use crate::store::SessionRow;

pub use base_lines::{base_note, base_selection, map_base_range, BaseSelection};
pub use comments::{
    comment, comment_message, comments, deliver, has_open_comments, record_comments, resolve,
    Delivery, NewComment, StoredComment, BATCH_WINDOW,
};

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
    report_of(&state, ctx, row, only, with_hunks)
}

/// The diff of `state`, scanned from `row`'s checkout.
fn report_of(
    state: &WorkState,
    ctx: &Context,
    row: &SessionRow,
    only: Option<&str>,
    with_hunks: bool,
) -> anyhow::Result<DiffReport> {
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
        // Without git's trailing `/`.
        worktree: state
            .worktree
            .components()
            .collect::<std::path::PathBuf>()
            .to_string_lossy()
            .into_owned(),
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

/// `owt review NAME --mark [PATH…]` / `owt.markReviewed`: marks the files
/// (every changed file when `paths` is empty) reviewed. With `shown`, the
/// `snapshot` of the diff the human read (`DiffReport::snapshot`): each
/// file is marked as it was there, so a file the agent changed since stays
/// not reviewed; without, as they are now.
pub fn mark_reviewed(
    ctx: &Context,
    name: &str,
    paths: &[String],
    shown: Option<&str>,
) -> anyhow::Result<ReviewedOutput> {
    let row = ctx.session(name)?;
    let (diff, read) = match shown {
        None => {
            let diff = report(ctx, &row, None, false)?;
            let read = diff.files.clone();
            (diff, read)
        }
        Some(tree) => shown_files(ctx, &row, tree)?,
    };
    for path in paths {
        if !read.iter().any(|f| &f.path == path) {
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
            for file in &read {
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

/// The agent's state now, and its files as they were in `tree` (the
/// snapshot of a diff shown earlier).
fn shown_files(
    ctx: &Context,
    row: &SessionRow,
    tree: &str,
) -> anyhow::Result<(DiffReport, Vec<DiffFile>)> {
    let state = scan(ctx, row)?;
    let stale = || {
        anyhow::anyhow!(
            "`{tree}` is not the snapshot of a diff of {}; reload the review (`owt diff {}`)",
            row.name,
            row.name
        )
    };
    let oid = git2::Oid::from_str(tree).map_err(|_| stale())?;
    if state.repo().find_tree(oid).is_err() {
        return Err(stale());
    }
    let read = patch::file_diffs(state.repo(), state.merge_base_tree, oid, None, false)
        .with_context(|| format!("reading the diff of {} you reviewed", row.name))?;
    let diff = report_of(&state, ctx, row, None, false)?;
    Ok((diff, read))
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
