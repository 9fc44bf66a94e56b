//! The `n` form: a task (several lines), the agent (one of those
//! installed), the mode, and the `owt new …` command they amount to. Pure
//! state; [`crate::commands`] turns it into an `ops::new` request.

/// How the session runs (the `owt new` flags).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Worktree,
    InPlace,
    Plan,
    Headless,
    Acp,
}

impl Mode {
    pub const ALL: [Mode; 5] = [
        Mode::Worktree,
        Mode::InPlace,
        Mode::Plan,
        Mode::Headless,
        Mode::Acp,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Mode::Worktree => "worktree",
            Mode::InPlace => "in place",
            Mode::Plan => "plan mode",
            Mode::Headless => "headless",
            Mode::Acp => "ACP",
        }
    }

    /// The `owt new` flag (none for a worktree).
    pub fn flag(self) -> Option<&'static str> {
        match self {
            Mode::Worktree => None,
            Mode::InPlace => Some("--in-place"),
            Mode::Plan => Some("--plan-mode"),
            Mode::Headless => Some("--headless"),
            Mode::Acp => Some("--acp"),
        }
    }
}

/// Which part of the form takes the keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Task,
    Agent,
    Mode,
    /// A remote host (`--on NAME`), one of `[remotes]`.
    Host,
}

/// The new-session form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewForm {
    pub task: String,
    /// The agents installed; `agent` indexes it (`None`: owt's default).
    pub agents: Vec<String>,
    pub agent: Option<usize>,
    pub mode: Mode,
    /// The configured remotes; `host` indexes it (`None`: this machine).
    pub hosts: Vec<String>,
    pub host: Option<usize>,
    pub field: Field,
}

impl NewForm {
    pub fn new(agents: Vec<String>, hosts: Vec<String>) -> NewForm {
        NewForm {
            task: String::new(),
            agents,
            agent: None,
            mode: Mode::Worktree,
            hosts,
            host: None,
            field: Field::Task,
        }
    }

    /// The next field (Tab).
    pub fn next_field(&mut self) {
        self.field = match self.field {
            Field::Task => Field::Agent,
            Field::Agent => Field::Mode,
            Field::Mode if !self.hosts.is_empty() => Field::Host,
            Field::Mode | Field::Host => Field::Task,
        };
    }

    /// The next (`forward`) or previous choice of the agent, mode or host
    /// field (the task field ignores it).
    pub fn cycle(&mut self, forward: bool) {
        match self.field {
            Field::Task => {}
            Field::Agent => self.agent = cycle_option(self.agent, self.agents.len(), forward),
            Field::Host => self.host = cycle_option(self.host, self.hosts.len(), forward),
            Field::Mode => {
                let i = Mode::ALL.iter().position(|m| *m == self.mode).unwrap_or(0);
                let n = Mode::ALL.len();
                self.mode = Mode::ALL[if forward {
                    (i + 1) % n
                } else {
                    (i + n - 1) % n
                }];
            }
        }
    }

    pub fn agent_name(&self) -> Option<&str> {
        self.agent
            .and_then(|i| self.agents.get(i))
            .map(String::as_str)
    }

    pub fn host_name(&self) -> Option<&str> {
        self.host
            .and_then(|i| self.hosts.get(i))
            .map(String::as_str)
    }

    /// The equivalent command line, quoted as a shell would need it.
    pub fn command_line(&self) -> String {
        let mut words = vec!["owt".to_string(), "new".to_string()];
        if let Some(agent) = self.agent_name() {
            words.push("--ai-tool".into());
            words.push(quote(agent));
        }
        if let Some(flag) = self.mode.flag() {
            words.push(flag.into());
        }
        if let Some(host) = self.host_name() {
            words.push("--on".into());
            words.push(quote(host));
        }
        words.push(quote(&self.task));
        words.join(" ")
    }
}

/// `None` (the default) then each index, round.
fn cycle_option(current: Option<usize>, n: usize, forward: bool) -> Option<usize> {
    if n == 0 {
        return None;
    }
    // Positions 0..=n: 0 is the default, i + 1 the choice i.
    let at = current.map_or(0, |i| i + 1);
    let next = if forward {
        (at + 1) % (n + 1)
    } else {
        (at + n) % (n + 1)
    };
    next.checked_sub(1)
}

/// `text` as one shell word: bare when it is plainly safe, else in single
/// quotes (a quote inside closed, escaped, reopened); with a line break,
/// as `$'…\n…'` so that it stays on one line.
pub fn quote(text: &str) -> String {
    if text.contains('\n') {
        let escaped = text
            .replace('\\', "\\\\")
            .replace('\'', "\\'")
            .replace('\n', "\\n");
        return format!("$'{escaped}'");
    }
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=@,+".contains(c));
    if plain {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}
