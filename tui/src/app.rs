//! The control plane's state, pure: the sessions in their lanes (in a
//! stable order), the focused one, the preview, what the keyboard is
//! editing, the status line. [`crate::view`] draws it; [`crate::run`]
//! feeds it facts and keys.
//!
//! Invariants: rows keep their order inside a lane while statuses change
//! (each session keeps the place it was first seen in); the focus is a
//! session's name, so it follows that session when it changes lane.

use std::collections::HashMap;

use owt_protocol::{Lane, SessionView, Status};

use crate::form::NewForm;
use crate::keys::Command;

/// The preview's tabs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tab {
    Screen,
    Diff,
    Guard,
    Activity,
}

impl Tab {
    pub const ALL: [Tab; 4] = [Tab::Screen, Tab::Diff, Tab::Guard, Tab::Activity];

    pub fn title(self) -> &'static str {
        match self {
            Tab::Screen => "Screen",
            Tab::Diff => "Diff",
            Tab::Guard => "Guard",
            Tab::Activity => "Activity",
        }
    }

    pub fn next(self) -> Tab {
        let i = Tab::ALL.iter().position(|t| *t == self).unwrap_or(0);
        Tab::ALL[(i + 1) % Tab::ALL.len()]
    }
}

/// A section of the board: a lane, or the queued sessions (last).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    Lane(Lane),
    Queued,
}

impl Section {
    pub const ALL: [Section; 5] = [
        Section::Lane(Lane::NeedsYou),
        Section::Lane(Lane::ReadyToShip),
        Section::Lane(Lane::InFlight),
        Section::Lane(Lane::ReadyToClean),
        Section::Queued,
    ];

    pub fn of(view: &SessionView) -> Section {
        if view.status == Status::Queued {
            Section::Queued
        } else {
            Section::Lane(view.lane)
        }
    }

    pub fn title(self) -> &'static str {
        match self {
            Section::Lane(lane) => lane.title(),
            Section::Queued => "QUEUED",
        }
    }
}

/// How a piece of preview text is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    Plain,
    Dim,
    Heading,
    Added,
    Removed,
    Hunk,
    Warn,
    /// As the agent's terminal drew it (the Screen tab).
    Term(TermStyle),
}

/// A terminal cell's look, as the agent drew it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TermStyle {
    pub fg: TermColour,
    pub bg: TermColour,
    pub bold: bool,
    pub italic: bool,
    pub underline: bool,
    pub inverse: bool,
}

/// A terminal colour: the default, one of the 256, or RGB.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TermColour {
    #[default]
    Default,
    Indexed(u8),
    Rgb(u8, u8, u8),
}

/// One line of the preview, in toned pieces.
pub type Styled = Vec<(Tone, String)>;

/// The file and line (in the agent's file) a Diff line shows.
pub type Anchor = Option<(String, u32)>;

/// What the preview shows of the focused session's current tab.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Preview {
    /// The session and tab it was read for.
    pub session: String,
    pub tab: Option<Tab>,
    pub lines: Vec<Styled>,
    /// The Diff tab: for each line, the file and line in the agent's file
    /// it shows (what `c` comments on).
    pub anchors: Vec<Anchor>,
}

/// A single-line prompt's purpose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prompt {
    /// `t`: a message to the focused agent.
    Send,
    /// `N`: a note to every agent.
    Note,
    /// `c`: a review comment on the diff line under the cursor.
    Comment,
}

/// What the keyboard edits or answers now.
#[derive(Debug, Clone, PartialEq)]
pub enum Mode {
    Board,
    Help,
    Filter,
    Prompt {
        prompt: Prompt,
        text: String,
    },
    /// `y` does `command` to `session`; anything else cancels.
    Confirm {
        command: Command,
        session: String,
        question: Vec<String>,
    },
    New(NewForm),
}

/// The control plane's whole state.
#[derive(Debug, Clone)]
pub struct App {
    pub repo_name: String,
    /// Every session, in display order (section, then first seen).
    pub sessions: Vec<SessionView>,
    /// When each session was first seen (its place in its lane).
    seen: HashMap<String, u64>,
    next_seen: u64,
    /// The focused session's name.
    pub focus: Option<String>,
    pub tab: Tab,
    pub preview: Preview,
    /// The line of the preview under the cursor (and its scroll).
    pub cursor: usize,
    pub mode: Mode,
    pub filter: String,
    /// The status line: a sentence, and whether it is an error.
    pub status: Option<(String, bool)>,
    pub colour: bool,
    /// Unix ms the board was read at (ages are shown against it).
    pub now: i64,
}

impl App {
    pub fn new(repo_name: String, colour: bool) -> App {
        App {
            repo_name,
            sessions: Vec::new(),
            seen: HashMap::new(),
            next_seen: 0,
            focus: None,
            tab: Tab::Screen,
            preview: Preview::default(),
            cursor: 0,
            mode: Mode::Board,
            filter: String::new(),
            status: None,
            colour,
            now: 0,
        }
    }

    /// Takes a fresh reading of the sessions: each keeps its place in its
    /// lane; new ones go last; the focus stays on its session (or moves to
    /// the nearest row when that session is gone).
    pub fn set_sessions(&mut self, sessions: Vec<SessionView>, now: i64) {
        self.now = now;
        let old_index = self.focused_index();
        for view in &sessions {
            if !self.seen.contains_key(&view.name) {
                self.seen.insert(view.name.clone(), self.next_seen);
                self.next_seen += 1;
            }
        }
        self.seen
            .retain(|name, _| sessions.iter().any(|s| &s.name == name));
        let mut sessions = sessions;
        sessions.sort_by_key(|view| {
            let section = Section::ALL
                .iter()
                .position(|s| *s == Section::of(view))
                .unwrap_or(0);
            (section, self.seen.get(&view.name).copied().unwrap_or(0))
        });
        self.sessions = sessions;
        self.keep_focus(old_index);
    }

    /// The sessions shown (those the filter matches), in display order.
    pub fn visible(&self) -> Vec<&SessionView> {
        let needle = self.filter.to_lowercase();
        self.sessions
            .iter()
            .filter(|s| {
                needle.is_empty()
                    || [&s.name, &s.status_text, &s.provider, &s.task]
                        .iter()
                        .any(|field| field.to_lowercase().contains(&needle))
            })
            .collect()
    }

    pub fn focused(&self) -> Option<&SessionView> {
        let name = self.focus.as_deref()?;
        self.visible().into_iter().find(|s| s.name == name)
    }

    fn focused_index(&self) -> Option<usize> {
        let name = self.focus.as_deref()?;
        self.visible().iter().position(|s| s.name == name)
    }

    /// After the rows changed: the focused session if still shown, else
    /// the row at its old place (or the last), else none.
    pub fn keep_focus(&mut self, old_index: Option<usize>) {
        let visible = self.visible();
        if self.focused().is_some() {
            return;
        }
        let pick = old_index.unwrap_or(0).min(visible.len().saturating_sub(1));
        self.focus = visible.get(pick).map(|s| s.name.clone());
    }

    /// Moves the focus `delta` rows (clamped).
    pub fn move_focus(&mut self, delta: isize) {
        let visible = self.visible();
        if visible.is_empty() {
            self.focus = None;
            return;
        }
        let at = self.focused_index().unwrap_or(0) as isize;
        let to = (at + delta).clamp(0, visible.len() as isize - 1) as usize;
        let name = visible[to].name.clone();
        if self.focus.as_deref() != Some(&name) {
            self.cursor = 0;
        }
        self.focus = Some(name);
    }

    /// Moves the preview's cursor `delta` lines (clamped to its lines).
    pub fn move_cursor(&mut self, delta: isize) {
        let last = self.preview_lines().len().saturating_sub(1) as isize;
        self.cursor = (self.cursor as isize + delta).clamp(0, last) as usize;
    }

    /// Sets the filter; the focus stays if its session still matches.
    pub fn set_filter(&mut self, filter: String) {
        let old = self.focused_index();
        self.filter = filter;
        self.keep_focus(old);
    }

    /// Sessions in NEEDS YOU.
    pub fn needs_you(&self) -> usize {
        self.sessions
            .iter()
            .filter(|s| s.lane == Lane::NeedsYou)
            .count()
    }

    /// The names of the sessions in NEEDS YOU.
    pub fn needing_you(&self) -> std::collections::BTreeSet<String> {
        self.sessions
            .iter()
            .filter(|s| s.lane == Lane::NeedsYou)
            .map(|s| s.name.clone())
            .collect()
    }

    pub fn say(&mut self, line: impl Into<String>) {
        self.status = Some((line.into(), false));
    }

    pub fn fail(&mut self, line: impl Into<String>) {
        self.status = Some((line.into(), true));
    }

    /// The preview's lines for the focused session's current tab (empty
    /// while none was read for it).
    pub fn preview_lines(&self) -> &[Styled] {
        match self.focus.as_deref() {
            Some(name) if self.preview.session == name && self.preview.tab == Some(self.tab) => {
                &self.preview.lines
            }
            _ => &[],
        }
    }

    /// The file and line under the Diff tab's cursor.
    pub fn diff_anchor(&self) -> Option<&(String, u32)> {
        if self.tab != Tab::Diff || self.preview_lines().is_empty() {
            return None;
        }
        self.preview.anchors.get(self.cursor)?.as_ref()
    }
}
