//! Review comments: stored on the agent's copy of a file (with the text
//! of their lines), typed into the agent as one message, and followed as
//! the agent changes the file (`open`, moved with the lines above them;
//! `addressed` once their lines change; `resolved`).

use std::path::Path;

use anyhow::Context as _;
use owt_protocol::review::{CommentsOutput, ReviewComment};
use serde::{Deserialize, Serialize};

use super::{check_relative, scan, COMMENTS_FACT};
use crate::guard::patch;
use crate::ops::Context;
use crate::session;
use crate::store::{now_ms, SessionRow};

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

/// How long `owt comment` waits for another comment on the same session
/// before typing (the editors batch theirs the same way): comments given
/// within it of each other go to the agent as one message.
pub const BATCH_WINDOW: std::time::Duration = std::time::Duration::from_secs(2);

/// What became of a comment given to [`comment`].
#[derive(Debug)]
pub enum Delivery {
    /// Typed into the agent (with the other comments not sent yet).
    Sent,
    /// Left to a later comment on the same session (by id), which types
    /// them all as one message.
    WithLater(u32),
    /// The agent could not be reached: the comments are kept, not sent.
    Failed(anyhow::Error),
}

/// `owt comment`: stores `new` comments on `name`'s files, waits `window`
/// for another comment on the session (another `owt comment`, an editor),
/// and types every comment not sent yet as one message — unless a later
/// comment came, whose process then does. Returns the comments as stored
/// and what became of them.
pub fn comment(
    ctx: &Context,
    name: &str,
    new: &[NewComment],
    window: std::time::Duration,
) -> anyhow::Result<(Vec<ReviewComment>, Delivery)> {
    let mut made = record_comments(ctx, name, new)?;
    let last = made.iter().map(|c| c.id).max().unwrap_or(0);
    let row = ctx.session(name)?;
    let deadline = std::time::Instant::now() + window;
    loop {
        let later = stored_comments(ctx, &row)?
            .iter()
            .filter(|c| c.id > last && !c.delivered)
            .map(|c| c.id)
            .max();
        if let Some(later) = later {
            return Ok((made, Delivery::WithLater(later)));
        }
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            break;
        }
        std::thread::sleep(left.min(std::time::Duration::from_millis(100)));
    }
    let waiting: Vec<u32> = stored_comments(ctx, &row)?
        .iter()
        .filter(|c| !c.delivered && !c.resolved)
        .map(|c| c.id)
        .collect();
    if let Err(e) = deliver(ctx, name, &waiting) {
        return Ok((made, Delivery::Failed(e)));
    }
    for c in &mut made {
        c.delivered = true;
    }
    Ok((made, Delivery::Sent))
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
    let mut made = new
        .iter()
        .map(|c| on_lines(state.repo(), &tree, &row, c))
        .collect::<anyhow::Result<Vec<_>>>()?;
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

/// The comment `c` checked against the agent's snapshot `tree` (a file
/// there, lines within it) and made ready to store, with the text of its
/// lines; its id is given when it is stored.
fn on_lines(
    repo: &git2::Repository,
    tree: &git2::Tree<'_>,
    row: &SessionRow,
    c: &NewComment,
) -> anyhow::Result<StoredComment> {
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
    let blob = repo
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
    Ok(StoredComment {
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
    })
}

/// Types the stored comments `ids` into `name`'s agent as one message and
/// marks them delivered. Each is taken first (marked delivered in one
/// transaction), so that two processes delivering at once — the LSP's
/// batch, an `owt comment` — never type the same comment twice; the ones
/// taken are given back when the agent cannot be reached.
pub fn deliver(ctx: &Context, name: &str, ids: &[u32]) -> anyhow::Result<()> {
    let row = ctx.session(name)?;
    let mark = |taken: &[u32], delivered: bool| {
        ctx.store.update_fact(
            row.id,
            COMMENTS_FACT,
            |all: Option<Vec<StoredComment>>| -> anyhow::Result<_> {
                let mut all = all.unwrap_or_default();
                let mut batch = Vec::new();
                for c in all.iter_mut().filter(|c| taken.contains(&c.id)) {
                    if c.delivered != delivered {
                        c.delivered = delivered;
                        batch.push(c.clone());
                    }
                }
                Ok((all, batch))
            },
        )
    };
    let batch: Vec<StoredComment> = mark(ids, true)?;
    if batch.is_empty() {
        return Ok(());
    }
    let sent = session::send(&ctx.home, &row, &comment_message(&batch), true)
        .map_err(anyhow::Error::from)
        .with_context(|| format!("typing the comment into {name}"));
    if let Err(e) = sent {
        let taken: Vec<u32> = batch.iter().map(|c| c.id).collect();
        if let Err(undo) = mark(&taken, false) {
            tracing::warn!("giving back comments {taken:?} of {name}: {undo:#}");
        }
        return Err(e);
    }
    Ok(())
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
