//! The seed's (open-orchestrator's) `.worktreerc` format, translated into
//! owt's.

use std::path::Path;

/// The seed's (open-orchestrator's) repository config files, read when the
/// repository has no `.owt.toml`.
pub const SEED_FILES: &[&str] = &[".worktreerc", ".worktreerc.toml"];

/// Whether `path` is in the seed's format.
pub(super) fn is_seed_file(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| SEED_FILES.contains(&n))
}

/// Translates a seed-format table (`[worktree]`, `[tmux] ai_tool`,
/// `[environment]`, `[tools.*]`) into owt's; returns the keys it dropped.
pub fn translate_seed(seed: toml::Table) -> (toml::Table, Vec<String>) {
    let mut out = toml::Table::new();
    let mut ignored = Vec::new();
    for (section, value) in seed {
        let toml::Value::Table(table) = value else {
            ignored.push(section);
            continue;
        };
        match section.as_str() {
            "worktree" => {
                let mut worktree = toml::Table::new();
                for (k, v) in table {
                    match k.as_str() {
                        "base_directory" | "auto_cleanup_days" => {
                            worktree.insert(k, v);
                        }
                        _ => ignored.push(format!("worktree.{k}")),
                    }
                }
                out.insert("worktree".into(), toml::Value::Table(worktree));
            }
            "tmux" => {
                for (k, v) in table {
                    if k == "ai_tool" {
                        let mut agent = toml::Table::new();
                        agent.insert("default_tool".into(), v);
                        out.insert("agent".into(), toml::Value::Table(agent));
                    } else {
                        ignored.push(format!("tmux.{k}"));
                    }
                }
            }
            "environment" => {
                let mut env = toml::Table::new();
                for (k, v) in table {
                    match k.as_str() {
                        "auto_install_deps" | "copy_env_file" => {
                            env.insert(k, v);
                        }
                        _ => ignored.push(format!("environment.{k}")),
                    }
                }
                out.insert("environment".into(), toml::Value::Table(env));
            }
            "tools" => {
                out.insert("tools".into(), toml::Value::Table(table));
            }
            other => ignored.push(other.to_string()),
        }
    }
    (out, ignored)
}
