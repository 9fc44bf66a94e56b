//! `owt editor helix`: print or install a Helix `languages.toml` that runs
//! owt for every language.
//!
//! The only code that touches the user's editor files: it picks the file
//! (the user's, or the repository's with `--project`), reads it, calls the
//! pure merge in [`crate::editor::helix`], and with `--write` keeps a backup
//! of the old file and replaces it atomically. Nothing is written when the
//! merge fails or changes nothing.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use serde::Serialize;

use crate::editor::helix::{self, MergeReport, ServerCommand};
use crate::git::Repo;

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
    let table = match &args.languages {
        Some(file) => {
            let text = std::fs::read_to_string(file)
                .with_context(|| format!("reading the Helix language table {}", file.display()))?;
            helix::parse_table(&text, file, file.display().to_string())?
        }
        None => helix::builtin_table()?,
    };
    let target = target_path(dir, args.project)?;
    // A repository's file is read after the user's: build on the user's lists.
    let table = match (args.project, user_path()) {
        (true, Ok(user)) => match read_if_exists(&user)? {
            Some(text) => helix::with_user_lists(table, &text, &user)
                .context("cannot read your own Helix languages.toml")?,
            None => table,
        },
        _ => table,
    };
    let existing = read_if_exists(&target)?;
    let (server, path_note) = server_command()?;
    let merged =
        helix::merge_languages_toml(existing.as_deref().unwrap_or(""), &target, &table, &server)
            .with_context(|| {
                if args.write {
                    "cannot add owt; the file was left unchanged"
                } else {
                    "cannot add owt"
                }
            })?;
    let changed = merged.report.changed();
    let mut doc = HelixOutput {
        path: target.clone(),
        existed: existing.is_some(),
        written: false,
        backup: None,
        languages_from: table.origin.clone(),
        command: server.command.clone(),
        args: server.args.clone(),
        changed,
        report: merged.report.clone(),
        text: None,
    };
    if let (true, Some(note)) = (merged.report.server_added, &path_note) {
        out.progress(note);
    }

    if !args.write {
        if out.json {
            doc.text = Some(merged.text);
            out.emit(&doc, String::new)?;
        } else {
            let mut stdout = std::io::stdout().lock();
            stdout.write_all(merged.text.as_bytes())?;
            stdout.flush()?;
            let how = if args.project { " --project" } else { "" };
            out.progress(&match &existing {
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
    doc.backup = write_with_backup(&target, existing.is_some(), &merged.text)?;
    doc.written = true;
    out.emit(&doc, || {
        let report = &doc.report;
        let mut text = format!(
            "Added owt to {} languages in {}",
            report.listed.len() + report.appended.len(),
            target.display()
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
    })?;
    Ok(ExitCode::SUCCESS)
}

/// The languages.toml to merge into.
fn target_path(dir: Option<&Path>, project: bool) -> anyhow::Result<PathBuf> {
    if project {
        let dir = match dir {
            Some(dir) => dir.to_path_buf(),
            None => std::env::current_dir().context("reading the current folder")?,
        };
        let repo = Repo::discover(&dir)?;
        return Ok(helix::project_languages_path(repo.main_root()));
    }
    user_path()
}

/// The user's own languages.toml.
fn user_path() -> anyhow::Result<PathBuf> {
    helix::user_languages_path(
        std::env::var_os("XDG_CONFIG_HOME").as_deref(),
        std::env::var_os("HOME").as_deref(),
    )
    .context("cannot find Helix's configuration folder: neither XDG_CONFIG_HOME nor HOME is set")
}

fn read_if_exists(path: &Path) -> anyhow::Result<Option<String>> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(err).with_context(|| format!("reading {}", path.display())),
    }
}

/// `owt lsp` by name when `owt` is on PATH, else by this binary's absolute
/// path, with a note saying so.
fn server_command() -> anyhow::Result<(ServerCommand, Option<String>)> {
    if on_path("owt") {
        return Ok((ServerCommand::lsp("owt"), None));
    }
    let exe = std::env::current_exe().context("finding the owt binary")?;
    let exe = std::fs::canonicalize(&exe).unwrap_or(exe);
    let note = format!(
        "owt is not on PATH, so Helix will start it as {}; edit [language-server.owt] if you move it.",
        exe.display()
    );
    Ok((ServerCommand::lsp(exe.display().to_string()), Some(note)))
}

fn on_path(program: &str) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    let Some(path) = std::env::var_os("PATH") else {
        return false;
    };
    std::env::split_paths(&path).any(|dir| {
        std::fs::metadata(dir.join(program))
            .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
    })
}

/// Replaces `target` with `text`: copies the old file to a backup next to
/// it first (when it existed), then writes a temporary file and renames it
/// over the real file (through a symlink, so dotfile links survive).
fn write_with_backup(target: &Path, existed: bool, text: &str) -> anyhow::Result<Option<PathBuf>> {
    let real = if existed {
        std::fs::canonicalize(target).with_context(|| format!("resolving {}", target.display()))?
    } else {
        target.to_path_buf()
    };
    let folder = real
        .parent()
        .context("the languages.toml path has no folder")?;
    std::fs::create_dir_all(folder).with_context(|| format!("creating {}", folder.display()))?;
    let backup = if existed {
        let backup = backup_path(target);
        std::fs::copy(&real, &backup)
            .with_context(|| format!("backing up {} to {}", target.display(), backup.display()))?;
        Some(backup)
    } else {
        None
    };
    let file_name = real
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "languages.toml".into());
    let temporary = folder.join(format!(".{file_name}.owt-{}", std::process::id()));
    let written = (|| -> std::io::Result<()> {
        let mut file = std::fs::File::create(&temporary)?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        if existed {
            std::fs::set_permissions(&temporary, std::fs::metadata(&real)?.permissions())?;
        }
        std::fs::rename(&temporary, &real)
    })();
    if let Err(err) = written {
        let _ = std::fs::remove_file(&temporary);
        return Err(err).with_context(|| format!("writing {}", target.display()));
    }
    Ok(backup)
}

/// `languages.toml.owt-backup-20261129T090200Z`, with `-2`, `-3`, … when
/// that name is taken.
fn backup_path(target: &Path) -> PathBuf {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let base = format!(
        "{}.owt-backup-{}",
        target.display(),
        utc_timestamp(secs as i64)
    );
    let mut candidate = PathBuf::from(&base);
    let mut n = 2;
    while candidate.exists() {
        candidate = PathBuf::from(format!("{base}-{n}"));
        n += 1;
    }
    candidate
}

/// `YYYYMMDDTHHMMSSZ` for seconds since the Unix epoch (UTC).
fn utc_timestamp(secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let rest = secs.rem_euclid(86_400);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}{month:02}{day:02}T{:02}{:02}{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_timestamps() {
        assert_eq!(utc_timestamp(0), "19700101T000000Z");
        assert_eq!(utc_timestamp(951_782_400), "20000229T000000Z");
        assert_eq!(utc_timestamp(1_798_761_599), "20261231T235959Z");
    }

    #[test]
    fn help_names_the_helix_version() {
        assert!(helix_long_about().contains("Helix 25.07.1 (commit 079a789e)"));
        assert!(languages_help().contains("Helix 25.07.1"));
    }
}
