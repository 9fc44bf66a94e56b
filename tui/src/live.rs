//! Where the control plane's facts come from, and when: the sessions as
//! `owt list` derives them (`ops::list`), re-read as soon as another
//! process commits to the store (SQLite's `PRAGMA data_version`, asked
//! every poll: one read of a counter), and every second while an agent
//! works (its status changes with time alone: working → idle); git facts
//! from the hosts' journals every few seconds, never a `git status` per
//! session per tick.
//! The focused session's preview: its screen (as `owt peek`) while the
//! Screen tab shows, the other tabs when the focus, the tab or the
//! session's view change.

use std::path::Path;
use std::time::{Duration, Instant};

use owt_core::ops::{self, agent, list, Context};
use owt_core::store::now_ms;
use owt_protocol::{SessionView, Status};

use crate::app::{Anchor, App, Preview, Styled, Tab, Tone};
use crate::preview_text;

/// How often a status is re-derived without any change in the store
/// while an agent works.
const REDERIVE: Duration = Duration::from_secs(1);
/// How often the git facts are refreshed from the hosts' journals.
const GIT_REFRESH: Duration = Duration::from_secs(5);
/// How often the focused agent's screen is read while the Screen tab shows.
const SCREEN: Duration = Duration::from_millis(200);

/// The facts' source and when each was last read.
pub struct Live {
    pub ctx: Context,
    data_version: Option<i64>,
    read_at: Instant,
    git_at: Instant,
    screen_at: Instant,
    /// The session view, tab and focus the preview was read for.
    preview_of: Option<(String, Tab, Option<SessionView>)>,
}

impl Live {
    /// Opens the repository of `dir` as `owt` does, records dead hosts and
    /// admits queued sessions there is room for (as the static board does).
    pub fn open(dir: Option<&Path>) -> anyhow::Result<Live> {
        let mut ctx = Context::open(dir)?;
        list::reconcile_all(&ctx);
        ops::queue::admit_in(&mut ctx.store, &ctx.home, &mut |_| {});
        let now = Instant::now();
        Ok(Live {
            ctx,
            data_version: None,
            read_at: now,
            git_at: now,
            screen_at: now,
            preview_of: None,
        })
    }

    pub fn repo_name(&self) -> String {
        self.ctx.repo.name()
    }

    /// SQLite's count of commits by other connections to the store.
    fn data_version(&self) -> Option<i64> {
        self.ctx
            .store
            .conn()
            .query_row("PRAGMA data_version", [], |row| row.get(0))
            .ok()
    }

    /// Reads the sessions (git facts too, from the hosts' journals).
    pub fn read_all(&mut self, app: &mut App) {
        self.read(app, true);
    }

    fn read(&mut self, app: &mut App, refresh_git: bool) {
        self.data_version = self.data_version();
        self.read_at = Instant::now();
        if refresh_git {
            self.git_at = self.read_at;
        }
        match list::session_views_with(&self.ctx, refresh_git) {
            Ok(views) => app.set_sessions(views, now_ms()),
            Err(e) => app.fail(format!("reading the sessions failed: {e:#}")),
        }
    }

    /// What changed since the last tick, read into `app`; whether
    /// anything was read (the screen needs drawing).
    pub fn tick(&mut self, app: &mut App) -> bool {
        let mut changed = false;
        let git_due = self.git_at.elapsed() >= GIT_REFRESH;
        // Only a working (or starting) agent's status changes with time
        // alone (working → idle once its output stops): the others change
        // when a fact is written, which `data_version` shows.
        let time_bound = app
            .sessions
            .iter()
            .any(|s| matches!(s.status, Status::Working | Status::Starting));
        if git_due
            || (time_bound && self.read_at.elapsed() >= REDERIVE)
            || self.data_version() != self.data_version
        {
            let before = app.sessions.clone();
            self.read(app, git_due);
            changed |= app.sessions != before;
        }
        changed |= self.refresh_preview(app, false);
        changed
    }

    /// Reads the focused session's preview when due (`force`: now).
    pub fn refresh_preview(&mut self, app: &mut App, force: bool) -> bool {
        let Some(view) = app.focused().cloned() else {
            return false;
        };
        let key = (view.name.clone(), app.tab, Some(view.clone()));
        let same_focus = self
            .preview_of
            .as_ref()
            .is_some_and(|(name, tab, _)| *name == view.name && *tab == app.tab);
        let due = match app.tab {
            Tab::Screen => !same_focus || self.screen_at.elapsed() >= SCREEN,
            // The guard is computed anew: only when asked or the overlaps moved.
            Tab::Guard => {
                !same_focus
                    || self
                        .preview_of
                        .as_ref()
                        .and_then(|(_, _, v)| v.as_ref())
                        .map(|v| v.overlaps)
                        != Some(view.overlaps)
            }
            Tab::Diff | Tab::Activity => self.preview_of.as_ref() != Some(&key),
        };
        if !due && !force {
            return false;
        }
        self.screen_at = Instant::now();
        self.preview_of = Some(key);
        let preview = self.read_preview(&view, app.tab);
        let changed = preview != app.preview;
        if !same_focus {
            app.cursor = 0;
        }
        app.preview = preview;
        changed
    }

    fn read_preview(&self, view: &SessionView, tab: Tab) -> Preview {
        let (lines, anchors) = self.preview_text(view, tab).unwrap_or_else(|e| {
            (
                vec![vec![(Tone::Warn, format!("{}: {e:#}", tab.title()))]],
                Vec::new(),
            )
        });
        Preview {
            session: view.name.clone(),
            tab: Some(tab),
            lines,
            anchors,
        }
    }

    /// A tab's text, through the same `ops` call as its CLI verb.
    fn preview_text(
        &self,
        view: &SessionView,
        tab: Tab,
    ) -> anyhow::Result<(Vec<Styled>, Vec<Anchor>)> {
        let name = view.name.as_str();
        Ok(match tab {
            Tab::Screen => {
                let peek = agent::peek_coloured(&self.ctx, name)?;
                (preview_text::screen_lines(&peek.screen), Vec::new())
            }
            Tab::Diff => preview_text::diff_lines(&ops::review::diff(&self.ctx, name, None)?),
            Tab::Guard => {
                let report = ops::guard::report(&self.ctx, Some(name))?;
                (preview_text::guard_lines(&report, name), Vec::new())
            }
            Tab::Activity => {
                let comments = ops::review::comments(&self.ctx, name, false)?;
                // A failed run's output, as `owt checks NAME` shows it.
                let checks = match &view.checks {
                    Some(_) => Some(ops::checks::show(&self.ctx, name)?),
                    None => None,
                };
                let lines = preview_text::activity_lines(view, &comments, checks.as_ref());
                (lines, Vec::new())
            }
        })
    }
}
