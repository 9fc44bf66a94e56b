//! What other processes are doing with a folder: which have their working
//! directory inside it (a shell, an editor, an agent), and when each live
//! `git` process started (so a lock file older than all of them is stale).
//!
//! Invariant: reads `/proc` (through `platform::procs`) only; never
//! signals a process.

use std::path::{Path, PathBuf};

use crate::platform::procs;

/// A process seen in `/proc`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proc {
    pub pid: u32,
    /// Its command name (`/proc/<pid>/comm`).
    pub name: String,
    pub cwd: PathBuf,
}

fn comm(pid: u32) -> String {
    procs::command_name(pid).unwrap_or_default()
}

/// Processes (other than this one) whose working directory is `dir` or
/// inside it. Processes of other users whose cwd cannot be read are not
/// seen.
pub fn with_cwd_inside(dir: &Path) -> Vec<Proc> {
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let me = std::process::id();
    let mut out = Vec::new();
    for pid in procs::pids() {
        if pid == me {
            continue;
        }
        let Some(cwd) = procs::working_folder(pid) else {
            continue;
        };
        if cwd.starts_with(&dir) {
            out.push(Proc {
                pid,
                name: comm(pid),
                cwd,
            });
        }
    }
    out
}

/// `pid 12 (bash), pid 40 (vim)`.
pub fn describe(procs: &[Proc]) -> String {
    procs
        .iter()
        .map(|p| format!("pid {} ({})", p.pid, crate::printable::line(&p.name)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// When the oldest live `git` process working in one of `dirs` (its
/// working directory inside one of them) started (Unix ms), if any runs.
/// Git processes of other repositories cannot hold this one's locks.
pub fn oldest_git_start_ms(dirs: &[PathBuf]) -> Option<i64> {
    let ticks = i64::try_from(crate::platform::process::clock_ticks_per_second())
        .unwrap_or(100)
        .max(1);
    let boot_ms = procs::boot_time_ms()?;
    procs::pids()
        .into_iter()
        .filter(|pid| comm(*pid) == "git" || comm(*pid).starts_with("git-"))
        .filter(|pid| {
            procs::working_folder(*pid).is_some_and(|cwd| dirs.iter().any(|d| cwd.starts_with(d)))
        })
        .filter_map(|pid| {
            let start = i64::try_from(procs::start_ticks(pid)?).ok()?;
            Some(boot_ms + start * 1000 / ticks)
        })
        .min()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_a_process_by_its_working_directory() {
        let dir = tempfile::tempdir().unwrap();
        let inside = dir.path().join("sub");
        std::fs::create_dir(&inside).unwrap();
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .current_dir(&inside)
            .spawn()
            .unwrap();
        let found = with_cwd_inside(dir.path());
        let _ = child.kill();
        let _ = child.wait();
        assert!(
            found
                .iter()
                .any(|p| p.pid == child.id() && p.name == "sleep"),
            "{found:?}"
        );
    }
}
