//! Frames spoken on a session host's unix socket (`$OWT_HOME/run/<id>.sock`).
//!
//! Every frame is `kind: u8`, `len: u32` (little endian), then `len` bytes of
//! payload. This header never changes between protocol versions, so any
//! client can read a host's `Error` frame even when it speaks another version.
//! Data frames (`Input`, `Output`, `Redraw`) carry raw terminal bytes; control
//! frames carry one JSON document (the types below). See `docs/protocol.md`.

use std::io::{self, Read, Write};

use serde::{Deserialize, Serialize};

mod acp;
pub use acp::*;

/// Bumped on every incompatible change of the frames or their payloads.
pub const HOST_PROTOCOL_VERSION: u32 = 1;

/// Largest payload a peer accepts; larger frames are a protocol error.
pub const MAX_FRAME_LEN: u32 = 16 * 1024 * 1024;

/// Bytes of a frame header.
pub const HEADER_LEN: usize = 5;

/// The kind byte of a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum FrameKind {
    // client → host
    /// [`Hello`]: the first frame of every connection.
    Hello = 0x01,
    /// Raw bytes typed into the agent's terminal (attached clients).
    Input = 0x02,
    /// [`Resize`].
    Resize = 0x03,
    /// [`SendText`]: text (then Enter) as if typed.
    Send = 0x04,
    /// [`PeekRequest`] → `Screen`.
    Peek = 0x05,
    /// Empty → `Status`.
    StatusRequest = 0x06,
    /// [`Terminate`] → `Ok`; the host then hangs up the agent.
    Terminate = 0x07,
    /// Empty: an attached client leaves; the host closes the connection.
    Detach = 0x08,
    /// Empty → `Journal`: what may have changed in the agent's worktree.
    JournalRequest = 0x09,
    /// [`PermissionAnswer`] → `Answered` (ACP sessions): answer the
    /// agent's pending permission request.
    Answer = 0x0A,
    /// Empty → `Ok` (ACP sessions): cancel the turn in progress.
    Cancel = 0x0B,
    /// [`TerminalNotice`] (a direct attach whose `Welcome` said
    /// `notices`; no reply): a desktop notification the host writes to the
    /// client's terminal between two of the agent's escape sequences.
    Notice = 0x0C,

    // host → client
    /// [`Welcome`]: the answer to a compatible `Hello`.
    Welcome = 0x81,
    /// Raw bytes the agent wrote.
    Output = 0x82,
    /// Raw bytes that repaint the whole current screen (sent on attach and
    /// instead of output a slow client missed).
    Redraw = 0x83,
    /// [`ScreenView`].
    Screen = 0x84,
    /// [`HostStatus`].
    Status = 0x85,
    /// Empty: a request was carried out.
    Ok = 0x86,
    /// [`AgentExit`]: the agent ended; the host closes soon after.
    Exited = 0x87,
    /// [`JournalView`].
    Journal = 0x88,
    /// [`AcpEvent`] (ACP sessions, `Events` role): what happened in the
    /// conversation, as it happens.
    Event = 0x89,
    /// [`TranscriptView`] (ACP sessions): the conversation so far, the first
    /// frame after `Welcome` on an `Events` connection.
    Transcript = 0x8A,
    /// [`PermissionAnswered`]: the answer an `Answer` gave.
    Answered = 0x8B,
    /// Empty: a direct attach ended on the host's side (the user typed the
    /// detach keys, the client asked with `Detach`, or the terminal hung
    /// up); the host has closed its copy of the terminal and writes to it
    /// no more. Only a client whose `Welcome` said `direct` gets it.
    Detached = 0x8C,
    /// [`HostError`]: the request failed (or the versions differ); for a
    /// `Hello`, the host closes the connection after it.
    Error = 0x8F,
}

impl FrameKind {
    pub fn from_u8(b: u8) -> Option<FrameKind> {
        use FrameKind::*;
        Some(match b {
            0x01 => Hello,
            0x02 => Input,
            0x03 => Resize,
            0x04 => Send,
            0x05 => Peek,
            0x06 => StatusRequest,
            0x07 => Terminate,
            0x08 => Detach,
            0x09 => JournalRequest,
            0x0A => Answer,
            0x0B => Cancel,
            0x0C => Notice,
            0x81 => Welcome,
            0x82 => Output,
            0x83 => Redraw,
            0x84 => Screen,
            0x85 => Status,
            0x86 => Ok,
            0x87 => Exited,
            0x88 => Journal,
            0x89 => Event,
            0x8A => Transcript,
            0x8B => Answered,
            0x8C => Detached,
            0x8F => Error,
            _ => return None,
        })
    }
}

/// What a connection is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// A terminal: gets a redraw, then output; sends input and resizes.
    Attach,
    /// Requests and replies only (send, peek, status, terminate).
    Control,
    /// ACP sessions: a `Transcript`, then an `Event` per change of the
    /// conversation; requests and replies as `Control`. (A terminal
    /// session's host refuses it.)
    Events,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hello {
    pub version: u32,
    pub role: Role,
    /// The client's terminal size (attach); 0 when unknown.
    #[serde(default)]
    pub rows: u16,
    #[serde(default)]
    pub cols: u16,
    /// Attach only: the client passes its terminal with this hello (one
    /// descriptor, `SCM_RIGHTS`, on the hello's bytes) for the host to read
    /// keys from and write output to itself. Absent: relayed frames.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direct: Option<DirectAttach>,
}

/// What a direct attach asks of the host besides the terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DirectAttach {
    /// The detach prefix byte (`<prefix> d` detaches, `<prefix> <prefix>`
    /// types one prefix), now scanned by the host.
    pub detach_prefix: u8,
    /// The client will send `Notice` frames for the terminal: the host
    /// follows the escape sequences of what it writes there. An older
    /// client leaves it out (false).
    #[serde(default, skip_serializing_if = "is_false")]
    pub notices: bool,
}

/// A desktop notification through the terminal (a `Notice` frame).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TerminalNotice {
    pub style: NoticeStyle,
    /// A line: `owt: fix-login needs you`.
    pub title: String,
    /// A line: the status and what it says (`blocked`, `needs-input: …`).
    pub body: String,
}

/// The escape sequence a [`TerminalNotice`] is written as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NoticeStyle {
    /// `ESC ] 9 ; title: body BEL` (iTerm2, WezTerm, Windows Terminal, kitty, foot, …).
    Osc9,
    /// `ESC ] 777 ; notify ; title ; body BEL` (urxvt, VTE terminals: GNOME Terminal, Tilix, …; WezTerm, foot, Ghostty).
    Osc777,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Welcome {
    pub version: u32,
    pub host_pid: u32,
    pub agent_pid: Option<u32>,
    pub session_name: String,
    pub short_id: String,
    /// The host took the terminal the hello passed: it reads the keys and
    /// writes the output itself; no `Output`/`Redraw` frames follow. False
    /// (or absent, from an older host): relayed frames as usual.
    #[serde(default, skip_serializing_if = "is_false")]
    pub direct: bool,
    /// The host took the terminal and its hello asked for `notices`: it
    /// takes `Notice` frames. False (or absent, from an older host): send
    /// none.
    #[serde(default, skip_serializing_if = "is_false")]
    pub notices: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resize {
    pub rows: u16,
    pub cols: u16,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SendText {
    /// Typed with its control characters neutralised (shown escaped, as
    /// `\x1b`); text with a newline goes as one bracketed paste.
    pub text: String,
    /// Press Enter after the text.
    pub enter: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PeekRequest {
    /// Include the lines scrolled off the top.
    pub scrollback: bool,
    /// With `scrollback`: the first line of the page of scrollback wanted
    /// (0-based, oldest first). A host answers at most
    /// [`SCROLLBACK_PAGE_BYTES`] of scrollback a frame and says where the
    /// next page starts (`ScreenView::scrollback_next`).
    #[serde(default)]
    pub scrollback_from: usize,
    /// Also send the screen with its colours ([`ScreenView::formatted`]);
    /// an older host ignores it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub formatted: bool,
}

/// Bytes of scrollback text (JSON-encoded) one `Screen` frame holds at
/// most: a page, well under [`MAX_FRAME_LEN`] with the visible lines.
pub const SCROLLBACK_PAGE_BYTES: usize = 4 * 1024 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Terminate {
    /// Time between the hang-up and the kill.
    pub grace_ms: u64,
}

/// The agent's screen as text (`owt peek`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct ScreenView {
    pub rows: u16,
    pub cols: u16,
    /// Zero-based (row, col).
    pub cursor: (u16, u16),
    pub alternate_screen: bool,
    /// Visible lines, trailing blanks trimmed.
    pub lines: Vec<String>,
    /// Lines above the screen, oldest first (only when asked for).
    pub scrollback: Vec<String>,
    /// Where the next page of the scrollback starts when this frame did
    /// not hold the rest of it (ask again with `scrollback_from`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scrollback_next: Option<usize>,
    /// The visible screen as terminal output that draws it, colours and
    /// attributes kept (vt100's `contents_formatted`); only when asked for
    /// (`PeekRequest::formatted`), and only from a live terminal session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub formatted: Option<String>,
}

impl ScreenView {
    /// The visible lines joined, without trailing empty lines.
    pub fn text(&self) -> String {
        let end = self
            .lines
            .iter()
            .rposition(|l| !l.trim().is_empty())
            .map_or(0, |i| i + 1);
        let mut out = String::new();
        for line in &self.scrollback {
            out.push_str(line);
            out.push('\n');
        }
        for line in &self.lines[..end] {
            out.push_str(line);
            out.push('\n');
        }
        out
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentExit {
    pub code: Option<i32>,
    pub signal: Option<String>,
}

/// A host's work journal of its agent's worktree (see owt's
/// `guard::journal`): every path that may differ from HEAD, valid while the
/// index and HEAD are still the ones named here.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JournalView {
    /// False while the host has no trustworthy journal (starting, just
    /// after a commit, no repository, events lost): walk the worktree.
    pub ready: bool,
    /// The index file the journal holds for (inode, size, mtime, ctime).
    pub index: String,
    /// HEAD's tree the journal holds for (`None`: unborn).
    pub head_tree: Option<String>,
    /// Paths relative to the worktree (files or folders) that may differ
    /// from HEAD; every other path matches it.
    pub paths: Vec<String>,
}

impl JournalView {
    /// The answer of a host with no journal it can vouch for.
    pub fn not_ready() -> JournalView {
        JournalView {
            ready: false,
            index: String::new(),
            head_tree: None,
            paths: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostStatus {
    pub host_pid: u32,
    pub agent_pid: Option<u32>,
    /// `None` while the agent runs.
    pub exit: Option<AgentExit>,
    pub attached_clients: u32,
    pub rows: u16,
    pub cols: u16,
    /// Milliseconds since the Unix epoch.
    pub started_at: i64,
    pub last_output_at: Option<i64>,
    pub last_input_at: Option<i64>,
    /// The screen rules' verdict (`working`, `waiting`, `blocked`, `idle`).
    pub screen_signal: Option<String>,
}

/// How a session's host talks to its agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "kebab-case")]
pub enum Transport {
    /// The agent's own terminal UI in a PTY; status read from its screen,
    /// hooks and notifications.
    #[default]
    Pty,
    /// The Agent Client Protocol: the host runs the agent's ACP server and
    /// is its client; status comes from the protocol (see docs/acp.md).
    Acp,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostError {
    pub message: String,
}

/// `owt peek --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct PeekView {
    pub session: String,
    /// Whether the screen came from a live host (else from the final
    /// screen the host saved when the agent exited).
    pub live: bool,
    pub screen: ScreenView,
    /// What the permission dialog on screen asks (a terminal agent's, as
    /// owt reads it), when one is up: what `owt approve` / `owt deny`
    /// answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub dialog: Option<String>,
}

/// A frame as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub kind: FrameKind,
    pub payload: Vec<u8>,
}

impl Frame {
    /// The JSON payload decoded as `T`.
    pub fn json<T: serde::de::DeserializeOwned>(&self) -> io::Result<T> {
        serde_json::from_slice(&self.payload).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("bad {:?} frame: {e}", self.kind),
            )
        })
    }
}

/// Encodes one frame header.
pub fn header(kind: FrameKind, len: usize) -> [u8; HEADER_LEN] {
    let len = len as u32;
    let l = len.to_le_bytes();
    [kind as u8, l[0], l[1], l[2], l[3]]
}

/// One frame as bytes.
pub fn encode(kind: FrameKind, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + payload.len());
    out.extend_from_slice(&header(kind, payload.len()));
    out.extend_from_slice(payload);
    out
}

/// One frame with a JSON payload as bytes.
pub fn encode_json<T: Serialize>(kind: FrameKind, value: &T) -> Vec<u8> {
    // Serializing these plain structs cannot fail.
    let payload = serde_json::to_vec(value).unwrap_or_default();
    encode(kind, &payload)
}

/// Writes one frame, in one write: a reader never wakes for half of it.
pub fn write_frame(w: &mut impl Write, kind: FrameKind, payload: &[u8]) -> io::Result<()> {
    w.write_all(&encode(kind, payload))?;
    w.flush()
}

/// Writes one frame with a JSON payload.
pub fn write_json<T: Serialize>(w: &mut impl Write, kind: FrameKind, value: &T) -> io::Result<()> {
    let bytes = encode_json(kind, value);
    w.write_all(&bytes)?;
    w.flush()
}

/// Reads one frame; `Ok(None)` on a clean end of stream before a header.
pub fn read_frame(r: &mut impl Read) -> io::Result<Option<Frame>> {
    let mut head = [0u8; HEADER_LEN];
    let mut got = 0;
    while got < HEADER_LEN {
        match r.read(&mut head[got..]) {
            Ok(0) if got == 0 => return Ok(None),
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    let kind = FrameKind::from_u8(head[0]).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("unknown frame kind 0x{:02x}", head[0]),
        )
    })?;
    let len = u32::from_le_bytes([head[1], head[2], head[3], head[4]]);
    if len > MAX_FRAME_LEN {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("frame of {len} bytes is larger than {MAX_FRAME_LEN}"),
        ));
    }
    let mut payload = vec![0u8; len as usize];
    r.read_exact(&mut payload)?;
    Ok(Some(Frame { kind, payload }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip() {
        let mut buf = Vec::new();
        write_frame(&mut buf, FrameKind::Output, b"hello\x1b[0m").unwrap();
        write_json(&mut buf, FrameKind::Resize, &Resize { rows: 24, cols: 80 }).unwrap();
        let mut r = &buf[..];
        let f = read_frame(&mut r).unwrap().unwrap();
        assert_eq!(f.kind, FrameKind::Output);
        assert_eq!(f.payload, b"hello\x1b[0m");
        let f = read_frame(&mut r).unwrap().unwrap();
        assert_eq!(f.json::<Resize>().unwrap(), Resize { rows: 24, cols: 80 });
        assert!(read_frame(&mut r).unwrap().is_none());
    }

    #[test]
    fn unknown_kind_is_an_error() {
        let buf = [0x42u8, 0, 0, 0, 0];
        let err = read_frame(&mut &buf[..]).unwrap_err();
        assert!(err.to_string().contains("unknown frame kind 0x42"));
    }
}
