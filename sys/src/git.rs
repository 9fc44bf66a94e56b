//! The one way owt runs the `git` program ([`GitCli`]): for the steps
//! that change a working tree (merge, rebase, commit, so hooks and
//! attributes behave exactly as git's own), for what git does faster than
//! libgit2 (`status`, `merge-tree`) and for fetch and push over SSH.
//!
//! Invariant: argv only (no shell); standard input closed (or the bytes a
//! caller hands [`GitCli::output_with_input`]); no prompt for
//! credentials (`GIT_TERMINAL_PROMPT=0`) and no editor (`GIT_EDITOR=true`);
//! `GIT_DIR`, `GIT_WORK_TREE` and `GIT_INDEX_FILE` from owt's own
//! environment (set when owt runs inside a git hook) are removed so git
//! acts on the folder named. A caller adds what its step needs with
//! [`GitCli::env`] (an index of its own, an SSH command, an identity).
//! `scripts/check-layers` fails on a `Command::new("git")` anywhere else.

use std::ffi::{OsStr, OsString};
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// A `git` command that failed (or could not start): its arguments, the
/// folder it ran in and git's own words.
#[derive(Debug, thiserror::Error)]
#[error("`git {args}` in {dir} failed: {message}")]
pub struct GitCliError {
    pub args: String,
    pub dir: PathBuf,
    pub message: String,
}

/// One path `git status` lists ([`GitCli::status`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusEntry {
    /// Relative to the checkout's top, with `/`.
    pub path: String,
    /// Not in the index (`??`); otherwise tracked and changed.
    pub untracked: bool,
}

/// Runs `git` in one folder, with the environment the module doc says.
#[derive(Debug, Clone)]
pub struct GitCli {
    dir: PathBuf,
    env: Vec<(OsString, OsString)>,
}

impl GitCli {
    /// git run with `dir` as its working folder.
    pub fn new(dir: &Path) -> GitCli {
        GitCli {
            dir: dir.to_path_buf(),
            env: Vec::new(),
        }
    }

    /// Sets `name` to `value` in git's environment (after the removals,
    /// so `GIT_INDEX_FILE` may be set on purpose).
    pub fn env(mut self, name: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> GitCli {
        self.env
            .push((name.as_ref().to_os_string(), value.as_ref().to_os_string()));
        self
    }

    /// Runs git with `args`; returns stdout, or an error carrying stderr
    /// (git's own lines kept, indented under the first).
    pub fn run<I, S>(&self, args: I) -> Result<String, GitCliError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let args = collect(args);
        let out = self
            .output(&args)
            .map_err(|e| self.error(&args, format!("cannot run git: {e}")))?;
        if out.status.success() {
            return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
        }
        Err(self.error(&args, failure_message(&out)))
    }

    /// Runs git with `args` and returns what it printed and how it ended,
    /// whatever the exit status (for a command whose non-zero status
    /// means something, such as `merge-tree`'s 1 for conflicts).
    pub fn output<I, S>(&self, args: I) -> io::Result<Output>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.command(args).output()
    }

    /// git with `args`, the environment the module doc says, stdin closed.
    fn command<I, S>(&self, args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut command = Command::new("git");
        command
            .args(args)
            .current_dir(&self.dir)
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .env_remove("GIT_INDEX_FILE")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_EDITOR", "true")
            .stdin(Stdio::null());
        for (name, value) in &self.env {
            command.env(name, value);
        }
        command
    }

    /// [`Self::output`] with `input` as git's standard input (written from
    /// a thread of its own while git's output is read, so neither side
    /// waits on a full pipe): for a command that takes its work on stdin,
    /// such as `merge-tree --stdin`.
    pub fn output_with_input<I, S>(&self, args: I, input: Vec<u8>) -> io::Result<Output>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut command = self.command(args);
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn()?;
        let mut stdin = child.stdin.take().expect("stdin is piped");
        let writer = std::thread::spawn(move || {
            use std::io::Write as _;
            // git stops reading when it fails; its status says why.
            let _ = stdin.write_all(&input);
        });
        let output = child.wait_with_output();
        let _ = writer.join();
        output
    }

    /// What `git status` lists in this checkout, in git's order: tracked
    /// files whose index or working state differs from HEAD, and each
    /// untracked file (not its folder); ignored files and submodules left
    /// out, a rename as a deletion and an addition. Takes no lock
    /// (`GIT_OPTIONAL_LOCKS=0`: the index is not refreshed). The one
    /// reading of a checkout's status in owt (the guard's in-process walk
    /// is checked against it).
    pub fn status(&self) -> Result<Vec<StatusEntry>, GitCliError> {
        let args = [
            "status",
            "--porcelain=v1",
            "-z",
            "--untracked-files=all",
            "--no-renames",
            "--ignore-submodules=all",
        ];
        let out = self.clone().env("GIT_OPTIONAL_LOCKS", "0").run(args)?;
        Ok(out
            .split('\0')
            .filter(|entry| entry.len() > 3)
            .map(|entry| StatusEntry {
                untracked: entry.starts_with("??"),
                path: entry[3..].to_string(),
            })
            .collect())
    }

    /// An error for `args` run in this folder.
    fn error(&self, args: &[OsString], message: String) -> GitCliError {
        GitCliError {
            args: shown(args),
            dir: self.dir.clone(),
            message,
        }
    }
}

fn collect<I, S>(args: I) -> Vec<OsString>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    args.into_iter()
        .map(|a| a.as_ref().to_os_string())
        .collect()
}

fn shown(args: &[OsString]) -> String {
    args.iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

/// What a failed git said: stderr, then stdout, else its exit status; a
/// multi-line message keeps its lines, indented under the first.
fn failure_message(out: &Output) -> String {
    let mut message = String::from_utf8_lossy(&out.stderr).trim().to_string();
    let stdout = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !stdout.is_empty() {
        if !message.is_empty() {
            message.push_str("; ");
        }
        message.push_str(&stdout);
    }
    if message.is_empty() {
        message = out.status.to_string();
    }
    message.lines().collect::<Vec<_>>().join("\n    ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo() -> (tempfile::TempDir, GitCli) {
        let dir = tempfile::tempdir().unwrap();
        let git = GitCli::new(dir.path())
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1");
        git.run(["init", "-q", "-b", "main"]).unwrap();
        (dir, git)
    }

    #[test]
    fn runs_in_its_folder_and_returns_stdout() {
        let (dir, git) = repo();
        let top = git.run(["rev-parse", "--show-toplevel"]).unwrap();
        assert_eq!(
            Path::new(top.trim()).canonicalize().unwrap(),
            dir.path().canonicalize().unwrap()
        );
    }

    #[test]
    fn a_failure_names_the_command_the_folder_and_gits_words() {
        let (dir, git) = repo();
        let err = git
            .run(["rev-parse", "--verify", "no-such-ref"])
            .unwrap_err();
        assert_eq!(err.args, "rev-parse --verify no-such-ref");
        assert_eq!(err.dir, dir.path());
        assert!(err.message.contains("fatal"), "{}", err.message);
    }

    #[test]
    fn status_lists_changed_and_untracked_files_but_not_ignored_ones() {
        let (dir, git) = repo();
        let write = |path: &str| {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "x\n").unwrap();
        };
        write(".gitignore");
        write("kept.txt");
        git.run(["add", "."]).unwrap();
        git.clone()
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@t")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@t")
            .run(["commit", "-qm", "first"])
            .unwrap();
        std::fs::write(dir.path().join(".gitignore"), "*.log\n").unwrap();
        write("new/deep/file with space.txt");
        write("noise.log");
        let mut listed = git.status().unwrap();
        listed.sort_by(|a, b| a.path.cmp(&b.path));
        let entry = |path: &str, untracked| StatusEntry {
            path: path.into(),
            untracked,
        };
        assert_eq!(
            listed,
            [
                entry(".gitignore", false),
                entry("new/deep/file with space.txt", true)
            ]
        );
    }

    #[test]
    fn an_index_named_with_env_is_the_one_git_writes() {
        let (dir, git) = repo();
        let other = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "a\n").unwrap();
        let index = other.path().join("index");
        // GIT_INDEX_FILE is removed from owt's environment, then set
        // through env(): that one is used.
        let out = git
            .clone()
            .env("GIT_INDEX_FILE", &index)
            .output(["add", "a.txt"])
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(index.is_file(), "the index named by env() was written");
        assert!(
            !dir.path().join(".git/index").exists(),
            "the repository's own index untouched"
        );
    }
}
