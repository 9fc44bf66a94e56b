//! `owt comment NAME PATH:LINE[-LINE] TEXT` and `owt comments NAME`:
//! review comments typed back into the agent, and the list of them.

use std::path::Path;
use std::process::ExitCode;

use owt_protocol::review::{CommentsOutput, ReviewComment};

use crate::ops;

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Types into the agent at once one message with the file, the lines, their text as they are in \
its copy and your comment (the editors batch comments given within 2 s into one message), and \
keeps the comment: `owt comments NAME` lists it until the agent changes \
those lines (or you resolve it). Lines are those of the agent's copy (`owt review NAME` \
prints where its changes are).")]
pub struct CommentArgs {
    /// The session.
    pub name: String,
    /// PATH:LINE or PATH:START-END, relative to the worktree's root.
    pub location: String,
    /// The comment (several words are joined by spaces).
    #[arg(required = true, num_args = 1..)]
    pub text: Vec<String>,
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
    let (made, failure) = ops::review::comment(&ctx, &args.name, &[new])?;
    if let Some(e) = &failure {
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
                format!(
                    "Comment {} on {} {} {}.",
                    c.id,
                    c.path,
                    lines(c),
                    if c.delivered {
                        format!("sent to {}", doc.session)
                    } else {
                        "kept (not delivered)".to_string()
                    }
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    })?;
    Ok(if failure.is_some() {
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
