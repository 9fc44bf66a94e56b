//! `owt editor helix`: the use case behind it — pick the Helix
//! `languages.toml` (the user's, or the repository's with `--project`),
//! read it, merge owt in with the pure [`crate::editor::helix`], and on
//! request replace it, keeping a backup.
//!
//! Invariant: the only code that writes the user's editor files; nothing is
//! written when the merge fails or changes nothing, and the old file is
//! copied aside first and replaced atomically.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;

use crate::clock;

use crate::editor::helix::{self, LanguageTable, Merged, ServerCommand};
use crate::git::Repo;

/// What `owt editor helix` was asked.
#[derive(Debug, Clone, Default)]
pub struct HelixRequest {
    /// The repository's `.helix/languages.toml` instead of the user's.
    pub project: bool,
    /// A Helix `languages.toml` to take languages from (else the embedded
    /// table).
    pub languages: Option<PathBuf>,
    /// The plan is to be written (said when the merge fails).
    pub write: bool,
}

/// The merge, computed and not yet written.
#[derive(Debug)]
pub struct HelixPlan {
    /// The languages.toml merged into.
    pub target: PathBuf,
    /// Its text, when it exists.
    pub existing: Option<String>,
    pub merged: Merged,
    /// Where the languages and default servers came from.
    pub languages_from: String,
    pub server: ServerCommand,
    /// Said when owt is not on PATH (Helix will run this binary by path).
    pub path_note: Option<String>,
}

/// Merges owt into the file `req` names (`dir`: where `--project` looks
/// for the repository).
pub fn plan_helix(dir: Option<&Path>, req: &HelixRequest) -> anyhow::Result<HelixPlan> {
    let table = language_table(req.languages.as_deref())?;
    let target = target_path(dir, req.project)?;
    // A repository's file is read after the user's: build on the user's lists.
    let table = match (req.project, user_path()) {
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
                if req.write {
                    "cannot add owt; the file was left unchanged"
                } else {
                    "cannot add owt"
                }
            })?;
    Ok(HelixPlan {
        target,
        existing,
        merged,
        languages_from: table.origin,
        server,
        path_note,
    })
}

/// Writes `plan` (keeping a backup of the old file); returns the backup.
pub fn write_helix(plan: &HelixPlan) -> anyhow::Result<Option<PathBuf>> {
    write_with_backup(&plan.target, plan.existing.is_some(), &plan.merged.text)
}

fn language_table(file: Option<&Path>) -> anyhow::Result<LanguageTable> {
    Ok(match file {
        Some(file) => {
            let text = std::fs::read_to_string(file)
                .with_context(|| format!("reading the Helix language table {}", file.display()))?;
            helix::parse_table(&text, file, file.display().to_string())?
        }
        None => helix::builtin_table()?,
    })
}

/// The languages.toml to merge into.
fn target_path(dir: Option<&Path>, project: bool) -> anyhow::Result<PathBuf> {
    if project {
        let dir = match dir {
            Some(dir) => dir.to_path_buf(),
            None => std::env::current_dir().context("reading the current folder")?,
        };
        let repo = Repo::discover(&dir)?;
        let root = repo.main_root();
        let target = helix::project_languages_path(root);
        // A repository's own file: never written through a link it commits.
        let rel = target.strip_prefix(root).unwrap_or(&target);
        if crate::safe_fs::is_link_beneath(root, rel) {
            anyhow::bail!(
                "{} is reached through a symbolic link; owt never follows a link out of a repository (remove the link, or drop --project to write your own languages.toml)",
                target.display()
            );
        }
        return Ok(target);
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
    let exe = crate::platform::exe::owt().context("finding the owt binary")?;
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
    clock::Utc::from_ms(secs * 1000).compact()
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
}
