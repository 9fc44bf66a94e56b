//! Reading configuration files (errors name the file, key and line) and
//! merging them, the repository's over the user's, key by key.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::seed::{is_seed_file, translate_seed, SEED_FILES};
use super::trust::{dotted, gated_keys, remove_at, Trust, Withheld};
use super::{Config, ConfigError};
use crate::safe_fs;

/// A loaded configuration and the files it came from.
#[derive(Debug, Clone, Default)]
pub struct Loaded {
    pub config: Config,
    /// Files read, highest priority first.
    pub sources: Vec<PathBuf>,
    /// Where each set value came from: dotted key → file.
    pub origins: BTreeMap<String, PathBuf>,
    /// Keys of a seed-format file that owt does not use (e.g. `backend.mode`).
    pub ignored: Vec<String>,
    /// The repository file's keys that were not applied (not trusted, or
    /// never allowed), when there were any.
    pub withheld: Option<Withheld>,
}

/// The repository's configuration file in use: `.owt.toml`, else the
/// seed's `.worktreerc` / `.worktreerc.toml`.
pub fn repo_config_file(repo_root: &Path) -> Option<PathBuf> {
    let owt = repo_config_path(repo_root);
    if owt.exists() {
        return Some(owt);
    }
    SEED_FILES
        .iter()
        .map(|f| repo_root.join(f))
        .find(|p| p.is_file())
}

/// One configuration file as read: its bytes, its table (translated from
/// the seed's format if need be) and the seed keys it dropped.
pub type ConfigFile = (Vec<u8>, toml::Table, Vec<String>);

/// Reads and parses one file (translating the seed's format); `None` when
/// it does not exist. Only a regular file of at most 1 MiB is read (never
/// a FIFO, a device or `/proc/self/fd/0`); with `confine` (a repository's
/// own file), only when it resolves inside that folder.
pub fn read_config_file(
    path: &Path,
    confine: Option<&Path>,
) -> Result<Option<ConfigFile>, ConfigError> {
    let Some(bytes) = safe_fs::read_regular(path, safe_fs::CONFIG_LIMIT, confine)? else {
        return Ok(None);
    };
    let text = std::str::from_utf8(&bytes).map_err(|e| ConfigError::Read {
        path: path.to_path_buf(),
        error: std::io::Error::new(std::io::ErrorKind::InvalidData, e),
    })?;
    let mut ignored = Vec::new();
    let table = if is_seed_file(path) {
        let raw: toml::Table = toml::from_str(text).map_err(|e| ConfigError::Invalid {
            path: path.to_path_buf(),
            line: e.span().map_or(1, |s| locate(text, s.start).0),
            key: None,
            message: e.message().to_string(),
        })?;
        let (table, dropped) = translate_seed(raw);
        ignored.extend(
            dropped
                .into_iter()
                .map(|k| format!("{k} ({})", path.display())),
        );
        Config::deserialize(table.clone()).map_err(|e| ConfigError::Invalid {
            path: path.to_path_buf(),
            line: 1,
            key: None,
            message: e.to_string(),
        })?;
        table
    } else {
        parse_file(path, text)?
    };
    Ok(Some((bytes, table, ignored)))
}

/// The user's config file path.
pub fn user_config_path() -> Option<PathBuf> {
    if let Some(xdg) = std::env::var_os("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(xdg).join("owt/config.toml"));
    }
    std::env::var_os("HOME")
        .filter(|v| !v.is_empty())
        .map(|home| PathBuf::from(home).join(".config/owt/config.toml"))
}

/// The repository's config file path.
pub fn repo_config_path(repo_root: &Path) -> PathBuf {
    repo_root.join(".owt.toml")
}

/// Loads and merges the repository's and the user's configuration. A
/// repository without `.owt.toml` but with the seed's `.worktreerc` /
/// `.worktreerc.toml` has that read instead (translated). The repository
/// file's gated keys ([`gated_keys`]) apply only when `trust` vouches for
/// its bytes; keys redefining a built-in agent never apply.
pub fn load(repo_root: Option<&Path>, trust: &dyn Trust) -> Result<Loaded, ConfigError> {
    let mut layers = Vec::new();
    let mut withheld = None;
    // The user's file first (lowest priority), so its errors come first.
    if let Some(user) = user_config_path() {
        if let Some((_, table, ignored)) = read_config_file(&user, None)? {
            layers.push((user, table, ignored));
        }
    }
    if let Some(root) = repo_root {
        if let Some(path) = repo_config_file(root) {
            if let Some((bytes, mut table, ignored)) = read_config_file(&path, Some(root))? {
                let gated = gated_keys(&table, root);
                let trusted = gated.need_trust.is_empty() || trust.trusts(&path, &bytes);
                let mut held = Withheld {
                    file: path.clone(),
                    ..Withheld::default()
                };
                for key in &gated.refused {
                    remove_at(&mut table, key);
                    held.refused.push(dotted(key));
                }
                if !trusted {
                    for key in &gated.need_trust {
                        remove_at(&mut table, key);
                        held.untrusted.push(dotted(key));
                    }
                }
                if !held.refused.is_empty() || !held.untrusted.is_empty() {
                    tracing::info!(file = %path.display(), untrusted = ?held.untrusted, refused = ?held.refused, "repository configuration keys withheld");
                    withheld = Some(held);
                }
                layers.insert(0, (path, table, ignored));
            }
        }
    }
    let mut loaded = merge_layers(layers)?;
    loaded.withheld = withheld;
    Ok(loaded)
}

/// Loads `files` (highest priority first), skipping missing ones, every
/// key applied (no trust check: for files the user wrote).
pub fn load_files(files: &[PathBuf]) -> Result<Loaded, ConfigError> {
    let mut layers = Vec::new();
    // Lowest priority first, so an error names the user's file first.
    for path in files.iter().rev() {
        if let Some((_, table, ignored)) = read_config_file(path, None)? {
            layers.insert(0, (path.clone(), table, ignored));
        }
    }
    merge_layers(layers)
}

/// Merges parsed files, highest priority first.
fn merge_layers(layers: Vec<(PathBuf, toml::Table, Vec<String>)>) -> Result<Loaded, ConfigError> {
    let mut merged = toml::Table::new();
    let mut sources = Vec::new();
    let mut origins = BTreeMap::new();
    let mut ignored = Vec::new();
    // Lowest priority first, so later files override.
    for (path, table, dropped) in layers.into_iter().rev() {
        ignored.extend(dropped);
        record_origins(&table, "", &path, &mut origins);
        merge(&mut merged, table);
        sources.insert(0, path);
    }
    let config = Config::deserialize(merged).map_err(|e| ConfigError::Merged(e.to_string()))?;
    Ok(Loaded {
        config,
        sources,
        origins,
        ignored,
        withheld: None,
    })
}

/// Parses and validates one file on its own, so errors point into it.
pub fn parse_file(path: &Path, text: &str) -> Result<toml::Table, ConfigError> {
    let invalid = |e: toml::de::Error| {
        let (line, key) = match e.span() {
            Some(span) => locate(text, span.start),
            None => (1, None),
        };
        ConfigError::Invalid {
            path: path.to_path_buf(),
            line,
            message: match &key {
                Some(key) => format!("key `{key}`: {}", e.message()),
                None => e.message().to_string(),
            },
            key,
        }
    };
    let table: toml::Table = toml::from_str(text).map_err(invalid)?;
    toml::from_str::<Config>(text).map_err(invalid)?;
    Ok(table)
}

/// Line number (1-based) of byte `offset`, and the dotted key written on
/// that line, if any.
fn locate(text: &str, offset: usize) -> (usize, Option<String>) {
    let offset = offset.min(text.len());
    let line = text[..offset].matches('\n').count() + 1;
    let mut section = String::new();
    let mut key = None;
    for (i, raw) in text.lines().enumerate() {
        let trimmed = raw.trim();
        if i + 1 > line {
            break;
        }
        if trimmed.starts_with('[') {
            section = trimmed
                .trim_matches(|c| c == '[' || c == ']')
                .trim()
                .to_string();
            if i + 1 == line {
                key = Some(section.clone());
            }
        } else if i + 1 == line {
            if let Some((k, _)) = trimmed.split_once('=') {
                let k = k.trim().trim_matches('"');
                key = Some(if section.is_empty() {
                    k.to_string()
                } else {
                    format!("{section}.{k}")
                });
            }
        }
    }
    (line, key)
}

fn record_origins(
    table: &toml::Table,
    prefix: &str,
    path: &Path,
    out: &mut BTreeMap<String, PathBuf>,
) {
    for (key, value) in table {
        let dotted = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        match value {
            toml::Value::Table(inner) => record_origins(inner, &dotted, path, out),
            _ => {
                out.insert(dotted, path.to_path_buf());
            }
        }
    }
}

fn merge(into: &mut toml::Table, from: toml::Table) {
    for (key, value) in from {
        match (into.get_mut(&key), value) {
            (Some(toml::Value::Table(existing)), toml::Value::Table(new)) => merge(existing, new),
            (_, value) => {
                into.insert(key, value);
            }
        }
    }
}
