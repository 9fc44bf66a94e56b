//! `owt usage [--days N]`.

use std::path::Path;
use std::process::ExitCode;

use crate::ops;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Count the last N days.
    #[arg(long, default_value_t = 30)]
    pub days: u32,
}

pub fn run(dir: Option<&Path>, out: &super::Out, args: Args) -> anyhow::Result<ExitCode> {
    let ctx = ops::Context::open(dir)?;
    let usage = ops::usage::usage(&ctx, args.days)?;
    out.emit(&usage, || {
        let mut text = format!(
            "Last {} days: {} sessions started, {} shipped, {} merged, {} deleted.",
            usage.days, usage.sessions_started, usage.shipped, usage.merged, usage.deleted
        );
        if !usage.by_provider.is_empty() {
            let by: Vec<String> = usage
                .by_provider
                .iter()
                .map(|(p, n)| format!("{p} {n}"))
                .collect();
            text.push_str(&format!("\nBy agent: {}", by.join(", ")));
        }
        text
    })?;
    Ok(ExitCode::SUCCESS)
}
