//! Installing dependencies in a new worktree (`[environment]
//! auto_install_deps = true`): detect the project's kind from the files it
//! has and run its package manager. A failure is a warning, never an abort.
//!
//! Invariant: commands are argv vectors (no shell), run in the worktree.

use std::path::Path;
use std::process::{Command, Stdio};

/// Folders the installs below create inside the project (removed without
/// a copy when the session is deleted, if owt created them).
pub const INSTALL_DIRS: &[&str] = &["node_modules", ".venv", "vendor"];

/// One install step: what was detected and the command that installs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub kind: &'static str,
    pub argv: Vec<String>,
}

fn argv(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

/// The install steps for the project in `dir` (pure: looks at file names only).
pub fn detect(dir: &Path) -> Vec<Step> {
    let has = |f: &str| dir.join(f).exists();
    let mut steps = Vec::new();
    // Python.
    if has("uv.lock") {
        steps.push(Step {
            kind: "python (uv)",
            argv: argv(&["uv", "sync"]),
        });
    } else if has("poetry.lock") {
        steps.push(Step {
            kind: "python (poetry)",
            argv: argv(&["poetry", "install"]),
        });
    } else if has("requirements.txt") {
        steps.push(Step {
            kind: "python (pip)",
            argv: argv(&["python3", "-m", "venv", ".venv"]),
        });
        steps.push(Step {
            kind: "python (pip)",
            argv: argv(&[".venv/bin/pip", "install", "-q", "-r", "requirements.txt"]),
        });
    }
    // Node.
    if has("bun.lockb") || has("bun.lock") {
        steps.push(Step {
            kind: "node (bun)",
            argv: argv(&["bun", "install"]),
        });
    } else if has("pnpm-lock.yaml") {
        steps.push(Step {
            kind: "node (pnpm)",
            argv: argv(&["pnpm", "install", "--frozen-lockfile"]),
        });
    } else if has("yarn.lock") {
        steps.push(Step {
            kind: "node (yarn)",
            argv: argv(&["yarn", "install", "--frozen-lockfile"]),
        });
    } else if has("package-lock.json") {
        steps.push(Step {
            kind: "node (npm)",
            argv: argv(&["npm", "ci", "--no-audit", "--no-fund"]),
        });
    } else if has("package.json") {
        steps.push(Step {
            kind: "node (npm)",
            argv: argv(&[
                "npm",
                "install",
                "--no-audit",
                "--no-fund",
                "--no-package-lock",
            ]),
        });
    }
    if has("Cargo.toml") {
        steps.push(Step {
            kind: "rust (cargo)",
            argv: argv(&["cargo", "fetch"]),
        });
    }
    if has("go.mod") {
        steps.push(Step {
            kind: "go",
            argv: argv(&["go", "mod", "download"]),
        });
    }
    if has("composer.json") {
        steps.push(Step {
            kind: "php (composer)",
            argv: argv(&["composer", "install", "--no-interaction"]),
        });
    }
    steps
}

/// Runs the install steps in `dir`; returns warnings.
pub fn install(dir: &Path, progress: &mut dyn FnMut(&str)) -> Vec<String> {
    let mut warnings = Vec::new();
    for step in detect(dir) {
        progress(&format!(
            "Installing dependencies: {} ({})",
            step.kind,
            step.argv.join(" ")
        ));
        let status = Command::new(&step.argv[0])
            .args(&step.argv[1..])
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output();
        match status {
            Ok(out) if out.status.success() => {}
            Ok(out) => {
                let err = String::from_utf8_lossy(&out.stderr);
                let last = err
                    .lines()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or("")
                    .trim();
                warnings.push(format!(
                    "installing {} dependencies failed ({}): {last}",
                    step.kind, out.status
                ));
                break;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                warnings.push(format!(
                    "{} dependencies not installed: `{}` is not installed",
                    step.kind, step.argv[0]
                ));
            }
            Err(e) => warnings.push(format!("running {} failed: {e}", step.argv[0])),
        }
    }
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_by_lock_file() {
        let dir = tempfile::tempdir().unwrap();
        for f in [
            "package.json",
            "package-lock.json",
            "requirements.txt",
            "Cargo.toml",
            "go.mod",
        ] {
            std::fs::write(dir.path().join(f), "").unwrap();
        }
        let kinds: Vec<&str> = detect(dir.path()).iter().map(|s| s.kind).collect();
        assert_eq!(
            kinds,
            vec![
                "python (pip)",
                "python (pip)",
                "node (npm)",
                "rust (cargo)",
                "go"
            ]
        );
        assert_eq!(
            detect(dir.path())[2].argv[1],
            "ci",
            "a lock file means a reproducible install"
        );
        std::fs::write(dir.path().join("pnpm-lock.yaml"), "").unwrap();
        assert!(detect(dir.path()).iter().any(|s| s.kind == "node (pnpm)"));
    }
}
