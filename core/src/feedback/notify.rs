//! Notifications out (`[notify]`): when a session's status turns to one
//! that wants a human (blocked, needs-input, done, exited, limited, checks
//! failed, CI failed, conflict), its host tells the world: one JSON object
//! on the stdin of `[notify] command`, and `notify-send` with `[notify]
//! desktop = true` where a desktop session bus exists.
//!
//! Invariants: only the session's own host sends (one host per session,
//! so each event goes out once however many owt processes run); the host's
//! monitor only derives the status on its own store connection and hands
//! events over a channel: the programs run on a `notify` thread of their
//! own, each bounded by [`RUN_TIMEOUT`], so nothing blocks the host; a
//! status must hold for [`STEADY`] before it is told (a flicker is not an
//! event), and the same event is told at most once per [`DEBOUNCE`]. A
//! host whose configuration asks for nothing has no `notify` thread (it
//! ends once it read the configuration). The same looks record how long
//! the status has held ([`crate::status::since`]), configured or not.

use std::collections::HashMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use owt_protocol::Status;
use serde::Serialize;

use crate::config::{Config, NotifyConfig};
use crate::status::{derive_status, Derived, SessionFacts};
use crate::store::{now_ms, Store};

/// How often the monitor looks at the session's status.
const TICK: Duration = Duration::from_millis(250);
/// How long a status must hold before it is told.
pub const STEADY: Duration = Duration::from_millis(750);
/// The same event of a session is told at most once in this window.
pub const DEBOUNCE: Duration = Duration::from_secs(30);
/// A notify program still running after this is killed.
pub const RUN_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a host that ends waits for its last events to be handed over.
const EXIT_GRACE: Duration = Duration::from_secs(3);

/// One event, as the notify command reads it on stdin.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Event {
    /// What happened: the status it turned to (`blocked`, `needs-input`,
    /// `done`, `exited`, `limited`, `checks-failed`, `ci-failed`,
    /// `conflict`).
    pub event: String,
    pub session: String,
    pub status: String,
    /// The repository's main checkout.
    pub repository: String,
    /// The status as `owt list` says it.
    pub text: String,
    /// When, in UTC (RFC 3339).
    pub time: String,
}

/// Whether turning to `status` is told.
pub fn is_event(status: Status) -> bool {
    matches!(
        status,
        Status::Blocked
            | Status::NeedsInput
            | Status::Done
            | Status::Exited
            | Status::Limited
            | Status::ChecksFailed
            | Status::CiFailed
            | Status::Conflict
    )
}

/// What the notifier remembers between looks (pure: [`Steady::look`]).
#[derive(Debug, Default)]
pub struct Steady {
    /// The status last seen, and since when.
    candidate: Option<(Status, Instant)>,
    /// The status last taken as steady.
    shown: Option<Status>,
    /// When each event was last told.
    told: HashMap<Status, Instant>,
}

impl Steady {
    /// One look at `status` at `now`: the status to tell, if any. An exit
    /// is told at once (the host is about to end).
    pub fn look(&mut self, status: Status, now: Instant) -> Option<Status> {
        let since = match self.candidate {
            Some((s, since)) if s == status => since,
            _ => {
                self.candidate = Some((status, now));
                now
            }
        };
        let steady = status == Status::Exited || now.duration_since(since) >= STEADY;
        if !steady || self.shown == Some(status) {
            return None;
        }
        self.shown = Some(status);
        if !is_event(status) {
            return None;
        }
        let recent = self
            .told
            .get(&status)
            .is_some_and(|at| now.duration_since(*at) < DEBOUNCE);
        if recent {
            return None;
        }
        self.told.insert(status, now);
        Some(status)
    }
}

impl Steady {
    /// The status now steady (held for [`STEADY`], or an exit) and since
    /// when it showed; `None` while it may still be a flicker.
    pub fn held(&self, now: Instant) -> Option<(Status, Instant)> {
        let (status, since) = self.candidate?;
        (status == Status::Exited || now.duration_since(since) >= STEADY).then_some((status, since))
    }
}

/// The notifier a session host's monitor drives; it also records how long
/// the status has held ([`crate::status::since`]), whether or not
/// `[notify]` asks for anything.
pub struct Notifier {
    session_id: i64,
    next: Instant,
    steady: Steady,
    /// To the `notify` thread; `None` once it ended (nothing configured).
    tx: Option<mpsc::Sender<Event>>,
    thread: Option<JoinHandle<()>>,
}

impl Notifier {
    /// Starts the `notify` thread: it reads the configuration of
    /// `worktree` with `config` and ends at once when `[notify]` asks for
    /// nothing.
    pub fn start(
        session_id: i64,
        worktree: PathBuf,
        config: fn(&Path) -> anyhow::Result<Config>,
    ) -> Notifier {
        let (tx, rx) = mpsc::channel::<Event>();
        let spawned = std::thread::Builder::new()
            .name("notify".into())
            .spawn(move || deliver_all(&worktree, config, rx));
        let thread = match spawned {
            Ok(thread) => Some(thread),
            Err(e) => {
                tracing::warn!("notifications: starting their thread: {e}");
                None
            }
        };
        Notifier {
            session_id,
            next: Instant::now(),
            tx: thread.as_ref().map(|_| tx),
            thread,
            steady: Steady::default(),
        }
    }

    /// One look at the session's status on `store`, at most every
    /// [`TICK`] (call it more often): an event handed to the `notify`
    /// thread when the status turned to one that is told.
    pub fn poll(&mut self, store: &Store) {
        let now = Instant::now();
        if now < self.next {
            return;
        }
        self.next = now + TICK;
        if self.thread.as_ref().is_some_and(|t| t.is_finished()) {
            self.tx = None;
        }
        if let Err(e) = self.look(store, now) {
            tracing::warn!("notifications: {e:#}");
        }
    }

    /// The agent exited (its exit fact recorded): tells it, and waits a
    /// little for the `notify` thread to hand it over.
    pub fn exited(mut self, store: &Store) {
        if let Err(e) = self.look(store, Instant::now()) {
            tracing::warn!("notifications: {e:#}");
        }
        if self.tx.take().is_none() {
            return;
        }
        let deadline = Instant::now() + EXIT_GRACE;
        if let Some(thread) = self.thread.take() {
            while !thread.is_finished() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }

    fn look(&mut self, store: &Store, now: Instant) -> anyhow::Result<()> {
        let Some(row) = store.session_by_id(self.session_id)? else {
            return Ok(());
        };
        let facts = SessionFacts::from_rows(row.created_at, &store.facts(row.id)?);
        let at = now_ms();
        let Derived { status, text, .. } = derive_status(&facts, at);
        let told = self.steady.look(status, now);
        if let Some((held, since)) = self.steady.held(now) {
            let ago = i64::try_from(now.duration_since(since).as_millis()).unwrap_or(0);
            record_since(store, row.id, &facts, held, at - ago);
        }
        let Some(told) = told else {
            return Ok(());
        };
        let repository = store
            .repo_by_id(row.repo_id)?
            .map(|r| r.main_worktree.to_string_lossy().into_owned())
            .unwrap_or_default();
        let event = Event {
            event: told.as_str().to_string(),
            session: row.name,
            status: status.as_str().to_string(),
            repository,
            text,
            time: crate::clock::Utc::from_ms(at).rfc3339(),
        };
        if let Some(tx) = &self.tx {
            if tx.send(event).is_err() {
                self.tx = None;
            }
        }
        Ok(())
    }
}

/// Records that session `session_id` is `status` since `since`, unless the
/// stored fact names that status already. Errors are logged: how long a
/// status held is never worth failing a view or a host for.
pub fn record_since(
    store: &Store,
    session_id: i64,
    facts: &SessionFacts,
    status: Status,
    since: i64,
) {
    if facts.status_since.is_some_and(|s| s.status == status) {
        return;
    }
    let fact = crate::status::since::StatusSince { status, since };
    if let Err(e) = store.record_fact(session_id, crate::status::since::STATUS_SINCE, &fact) {
        tracing::warn!("recording how long the status held: {e}");
    }
}

/// The `notify` thread: the configuration, then each event as it comes.
fn deliver_all(
    worktree: &Path,
    config: fn(&Path) -> anyhow::Result<Config>,
    rx: mpsc::Receiver<Event>,
) {
    let notify = match config(worktree) {
        Ok(config) => config.notify,
        Err(e) => {
            tracing::warn!("notifications: reading the configuration: {e:#}");
            return;
        }
    };
    let desktop = notify.desktop && desktop_available();
    if notify.command.is_empty() && !desktop {
        return;
    }
    while let Ok(event) = rx.recv() {
        deliver(&notify, desktop, &event);
    }
}

/// Sends one event: the command, then the desktop.
fn deliver(notify: &NotifyConfig, desktop: bool, event: &Event) {
    if let Some((program, args)) = notify.command.split_first() {
        let mut json = serde_json::to_vec(event).unwrap_or_default();
        json.push(b'\n');
        let mut cmd = Command::new(program);
        cmd.args(args);
        if let Err(e) = run_bounded(cmd, Some(&json)) {
            tracing::warn!("notifications: `{program}`: {e}");
        }
    }
    if desktop {
        let mut cmd = Command::new("notify-send");
        cmd.args([
            "--app-name=owt",
            &format!("owt: {}", event.session),
            &event.text,
        ]);
        if let Err(e) = run_bounded(cmd, None) {
            tracing::warn!("notifications: notify-send: {e}");
        }
    }
}

/// A desktop session bus exists and `notify-send` is on `PATH`.
fn desktop_available() -> bool {
    std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_some_and(|v| !v.is_empty())
        && std::env::var_os("PATH").is_some_and(|path| {
            std::env::split_paths(&path).any(|dir| dir.join("notify-send").is_file())
        })
}

/// Runs `cmd` with `input` on its stdin, killed after [`RUN_TIMEOUT`].
fn run_bounded(mut cmd: Command, input: Option<&[u8]>) -> std::io::Result<()> {
    cmd.stdin(if input.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::null())
    .stderr(Stdio::null());
    let mut child = cmd.spawn()?;
    if let (Some(mut stdin), Some(input)) = (child.stdin.take(), input) {
        // A program that does not read its input is no error of ours.
        let _ = stdin.write_all(input);
    }
    let deadline = Instant::now() + RUN_TIMEOUT;
    loop {
        if let Some(status) = child.try_wait()? {
            if !status.success() {
                tracing::info!("notifications: the program ended with {status}");
            }
            return Ok(());
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(std::io::Error::other("still running after 10 s: killed"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_is_told_once_it_holds_and_once_per_window() {
        let mut steady = Steady::default();
        let t0 = Instant::now();
        assert_eq!(steady.look(Status::Blocked, t0), None, "not steady yet");
        assert_eq!(
            steady.look(Status::Blocked, t0 + STEADY),
            Some(Status::Blocked)
        );
        assert_eq!(steady.look(Status::Blocked, t0 + STEADY * 2), None, "told");
        // A flicker to working and back within the window is not told again.
        let t1 = t0 + STEADY * 3;
        assert_eq!(steady.look(Status::Working, t1), None);
        assert_eq!(steady.look(Status::Working, t1 + STEADY), None);
        assert_eq!(steady.look(Status::Blocked, t1 + STEADY * 2), None);
        assert_eq!(steady.look(Status::Blocked, t1 + STEADY * 3), None);
        // After the window it is.
        let t2 = t0 + DEBOUNCE + STEADY * 10;
        assert_eq!(steady.look(Status::Working, t2), None);
        assert_eq!(steady.look(Status::Working, t2 + STEADY), None);
        assert_eq!(steady.look(Status::Blocked, t2 + STEADY * 2), None);
        assert_eq!(
            steady.look(Status::Blocked, t2 + STEADY * 3),
            Some(Status::Blocked)
        );
    }

    #[test]
    fn an_exit_is_told_at_once_and_a_short_blip_never() {
        let mut steady = Steady::default();
        let t0 = Instant::now();
        assert_eq!(steady.look(Status::Done, t0), None);
        assert_eq!(steady.look(Status::Working, t0 + STEADY / 2), None);
        assert_eq!(
            steady.look(Status::Exited, t0 + STEADY),
            Some(Status::Exited)
        );
    }
}
