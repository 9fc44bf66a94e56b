//! `owt trust`: which of a repository's own files may make owt run
//! programs, set an agent's environment or write outside the repository.
//!
//! A repository is not trusted until the user says so, like direnv's
//! `allow` and mise's `trust`. The files that can do those things are the
//! repository's configuration (`.owt.toml`, or the seed's `.worktreerc`)
//! and `.owt/setup.sh`. `owt trust` records each file's path and the
//! SHA-256 of its content in the store; any other content is untrusted
//! again. Until then owt ignores the configuration's gated keys
//! ([`crate::config::gated_keys`]) and does not run the setup script, and
//! says so ([`notice`]). A repository can never redefine a built-in agent.

use std::path::{Path, PathBuf};

use owt_protocol::{TrustFile, TrustKey, TrustOutput};

pub use crate::context::{sha256_hex, StoreTrust};

use super::Context;
use crate::config::{self, Trust};
use crate::store::Store;

/// The repository's setup script.
pub fn setup_script_path(repo_root: &Path) -> PathBuf {
    repo_root.join(".owt/setup.sh")
}

/// The repository's setup script and its bytes when the user trusts them.
pub fn trusted_setup_script(ctx: &Context) -> Option<(PathBuf, Vec<u8>)> {
    let root = ctx.repo.main_root();
    let path = setup_script_path(root);
    let bytes = read_setup_script(root, &path).ok()??;
    StoreTrust(&ctx.store)
        .trusts(&path, &bytes)
        .then_some((path, bytes))
}

/// The repository's setup script as `sh` would run it: a regular file
/// inside the repository, at most 1 MiB; `None` when there is none.
fn read_setup_script(
    root: &Path,
    script: &Path,
) -> Result<Option<Vec<u8>>, crate::safe_fs::SafeFsError> {
    crate::safe_fs::read_regular(script, crate::safe_fs::CONFIG_LIMIT, Some(root))
}

/// The state of one file: `trusted`, `untrusted`, `changed`, or
/// `not-needed` when `needs_trust` is false.
fn state_of(store: &Store, path: &Path, bytes: &[u8], needs_trust: bool) -> (String, Option<i64>) {
    let record = store.trusted_file(path).ok().flatten();
    let at = record.as_ref().map(|(_, at)| *at);
    let state = match record {
        _ if !needs_trust => "not-needed",
        Some((sha, _)) if sha == sha256_hex(bytes) => "trusted",
        Some(_) => "changed",
        None => "untrusted",
    };
    (state.to_string(), at)
}

/// What each of the repository's trust files would make owt do.
pub fn report(ctx: &Context, action: &str) -> anyhow::Result<TrustOutput> {
    let root = ctx.repo.main_root();
    let mut files = Vec::new();
    if let Some(path) = config::repo_config_file(root) {
        if let Some((bytes, table, _)) = config::read_config_file(&path, Some(root))? {
            let gated = config::gated_keys(&table, root);
            let (state, trusted_at) =
                state_of(&ctx.store, &path, &bytes, !gated.need_trust.is_empty());
            let keys: Vec<TrustKey> = gated
                .need_trust
                .iter()
                .map(|key| TrustKey {
                    key: config::dotted(key),
                    value: config::value_at(&table, key)
                        .map(show_value)
                        .unwrap_or_default(),
                })
                .collect();
            let runs = runs_of(ctx, &table, &gated);
            files.push(TrustFile {
                path: path.display().to_string(),
                kind: "config".into(),
                sha256: sha256_hex(&bytes),
                state,
                trusted_at,
                keys,
                refused: gated.refused.iter().map(|k| config::dotted(k)).collect(),
                runs,
                script: None,
            });
        }
    }
    let script = setup_script_path(root);
    if let Some(bytes) = read_setup_script(root, &script)? {
        let (state, trusted_at) = state_of(&ctx.store, &script, &bytes, true);
        files.push(TrustFile {
            path: script.display().to_string(),
            kind: "setup-script".into(),
            sha256: sha256_hex(&bytes),
            state,
            trusted_at,
            keys: Vec::new(),
            refused: Vec::new(),
            runs: vec![format!(
                "sh -c <the script below> {} (in each new worktree, with OWT_WORKTREE, OWT_REPO_PATH and OWT_SESSION set)",
                script.display()
            )],
            script: Some(String::from_utf8_lossy(&bytes).into_owned()),
        });
    }
    Ok(TrustOutput {
        repository: root.display().to_string(),
        action: action.into(),
        files,
    })
}

/// A TOML value on one line (tables inline).
fn show_value(value: &toml::Value) -> String {
    match value {
        toml::Value::Table(table) => {
            let fields: Vec<String> = table
                .iter()
                .map(|(k, v)| {
                    format!(
                        "{} = {}",
                        config::dotted(std::slice::from_ref(k)),
                        show_value(v)
                    )
                })
                .collect();
            format!("{{ {} }}", fields.join(", "))
        }
        other => other.to_string(),
    }
}

/// The programs a configuration's gated keys would run.
fn runs_of(ctx: &Context, table: &toml::Table, gated: &config::Gated) -> Vec<String> {
    let mut runs = Vec::new();
    for key in &gated.need_trust {
        match key.iter().map(String::as_str).collect::<Vec<_>>()[..] {
            ["tools", name] => {
                let Some(tool) = config::value_at(table, key)
                    .cloned()
                    .and_then(|v| v.try_into::<config::ToolConfig>().ok())
                else {
                    continue;
                };
                let template = tool.command_template.as_deref().unwrap_or("{binary}");
                let mut line = format!(
                    "agent `{name}`: {} (binary = {:?}, found on PATH, in known_paths, or relative to the folder owt runs in)",
                    template.replace("{binary}", &tool.binary),
                    tool.binary
                );
                if !tool.env.is_empty() {
                    line.push_str(&format!(
                        " with environment {}",
                        tool.env
                            .iter()
                            .map(|(k, v)| format!("{k}={v}"))
                            .collect::<Vec<_>>()
                            .join(" ")
                    ));
                }
                runs.push(line);
            }
            ["environment", "auto_install_deps"] => {
                let steps = super::deps::detect(ctx.repo.main_root());
                if steps.is_empty() {
                    runs.push("dependency installs in each new worktree (none detected for this repository now)".into());
                }
                for step in steps {
                    runs.push(format!(
                        "{} in each new worktree (runs the project's own install scripts)",
                        step.argv.join(" ")
                    ));
                }
            }
            ["agent", "env", name] => {
                if let Some(value) = config::value_at(table, key) {
                    runs.push(format!(
                        "every agent with {name}={}",
                        value
                            .as_str()
                            .map(str::to_string)
                            .unwrap_or_else(|| value.to_string())
                    ));
                }
            }
            ["checks", "command"] | ["pr", "cli"] => {
                if let Some(value) = config::value_at(table, key).and_then(|v| v.as_str()) {
                    runs.push(if key[0] == "checks" {
                        format!("checks in each session's worktree: {value}")
                    } else {
                        format!("the forge CLI for pull requests: {value}")
                    });
                }
            }
            ["pr", "auto"] => {
                runs.push(
                    "git push of a session's branch, and a pull request, when its checks pass"
                        .into(),
                );
            }
            _ => {}
        }
    }
    runs
}

/// `owt trust`: trusts the current content of every file that needs it.
pub fn trust(ctx: &Context) -> anyhow::Result<TrustOutput> {
    refuse_inside_an_agent()?;
    let mut out = report(ctx, "trusted")?;
    for file in &mut out.files {
        if file.state == "not-needed" {
            continue;
        }
        ctx.store.trust_file(Path::new(&file.path), &file.sha256)?;
        tracing::info!(file = %file.path, sha256 = %file.sha256, "trusted");
        file.state = "trusted".into();
        file.trusted_at = Some(crate::store::now_ms());
    }
    Ok(out)
}

/// `owt trust --revoke`: forgets the trust in the repository's files.
pub fn revoke(ctx: &Context) -> anyhow::Result<TrustOutput> {
    let mut out = report(ctx, "revoked")?;
    for file in &mut out.files {
        ctx.store.revoke_file(Path::new(&file.path))?;
        if file.state != "not-needed" {
            file.state = "untrusted".into();
        }
        file.trusted_at = None;
    }
    Ok(out)
}

/// Agents run with `OWT_SESSION` set: trust is the human's decision.
/// (Not a security boundary, an agent can unset it; it stops the honest
/// mistake of an agent trusting the files it just edited.)
fn refuse_inside_an_agent() -> anyhow::Result<()> {
    if std::env::var_os("OWT_SESSION").is_some_and(|v| !v.is_empty()) {
        anyhow::bail!(
            "owt trust runs inside an agent's session (OWT_SESSION is set); trusting a repository is for you to decide: run it in your own terminal"
        );
    }
    Ok(())
}

/// What owt ignored of the repository's files, and how to trust them;
/// `None` when nothing was ignored.
pub fn notice(ctx: &Context) -> Option<String> {
    let mut parts = Vec::new();
    let mut untrusted = false;
    if let Some(withheld) = &ctx.config.withheld {
        if !withheld.untrusted.is_empty() {
            untrusted = true;
            parts.push(format!(
                "{} is not trusted{}, so owt ignored its {}",
                withheld.file.display(),
                changed_note(&ctx.store, &withheld.file),
                withheld.untrusted.join(", ")
            ));
        }
        if !withheld.refused.is_empty() {
            parts.push(format!(
                "{} may not redefine built-in agents, so owt ignored its {} (even when trusted; declare your own agent under another name, or in your own config)",
                withheld.file.display(),
                withheld.refused.join(", ")
            ));
        }
    }
    let script = setup_script_path(ctx.repo.main_root());
    if script.is_file() && trusted_setup_script(ctx).is_none() {
        untrusted = true;
        parts.push(format!(
            "{} is not trusted{}, so owt does not run it",
            script.display(),
            changed_note(&ctx.store, &script)
        ));
    }
    if parts.is_empty() {
        return None;
    }
    let mut text = parts.join("; ");
    if untrusted {
        text.push_str(
            "; review what they would run with `owt trust --show`, then trust them with `owt trust`",
        );
    }
    Some(text)
}

fn changed_note(store: &Store, path: &Path) -> String {
    match store.trusted_file(path) {
        Ok(Some(_)) => " (it changed since you trusted it)".into(),
        _ => String::new(),
    }
}

/// Whether some of the repository's files are ignored until trusted.
pub fn needs_trust(ctx: &Context) -> bool {
    ctx.config
        .withheld
        .as_ref()
        .is_some_and(|w| !w.untrusted.is_empty())
        || (setup_script_path(ctx.repo.main_root()).is_file()
            && trusted_setup_script(ctx).is_none())
}

/// The error for an agent that only an untrusted repository file declares.
pub fn untrusted_agent(ctx: &Context, name: &str) -> Option<String> {
    let withheld = ctx.config.withheld.as_ref()?;
    let key = config::dotted(&["tools".to_string(), name.to_string()]);
    withheld.untrusted.contains(&key).then(|| {
        format!(
            "agent `{name}` is declared in {} ([{key}]), which you have not trusted{}; review what it runs with `owt trust --show`, then trust it with `owt trust`",
            withheld.file.display(),
            changed_note(&ctx.store, &withheld.file)
        )
    })
}
