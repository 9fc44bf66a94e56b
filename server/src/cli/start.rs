//! `owt start NAME`: start a queued session's agent now, whatever
//! `[agent] max_running` and `min_free_memory` say (what `owt new --now`
//! does for a new session); and the hidden `owt __admit`, which starts the
//! queued sessions there is room for (run by session hosts and `owt lsp`).

use std::path::Path;
use std::process::ExitCode;

use crate::ops::{self, list, queue};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The queued session.
    pub name: String,
}

pub fn run(dir: Option<&Path>, out: &super::Out, args: Args) -> anyhow::Result<ExitCode> {
    let mut ctx = ops::Context::open(dir)?;
    let session = queue::start_now(&mut ctx, &args.name)?;
    let view = list::session_view(&ctx, &session)?;
    out.emit(&view, || {
        format!(
            "Started session {} ({}).\nAttach with: owt attach {}",
            view.name, view.provider, view.name
        )
    })?;
    Ok(ExitCode::SUCCESS)
}

/// `owt __admit`: starts what the queue has room for; quiet.
pub fn admit() -> anyhow::Result<ExitCode> {
    let home = ops::owt_home()?;
    for admitted in queue::admit(&home, &mut |_| {}) {
        match admitted.outcome {
            Ok(()) => tracing::info!(session = %admitted.name, "started a queued session"),
            Err(e) => {
                tracing::warn!(session = %admitted.name, "a queued session did not start: {e:#}")
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
