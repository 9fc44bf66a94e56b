//! Frames spoken between a machine and a remote over SSH: the bridge
//! (`ssh -T HOST owt __bridge serve`), one per remote.
//!
//! The header is the session host's (`kind: u8`, `len: u32` little endian,
//! then `len` bytes; see [`crate::host`]), so the same reader and writer
//! serve both. The local side (the bridge keeper, `owt __bridge keep`)
//! speaks first ([`BridgeHello`]); the remote answers [`BridgeWelcome`], or
//! [`BridgeError`] and closes when the versions differ. Then:
//!
//! - the remote pushes [`FactsPush`] whenever a session's stored facts
//!   change (a full list first, then what changed), and [`SnapshotsPush`]
//!   when it wrote new working-state commits under
//!   `refs/owt/snapshots/<session>` (the local side then `git fetch`es them);
//! - the local side opens *channels* to a session's host ([`ChannelOpen`]);
//!   each channel carries the host protocol's bytes unchanged in `Data`
//!   frames (`channel: u32` little endian, then the bytes), so attach, send,
//!   peek, terminate and journal requests work as on the remote machine;
//!   either side ends a channel with [`ChannelClose`];
//! - `Ping` (local → remote) is answered by `Pong`: a bridge that stops
//!   answering is treated as gone.
//!
//! See `docs/remote.md` and `docs/protocol.md`.

use serde::{Deserialize, Serialize};

use crate::host::{FrameKind, HEADER_LEN, MAX_FRAME_LEN};

/// Bumped on every incompatible change of these frames or payloads.
pub const BRIDGE_PROTOCOL_VERSION: u32 = 1;

/// The kind byte of a bridge frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum BridgeKind {
    // local → remote
    /// [`BridgeHello`]: the first frame.
    Hello = 0x41,
    /// [`ChannelOpen`].
    Open = 0x42,
    /// Empty → `Pong`.
    Ping = 0x45,

    // both ways
    /// `channel: u32` (little endian), then host-protocol bytes.
    Data = 0x43,
    /// [`ChannelClose`].
    Close = 0x44,

    // remote → local
    /// [`BridgeWelcome`].
    Welcome = 0xC1,
    /// [`FactsPush`].
    Facts = 0xC2,
    /// [`SnapshotsPush`].
    Snapshots = 0xC3,
    /// Empty: the answer to `Ping`.
    Pong = 0xC4,
    /// [`BridgeError`]; after a refused `Hello` the remote closes.
    Error = 0xCF,
}

impl BridgeKind {
    pub fn from_u8(b: u8) -> Option<BridgeKind> {
        use BridgeKind::*;
        Some(match b {
            0x41 => Hello,
            0x42 => Open,
            0x43 => Data,
            0x44 => Close,
            0x45 => Ping,
            0xC1 => Welcome,
            0xC2 => Facts,
            0xC3 => Snapshots,
            0xC4 => Pong,
            0xCF => Error,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BridgeHello {
    /// [`BRIDGE_PROTOCOL_VERSION`] of the local owt.
    pub version: u32,
    /// The local owt's version (`owt version`), for messages.
    pub owt_version: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BridgeWelcome {
    pub version: u32,
    pub owt_version: String,
    /// The remote clone's main checkout (absolute, on the remote).
    pub repository: String,
    /// The remote's clock (Unix ms) when it answered.
    pub now: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BridgeError {
    pub message: String,
}

/// One stored fact of a remote session, as the remote's store holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RemoteFact {
    pub kind: String,
    pub value: serde_json::Value,
    /// The remote's clock (Unix ms).
    pub observed_at: i64,
}

/// A session of the remote clone, with its facts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RemoteSession {
    /// The name on the remote (locally it is `REMOTE:name`).
    pub name: String,
    pub task: String,
    pub branch: String,
    pub base: String,
    /// Absolute, on the remote.
    pub worktree: String,
    pub provider: String,
    /// `worktree` or `branch`.
    pub kind: String,
    /// The remote's clock (Unix ms).
    pub created_at: i64,
    pub facts: Vec<RemoteFact>,
}

/// The remote's sessions (all of them when `full`, else those that changed,
/// plus the names of those that are gone).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FactsPush {
    /// The remote's clock (Unix ms) when it read them: the local side
    /// shifts every time by its own clock minus this.
    pub now: i64,
    pub full: bool,
    pub sessions: Vec<RemoteSession>,
    /// Sessions deleted on the remote since the last push.
    #[serde(default)]
    pub removed: Vec<String>,
}

/// A working-state commit written on the remote.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SnapshotRef {
    pub session: String,
    /// The commit under `refs/owt/snapshots/<session>`: tree = the
    /// session's snapshot, parent = its HEAD; `None` when the ref was
    /// removed.
    pub commit: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SnapshotsPush {
    pub refs: Vec<SnapshotRef>,
    /// The remote's clock (Unix ms) when it wrote them (for latency figures).
    pub written_at: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChannelOpen {
    pub channel: u32,
    /// The session on the remote whose host the channel reaches.
    pub session: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChannelClose {
    pub channel: u32,
    /// Why the other side ended it (an error), if it did not simply close.
    #[serde(default)]
    pub reason: Option<String>,
}

/// `owt --json __bridge info` on a remote: what `owt remote check` asks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RemoteInfo {
    /// The remote owt's version.
    pub version: String,
    pub bridge_protocol: u32,
    /// The clone's main checkout (absolute), when `-C PATH` is one.
    pub repository: Option<String>,
    /// Why it is not, otherwise.
    pub error: Option<String>,
    /// The base asked about, and its tip there.
    pub base: Option<String>,
    pub base_tip: Option<String>,
}

/// `owt --json __bridge commit NAME` on a remote: the session's work
/// committed there before it is fetched and merged here.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RemoteCommit {
    pub session: String,
    pub branch: String,
    pub base: String,
    /// The commit made of its uncommitted work, if there was any (never
    /// with `--dry-run`).
    pub committed: Option<String>,
    /// The branch's tip afterwards.
    pub tip: String,
    /// Uncommitted paths (with `--dry-run`: what would be committed).
    pub dirty: Vec<String>,
}

/// A bridge frame as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BridgeFrame {
    pub kind: BridgeKind,
    pub payload: Vec<u8>,
}

impl BridgeFrame {
    /// The JSON payload decoded as `T`.
    pub fn json<T: serde::de::DeserializeOwned>(&self) -> std::io::Result<T> {
        serde_json::from_slice(&self.payload).map_err(|e| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("bad {:?} bridge frame: {e}", self.kind),
            )
        })
    }

    /// A `Data` frame's channel and bytes.
    pub fn data(&self) -> std::io::Result<(u32, &[u8])> {
        if self.payload.len() < 4 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "a bridge Data frame shorter than its channel number",
            ));
        }
        let channel = u32::from_le_bytes([
            self.payload[0],
            self.payload[1],
            self.payload[2],
            self.payload[3],
        ]);
        Ok((channel, &self.payload[4..]))
    }
}

/// One frame as bytes.
pub fn encode(kind: BridgeKind, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + payload.len());
    let len = (payload.len() as u32).to_le_bytes();
    out.push(kind as u8);
    out.extend_from_slice(&len);
    out.extend_from_slice(payload);
    out
}

/// One frame with a JSON payload as bytes.
pub fn encode_json<T: Serialize>(kind: BridgeKind, value: &T) -> Vec<u8> {
    // Serializing these plain structs cannot fail.
    encode(kind, &serde_json::to_vec(value).unwrap_or_default())
}

/// A `Data` frame for `channel`.
pub fn encode_data(channel: u32, bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + 4 + bytes.len());
    out.push(BridgeKind::Data as u8);
    out.extend_from_slice(&((bytes.len() + 4) as u32).to_le_bytes());
    out.extend_from_slice(&channel.to_le_bytes());
    out.extend_from_slice(bytes);
    out
}

/// Reads one frame; `Ok(None)` on a clean end of stream before a header.
pub fn read_frame(r: &mut impl std::io::Read) -> std::io::Result<Option<BridgeFrame>> {
    use std::io::{Error, ErrorKind};
    let mut head = [0u8; HEADER_LEN];
    let mut got = 0;
    while got < HEADER_LEN {
        match r.read(&mut head[got..]) {
            Ok(0) if got == 0 => return Ok(None),
            Ok(0) => return Err(ErrorKind::UnexpectedEof.into()),
            Ok(n) => got += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    let kind = match BridgeKind::from_u8(head[0]) {
        Some(kind) => kind,
        None => {
            // A session host's frame here means the other end is not a
            // bridge (or speaks something else entirely).
            let what = match FrameKind::from_u8(head[0]) {
                Some(host) => format!("a session-host frame ({host:?})"),
                None => format!("unknown frame kind 0x{:02x}", head[0]),
            };
            return Err(Error::new(
                ErrorKind::InvalidData,
                format!("not an owt bridge: {what}"),
            ));
        }
    };
    let len = u32::from_le_bytes([head[1], head[2], head[3], head[4]]);
    if len > MAX_FRAME_LEN {
        return Err(Error::new(
            ErrorKind::InvalidData,
            format!("bridge frame of {len} bytes is larger than {MAX_FRAME_LEN}"),
        ));
    }
    let mut payload = vec![0u8; len as usize];
    r.read_exact(&mut payload)?;
    Ok(Some(BridgeFrame { kind, payload }))
}

/// What a remote answers a [`BridgeHello`] with (pure; the remote side of
/// the handshake).
pub fn answer_hello(
    hello: &BridgeHello,
    owt_version: &str,
    repository: &str,
    now: i64,
) -> Result<BridgeWelcome, BridgeError> {
    if hello.version != BRIDGE_PROTOCOL_VERSION {
        return Err(BridgeError {
            message: mismatch_message(
                BRIDGE_PROTOCOL_VERSION,
                owt_version,
                hello.version,
                &hello.owt_version,
            ),
        });
    }
    Ok(BridgeWelcome {
        version: BRIDGE_PROTOCOL_VERSION,
        owt_version: owt_version.to_string(),
        repository: repository.to_string(),
        now,
    })
}

/// The message of a refused handshake, said from the remote's side.
pub fn mismatch_message(
    remote_version: u32,
    remote_owt: &str,
    local_version: u32,
    local_owt: &str,
) -> String {
    format!(
        "protocol mismatch: the remote's owt {remote_owt} speaks owt bridge protocol version {remote_version}, this machine's owt {local_owt} speaks version {local_version}; install the same owt on both (`owt remote install NAME` copies this one)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_frames_round_trip_with_their_channel() {
        let bytes = encode_data(7, b"\x01hello");
        let frame = read_frame(&mut &bytes[..]).unwrap().unwrap();
        assert_eq!(frame.kind, BridgeKind::Data);
        assert_eq!(frame.data().unwrap(), (7, &b"\x01hello"[..]));
    }

    #[test]
    fn a_session_host_frame_is_not_a_bridge() {
        let bytes = crate::host::encode(FrameKind::Welcome, b"{}");
        let err = read_frame(&mut &bytes[..]).unwrap_err();
        assert!(err.to_string().contains("not an owt bridge"), "{err}");
    }

    #[test]
    fn another_version_is_refused_with_both_versions_named() {
        let hello = BridgeHello {
            version: BRIDGE_PROTOCOL_VERSION + 1,
            owt_version: "9.9.9".into(),
        };
        let err = answer_hello(&hello, "0.1.0", "/r", 5).unwrap_err();
        assert_eq!(
            err.message,
            format!(
                "protocol mismatch: the remote's owt 0.1.0 speaks owt bridge protocol version {BRIDGE_PROTOCOL_VERSION}, this machine's owt 9.9.9 speaks version {}; install the same owt on both (`owt remote install NAME` copies this one)",
                BRIDGE_PROTOCOL_VERSION + 1
            )
        );
        let same = BridgeHello {
            version: BRIDGE_PROTOCOL_VERSION,
            owt_version: "0.1.0".into(),
        };
        assert_eq!(answer_hello(&same, "0.1.0", "/r", 5).unwrap().now, 5);
    }
}
