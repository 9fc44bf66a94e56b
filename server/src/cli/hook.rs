//! `owt hook --event working|waiting|blocked|done` (hidden): called by an
//! agent's own hooks; records the signal for the session named by
//! `OWT_SESSION` in `OWT_HOME`.
//!
//! `owt hook --pre-edit`: called by the agent's pre-tool hook with the tool
//! call on stdin (Claude Code's and Droid's `PreToolUse` for their edit
//! tools, Gemini CLI's `BeforeTool`/`AfterTool` for `write_file` and
//! `replace`; OpenCode's plugin and Pi's extension send their calls in
//! Claude Code's form); prints the hook's answer in that agent's format
//! (docs/guard.md, "Preventive guard"). Fails open: whatever goes wrong,
//! the edit is allowed.
//!
//! Never fails the agent: problems go to stderr and the exit code stays 0.

use std::io::Read as _;
use std::path::Path;
use std::process::ExitCode;

use crate::session::hooks;

#[derive(Debug, clap::Args)]
#[command(group = clap::ArgGroup::new("what").required(true).args(["event", "pre_edit"]))]
pub struct Args {
    /// `working`, `waiting`, `blocked` or `done`.
    #[arg(long)]
    pub event: Option<String>,
    /// Answer an agent's pre-edit hook (Claude Code, Droid, Gemini CLI,
    /// OpenCode, Pi): the tool call on stdin, the answer on stdout
    /// (`[guard] pre_edit`: warn, block or off).
    #[arg(long)]
    pub pre_edit: bool,
}

pub fn run(ctx_dir: Option<&Path>, _out: &super::Out, args: Args) -> anyhow::Result<ExitCode> {
    if args.pre_edit {
        pre_edit(ctx_dir);
        return Ok(ExitCode::SUCCESS);
    }
    let event = args.event.unwrap_or_default();
    let Some(signal) = hooks::parse_event(&event) else {
        eprintln!("owt hook: unknown event `{event}` (working, waiting, blocked, done)");
        return Ok(ExitCode::SUCCESS);
    };
    let Some(short_id) = std::env::var("OWT_SESSION").ok().filter(|s| !s.is_empty()) else {
        // Not running under owt (the settings file outlived its session).
        return Ok(ExitCode::SUCCESS);
    };
    let home = match crate::ops::owt_home() {
        Ok(home) => home,
        Err(e) => {
            eprintln!("owt hook: {e:#}");
            return Ok(ExitCode::SUCCESS);
        }
    };
    if let Err(e) = hooks::record_hook(&home, &short_id, signal) {
        eprintln!("owt hook: {e:#}");
    }
    Ok(ExitCode::SUCCESS)
}

/// `--pre-edit` (see the module doc).
fn pre_edit(ctx_dir: Option<&Path>) {
    let mut input = String::new();
    if let Err(e) = std::io::stdin().read_to_string(&mut input) {
        eprintln!("owt hook --pre-edit: reading the tool call: {e}");
        return;
    }
    let Some(short_id) = std::env::var("OWT_SESSION").ok().filter(|s| !s.is_empty()) else {
        return;
    };
    let answer = serde_json::from_str::<serde_json::Value>(&input)
        .map_err(anyhow::Error::from)
        .and_then(|input| {
            let ctx = crate::ops::Context::open(ctx_dir)?;
            crate::ops::guard::pre_edit(&ctx, &short_id, &input)
        });
    match answer {
        Ok(Some(answer)) => println!("{answer}"),
        Ok(None) => {}
        Err(e) => eprintln!("owt hook --pre-edit: {e:#} (the edit is allowed)"),
    }
}
