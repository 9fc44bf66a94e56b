//! The control plane in a real terminal: `owt` in a tmux pane of 100×30,
//! driven by keys (`send-keys`) and read back (`capture-pane`). Every wait
//! polls with a deadline and fails with the screen it last saw.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::{TestEnv, TmuxServer};

/// How long a wait for the screen lasts before it fails.
pub const WAIT: Duration = Duration::from_secs(20);

/// `owt` running in the tmux session `cp` of its own server, in `dir`,
/// hermetic; what it printed before and after stays on the pane.
pub struct Cockpit {
    pub tmux: TmuxServer,
    /// The pane's target (`cp`, or a background window's pane id).
    pub target: String,
}

impl Cockpit {
    /// Starts `owt ARGS` in a 100×30 pane in `dir`.
    pub fn open(env: &TestEnv, dir: &Path, tag: &str, args: &str) -> Cockpit {
        Cockpit::open_in(env, dir, tag, args, false)
    }

    /// As [`Cockpit::open`]; `background`: in a window that is not the
    /// session's current one (where tmux flags a bell).
    pub fn open_in(env: &TestEnv, dir: &Path, tag: &str, args: &str, background: bool) -> Cockpit {
        let script = env.path().join(format!("{tag}.sh"));
        std::fs::write(&script, launcher(env, dir, args)).unwrap();
        let tmux = TmuxServer::start(env, tag);
        let run = format!("sh {}", script.display());
        let first = if background {
            "sleep 600"
        } else {
            run.as_str()
        };
        tmux.run(&[
            "new-session",
            "-d",
            "-s",
            "cp",
            "-x",
            "100",
            "-y",
            "30",
            first,
        ]);
        let target = if background {
            tmux.run(&[
                "new-window",
                "-d",
                "-P",
                "-F",
                "#{pane_id}",
                "-t",
                "cp",
                "-n",
                "plane",
                &run,
            ])
        } else {
            "cp".to_string()
        };
        Cockpit { tmux, target }
    }

    pub fn screen(&self) -> String {
        self.tmux.run(&["capture-pane", "-p", "-t", &self.target])
    }

    /// Waits until the screen satisfies `ready`; the screen then.
    pub fn wait_for(&self, what: &str, ready: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + WAIT;
        loop {
            let screen = self.screen();
            if ready(&screen) {
                return screen;
            }
            if Instant::now() > deadline {
                panic!("timed out waiting for {what}; the screen:\n{screen}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn wait_text(&self, text: &str) -> String {
        self.wait_for(&format!("`{text}`"), |s| s.contains(text))
    }

    /// Keys as tmux names them (`j`, `Enter`, `C-\\`).
    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", self.target.as_str()];
        args.extend_from_slice(keys);
        self.tmux.run(&args);
    }

    /// Literal text.
    pub fn type_text(&self, text: &str) {
        self.tmux
            .run(&["send-keys", "-t", &self.target, "-l", text]);
    }

    /// Waits until tmux's `format` for the pane reads `expected`.
    pub fn wait_format(&self, format: &str, expected: &str) {
        let deadline = Instant::now() + WAIT;
        loop {
            let value = self.tmux_format(format);
            if value == expected {
                return;
            }
            if Instant::now() > deadline {
                panic!("timed out waiting for {format} to be {expected:?}: it is {value:?}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn tmux_format(&self, format: &str) -> String {
        let panes = self
            .tmux
            .run(&["list-panes", "-t", &self.target, "-F", format]);
        panes.lines().next().unwrap_or_default().to_string()
    }
}

/// The pane's program: a line before, `owt ARGS` with the test's
/// environment, its exit code and the terminal's line discipline after.
pub fn launcher(env: &TestEnv, dir: &Path, args: &str) -> String {
    let mut lines = vec![
        "unset TMUX".to_string(),
        format!("cd '{}'", dir.display()),
        format!("export HOME='{}'", env.home.display()),
        format!("export OWT_HOME='{}'", env.owt_home.display()),
        "export TERM=xterm-256color".to_string(),
        "unset NO_COLOR XDG_CONFIG_HOME XDG_STATE_HOME RUST_LOG OWT_SESSION".to_string(),
    ];
    // What the test's `owt` runs get besides (`OWT_SSH_COMMAND`, say).
    for (key, value) in &env.extra_env {
        lines.push(format!("export {key}='{value}'"));
    }
    for (key, value) in [
        ("GIT_CONFIG_GLOBAL", "/dev/null"),
        ("GIT_CONFIG_SYSTEM", "/dev/null"),
        ("GIT_CONFIG_NOSYSTEM", "1"),
        ("GIT_AUTHOR_NAME", "Test"),
        ("GIT_AUTHOR_EMAIL", "test@example.com"),
        ("GIT_COMMITTER_NAME", "Test"),
        ("GIT_COMMITTER_EMAIL", "test@example.com"),
    ] {
        lines.push(format!("export {key}='{value}'"));
    }
    lines.push("echo 'before the control plane'".to_string());
    lines.push(format!("'{}' {args}", crate::owt_bin().display()));
    lines.push("echo \"owt exited with $?\"".to_string());
    // `icanon` (cooked) or `-icanon` (still raw).
    lines.push("stty -a | tr ' ;' '\\n\\n' | grep -x -e icanon -e -icanon".to_string());
    lines.push("exec sleep 600".to_string());
    lines.join("\n") + "\n"
}
