//! Running things on a remote: the `ssh` command line (one ControlMaster
//! connection per host, shared by the bridge, one-shot commands and `git
//! fetch`), quoting for the remote's shell, and the remote owt's `--json`
//! answers.
//!
//! Invariants: `ssh` is the user's own (`$OWT_SSH_COMMAND`, else `ssh`,
//! with `~/.ssh/config`, agents and ProxyJump as they are); it never asks
//! for a password (`BatchMode`); every word of a remote command is quoted
//! for a POSIX shell, so task text reaches the remote owt verbatim.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use super::{Remote, RemoteError};

/// How long a one-shot remote command may take by default.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(120);
/// How long a connection may take to open.
const CONNECT_TIMEOUT_S: u32 = 10;

/// `ssh` for one remote.
#[derive(Debug, Clone)]
pub struct Ssh {
    pub remote: Remote,
    program: Vec<String>,
    control_path: PathBuf,
}

/// `word` quoted for a POSIX shell (as is when it needs no quoting).
pub fn quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_./:=@%+,-".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// A remote path quoted for its shell, leaving a leading `~/` to it.
pub fn quote_path(path: &str) -> String {
    if path == "~" {
        "~".into()
    } else if let Some(rest) = path.strip_prefix("~/") {
        format!("~/{}", quote(rest))
    } else {
        quote(path)
    }
}

impl Ssh {
    /// `ssh` for `remote`, its ControlMaster socket under `$OWT_HOME/run`.
    pub fn new(home: &Path, remote: &Remote) -> Ssh {
        let program = std::env::var("OWT_SSH_COMMAND")
            .ok()
            .and_then(|cmd| shlex::split(&cmd))
            .filter(|words| !words.is_empty())
            .unwrap_or_else(|| vec!["ssh".to_string()]);
        // A short name: unix socket paths are limited to ~100 bytes and
        // ssh adds a random suffix while it binds.
        use sha2::Digest;
        let digest = sha2::Sha256::digest(remote.host.as_bytes());
        let hex: String = digest[..6].iter().map(|b| format!("{b:02x}")).collect();
        Ssh {
            remote: remote.clone(),
            program,
            control_path: home.join("run").join(format!("c-{hex}")),
        }
    }

    /// The options every `ssh` of owt gets.
    fn options(&self) -> Vec<String> {
        [
            "BatchMode=yes".to_string(),
            "ControlMaster=auto".to_string(),
            format!("ControlPath={}", self.control_path.display()),
            "ControlPersist=600".to_string(),
            format!("ConnectTimeout={CONNECT_TIMEOUT_S}"),
            "ServerAliveInterval=5".to_string(),
            "ServerAliveCountMax=3".to_string(),
        ]
        .into_iter()
        .flat_map(|o| ["-o".to_string(), o])
        .collect()
    }

    fn base(&self) -> Command {
        let mut cmd = Command::new(&self.program[0]);
        cmd.args(&self.program[1..]).args(self.options());
        cmd
    }

    /// `ssh -T HOST SCRIPT` (the script runs in the remote's shell).
    pub fn command(&self, script: &str) -> Command {
        let mut cmd = self.base();
        cmd.arg("-T").arg("--").arg(&self.remote.host).arg(script);
        cmd
    }

    /// Makes sure the shared connection is up: starts the master (in the
    /// background, detached from every pipe of ours) when none answers.
    pub fn ensure_master(&self) -> Result<(), RemoteError> {
        if let Some(dir) = self.control_path.parent() {
            use std::os::unix::fs::PermissionsExt;
            std::fs::create_dir_all(dir)
                .and_then(|()| {
                    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
                })
                .map_err(|e| RemoteError::Io(format!("creating {}: {e}", dir.display())))?;
        }
        let mut check = self.base();
        check
            .args(["-O", "check", "--", &self.remote.host])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if check.status().is_ok_and(|s| s.success()) {
            return Ok(());
        }
        let mut start = self.base();
        start
            .args(["-M", "-N", "-f", "--", &self.remote.host])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let out = run_with_timeout(
            start,
            None,
            Duration::from_secs(u64::from(CONNECT_TIMEOUT_S) + 20),
        )
        .map_err(|e| self.unreachable(&e))?;
        if !out.status.success() {
            return Err(self.unreachable(&last_line(&out.stderr)));
        }
        Ok(())
    }

    /// Ends the shared connection (`ssh -O exit`), if one runs.
    pub fn stop_master(&self) {
        let mut exit = self.base();
        exit.args(["-O", "exit", "--", &self.remote.host])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let _ = exit.status();
    }

    fn unreachable(&self, message: &str) -> RemoteError {
        RemoteError::Unreachable {
            remote: self.remote.name.clone(),
            message: if message.is_empty() {
                "ssh failed without saying why".into()
            } else {
                message.to_string()
            },
        }
    }

    /// The value of `GIT_SSH_COMMAND` for git to ride the same connection.
    pub fn git_ssh_command(&self) -> String {
        self.program
            .iter()
            .cloned()
            .chain(self.options())
            .map(|w| quote(&w))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The git URL of a repository on the remote (absolute path there).
    pub fn git_url(&self, repository: &str) -> String {
        let host = &self.remote.host;
        let path = if repository.starts_with('/') {
            repository.to_string()
        } else {
            format!("/{repository}")
        };
        match host.strip_prefix("ssh://") {
            Some(rest) => format!("ssh://{rest}{path}"),
            None => format!("ssh://{host}{path}"),
        }
    }

    /// The remote shell's command line running its owt in the clone:
    /// `PATH="$HOME/.local/bin:$PATH" exec OWT -C PATH ARGS…`.
    pub fn owt_script(&self, args: &[String]) -> String {
        let mut script = format!(
            "PATH=\"$HOME/.local/bin:$PATH\" exec {} -C {}",
            quote_path(&self.remote.owt),
            quote_path(&self.remote.path)
        );
        for arg in args {
            script.push(' ');
            script.push_str(&quote(arg));
        }
        script
    }

    /// Runs `script` on the remote (with `stdin` when given), waiting at
    /// most `timeout`. A failure of `ssh` itself (exit 255) is
    /// [`RemoteError::Unreachable`]; any other exit is the command's.
    pub fn run(
        &self,
        script: &str,
        stdin: Option<Vec<u8>>,
        timeout: Duration,
    ) -> Result<Output, RemoteError> {
        self.ensure_master()?;
        let mut cmd = self.command(script);
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let out = run_with_timeout(cmd, stdin, timeout).map_err(|e| self.unreachable(&e))?;
        if out.status.code() == Some(255) {
            return Err(self.unreachable(&last_line(&out.stderr)));
        }
        Ok(out)
    }

    /// Runs the remote owt with `--json ARGS` and decodes its answer; a
    /// failure is the remote's own error (and hint).
    pub fn owt_json<T: serde::de::DeserializeOwned>(
        &self,
        args: &[String],
        timeout: Duration,
    ) -> Result<T, RemoteError> {
        let (value, out) = self.owt_json_status(args, timeout)?;
        match value {
            Some(value) if out.status.success() => Ok(value),
            _ => Err(self.owt_failure(&out)),
        }
    }

    /// As [`Ssh::owt_json`], returning the decoded answer (if any) with the
    /// exit status, for verbs that print a document and still fail.
    pub fn owt_json_status<T: serde::de::DeserializeOwned>(
        &self,
        args: &[String],
        timeout: Duration,
    ) -> Result<(Option<T>, Output), RemoteError> {
        let mut all = vec!["--json".to_string()];
        all.extend(args.iter().cloned());
        let out = self.run(&self.owt_script(&all), None, timeout)?;
        if out.status.code() == Some(127) {
            return Err(RemoteError::NoOwt {
                remote: self.remote.name.clone(),
                owt: self.remote.owt.clone(),
            });
        }
        Ok((serde_json::from_slice(&out.stdout).ok(), out))
    }

    /// The error a failed remote owt printed (`{"error", "hint"}`).
    pub fn owt_failure(&self, out: &Output) -> RemoteError {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let doc = stderr
            .lines()
            .rev()
            .find_map(|l| serde_json::from_str::<owt_protocol::ErrorOutput>(l).ok());
        match doc {
            Some(doc) => RemoteError::Failed {
                remote: self.remote.name.clone(),
                message: doc.error,
                hint: doc.hint,
            },
            None => RemoteError::Failed {
                remote: self.remote.name.clone(),
                message: format!(
                    "owt exited with {} without an answer: {}",
                    out.status,
                    crate::printable::line(&last_line(&out.stderr))
                ),
                hint: None,
            },
        }
    }
}

/// The last non-empty line of `bytes`.
pub fn last_line(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes)
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or_default()
        .to_string()
}

/// Runs `cmd` (stdout and stderr as the caller set them; stdin `input` or
/// nothing), killing it after `timeout`.
fn run_with_timeout(
    mut cmd: Command,
    input: Option<Vec<u8>>,
    timeout: Duration,
) -> Result<Output, String> {
    cmd.stdin(if input.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    });
    let program = cmd.get_program().to_string_lossy().into_owned();
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot run {program}: {e}"))?;
    let pid = child.id();
    let feeder = input.and_then(|bytes| {
        let mut stdin = child.stdin.take()?;
        std::thread::Builder::new()
            .name("owt-ssh-stdin".into())
            .spawn(move || {
                use std::io::Write;
                let _ = stdin.write_all(&bytes);
            })
            .ok()
    });
    let collect = |pipe: Option<Box<dyn Read + Send>>| {
        pipe.and_then(|mut p| {
            std::thread::Builder::new()
                .name("owt-ssh-output".into())
                .spawn(move || {
                    let mut buf = Vec::new();
                    let _ = p.read_to_end(&mut buf);
                    buf
                })
                .ok()
        })
    };
    let stdout = collect(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let stderr = collect(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("owt-ssh-wait".into())
        .spawn(move || {
            let _ = tx.send(child.wait());
        })
        .map_err(|e| format!("cannot wait for {program}: {e}"))?;
    let status = match rx.recv_timeout(timeout) {
        Ok(Ok(status)) => status,
        Ok(Err(e)) => return Err(format!("waiting for {program}: {e}")),
        Err(_) => {
            // The pid is our child's.
            crate::platform::process::signal_process(pid, crate::platform::process::Signal::KILL);
            return Err(format!(
                "{program} did not finish within {}s",
                timeout.as_secs()
            ));
        }
    };
    if let Some(feeder) = feeder {
        let _ = feeder.join();
    }
    let take = |h: Option<std::thread::JoinHandle<Vec<u8>>>| {
        h.and_then(|h| h.join().ok()).unwrap_or_default()
    };
    Ok(Output {
        status,
        stdout: take(stdout),
        stderr: take(stderr),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_quoted_for_a_posix_shell() {
        assert_eq!(quote("new"), "new");
        assert_eq!(quote("--ai-tool"), "--ai-tool");
        assert_eq!(quote(""), "''");
        assert_eq!(
            quote("fix the login; rm -rf ~"),
            "'fix the login; rm -rf ~'"
        );
        assert_eq!(quote("it's $HOME `x`"), r"'it'\''s $HOME `x`'");
        assert_eq!(quote_path("~/src/my app"), "~/'src/my app'");
        assert_eq!(quote_path("/srv/app"), "/srv/app");
        assert_eq!(quote_path("~"), "~");
        // What the remote shell makes of them: the words, verbatim.
        for word in ["a b", "it's", "$(id)", "x\ny", "\u{1F600}", "'", "\\"] {
            let out = Command::new("sh")
                .arg("-c")
                .arg(format!("printf %s {}", quote(word)))
                .output()
                .unwrap();
            assert_eq!(String::from_utf8(out.stdout).unwrap(), word);
        }
    }

    #[test]
    fn the_remote_owt_runs_in_the_clone_with_every_word_quoted() {
        let remote = Remote {
            name: "devbox".into(),
            host: "me@devbox".into(),
            path: "~/src/app".into(),
            owt: "owt".into(),
        };
        let ssh = Ssh::new(Path::new("/h"), &remote);
        assert_eq!(
            ssh.owt_script(&["new".into(), "Fix it; now".into()]),
            "PATH=\"$HOME/.local/bin:$PATH\" exec owt -C ~/src/app new 'Fix it; now'"
        );
        assert_eq!(
            ssh.git_url("/home/me/src/app"),
            "ssh://me@devbox/home/me/src/app"
        );
        let git = ssh.git_ssh_command();
        assert!(
            git.starts_with("ssh -o BatchMode=yes -o ControlMaster=auto -o ControlPath=/h/run/c-"),
            "{git}"
        );
        let args: Vec<String> = ssh
            .command("true")
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        // The host comes after `--`: never read as an option.
        assert_eq!(&args[args.len() - 4..], ["-T", "--", "me@devbox", "true"]);
    }
}
