//! What a terminal attached to one session (`owt attach`) is told of the
//! others (`[notify] terminal`): each session of the repository that
//! enters NEEDS YOU — the board's lane, as `status::derive_status` gives
//! it to every surface — once per entry, as a desktop notification
//! through the terminal ([`crate::session::notice`]). Asked on the
//! attach's own notices thread ([`Notices`]): each poll asks SQLite
//! whether another connection committed (`PRAGMA data_version`, one read
//! of a counter) and derives the lanes again only then, or every few
//! seconds (a host that died says nothing).

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use owt_protocol::host::{NoticeStyle, TerminalNotice};
use owt_protocol::SessionView;

use super::{list, Context};
use crate::session::attach::Notices;

/// Lanes derived again at least this often without a commit to the store.
const REDERIVE: Duration = Duration::from_secs(3);
/// A session that entered NEEDS YOU is told again, after leaving and
/// coming back, only this long after it was told (no storm from a status
/// that flickers).
pub const RETELL_AFTER: Duration = Duration::from_secs(15);

/// The notices for a terminal attached to `attached`, as the
/// configuration of `ctx` wants them (`None`: `[notify] terminal` is off).
/// The sessions in NEEDS YOU already are read here, before the attach:
/// they are not news.
pub fn notices(ctx: &Context, attached: &str) -> Option<Notices> {
    let style = ctx.config.config.notify.terminal_style()?;
    let mut entering = Entering::new(attached);
    match list::needing_you(ctx) {
        Ok(needing) => {
            let names: Vec<&str> = needing.iter().map(|view| view.name.as_str()).collect();
            entering.next(&names, Instant::now());
        }
        Err(e) => tracing::debug!("reading the sessions for notices: {e:#}"),
    }
    let mut watch = Watch {
        root: ctx.repo.main_root().to_path_buf(),
        home: ctx.home.clone(),
        ctx: None,
        data_version: None,
        read_at: None,
        entering,
        style,
    };
    Some(Notices {
        poll: Box::new(move || watch.poll()),
    })
}

/// The store as the notices thread reads it.
struct Watch {
    root: PathBuf,
    home: PathBuf,
    /// Opened on the thread, at its first poll (a context is not `Sync`).
    ctx: Option<Context>,
    data_version: Option<i64>,
    read_at: Option<Instant>,
    entering: Entering,
    style: NoticeStyle,
}

impl Watch {
    fn poll(&mut self) -> Vec<TerminalNotice> {
        if self.ctx.is_none() {
            match Context::open_in(Some(&self.root), &self.home) {
                Ok(ctx) => self.ctx = Some(ctx),
                Err(e) => {
                    tracing::debug!("reading the sessions for notices: {e:#}");
                    return Vec::new();
                }
            }
        }
        let Some(ctx) = &self.ctx else {
            return Vec::new();
        };
        let data_version = ctx
            .store
            .conn()
            .query_row("PRAGMA data_version", [], |row| row.get::<_, i64>(0))
            .ok();
        let due = self.read_at.is_none_or(|at| at.elapsed() >= REDERIVE)
            || data_version != self.data_version;
        if !due {
            return Vec::new();
        }
        self.data_version = data_version;
        self.read_at = Some(Instant::now());
        let needing = match list::needing_you(ctx) {
            Ok(needing) => needing,
            Err(e) => {
                tracing::debug!("reading the sessions for notices: {e:#}");
                return Vec::new();
            }
        };
        let names: Vec<&str> = needing.iter().map(|view| view.name.as_str()).collect();
        let tell = self.entering.next(&names, Instant::now());
        needing
            .iter()
            .filter(|view| tell.contains(&view.name))
            .map(|view| notice(view, self.style))
            .collect()
    }
}

/// The notice for `view` entering NEEDS YOU.
pub fn notice(view: &SessionView, style: NoticeStyle) -> TerminalNotice {
    let task = view.task.trim();
    TerminalNotice {
        style,
        title: format!("owt: {} needs you", view.name),
        body: if task.is_empty() {
            view.status_text.clone()
        } else {
            format!("{} — {task}", view.status_text)
        },
    }
}

/// Which sessions entered NEEDS YOU since the last reading (pure).
#[derive(Debug)]
pub struct Entering {
    attached: String,
    /// The sessions in NEEDS YOU at the last reading (`None`: no reading
    /// yet; those of the first reading, waiting when the terminal
    /// attached, are not news).
    before: Option<BTreeSet<String>>,
    told_at: HashMap<String, Instant>,
}

impl Entering {
    pub fn new(attached: &str) -> Entering {
        Entering {
            attached: attached.to_string(),
            before: None,
            told_at: HashMap::new(),
        }
    }

    /// Of `needing` (the names of the sessions in NEEDS YOU now), those
    /// to tell: not the attached one, not in NEEDS YOU at the last
    /// reading, not told within [`RETELL_AFTER`].
    pub fn next(&mut self, needing: &[&str], now: Instant) -> Vec<String> {
        let names: BTreeSet<String> = needing.iter().map(|name| name.to_string()).collect();
        let Some(before) = self.before.replace(names) else {
            return Vec::new();
        };
        self.told_at
            .retain(|_, at| now.saturating_duration_since(*at) < RETELL_AFTER);
        let mut tell = Vec::new();
        for &name in needing {
            if name == self.attached || before.contains(name) || self.told_at.contains_key(name) {
                continue;
            }
            self.told_at.insert(name.to_string(), now);
            tell.push(name.to_string());
        }
        tell
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn told(entering: &mut Entering, names: &[&str], at: Instant) -> Vec<String> {
        entering.next(names, at)
    }

    #[test]
    fn each_entry_into_needs_you_is_told_once_and_never_the_attached_session() {
        let t0 = Instant::now();
        let mut entering = Entering::new("a");
        // Those waiting when the terminal attached are not news.
        assert!(told(&mut entering, &["old"], t0).is_empty());
        assert_eq!(told(&mut entering, &["old", "a", "b"], t0), ["b"]);
        // Still there: not again.
        assert!(told(&mut entering, &["old", "a", "b"], t0).is_empty());
        // Out and back in at once: a flicker, not news.
        assert!(told(&mut entering, &["old"], t0 + Duration::from_secs(1)).is_empty());
        assert!(told(&mut entering, &["old", "b"], t0 + Duration::from_secs(2)).is_empty());
        // Out, and back after a while: told again.
        assert!(told(&mut entering, &[], t0 + Duration::from_secs(20)).is_empty());
        assert_eq!(
            told(&mut entering, &["b", "c"], t0 + Duration::from_secs(21)),
            ["b", "c"]
        );
    }
}
