//! Unit tests of the library face of session hosts: the screen view,
//! reconcile's host-lost rule and pid checks.

use super::*;
use crate::store::NewSession;

#[test]
fn screen_view_includes_scrollback_oldest_first() {
    let mut parser = vt100::Parser::new(3, 20, 100);
    for i in 1..=7 {
        parser.process(format!("line {i}\r\n").as_bytes());
    }
    let view = host::screen_view(&mut parser, true);
    assert_eq!(view.lines, vec!["line 6", "line 7", ""]);
    assert_eq!(
        view.scrollback,
        vec!["line 1", "line 2", "line 3", "line 4", "line 5"]
    );
    assert_eq!(
        view.text(),
        "line 1\nline 2\nline 3\nline 4\nline 5\nline 6\nline 7\n"
    );
    // Reading the scrollback leaves the live view in place.
    assert_eq!(parser.screen().scrollback(), 0);
    let plain = host::screen_view(&mut parser, false);
    assert!(plain.scrollback.is_empty());
}

/// Found while seeding the `host_frames` fuzz target (corpus file
/// `crash-resize-65535x65535`): a client asking for a 65535×65535 screen
/// made the screen model allocate every cell (over 100 GB) and killed the
/// host with its agent.
#[test]
fn regression_a_huge_resize_exhausted_the_hosts_memory() {
    use owt_protocol::host::{Frame, FrameKind};
    let frame = |kind, json: &str| Frame {
        kind,
        payload: json.as_bytes().to_vec(),
    };
    let resize = frame(FrameKind::Resize, r#"{"rows":65535,"cols":65535}"#);
    assert_eq!(
        host::decode_request(&resize),
        host::Request::Resize {
            rows: host::MAX_ROWS,
            cols: host::MAX_COLS
        }
    );
    let hello = frame(
        FrameKind::Hello,
        r#"{"version":1,"role":"attach","rows":65535,"cols":300}"#,
    );
    let hello = host::decode_hello(&hello).unwrap();
    assert_eq!((hello.rows, hello.cols), (host::MAX_ROWS, 300));
}

#[test]
fn pid_alive_tells_live_from_gone() {
    assert!(pid_alive(std::process::id()));
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    assert!(!pid_alive(pid));
    assert!(!pid_alive(0));
}

fn session(store: &mut Store) -> SessionRow {
    let repo = store
        .ensure_repo(Path::new("/r/.git"), Path::new("/r"))
        .unwrap();
    store
        .insert_session(
            &NewSession {
                repo_id: repo.id,
                name: "s",
                task: "t",
                branch_template: "{name}",
                base_branch: "main",
                worktree_template: "/w/{name}",
                provider: "generic",
                kind: owt_protocol::SessionKind::Worktree,
            },
            |_| false,
        )
        .unwrap()
}

#[test]
fn reconcile_records_host_lost_once_for_a_dead_host() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    let row = session(&mut store);
    // No host fact: nothing to judge.
    reconcile(&store, dir.path(), &row).unwrap();
    assert!(store.fact::<()>(row.id, kind::HOST_LOST).unwrap().is_none());

    record_dead_host(&store, dir.path(), &row);
    reconcile(&store, dir.path(), &row).unwrap();
    let (_, first_at) = store
        .fact::<()>(row.id, kind::HOST_LOST)
        .unwrap()
        .expect("host-lost");
    reconcile(&store, dir.path(), &row).unwrap();
    let (_, again_at) = store.fact::<()>(row.id, kind::HOST_LOST).unwrap().unwrap();
    assert_eq!(first_at, again_at, "recorded once");
    let derived = derived_status(&store, dir.path(), &row).unwrap();
    assert_eq!(derived.text, "exited (host lost)");
}

/// A socket that takes connections but never answers (a killed host
/// whose threads are still being torn down) is not a live host when the
/// recorded process is gone.
#[test]
fn a_socket_that_never_answers_does_not_keep_a_dead_host_alive() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    let row = session(&mut store);
    let socket = socket_path(dir.path(), &row.short_id);
    std::fs::create_dir_all(socket.parent().unwrap()).unwrap();
    // Listening, never accepting: connections wait in the backlog.
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    assert!(std::os::unix::net::UnixStream::connect(&socket).is_ok());
    record_dead_host(&store, dir.path(), &row);
    reconcile(&store, dir.path(), &row).unwrap();
    assert!(store.fact::<()>(row.id, kind::HOST_LOST).unwrap().is_some());
}

/// Records a `host` fact for `row` naming a process that has exited and
/// the session's socket path.
fn record_dead_host(store: &Store, home: &Path, row: &SessionRow) {
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let host = HostFact {
        host_pid: dead,
        agent_pid: None,
        socket: socket_path(home, &row.short_id)
            .to_string_lossy()
            .into_owned(),
        headless: false,
        transport: Default::default(),
    };
    store.record_fact(row.id, kind::HOST, &host).unwrap();
}

#[test]
fn reconcile_leaves_a_live_host_alone() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    let row = session(&mut store);
    let host = HostFact {
        host_pid: std::process::id(),
        agent_pid: None,
        socket: String::new(),
        headless: false,
        transport: Default::default(),
    };
    store.record_fact(row.id, kind::HOST, &host).unwrap();
    reconcile(&store, dir.path(), &row).unwrap();
    assert!(store.fact::<()>(row.id, kind::HOST_LOST).unwrap().is_none());
}
