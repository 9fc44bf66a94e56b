//! `owt comment NAME PATH:LINE[-LINE] TEXT` and `owt comments NAME`:
//! review comments typed back into the agent, and the list of them.

use std::path::Path;
use std::process::ExitCode;

use owt_protocol::review::{CommentsOutput, ReviewComment};

use crate::ops;

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Types into the agent one message with the file, the lines, their text as they are in its copy \
and your comment, and keeps the comment: `owt comments NAME` lists it until the agent changes \
those lines (or you resolve it). Lines are those of the agent's copy (`owt review NAME` prints \
where its changes are).

Comments given within 2 s of each other go as one message, as in the editors: `owt comment` \
waits 2 s for another comment on the same session (from another shell, a script, an editor); \
when one comes, this comment goes with it (the later command types them all) and this command \
says so. `--now` types at once.

Examples:
  owt comment a0 src/auth.rs:40-58 \"keep the old error type\"
  owt comment a0 src/auth.rs:12 use the config value & owt comment a0 src/db.rs:7 same here")]
pub struct CommentArgs {
    /// The session.
    pub name: String,
    /// PATH:LINE or PATH:START-END, relative to the worktree's root.
    pub location: String,
    /// The comment (several words are joined by spaces).
    #[arg(required = true, num_args = 1..)]
    pub text: Vec<String>,
    /// Type the comment at once: do not wait 2 s for more comments to send with it.
    #[arg(long)]
    pub now: bool,
}

#[derive(Debug, clap::Args)]
pub struct CommentsArgs {
    /// The session.
    pub name: String,
    /// Also the comments the agent addressed (changed those lines) or that were resolved.
    #[arg(long)]
    pub all: bool,
    /// Mark these comments resolved (by id).
    #[arg(long, num_args = 1.., value_name = "ID")]
    pub resolve: Vec<u32>,
}

/// `src/a.rs:3` or `src/a.rs:3-5`.
fn parse_location(location: &str) -> anyhow::Result<(String, u32, u32)> {
    let bad = || {
        anyhow::anyhow!(
            "`{location}` is not a location; give PATH:LINE or PATH:START-END (e.g. src/main.rs:12-14)"
        )
    };
    let (path, lines) = location.rsplit_once(':').ok_or_else(bad)?;
    let (start, end) = match lines.split_once('-') {
        Some((a, b)) => (
            a.trim().parse().map_err(|_| bad())?,
            b.trim().parse().map_err(|_| bad())?,
        ),
        None => {
            let n: u32 = lines.trim().parse().map_err(|_| bad())?;
            (n, n)
        }
    };
    if path.is_empty() {
        return Err(bad());
    }
    Ok((path.to_string(), start, end))
}

pub fn run_comment(
    dir: Option<&Path>,
    out: &super::Out,
    args: CommentArgs,
) -> anyhow::Result<ExitCode> {
    let (path, start_line, end_line) = parse_location(&args.location)?;
    let ctx = ops::Context::open(dir)?;
    let new = ops::review::NewComment {
        path,
        start_line,
        end_line,
        text: args.text.join(" "),
    };
    let window = if args.now {
        std::time::Duration::ZERO
    } else {
        ops::review::BATCH_WINDOW
    };
    let (made, delivery) = ops::review::comment(&ctx, &args.name, &[new], window)?;
    if let ops::review::Delivery::Failed(e) = &delivery {
        out.warn(&format!(
            "{e:#}; the comment is kept (`owt comments {}`)",
            args.name
        ));
    }
    let doc = CommentsOutput {
        session: args.name.clone(),
        comments: made,
    };
    out.emit(&doc, || {
        doc.comments
            .iter()
            .map(|c| {
                let what = match &delivery {
                    ops::review::Delivery::Sent => format!("sent to {}", doc.session),
                    ops::review::Delivery::WithLater(id) => {
                        format!(
                            "goes to {} with comment {id} (given just after)",
                            doc.session
                        )
                    }
                    ops::review::Delivery::Failed(_) => "kept (not delivered)".to_string(),
                };
                format!("Comment {} on {} {} {what}.", c.id, c.path, lines(c))
            })
            .collect::<Vec<_>>()
            .join("\n")
    })?;
    Ok(if matches!(delivery, ops::review::Delivery::Failed(_)) {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

fn lines(c: &ReviewComment) -> String {
    if c.start_line == c.end_line {
        format!("line {}", c.start_line)
    } else {
        format!("lines {}-{}", c.start_line, c.end_line)
    }
}

pub fn run_comments(
    dir: Option<&Path>,
    out: &super::Out,
    args: CommentsArgs,
) -> anyhow::Result<ExitCode> {
    let ctx = ops::Context::open(dir)?;
    let doc = if args.resolve.is_empty() {
        ops::review::comments(&ctx, &args.name, args.all)?
    } else {
        ops::review::resolve(&ctx, &args.name, &args.resolve)?
    };
    out.emit(&doc, || {
        if doc.comments.is_empty() {
            return format!("{} has no open review comments.", doc.session);
        }
        doc.comments
            .iter()
            .map(|c| {
                format!(
                    "{} {}:{} ({}): {}",
                    c.id,
                    c.path,
                    c.start_line,
                    c.state,
                    crate::printable::line(&c.text)
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    })?;
    Ok(ExitCode::SUCCESS)
}
