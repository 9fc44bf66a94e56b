//! `owt watch [--once]`: the pull-request watcher, headless.

use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use owt_protocol::{WatchEvent, WatchOutput};

use crate::ops;
use crate::ops::pr_monitor;

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Watches the open pull requests of this repository's sessions (`owt pr`) through the forge's CLI: \
every [pr] poll_interval seconds (30), doubling while nothing changes up to [pr] poll_max (300), \
waiting out a rate limit until the forge says it resets. A failed CI run is typed into the agent \
with the end of its failing log (up to [checks] max_attempts times; then the session needs you), \
each new review comment once with its file:line (only those by the authors [feedback] \
comment_authors routes: by default the repository's own people; the others are listed once as \
comment-not-routed and counted on the session's row, never typed), a conflict with the base with an `owt sync` \
hint; a merged pull request makes the session READY TO CLEAN (or deletes it: [pr] on_merged = \
\"delete\"). With [feedback] conflicts = \"tell\", Conflict Guard runs too and new conflicts \
between sessions are typed into the agents concerned, once each.

`owt lsp` runs the same watcher while an editor is open; never two watch one pull request (a \
lease in the store). Stop with Ctrl-C.")]
pub struct Args {
    /// Look at every open pull request once, now (ignoring backoff), print what happened, and exit.
    #[arg(long)]
    pub once: bool,
    /// Do not run Conflict Guard.
    #[arg(long)]
    pub no_guard: bool,
}

fn line(e: &WatchEvent) -> String {
    let told = if e.told_agent {
        " (told the agent)"
    } else {
        ""
    };
    let pr = if e.pr > 0 {
        format!(" #{}", e.pr)
    } else {
        String::new()
    };
    format!(
        "{}{pr}: {}: {}{told}",
        e.session,
        e.kind,
        crate::printable::line(&e.detail)
    )
}

pub fn run(dir: Option<&Path>, out: &super::Out, args: Args) -> anyhow::Result<ExitCode> {
    let cwd;
    let dir = match dir {
        Some(dir) => dir,
        None => {
            cwd = std::env::current_dir()?;
            &cwd
        }
    };
    if args.once {
        let mut ctx = ops::Context::open(Some(dir))?;
        let holder = pr_monitor::holder_id();
        let mut events = pr_monitor::poll(&mut ctx, &holder, true)?;
        pr_monitor::release_all(&ctx, &holder);
        if !args.no_guard
            && ctx.config.config.feedback.conflicts == crate::config::ConflictFeedback::Tell
        {
            for (session, text) in pr_monitor::guard_pass(&ctx) {
                events.push(WatchEvent {
                    session,
                    pr: 0,
                    kind: "guard-conflict".into(),
                    detail: text.lines().next().unwrap_or("").to_string(),
                    told_agent: true,
                });
            }
        }
        let doc = WatchOutput { events };
        out.emit(&doc, || {
            if doc.events.is_empty() {
                "No open pull requests to look at.".into()
            } else {
                doc.events.iter().map(line).collect::<Vec<_>>().join("\n")
            }
        })?;
        return Ok(ExitCode::SUCCESS);
    }
    // Opened once up front so a bad directory fails at once.
    ops::Context::open(Some(dir))?;
    // Set by SIGINT / SIGTERM: the watcher gives its leases up and ends.
    let stop = Arc::new(AtomicBool::new(false));
    owt_core::platform::process::flag_on_interrupt(&stop)?;
    out.progress("Watching pull requests (Ctrl-C to stop)…");
    let json = out.json;
    pr_monitor::run(dir, !args.no_guard, &stop, &mut |e| {
        if json {
            println!("{}", serde_json::to_string(e).unwrap_or_default());
        } else {
            println!("{}", line(e));
        }
    })?;
    Ok(ExitCode::SUCCESS)
}
