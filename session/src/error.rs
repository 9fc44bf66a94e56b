//! [`SessionError`]: what goes wrong with a session host, from either side
//! of its socket, with a hint where one helps a person.

use std::path::PathBuf;

/// What went wrong with a session host. Each variant prints its cause in
/// its own message (none is also a `source`: `{:#}` says it once).
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// What went wrong inside a session host, or what it reported.
    #[error("session host: {0}")]
    Host(String),
    /// The host does not answer (exited, lost or never started).
    #[error("session host: {0}")]
    NotRunning(String),
    /// The host speaks another protocol version, or answered out of turn.
    #[error("session host: {0}")]
    Protocol(String),
    /// The host took the connection but answered nothing in time: stopped
    /// (SIGSTOP, a debugger) or hung. `session` is filled in by the
    /// functions that know the session (owt-core's `session::peek` and
    /// `session::send`, with [`SessionError::of_session`]); `pid` is the
    /// host's (the socket's peer).
    #[error("{}the session host does not answer ({doing}: no reply in {seconds} s){}; it is stopped or hung", session.as_ref().map(|s| format!("{s}: ")).unwrap_or_default(), pid.map(|p| format!(", pid {p}")).unwrap_or_default())]
    NoAnswer {
        session: Option<String>,
        doing: String,
        seconds: u64,
        pid: Option<u32>,
    },
    /// The host did not say it was ready in time.
    #[error("the session host did not become ready within {seconds}s; see {}", log.display())]
    NotReady { seconds: u64, log: PathBuf },
    /// The host ended before it was ready (`tail`: the end of its log).
    #[error("the session host exited before it was ready; see {}{}", log.display(), if tail.is_empty() { String::new() } else { format!(":\n{tail}") })]
    ExitedEarly { log: PathBuf, tail: String },
    /// A file, pipe, socket or process operation failed while `doing` it.
    #[error("{doing}: {error}")]
    Io {
        doing: String,
        error: std::io::Error,
    },
    /// An agent settings file owt leaves alone.
    #[error("{}: {problem}; not touching it", path.display())]
    Settings { path: PathBuf, problem: String },
    /// No session has this short id (a hook of a deleted session).
    #[error("no session with id {short_id} in {}", home.display())]
    UnknownSession { short_id: String, home: PathBuf },
    /// `owt attach` needs a terminal on standard input.
    #[error(
        "owt attach needs a terminal on standard input (use `owt send` / `owt peek` in scripts)"
    )]
    NotATerminal,
    #[error(transparent)]
    Store(#[from] owt_store::StoreError),
}

impl SessionError {
    /// An I/O failure while `doing` something.
    pub fn io(doing: impl Into<String>, error: std::io::Error) -> SessionError {
        SessionError::Io {
            doing: doing.into(),
            error,
        }
    }

    /// A [`SessionError::NoAnswer`] naming `session`; anything else as is.
    pub fn of_session(self, session: &str) -> SessionError {
        match self {
            SessionError::NoAnswer {
                doing,
                seconds,
                pid,
                ..
            } => SessionError::NoAnswer {
                session: Some(session.to_string()),
                doing,
                seconds,
                pid,
            },
            other => other,
        }
    }

    /// What a person can do about it, when something helps.
    pub fn hint(&self) -> Option<String> {
        match self {
            SessionError::NoAnswer { session, pid, .. } => {
                let name = session.as_deref().unwrap_or("NAME");
                let pid = pid.map_or("PID".to_string(), |p| p.to_string());
                Some(format!(
                    "a stopped host resumes with `kill -CONT {pid}`; `owt delete {name}` ends the session (its agent too)"
                ))
            }
            SessionError::NotRunning(_) => Some(
                "`owt list` shows whether the agent is still running; `owt peek NAME` shows its last screen"
                    .into(),
            ),
            SessionError::Settings { path, .. } => Some(format!(
                "fix {} (or move it away) and run the command again",
                path.display()
            )),
            SessionError::Protocol(_) => Some(
                "the session was started by another version of owt; finish it with that version, or `owt delete` it"
                    .into(),
            ),
            _ => None,
        }
    }
}
