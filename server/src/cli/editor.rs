//! `owt editor helix`: print or install a Helix `languages.toml` that runs
//! owt for every language ([`crate::ops::editor`] picks, merges and
//! writes; this formats).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde::Serialize;

use crate::editor::helix::{self, MergeReport};
use crate::ops::editor::{self as ops_editor, HelixRequest};

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Print (or --write) a Helix languages.toml that adds owt to every language.
    #[command(long_about = helix_long_about())]
    Helix(HelixArgs),
}

#[derive(Debug, clap::Args)]
pub struct HelixArgs {
    /// Use the repository's .helix/languages.toml instead of your own
    /// ($XDG_CONFIG_HOME/helix/languages.toml, else ~/.config/helix/languages.toml);
    /// its languages keep the servers your own file gives them.
    #[arg(long)]
    pub project: bool,
    /// Merge into the file instead of printing the result; keeps a backup of
    /// the old file next to it.
    #[arg(long)]
    pub write: bool,
    #[arg(long, value_name = "FILE", help = languages_help())]
    pub languages: Option<PathBuf>,
}

fn helix_long_about() -> String {
    format!(
        "Print (or --write) a Helix languages.toml that defines [language-server.owt] and adds owt, \
         last, to every language Helix knows.\n\n\
         Helix has no global language server, and a [[language]] entry's language-servers replaces \
         Helix's default list, so each language keeps the servers it has now: your own list from \
         the existing languages.toml, else Helix's defaults. The defaults come from Helix {} \
         (commit {}); pass --languages FILE for a newer Helix.\n\n\
         Without --write the merged file is printed; with --write it replaces the file, keeping a \
         backup, and running it again changes nothing.",
        helix::HELIX_VERSION,
        helix::HELIX_COMMIT
    )
}

fn languages_help() -> String {
    format!(
        "The languages.toml of the Helix you run (from its source tree), to take languages and \
         default servers from instead of the embedded table of Helix {}",
        helix::HELIX_VERSION
    )
}

/// What `owt --json editor helix` prints.
#[derive(Debug, Serialize)]
pub struct HelixOutput {
    /// The languages.toml merged into (printed or written).
    pub path: PathBuf,
    /// Whether that file existed.
    pub existed: bool,
    /// Whether the file was written (only with --write, and only on change).
    pub written: bool,
    /// The copy of the old file, when one was written.
    pub backup: Option<PathBuf>,
    /// Where the languages and default servers came from.
    pub languages_from: String,
    pub command: String,
    pub args: Vec<String>,
    pub changed: bool,
    pub report: MergeReport,
    /// The merged file (without --write).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

pub fn run(dir: Option<&Path>, out: &super::Out, cmd: Command) -> anyhow::Result<ExitCode> {
    match cmd {
        Command::Helix(args) => run_helix(dir, out, args),
    }
}

fn run_helix(dir: Option<&Path>, out: &super::Out, args: HelixArgs) -> anyhow::Result<ExitCode> {
    let req = HelixRequest {
        project: args.project,
        languages: args.languages.clone(),
        write: args.write,
    };
    let plan = ops_editor::plan_helix(dir, &req)?;
    let target = plan.target.clone();
    let changed = plan.merged.report.changed();
    let mut doc = HelixOutput {
        path: target.clone(),
        existed: plan.existing.is_some(),
        written: false,
        backup: None,
        languages_from: plan.languages_from.clone(),
        command: plan.server.command.clone(),
        args: plan.server.args.clone(),
        changed,
        report: plan.merged.report.clone(),
        text: None,
    };
    if let (true, Some(note)) = (plan.merged.report.server_added, &plan.path_note) {
        out.progress(note);
    }

    if !args.write {
        if out.json {
            doc.text = Some(plan.merged.text);
            out.emit(&doc, String::new)?;
        } else {
            let mut stdout = std::io::stdout().lock();
            stdout.write_all(plan.merged.text.as_bytes())?;
            stdout.flush()?;
            let how = if args.project { " --project" } else { "" };
            out.progress(&match &plan.existing {
                Some(_) => format!(
                    "Printed {} merged with owt; `owt editor helix{how} --write` saves it (keeping a backup).",
                    target.display()
                ),
                None => format!(
                    "{} does not exist yet; `owt editor helix{how} --write` creates it.",
                    target.display()
                ),
            });
        }
        return Ok(ExitCode::SUCCESS);
    }

    if !changed {
        out.emit(&doc, || {
            format!(
                "{} already runs owt for every language; nothing changed.",
                target.display()
            )
        })?;
        return Ok(ExitCode::SUCCESS);
    }
    doc.backup = ops_editor::write_helix(&plan)?;
    doc.written = true;
    out.emit(&doc, || written_text(&doc))?;
    Ok(ExitCode::SUCCESS)
}

/// What `--write` says once it wrote the file.
fn written_text(doc: &HelixOutput) -> String {
    let report = &doc.report;
    let mut text = format!(
        "Added owt to {} languages in {}",
        report.listed.len() + report.appended.len(),
        doc.path.display()
    );
    if !report.appended.is_empty() {
        text.push_str(&format!(
            " ({} of them keep your own servers)",
            report.appended.len()
        ));
    }
    text.push_str(".\n");
    if let Some(backup) = &doc.backup {
        text.push_str(&format!("The old file is kept as {}.\n", backup.display()));
    }
    text.push_str("Restart Helix to start owt; see docs/helix.md for key bindings.");
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn help_names_the_helix_version() {
        assert!(helix_long_about().contains("Helix 25.07.1 (commit 079a789e)"));
        assert!(languages_help().contains("Helix 25.07.1"));
    }
}
