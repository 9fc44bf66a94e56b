//! `owt wait NAME [--timeout S]`: block until the agent is done, needs the
//! human, or exited. Exit 0 when it is done / waiting for input / blocked
//! (or exited with code 0), 1 when it exited with an error, 2 on timeout.

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use crate::ops::{agent, Context};
use crate::session::WaitOutcome;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session.
    pub name: String,
    /// Give up after this many seconds (exit code 2).
    #[arg(long)]
    pub timeout: Option<f64>,
}

pub fn run(ctx_dir: Option<&Path>, out: &super::Out, args: Args) -> anyhow::Result<ExitCode> {
    let ctx = Context::open(ctx_dir)?;
    // A queued session starts when there is room; it may be now.
    crate::ops::queue::admit(&ctx.home, &mut |_| {});
    let timeout = args.timeout.map(|s| Duration::from_secs_f64(s.max(0.0)));
    let (name, outcome) = agent::wait(&ctx, &args.name, timeout)?;
    let (derived, code) = match &outcome {
        WaitOutcome::Ready(d) => (d, 0),
        WaitOutcome::Exited(d) if d.exit_code == Some(0) => (d, 0),
        WaitOutcome::Exited(d) => (d, 1),
        WaitOutcome::TimedOut(d) => (d, 2),
    };
    let timed_out = matches!(outcome, WaitOutcome::TimedOut(_));
    let doc = serde_json::json!({
        "session": name,
        "status": derived.status,
        "text": derived.text,
        "exit_code": derived.exit_code,
        "host_lost": derived.host_lost,
        "timed_out": timed_out,
    });
    out.emit(&doc, || {
        let text = crate::printable::line(&derived.text);
        if timed_out {
            format!("{name} is still {text} (timed out).")
        } else {
            format!("{name} is {text}.")
        }
    })?;
    Ok(ExitCode::from(code))
}
