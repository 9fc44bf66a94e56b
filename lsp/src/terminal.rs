//! Opening an agent's terminal: through the editor (`owt/openTerminal`) when
//! the client handles it, else through the terminal multiplexer or emulator
//! the editor runs in — tmux, WezTerm, Zellij, kitty — else a message with
//! the command to run.

use std::path::Path;
use std::process::{Command, Stdio};

/// The argv of `owt attach NAME`, carrying `OWT_HOME` when it is set (a
/// multiplexer's new pane gets the multiplexer's environment, not ours).
pub fn attach_argv(session: &str) -> Vec<String> {
    let exe = std::env::current_exe()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|_| "owt".into());
    let mut argv = Vec::new();
    if let Some(home) = std::env::var_os("OWT_HOME") {
        argv.push("env".to_string());
        argv.push(format!("OWT_HOME={}", home.to_string_lossy()));
    }
    argv.extend([exe, "attach".to_string(), session.to_string()]);
    argv
}

/// How an attach was opened without the editor's help.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Opened {
    /// In a new pane or window of this launcher.
    Launched(&'static str),
    /// Nothing could open it: the command a person should run.
    Manual(String),
}

/// Opens `argv` in a split of the terminal the editor runs in.
pub fn open_external(argv: &[String], cwd: &Path, title: &str) -> Opened {
    let cwd_s = cwd.to_string_lossy().into_owned();
    let env = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    let mut attempts: Vec<(&'static str, Vec<String>)> = Vec::new();
    if env("TMUX").is_some() {
        let mut cmd = vec![
            "tmux".into(),
            "split-window".into(),
            "-h".into(),
            "-c".into(),
            cwd_s.clone(),
        ];
        cmd.extend(argv.iter().cloned());
        attempts.push(("tmux", cmd));
    }
    if env("WEZTERM_PANE").is_some() {
        let mut cmd = vec![
            "wezterm".into(),
            "cli".into(),
            "split-pane".into(),
            "--cwd".into(),
            cwd_s.clone(),
            "--".into(),
        ];
        cmd.extend(argv.iter().cloned());
        attempts.push(("wezterm", cmd));
    }
    if env("ZELLIJ").is_some() {
        let mut cmd = vec![
            "zellij".into(),
            "run".into(),
            "--name".into(),
            title.into(),
            "--cwd".into(),
            cwd_s.clone(),
            "--".into(),
        ];
        cmd.extend(argv.iter().cloned());
        attempts.push(("zellij", cmd));
    }
    if let Some(listen) = env("KITTY_LISTEN_ON") {
        let mut cmd = vec![
            "kitty".into(),
            "@".into(),
            "--to".into(),
            listen.to_string_lossy().into_owned(),
            "launch".into(),
            "--type=window".into(),
            "--title".into(),
            title.into(),
            "--cwd".into(),
            cwd_s.clone(),
        ];
        cmd.extend(argv.iter().cloned());
        attempts.push(("kitty", cmd));
    }
    for (name, cmd) in attempts {
        let status = Command::new(&cmd[0])
            .args(&cmd[1..])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        if status.as_ref().is_ok_and(|s| s.success()) {
            return Opened::Launched(name);
        }
        tracing::warn!("opening a {name} split failed: {status:?}");
    }
    Opened::Manual(format!(
        "cd {} && {}",
        shell_quote(&cwd_s),
        argv.iter()
            .map(|a| shell_quote(a))
            .collect::<Vec<_>>()
            .join(" ")
    ))
}

/// Quotes a word for display in a shell command a person may copy (a
/// word with a NUL cannot be in an argv: shown as it is).
fn shell_quote(word: &str) -> String {
    shlex::try_quote(word)
        .map(|quoted| quoted.into_owned())
        .unwrap_or_else(|_| word.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_command_is_quoted() {
        assert_eq!(shell_quote("plain-name"), "plain-name");
        for word in ["it's here", "$HOME `x` \"q\"", "a;b|c&d", ""] {
            let quoted = shell_quote(word);
            assert_eq!(
                shlex::split(&quoted),
                Some(vec![word.to_string()]),
                "{word:?} → {quoted}"
            );
        }
    }
}
