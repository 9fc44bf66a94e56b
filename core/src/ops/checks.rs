//! `owt checks NAME [--run]`. Shipping behind the checks (`owt ship`,
//! `owt queue --ship`, the editors' ship command refuse work whose
//! `[checks]` fail, unless told `--no-checks`) is `ops::merge`'s
//! [`ship_checked`], re-exported here.

use owt_protocol::ChecksOutput;

pub use super::merge::ship_checked;
use super::Context;
use crate::feedback::checks::{self, Trigger};
use crate::status::feedback::{kind, ChecksFact};
use crate::store::SessionRow;

fn output(
    ctx: &Context,
    row: &SessionRow,
    fact: Option<ChecksFact>,
) -> anyhow::Result<ChecksOutput> {
    let config = &ctx.config.config.checks;
    let last_input = ctx
        .store
        .fact::<serde_json::Value>(row.id, crate::status::kind::INPUT)?
        .map(|(_, at)| at);
    Ok(ChecksOutput {
        session: row.name.clone(),
        command: config.command.clone(),
        when: config.when.as_str().into(),
        checks: fact.as_ref().map(|f| f.view(last_input)),
        excerpt: fact.as_ref().and_then(|f| f.excerpt.clone()),
        reason: fact.and_then(|f| f.reason),
    })
}

/// The session's last checks run.
pub fn show(ctx: &Context, name: &str) -> anyhow::Result<ChecksOutput> {
    let row = ctx.session(name)?;
    let fact = ctx
        .store
        .fact::<ChecksFact>(row.id, kind::CHECKS)?
        .map(|(f, _)| f);
    output(ctx, &row, fact)
}

/// Runs the checks now (after a run under way, if any) and returns it.
pub fn run(
    ctx: &Context,
    name: &str,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<ChecksOutput> {
    let row = ctx.session(name)?;
    if ctx.config.config.checks.command.is_none() {
        anyhow::bail!(
            "no checks are configured: set [checks] command in .owt.toml (then `owt trust`) or in ~/.config/owt/config.toml"
        );
    }
    if !row.worktree_path.exists() {
        anyhow::bail!(
            "the worktree of `{name}` ({}) is gone; nothing to check",
            row.worktree_path.display()
        );
    }
    let fact = checks::run_now(
        &ctx.store,
        &ctx.home,
        &row,
        &ctx.config.config.checks,
        Trigger::Manual,
        progress,
    )?;
    output(ctx, &row, Some(fact))
}
