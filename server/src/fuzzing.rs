//! The invariants behind the fuzz targets in `fuzz/`, one function per
//! target. Each takes arbitrary bytes and panics when an invariant breaks.
//! `cargo +nightly fuzz run <target>` calls them from
//! `fuzz/fuzz_targets/<target>.rs`; the unit tests below replay the committed
//! corpus `fuzz/corpus/<target>/` through the same functions on stable Rust,
//! so every input the fuzzer ever needed is a regression test. See
//! `docs/fuzzing.md`.
//!
//! Not an API: hidden from the docs, used only by the fuzz targets and the
//! tests. Invariants: nothing here talks to the outside world except
//! [`config`], which writes its files into a private temporary folder; the
//! LSP checks live in `lsp::fuzzing`, since only `lsp` knows LSP types, and
//! the ACP ones in `acp::fuzzing`.

use std::path::{Path, PathBuf};

use owt_protocol::host::{self as proto, FrameKind, HOST_PROTOCOL_VERSION};

use crate::config::{self, ConfigError};
use crate::names::{self, MAX_SLUG};
use crate::session::host::{self, Request};

/// Target `lsp_framing`: the guard in front of the LSP transport
/// ([`crate::lsp::framing::FrameScanner`]), then what the server does with
/// the frames it lets through: JSON-RPC decoding, params decoding, position
/// conversion.
///
/// The first byte chooses how the rest is split into reads (0: one read).
/// Invariants: nothing panics; every call either waits for more input or
/// consumes bytes; bytes are conserved (forwarded + dropped + pending =
/// input); every forwarded frame is one tower-lsp-server's decoder accepts —
/// a canonical `Content-Length: N\r\n\r\n` header and a UTF-8 body that is a
/// JSON-RPC request, notification or response (its decoder ends the session
/// at the first message it cannot read); the frames do not depend on how
/// the input was split; positions convert to char boundaries inside the text.
pub fn lsp_framing(data: &[u8]) {
    crate::lsp::fuzzing::lsp_framing(data);
}

/// Target `acp_framing`: the bytes an ACP peer (an agent on an ACP
/// session host's pipe, an editor on `owt acp`'s stdin) sends, through
/// the line reader ([`crate::acp::rpc::LineReader`]), the JSON-RPC decoder
/// and the readers of ACP messages, into a transcript.
///
/// The first byte chooses the reader's buffer size (how reads split).
/// Invariants: nothing panics; bytes are conserved (every byte is in a
/// line, a line skipped as too long, or a newline); every line decodes to
/// a message that re-encodes as one line decoding to the same message, or
/// to an error whose response is a JSON-RPC parse or invalid-request
/// error; updates, permission requests (and answers to them), prompt and
/// initialize results are read without panicking; the transcript stays
/// bounded, renders and replays.
pub fn acp_framing(data: &[u8]) {
    crate::acp::fuzzing::acp_framing(data);
}

/// Target `host_frames`: the session host's frame decoder.
///
/// The input is a byte stream on a host's socket. Invariants: nothing
/// panics or allocates without bound; every frame read consumed exactly its
/// header and payload and re-encodes to the same bytes; a stream stops only
/// at its end, a truncated frame or a bad header; the host decodes the first
/// frame as a hello and the rest as requests, and applying them to a screen
/// model like the host's works; clients decode every host-to-client frame
/// without panicking.
pub fn host_frames(data: &[u8]) {
    let frames = read_frames(data);
    host_side(&frames);
    client_side(&frames);
}

/// The frames of a byte stream, each checked to re-encode to the bytes it
/// consumed, up to the stream's end or its first bad frame.
fn read_frames(data: &[u8]) -> Vec<proto::Frame> {
    let mut rest = data;
    let mut frames = Vec::new();
    loop {
        let before = rest;
        match proto::read_frame(&mut rest) {
            Ok(Some(frame)) => {
                let used = &before[..before.len() - rest.len()];
                assert_eq!(
                    used,
                    proto::encode(frame.kind, &frame.payload),
                    "a frame read is not the bytes it consumed"
                );
                frames.push(frame);
            }
            Ok(None) => {
                assert!(rest.is_empty(), "a clean end before the input's end");
                break;
            }
            Err(e) => {
                assert!(
                    matches!(
                        e.kind(),
                        std::io::ErrorKind::InvalidData | std::io::ErrorKind::UnexpectedEof
                    ),
                    "unexpected error {e}"
                );
                break;
            }
        }
    }
    frames
}

/// The host's side: a hello, then requests, applied to a screen model.
fn host_side(frames: &[proto::Frame]) {
    let mut frames_iter = frames.iter();
    if let Some(Ok(hello)) = frames_iter.next().map(host::decode_hello) {
        assert_eq!(hello.version, HOST_PROTOCOL_VERSION);
        assert!(hello.rows <= host::MAX_ROWS && hello.cols <= host::MAX_COLS);
        let mut parser = vt100::Parser::new(24, 80, crate::session::DEFAULT_SCROLLBACK);
        if hello.role == proto::Role::Attach && hello.rows > 0 && hello.cols > 0 {
            parser.screen_mut().set_size(hello.rows, hello.cols);
        }
        for frame in frames_iter {
            match host::decode_request(frame) {
                Request::Resize { rows, cols } => {
                    assert!(
                        (1..=host::MAX_ROWS).contains(&rows)
                            && (1..=host::MAX_COLS).contains(&cols),
                        "resize to {cols}x{rows}"
                    );
                    parser.screen_mut().set_size(rows, cols);
                }
                Request::Peek(peek) => {
                    let view = host::screen_view(&mut parser, peek.scrollback);
                    assert_eq!((view.rows, view.cols), parser.screen().size());
                    assert_eq!(view.lines.len(), usize::from(view.rows));
                    let _ = view.text();
                }
                Request::Notice(notice) => {
                    // One escape sequence whatever the text: the stream is
                    // at the ground state after it, and nowhere inside.
                    let bytes = crate::session::notice::encode(&notice);
                    let mut ground = crate::session::notice::Ground::new();
                    ground.feed(&bytes[..1]);
                    assert_eq!(ground.feed_to_ground(&bytes[1..]), Some(bytes.len() - 1));
                }
                Request::Invalid(message) => assert!(!message.is_empty()),
                Request::Detach => break,
                Request::Input(_)
                | Request::Send(_)
                | Request::Status
                | Request::Terminate(_)
                | Request::Journal => {}
            }
        }
    }
}

/// The clients' side (`session::client`, `session::attach`).
fn client_side(frames: &[proto::Frame]) {
    for frame in frames {
        match frame.kind {
            FrameKind::Welcome => drop(frame.json::<proto::Welcome>()),
            FrameKind::Journal => drop(frame.json::<proto::JournalView>()),
            FrameKind::Screen => {
                if let Ok(view) = frame.json::<proto::ScreenView>() {
                    let _ = view.text();
                }
            }
            FrameKind::Status => drop(frame.json::<proto::HostStatus>()),
            FrameKind::Exited => drop(frame.json::<proto::AgentExit>()),
            FrameKind::Error => drop(frame.json::<proto::HostError>()),
            _ => {}
        }
    }
}

/// Target `config`: [`config::parse_file`] and [`config::load_files`], for
/// owt's files and the seed's translated `.worktreerc.toml`.
///
/// The input is the repository's `.owt.toml`, then optionally a NUL byte
/// and the user's `config.toml`. Invariants: nothing panics; a file's error
/// names that file and a line inside it; `load_files` fails exactly when a
/// file cannot be read as UTF-8 or does not parse on its own (and then names
/// the first such file it reads, the user's first), except that two valid
/// files may still conflict once merged; a valid configuration yields a
/// worktree folder whose session paths stay inside it.
pub fn config(data: &[u8]) {
    let (repo_bytes, user_bytes) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], Some(&data[i + 1..])),
        None => (data, None),
    };
    let dir = ScratchDir::new();
    let repo_path = dir.0.join(".owt.toml");
    let user_path = dir.0.join("config.toml");
    std::fs::write(&repo_path, repo_bytes).expect("writing the repository config");
    if let Some(bytes) = user_bytes {
        std::fs::write(&user_path, bytes).expect("writing the user config");
    }

    // Files in the order load_files reads them (lowest priority first) and
    // whether each is valid on its own.
    let mut read_order = Vec::new();
    if let Some(bytes) = user_bytes {
        read_order.push((&user_path, bytes));
    }
    read_order.push((&repo_path, repo_bytes));
    let mut first_failure = None;
    for (path, bytes) in &read_order {
        let failure = match std::str::from_utf8(bytes) {
            Err(_) => Some("read"),
            Ok(text) => (!check_parse_file(path, text)).then_some("invalid"),
        };
        if first_failure.is_none() {
            first_failure = failure.map(|what| (what, *path));
        }
    }

    let loaded = config::load_files(&[repo_path.clone(), user_path.clone()]);
    match (first_failure, loaded) {
        (None, Ok(loaded)) => {
            let mut sources = vec![repo_path.clone()];
            if user_bytes.is_some() {
                sources.push(user_path.clone());
            }
            assert_eq!(loaded.sources, sources);
            for (key, origin) in &loaded.origins {
                assert!(sources.contains(origin), "{key} comes from {origin:?}");
            }
            let base = loaded.config.base_directory(Path::new("/src/app"));
            let path = names::worktree_path(&base, &names::slugify("../../x"));
            assert_eq!(path.parent(), Some(base.as_path()));
            let _ = loaded.config.detach_byte();
        }
        (None, Err(ConfigError::Merged(message))) => {
            assert!(
                user_bytes.is_some(),
                "one valid file failed to load: {message}"
            );
        }
        (Some(("read", path)), Err(ConfigError::Read { path: p, .. })) => assert_eq!(&p, path),
        (Some(("invalid", path)), Err(ConfigError::Invalid { path: p, .. })) => {
            assert_eq!(&p, path)
        }
        (expected, got) => panic!("load_files: expected failure {expected:?}, got {got:?}"),
    }

    check_seed(&dir.0, repo_bytes);
}

/// The repository text again, as the seed's `.worktreerc.toml` (read
/// translated when a repository has no `.owt.toml`).
fn check_seed(dir: &Path, repo_bytes: &[u8]) {
    let seed_path = dir.join(config::SEED_FILES[1]);
    std::fs::write(&seed_path, repo_bytes).expect("writing the seed config");
    match config::load_files(std::slice::from_ref(&seed_path)) {
        Ok(loaded) => {
            assert_eq!(loaded.sources, std::slice::from_ref(&seed_path));
            assert!(loaded.origins.values().all(|p| *p == seed_path));
            let base = loaded.config.base_directory(Path::new("/src/app"));
            let path = names::worktree_path(&base, "x");
            assert_eq!(path.parent(), Some(base.as_path()));
        }
        Err(ConfigError::Read { path, .. }) => {
            assert_eq!(path, seed_path);
            assert!(std::str::from_utf8(repo_bytes).is_err());
        }
        Err(ConfigError::Invalid { path, line, .. }) => {
            assert_eq!(path, seed_path);
            assert!(line >= 1 && line <= repo_bytes.len() + 1, "line {line}");
        }
        Err(other) => panic!("a seed file failed with {other}"),
    }
}

/// Parses one file and checks its error; true when the file is valid.
fn check_parse_file(path: &Path, text: &str) -> bool {
    match config::parse_file(path, text) {
        Ok(_) => true,
        Err(err @ ConfigError::Invalid { .. }) => {
            let shown = err.to_string();
            let ConfigError::Invalid {
                path: p,
                line,
                message,
                ..
            } = err
            else {
                unreachable!()
            };
            assert_eq!(p, path);
            let lines = text.matches('\n').count() + 1;
            assert!(
                (1..=lines).contains(&line),
                "line {line} of a {lines}-line file"
            );
            assert!(!message.is_empty());
            assert!(shown.starts_with(&format!("{}:{line}: ", path.display())));
            false
        }
        Err(other) => panic!("parse_file failed with {other}"),
    }
}

/// A temporary folder of this thread, removed on drop.
struct ScratchDir(PathBuf);

impl ScratchDir {
    fn new() -> ScratchDir {
        let dir = std::env::temp_dir().join(format!(
            "owt-fuzz-config-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("creating a scratch folder");
        ScratchDir(dir)
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Target `slug`: [`names::slugify`], the numbered names the store tries
/// ([`names::candidate_name`]) and [`names::worktree_path`].
///
/// The input is a task text, or a base folder, a NUL byte and a task text.
/// Invariants: every name is `session` or matches
/// `^[a-z0-9]+(-[a-z0-9]+)*$`, is at most [`MAX_SLUG`] bytes long and is its
/// own slug; its worktree path is a direct child of the base folder named
/// exactly the name; its default branch is a valid git branch name.
pub fn slug(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let (base, task) = text.split_once('\0').unwrap_or(("", &text));
    let slug = names::slugify(task);
    for n in [1, 2, 9, 10, 100, 12_345, u32::MAX] {
        let name = names::candidate_name(&slug, n);
        assert!(
            is_slug(&name),
            "{name:?} (from {task:?}, n = {n}) is not a slug"
        );
        assert!(
            name.len() <= MAX_SLUG,
            "{name:?} (from {task:?}, n = {n}) is longer than {MAX_SLUG}"
        );
        for base in [base, "/home/me/app.worktrees", "rel/wt", "/"] {
            let base = Path::new(base);
            let path = names::worktree_path(base, &name);
            assert_eq!(path.parent(), Some(base), "{path:?} escapes {base:?}");
            assert_eq!(path.file_name(), Some(name.as_ref()));
        }
        let branch = names::default_branch(&name);
        assert_eq!(
            git2::Branch::name_is_valid(&branch).ok(),
            Some(true),
            "{branch:?} is not a valid branch name"
        );
    }
}

fn is_slug(name: &str) -> bool {
    !name.is_empty()
        && name.split('-').all(|part| {
            !part.is_empty() && part.bytes().all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9'))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs every committed corpus file of `target` through `check`.
    fn replay(target: &str, check: fn(&[u8])) {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../fuzz/corpus")
            .join(target);
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
            .map(|entry| entry.expect("listing the corpus").path())
            .collect();
        files.sort();
        assert!(!files.is_empty(), "{} is empty", dir.display());
        for file in &files {
            let data = std::fs::read(file).expect("reading a corpus file");
            if let Err(panic) = std::panic::catch_unwind(|| check(&data)) {
                eprintln!("{target} failed on {}", file.display());
                std::panic::resume_unwind(panic);
            }
        }
    }

    #[test]
    fn lsp_framing_corpus() {
        replay("lsp_framing", lsp_framing);
    }

    #[test]
    fn acp_framing_corpus() {
        replay("acp_framing", acp_framing);
    }

    #[test]
    fn host_frames_corpus() {
        replay("host_frames", host_frames);
    }

    #[test]
    fn config_corpus() {
        replay("config", config);
    }

    #[test]
    fn slug_corpus() {
        replay("slug", slug);
    }
}
