//! The terminals an ACP agent asks its client for (`terminal/create`,
//! `terminal/output`, `terminal/wait_for_exit`, `terminal/kill`,
//! `terminal/release`): commands run in the session's worktree (or a
//! folder inside it), their output kept up to the agent's byte limit.
//!
//! A command with arguments is run as given; a command without arguments
//! is a command line and runs through `sh -c`, as editors do (it is the
//! agent's own command, asked for through the protocol and, where the
//! agent asks, approved by the human). Each runs in its own process group
//! with the agent's environment (so `owt delete` finds it by
//! `OWT_SESSION`) and is killed when released or when the host ends.
//!
//! Invariants: a working folder outside the worktree is refused; output
//! kept is bounded (the oldest bytes go first, at a char boundary).

use std::collections::HashMap;
use std::io::Read;
use std::os::fd::OwnedFd;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};

use serde_json::{json, Value};

use super::rpc::RpcError;

/// Output kept when the agent gives no limit.
pub const DEFAULT_OUTPUT_LIMIT: usize = 1024 * 1024;

#[derive(Default)]
struct Output {
    bytes: Vec<u8>,
    truncated: bool,
    /// Exit code and signal name, once exited.
    exit: Option<(Option<i32>, Option<String>)>,
}

struct Terminal {
    pid: u32,
    limit: usize,
    output: Mutex<Output>,
    exited: Condvar,
}

/// The terminals of one session.
pub struct Terminals {
    root: std::path::PathBuf,
    env: Vec<(String, String)>,
    next: Mutex<u64>,
    live: Mutex<HashMap<String, Arc<Terminal>>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn signal_name(sig: i32) -> String {
    match crate::platform::process::signal_name(sig) {
        Some(name) => name.into(),
        None => format!("signal {sig}"),
    }
}

fn keep_tail(out: &mut Output, limit: usize) {
    if out.bytes.len() <= limit {
        return;
    }
    let mut cut = out.bytes.len() - limit;
    // Never start inside a UTF-8 sequence.
    while cut < out.bytes.len() && (out.bytes[cut] & 0xC0) == 0x80 {
        cut += 1;
    }
    out.bytes.drain(..cut);
    out.truncated = true;
}

fn exit_json(exit: &(Option<i32>, Option<String>)) -> Value {
    json!({"exitCode": exit.0, "signal": exit.1})
}

/// A close-on-exec pipe: (read end, write end).
fn output_pipe() -> Result<(OwnedFd, OwnedFd), RpcError> {
    crate::platform::pipe::cloexec()
        .map_err(|e| RpcError::internal(format!("creating a pipe: {e}")))
}

/// A terminal's thread: keeps the tail of its output, then its exit.
fn follow(terminal: &Terminal, read_end: OwnedFd, mut child: Child) {
    let mut reader = std::fs::File::from(read_end);
    let mut buf = [0u8; 16 * 1024];
    loop {
        match reader.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let mut out = lock(&terminal.output);
                out.bytes.extend_from_slice(&buf[..n]);
                keep_tail(&mut out, terminal.limit);
            }
        }
    }
    let status = child.wait();
    let exit = match status {
        Ok(s) => (s.code(), s.signal().map(signal_name)),
        Err(e) => (None, Some(format!("lost: {e}"))),
    };
    lock(&terminal.output).exit = Some(exit);
    terminal.exited.notify_all();
}

impl Terminals {
    /// Terminals working in `root`, started with `env` on top of the host's.
    pub fn new(root: &Path, env: Vec<(String, String)>) -> Terminals {
        Terminals {
            root: root.to_path_buf(),
            env,
            next: Mutex::new(0),
            live: Mutex::new(HashMap::new()),
        }
    }

    fn get(&self, params: &Value) -> Result<Arc<Terminal>, RpcError> {
        let id = params["terminalId"].as_str().unwrap_or("");
        lock(&self.live)
            .get(id)
            .cloned()
            .ok_or_else(|| RpcError::not_found(format!("no terminal {id:?}")))
    }

    /// `terminal/create` → `{terminalId}`.
    pub fn create(&self, params: &Value) -> Result<Value, RpcError> {
        let (mut cmd, command, cwd) = self.command(params)?;
        let limit = params["outputByteLimit"]
            .as_u64()
            .map_or(DEFAULT_OUTPUT_LIMIT, |l| {
                (l as usize).min(16 * DEFAULT_OUTPUT_LIMIT)
            });
        // One pipe for stdout and stderr: the output in the order written.
        let (read_end, write_end) = output_pipe()?;
        let write2 = write_end
            .try_clone()
            .map_err(|e| RpcError::internal(format!("duplicating a pipe: {e}")))?;
        cmd.stdout(Stdio::from(write_end))
            .stderr(Stdio::from(write2))
            .process_group(0);
        let child: Child = cmd.spawn().map_err(|e| {
            RpcError::internal(format!("starting `{command}` in {}: {e}", cwd.display()))
        })?;
        drop(cmd);
        let terminal = Arc::new(Terminal {
            pid: child.id(),
            limit,
            output: Mutex::new(Output::default()),
            exited: Condvar::new(),
        });
        let id = {
            let mut next = lock(&self.next);
            *next += 1;
            format!("owt-term-{}", *next)
        };
        lock(&self.live).insert(id.clone(), terminal.clone());
        std::thread::spawn(move || follow(&terminal, read_end, child));
        Ok(json!({"terminalId": id}))
    }

    /// The command `terminal/create` asks for (through `sh -c` when it
    /// has no arguments), in its folder (confined to the worktree), with
    /// the session's environment and its own; the command and the folder.
    fn command<'p>(
        &self,
        params: &'p Value,
    ) -> Result<(Command, &'p str, std::path::PathBuf), RpcError> {
        let command = params["command"]
            .as_str()
            .filter(|c| !c.trim().is_empty())
            .ok_or_else(|| RpcError::invalid_params("terminal/create without a command"))?;
        let args: Vec<String> = params["args"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        let cwd = match params["cwd"].as_str() {
            Some(dir) => super::fs::confine(&self.root, dir)?,
            None => self.root.clone(),
        };
        let mut cmd = if args.is_empty() {
            let mut c = Command::new("sh");
            c.arg("-c").arg(command);
            c
        } else {
            let mut c = Command::new(command);
            c.args(&args);
            c
        };
        cmd.current_dir(&cwd).stdin(Stdio::null());
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        for var in params["env"].as_array().into_iter().flatten() {
            if let (Some(k), Some(v)) = (var["name"].as_str(), var["value"].as_str()) {
                cmd.env(k, v);
            }
        }
        Ok((cmd, command, cwd))
    }

    /// `terminal/output` → `{output, truncated, exitStatus}`.
    pub fn output(&self, params: &Value) -> Result<Value, RpcError> {
        let t = self.get(params)?;
        let out = lock(&t.output);
        Ok(json!({
            "output": String::from_utf8_lossy(&out.bytes),
            "truncated": out.truncated,
            "exitStatus": out.exit.as_ref().map(exit_json),
        }))
    }

    /// `terminal/wait_for_exit` → `{exitCode, signal}` (blocks).
    pub fn wait_for_exit(&self, params: &Value) -> Result<Value, RpcError> {
        let t = self.get(params)?;
        let mut out = lock(&t.output);
        while out.exit.is_none() {
            out = t.exited.wait(out).unwrap_or_else(|e| e.into_inner());
        }
        Ok(exit_json(out.exit.as_ref().unwrap_or(&(None, None))))
    }

    fn kill_group(t: &Terminal) {
        if lock(&t.output).exit.is_none() {
            // The group is the terminal's own (process_group(0)).
            crate::platform::process::signal_group(t.pid, crate::platform::process::Signal::KILL);
        }
    }

    /// `terminal/kill`: the command's process group is killed; the
    /// terminal stays readable.
    pub fn kill(&self, params: &Value) -> Result<Value, RpcError> {
        Terminals::kill_group(self.get(params)?.as_ref());
        Ok(Value::Null)
    }

    /// `terminal/release`: killed if still running, then forgotten.
    pub fn release(&self, params: &Value) -> Result<Value, RpcError> {
        let t = self.get(params)?;
        Terminals::kill_group(&t);
        let id = params["terminalId"].as_str().unwrap_or("");
        lock(&self.live).remove(id);
        Ok(Value::Null)
    }

    /// Kills every terminal still running (the host is ending).
    pub fn kill_all(&self) {
        for t in lock(&self.live).values() {
            Terminals::kill_group(t);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_run_in_the_worktree_and_their_output_is_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("sub")).unwrap();
        let terms = Terminals::new(&root, vec![("OWT_TEST_VAR".into(), "yes".into())]);
        let t = terms
            .create(
                &json!({"command": "pwd; echo $OWT_TEST_VAR $EXTRA; echo err >&2; exit 3",
                            "env": [{"name": "EXTRA", "value": "more"}], "cwd": root.join("sub")}),
            )
            .unwrap();
        let exit = terms.wait_for_exit(&t).unwrap();
        assert_eq!(exit, json!({"exitCode": 3, "signal": null}));
        let out = terms.output(&t).unwrap();
        assert_eq!(
            out["output"].as_str().unwrap(),
            format!("{}\nyes more\nerr\n", root.join("sub").display())
        );
        assert_eq!(out["exitStatus"]["exitCode"], 3);

        // Arguments: no shell.
        let t = terms
            .create(&json!({"command": "printf", "args": ["%s|", "a b", "$HOME"], "outputByteLimit": 4}))
            .unwrap();
        terms.wait_for_exit(&t).unwrap();
        let out = terms.output(&t).unwrap();
        assert_eq!(out["output"], "OME|");
        assert_eq!(out["truncated"], true);

        // Killed on request; released terminals are gone.
        let t = terms.create(&json!({"command": "sleep 30"})).unwrap();
        terms.kill(&t).unwrap();
        assert_eq!(terms.wait_for_exit(&t).unwrap()["signal"], "SIGKILL");
        terms.release(&t).unwrap();
        assert!(terms.output(&t).is_err());

        // Outside the worktree: refused.
        assert!(terms
            .create(&json!({"command": "true", "cwd": "/"}))
            .is_err());
    }
}
