//! Running a forge's CLI (`gh`, `glab`) and `git push`: argv only, no
//! shell, no prompts, a timeout, and errors sorted into what a person can
//! act on (not logged in, rate-limited, network down, …).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// What went wrong talking to a forge, sorted by what to do about it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ForgeError {
    #[error("{0}")]
    NoRemote(String),
    #[error("{0}")]
    NoCli(String),
    #[error("{cli} is not logged in to {host}: {detail}")]
    Unauthenticated {
        cli: String,
        host: String,
        detail: String,
    },
    #[error("rate-limited by {host}{}: {detail}", reset_at.map(|r| format!(" until {}", clock(r))).unwrap_or_default())]
    RateLimited {
        host: String,
        /// Unix seconds when the limit resets, when known.
        reset_at: Option<i64>,
        detail: String,
    },
    #[error("cannot reach {host} (network down?): {detail}")]
    Network { host: String, detail: String },
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Rejected(String),
    #[error("{0}")]
    Failed(String),
}

/// `14:05:09 UTC` of Unix seconds (for messages).
pub fn clock(unix_s: i64) -> String {
    let s = unix_s.rem_euclid(86_400);
    format!("{:02}:{:02}:{:02} UTC", s / 3600, (s / 60) % 60, s % 60)
}

/// What a command printed.
#[derive(Debug, Clone)]
pub struct Output {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    pub fn ok(&self) -> bool {
        self.code == Some(0)
    }
}

/// How long one forge call may take.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(90);

/// Runs `program args` in `cwd` with `env` added (and prompts, colours and
/// update checks off), `stdin` as its input.
pub fn run(
    program: &Path,
    args: &[String],
    cwd: Option<&Path>,
    env: &[(String, String)],
    stdin: Option<&str>,
    timeout: Duration,
) -> Result<Output, String> {
    let mut child = quiet_command(program, args, cwd, env, stdin.is_some())
        .spawn()
        .map_err(|e| format!("starting {}: {e}", program.display()))?;
    if let (Some(text), Some(mut input)) = (stdin, child.stdin.take()) {
        let text = text.to_string();
        std::thread::spawn(move || {
            let _ = input.write_all(text.as_bytes());
        });
    }
    let stdout = read_all(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let stderr = read_all(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let status = wait_or_kill(&mut child, program, Instant::now() + timeout)?;
    let stdout = stdout.join().unwrap_or_default();
    let stderr = stderr.join().unwrap_or_default();
    match status {
        Some(status) => Ok(Output {
            code: status.code(),
            stdout,
            stderr,
        }),
        None => Err(format!(
            "{} did not answer within {} s",
            program.display(),
            timeout.as_secs()
        )),
    }
}

/// `program args` in its own process group, told never to prompt, page,
/// color or notify (whatever the forge CLI and git read for that).
fn quiet_command(
    program: &Path,
    args: &[String],
    cwd: Option<&Path>,
    env: &[(String, String)],
    piped_stdin: bool,
) -> Command {
    let mut cmd = Command::new(program);
    cmd.args(args)
        .stdin(if piped_stdin {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env("GH_PROMPT_DISABLED", "1")
        .env("GH_NO_UPDATE_NOTIFIER", "1")
        .env("GH_SPINNER_DISABLED", "1")
        .env("NO_PROMPT", "1")
        .env("NO_COLOR", "1")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GCM_INTERACTIVE", "never");
    if let Some(dir) = cwd {
        cmd.current_dir(dir);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.process_group(0);
    cmd
}

/// Reads `pipe` to its end (at most 16 MiB of a forge's answer) on a
/// thread.
fn read_all(pipe: Option<Box<dyn Read + Send>>) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut out = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.by_ref().take(16 << 20).read_to_end(&mut out);
        }
        String::from_utf8_lossy(&out).into_owned()
    })
}

/// Waits for `child` until `deadline`; then kills its process group and
/// returns `None`.
fn wait_or_kill(
    child: &mut Child,
    program: &Path,
    deadline: Instant,
) -> Result<Option<ExitStatus>, String> {
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Ok(Some(status)),
            Ok(None) if Instant::now() >= deadline => {
                // The process group this command leads.
                crate::platform::process::signal_group(
                    child.id(),
                    crate::platform::process::Signal::KILL,
                );
                let _ = child.wait();
                return Ok(None);
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(format!("waiting for {}: {e}", program.display())),
        }
    }
}

use std::os::unix::process::CommandExt;

/// `name` on `PATH` (or as a path), if it is there.
pub fn find_program(name: &str) -> Option<PathBuf> {
    let path = Path::new(name);
    if path.components().count() > 1 {
        return path.is_file().then(|| path.to_path_buf());
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(name))
            .find(|candidate| {
                use std::os::unix::fs::PermissionsExt;
                candidate
                    .metadata()
                    .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            })
    })
}

/// The first lines of `text` that say something (for messages).
pub fn gist(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .take(3)
        .collect();
    crate::feedback::excerpt::clean(&lines.join(" / "))
}

/// Sorts a failed forge CLI call by its words (gh and glab print the
/// forge's answer, or the transport's error, on stderr).
pub fn classify(cli: &str, host: &str, out: &Output) -> ForgeError {
    let text = format!("{}\n{}", out.stderr, out.stdout);
    let lower = text.to_lowercase();
    let detail = gist(&out.stderr).chars().take(300).collect::<String>();
    let detail = if detail.is_empty() {
        gist(&out.stdout)
    } else {
        detail
    };
    if lower.contains("rate limit") || lower.contains("http 429") {
        return ForgeError::RateLimited {
            host: host.into(),
            reset_at: None,
            detail,
        };
    }
    if lower.contains("http 401")
        || lower.contains("bad credentials")
        || lower.contains("auth login")
        || lower.contains("not logged in")
        || lower.contains("authentication")
        || out.code == Some(4)
    {
        return ForgeError::Unauthenticated {
            cli: cli.into(),
            host: host.into(),
            detail,
        };
    }
    if is_network(&lower) {
        return ForgeError::Network {
            host: host.into(),
            detail,
        };
    }
    if lower.contains("could not resolve to a pullrequest") || lower.contains("404 not found") {
        return ForgeError::NotFound(detail);
    }
    ForgeError::Failed(format!("{cli} failed: {detail}"))
}

fn is_network(lower: &str) -> bool {
    [
        "dial tcp",
        "connection refused",
        "no such host",
        "could not resolve host",
        "i/o timeout",
        "network is unreachable",
        "tls handshake timeout",
        "connection reset",
        "error connecting to",
        "unable to access",
        "timed out",
        "did not answer within",
        "could not read from remote repository",
    ]
    .iter()
    .any(|needle| lower.contains(needle))
}

/// Sorts a failed `git push`.
pub fn classify_push(remote: &str, out: &Output) -> ForgeError {
    let lower = out.stderr.to_lowercase();
    let detail = gist(&out.stderr);
    if lower.contains("[rejected]")
        || lower.contains("non-fast-forward")
        || lower.contains("fetch first")
    {
        return ForgeError::Rejected(format!(
            "the remote branch has commits this branch does not (someone pushed to it, or the history was rewritten); nothing was forced: {detail}"
        ));
    }
    if lower.contains("authentication failed")
        || lower.contains("could not read username")
        || lower.contains("permission denied")
        || lower.contains("http 401")
        || lower.contains("403")
    {
        return ForgeError::Unauthenticated {
            cli: "git".into(),
            host: remote.into(),
            detail,
        };
    }
    if is_network(&lower) {
        return ForgeError::Network {
            host: remote.into(),
            detail,
        };
    }
    ForgeError::Failed(format!("git push to {remote} failed: {detail}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(code: i32, stderr: &str) -> Output {
        Output {
            code: Some(code),
            stdout: String::new(),
            stderr: stderr.into(),
        }
    }

    /// The words real `gh` 2.23 printed against the test forge.
    #[test]
    fn gh_failures_are_sorted_by_what_to_do() {
        let host = "127.0.0.1:9";
        assert!(matches!(
            classify("gh", host, &out(1, "HTTP 403: API rate limit exceeded for user ID 1. (https://127.0.0.1:9/api/graphql)")),
            ForgeError::RateLimited { .. }
        ));
        assert!(matches!(
            classify("gh", host, &out(1, "HTTP 401: Bad credentials (https://127.0.0.1:9/api/graphql)\nTry authenticating with:  gh auth login")),
            ForgeError::Unauthenticated { .. }
        ));
        assert!(matches!(
            classify(
                "gh",
                host,
                &out(
                    4,
                    "To get started with GitHub CLI, please run:  gh auth login"
                )
            ),
            ForgeError::Unauthenticated { .. }
        ));
        assert!(matches!(
            classify("gh", host, &out(1, "Post \"https://127.0.0.1:1/api/graphql\": dial tcp 127.0.0.1:1: connect: connection refused")),
            ForgeError::Network { .. }
        ));
        assert!(matches!(
            classify("gh", host, &out(1, "GraphQL: something else")),
            ForgeError::Failed(_)
        ));
    }

    #[test]
    fn push_failures_are_sorted_too() {
        assert!(matches!(
            classify_push(
                "origin",
                &out(1, " ! [rejected]        owt/x -> owt/x (fetch first)")
            ),
            ForgeError::Rejected(_)
        ));
        assert!(matches!(
            classify_push(
                "origin",
                &out(
                    128,
                    "fatal: unable to access 'https://x/': Could not resolve host: x"
                )
            ),
            ForgeError::Network { .. }
        ));
    }

    #[test]
    fn a_call_that_hangs_is_killed_at_its_timeout() {
        let started = Instant::now();
        let err = run(
            Path::new("sleep"),
            &["30".into()],
            None,
            &[],
            None,
            Duration::from_millis(300),
        )
        .unwrap_err();
        assert!(err.contains("did not answer"), "{err}");
        assert!(started.elapsed() < Duration::from_secs(10));
    }
}
