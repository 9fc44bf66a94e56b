//! `owt checks NAME [--run]`: a session's `[checks]`, and running them now.

use std::path::Path;
use std::process::ExitCode;

use owt_protocol::ChecksOutput;

use crate::ops;

#[derive(Debug, clap::Args)]
#[command(after_help = "\
[checks] command (in .owt.toml, then `owt trust`, or in ~/.config/owt/config.toml) says whether an \
agent's work is good, e.g. `command = \"cargo test\"`: split into words like a command template \
and run without a shell (write `sh -c \"…\"` for shell syntax), in the session's worktree, in a \
process group of its own, output to a log under $OWT_HOME/logs/checks/ (never into the agent's \
terminal), killed after `timeout` seconds.

With `when = \"turn-end\"` (the default) the session's host runs them each time the agent ends a \
turn with new changes; a failure is typed back into the agent (`auto_fix`, up to `max_attempts` \
fixes), after which the session needs you. `owt ship` and `owt pr` run them first (when = \
\"ship\" too) and refuse red work unless --no-checks. With `when = \"manual\"` only this command \
runs them.

Exit code: 0 when the last run passed (or none is on record and nothing is configured), 1 when \
it failed, 2 when it is running or was cancelled.")]
pub struct Args {
    /// The session.
    pub name: String,
    /// Run the checks now (after a run under way, if any) and wait for the result.
    #[arg(long)]
    pub run: bool,
}

pub fn run(dir: Option<&Path>, out: &super::Out, args: Args) -> anyhow::Result<ExitCode> {
    let ctx = ops::Context::open(dir)?;
    let result = if args.run {
        ops::checks::run(&ctx, &args.name, &mut |l| out.progress(l))?
    } else {
        ops::checks::show(&ctx, &args.name)?
    };
    out.emit(&result, || render(&result))?;
    Ok(match result.checks.as_ref().map(|c| c.state.as_str()) {
        Some("failed") => ExitCode::from(1),
        Some("running") | Some("cancelled") => ExitCode::from(2),
        _ => ExitCode::SUCCESS,
    })
}

/// The text form.
pub fn render(out: &ChecksOutput) -> String {
    let Some(command) = &out.command else {
        return format!(
            "No checks are configured for {}: set [checks] command (see `owt checks --help`).",
            out.session
        );
    };
    let mut lines = vec![format!(
        "Checks of {}: {} (when = \"{}\")",
        out.session,
        crate::printable::line(command),
        out.when
    )];
    let Some(c) = &out.checks else {
        lines.push(
            "They have not run yet. Run them with: owt checks NAME --run"
                .replace("NAME", &out.session),
        );
        return lines.join("\n");
    };
    let took = c
        .duration_ms
        .map(|ms| format!(" in {:.1} s", ms as f64 / 1000.0))
        .unwrap_or_default();
    let why = match (c.timed_out, c.exit_code, &out.reason) {
        (true, _, Some(reason)) => format!(" ({reason})"),
        (_, Some(code), _) if c.state == "failed" => format!(" (exit code {code})"),
        (_, None, Some(reason)) => format!(" ({reason})"),
        _ => String::new(),
    };
    let attempts = if c.state == "failed" && c.max_attempts > 0 {
        format!(
            ", {} of {} fixes",
            c.attempt.min(c.max_attempts),
            c.max_attempts
        )
    } else {
        String::new()
    };
    lines.push(format!(
        "Last run ({}{}): {}{why}{took}{attempts}{}",
        c.trigger,
        super::age_suffix(c.started_at),
        c.state,
        if c.current {
            ""
        } else {
            "; the agent has had input since"
        }
    ));
    if let Some(log) = &c.log {
        lines.push(format!("Log: {log}"));
    }
    if let Some(excerpt) = out.excerpt.as_deref().filter(|_| c.state == "failed") {
        lines.push("End of the output:".into());
        lines.extend(
            excerpt
                .lines()
                .map(|l| format!("  {}", crate::printable::line(l))),
        );
    }
    lines.join("\n")
}
