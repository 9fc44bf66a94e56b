use super::sessions::new_short_id;
use super::*;

fn store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    (dir, store)
}

fn new_session<'a>(repo_id: i64, name: &'a str) -> NewSession<'a> {
    NewSession {
        repo_id,
        name,
        task: "task",
        branch_template: "owt/{name}",
        base_branch: "main",
        worktree_template: "/wt/{name}",
        provider: "fake",
        kind: owt_protocol::SessionKind::Worktree,
    }
}

#[test]
fn open_sets_wal_and_schema() {
    let (_dir, store) = store();
    assert_eq!(store.journal_mode().unwrap(), "wal");
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    let fk: i64 = store
        .conn()
        .pragma_query_value(None, "foreign_keys", |r| r.get(0))
        .unwrap();
    assert_eq!(fk, 1);
}

#[test]
fn reopening_keeps_data_and_version() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = Store::open(dir.path()).unwrap();
        store
            .ensure_repo(Path::new("/r/.git"), Path::new("/r"))
            .unwrap();
    }
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(store.count("repos").unwrap(), 1);
}

#[test]
fn newer_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = Store::open(dir.path()).unwrap();
        store
            .conn()
            .pragma_update(None, "user_version", 999)
            .unwrap();
    }
    let err = Store::open(dir.path()).unwrap_err();
    assert!(
        matches!(err, StoreError::TooNew { found: 999, .. }),
        "{err}"
    );
}

#[test]
fn names_collide_per_repository_only() {
    let (_dir, mut store) = store();
    let a = store
        .ensure_repo(Path::new("/a/.git"), Path::new("/a"))
        .unwrap();
    let b = store
        .ensure_repo(Path::new("/b/.git"), Path::new("/b"))
        .unwrap();
    let s1 = store
        .insert_session(&new_session(a.id, "fix-login"), |_| false)
        .unwrap();
    let s2 = store
        .insert_session(&new_session(a.id, "fix-login"), |_| false)
        .unwrap();
    let s3 = store
        .insert_session(&new_session(b.id, "fix-login"), |_| false)
        .unwrap();
    assert_eq!(
        (s1.name.as_str(), s2.name.as_str(), s3.name.as_str()),
        ("fix-login", "fix-login-2", "fix-login")
    );
    assert_eq!(s2.branch, "owt/fix-login-2");
    assert_eq!(s2.worktree_path, PathBuf::from("/wt/fix-login-2"));
    assert_ne!(s1.short_id, s3.short_id);
}

#[test]
fn taken_vetoes_names() {
    let (_dir, mut store) = store();
    let a = store
        .ensure_repo(Path::new("/a/.git"), Path::new("/a"))
        .unwrap();
    let s = store
        .insert_session(&new_session(a.id, "x"), |n| n == "x" || n == "x-2")
        .unwrap();
    assert_eq!(s.name, "x-3");
}

#[test]
fn facts_replace_and_cascade() {
    let (_dir, mut store) = store();
    let a = store
        .ensure_repo(Path::new("/a/.git"), Path::new("/a"))
        .unwrap();
    let s = store
        .insert_session(&new_session(a.id, "x"), |_| false)
        .unwrap();
    store.record_fact_at(s.id, "hook", &"working", 1).unwrap();
    store.record_fact_at(s.id, "hook", &"waiting", 2).unwrap();
    assert!(store
        .record_fact_once(s.id, "exit", &serde_json::json!({"code": 0}))
        .unwrap());
    assert!(!store
        .record_fact_once(s.id, "exit", &serde_json::json!({"code": 1}))
        .unwrap());
    let facts = store.facts(s.id).unwrap();
    assert_eq!(facts.len(), 2);
    let (hook, at): (String, i64) = store.fact(s.id, "hook").unwrap().unwrap();
    assert_eq!((hook.as_str(), at), ("waiting", 2));
    let (exit, _): (serde_json::Value, i64) = store.fact(s.id, "exit").unwrap().unwrap();
    assert_eq!(exit["code"], 0);
    store.remove_session(&s, "deleted").unwrap();
    assert_eq!(store.count("facts").unwrap(), 0);
    assert!(store.session_by_name(a.id, "x").unwrap().is_none());
}

#[test]
fn messages_are_read_once_per_session() {
    let (_dir, mut store) = store();
    let a = store
        .ensure_repo(Path::new("/a/.git"), Path::new("/a"))
        .unwrap();
    store.add_message(a.id, Some("x"), None, "to all").unwrap();
    store
        .add_message(a.id, Some("y"), Some("x"), "to x")
        .unwrap();
    let for_x = store.take_messages(a.id, "x").unwrap();
    assert_eq!(
        for_x.iter().map(|m| m.body.as_str()).collect::<Vec<_>>(),
        vec!["to x"]
    );
    let for_y = store.take_messages(a.id, "y").unwrap();
    assert_eq!(
        for_y.iter().map(|m| m.body.as_str()).collect::<Vec<_>>(),
        vec!["to all"]
    );
    assert!(store.take_messages(a.id, "x").unwrap().is_empty());
}

/// Records `tokens` input tokens for `session` on `day`, read from `path`.
fn add_usage(store: &Store, session: &SessionRow, path: &str, day: &str, tokens: i64) {
    store
        .advance_usage::<StoreError>(session, path, |_| {
            Ok(Some((
                UsageCursor {
                    size: 1,
                    offset: 1,
                    ..UsageCursor::default()
                },
                vec![UsageDelta {
                    day: day.into(),
                    input_tokens: tokens,
                    ..UsageDelta::default()
                }],
            )))
        })
        .unwrap();
}

#[test]
fn purge_drops_deleted_sessions_tokens_and_unneeded_read_positions() {
    let (dir, mut store) = store();
    let a = store
        .ensure_repo(Path::new("/a/.git"), Path::new("/a"))
        .unwrap();
    let live = store
        .insert_session(&new_session(a.id, "live"), |_| false)
        .unwrap();
    let gone = store
        .insert_session(&new_session(a.id, "gone"), |_| false)
        .unwrap();
    let crashed = store
        .insert_session(&new_session(a.id, "crashed"), |_| false)
        .unwrap();
    add_usage(&store, &live, "/records/live.jsonl", "2026-01-01", 10);
    add_usage(&store, &live, "/records/live.jsonl", "2026-01-02", 20);
    add_usage(&store, &gone, "/records/gone.jsonl", "2026-01-01", 30);
    add_usage(&store, &crashed, "/records/crashed.jsonl", "2026-01-01", 40);
    // Files of no session: one still there, one gone.
    let kept = dir.path().join("rollout-kept.jsonl");
    std::fs::write(&kept, "{}\n").unwrap();
    store
        .claim_usage_source(NO_SESSION, &kept.to_string_lossy())
        .unwrap();
    store
        .claim_usage_source(NO_SESSION, "/records/rollout-gone.jsonl")
        .unwrap();
    store.remove_session(&gone, "deleted").unwrap();
    // A session that went without `remove_session` (its read position
    // stays behind).
    store
        .conn()
        .execute("DELETE FROM sessions WHERE id = ?1", [crashed.id])
        .unwrap();
    assert_eq!(store.count("usage").unwrap(), 4);
    assert_eq!(store.usage_rows_of_deleted_sessions().unwrap(), 2);
    assert_eq!(store.count("usage_sources").unwrap(), 4);
    let mut stale = store.stale_usage_sources().unwrap();
    stale.sort();
    assert_eq!(
        stale,
        vec![
            (NO_SESSION.to_string(), "/records/rollout-gone.jsonl".into()),
            (crashed.short_id.clone(), "/records/crashed.jsonl".into()),
        ]
    );

    // Counts added to within the last day stay; read positions no
    // session needs go whatever their age.
    let purged = store.purge_usage(now_ms() - 86_400_000).unwrap();
    assert_eq!(
        purged,
        UsagePurged {
            rows: 0,
            sources: 2
        }
    );
    assert!(store.stale_usage_sources().unwrap().is_empty());
    assert_eq!(store.count("usage_sources").unwrap(), 2);
    assert_eq!(
        store.usage_source_owner(&kept.to_string_lossy()).unwrap(),
        Some(NO_SESSION.to_string())
    );
    // Older than the cutoff: a deleted session's counts go, a live
    // session's stay, all of them.
    let purged = store.purge_usage(now_ms() + 1).unwrap();
    assert_eq!(
        purged,
        UsagePurged {
            rows: 2,
            sources: 0
        }
    );
    assert_eq!(store.count("usage").unwrap(), 2);
    assert_eq!(
        store
            .session_usage(&live.short_id)
            .unwrap()
            .unwrap()
            .input_tokens,
        30
    );
    assert_eq!(store.session_usage(&gone.short_id).unwrap(), None);
    assert_eq!(store.usage_rows_of_deleted_sessions().unwrap(), 0);
}

#[test]
fn a_new_session_never_takes_a_deleted_sessions_short_id() {
    let (_dir, mut store) = store();
    let a = store
        .ensure_repo(Path::new("/a/.git"), Path::new("/a"))
        .unwrap();
    let old = store
        .insert_session(&new_session(a.id, "old"), |_| false)
        .unwrap();
    add_usage(&store, &old, "/records/old.jsonl", "2026-01-01", 10);
    store.remove_session(&old, "deleted").unwrap();
    // The random source offers the deleted session's id first.
    let taken = u32::from_str_radix(&old.short_id, 16).unwrap();
    let mut offers = [taken, taken ^ 1].into_iter();
    let tx = store.conn.transaction().unwrap();
    let id = new_short_id(&tx, || offers.next().unwrap()).unwrap();
    assert_eq!(id, format!("{:08x}", taken ^ 1));
}

#[test]
fn concurrent_writers_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let repo_id = Store::open(dir.path())
        .unwrap()
        .ensure_repo(Path::new("/a/.git"), Path::new("/a"))
        .unwrap()
        .id;
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let home = dir.path().to_path_buf();
            std::thread::spawn(move || {
                let mut store = Store::open(&home).unwrap();
                for i in 0..20 {
                    store.add_note(repo_id, &format!("{t}-{i}")).unwrap();
                    store
                        .insert_session(&new_session(repo_id, "same"), |_| false)
                        .unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(store.count("notes").unwrap(), 160);
    assert_eq!(store.sessions(repo_id).unwrap().len(), 160);
}

fn remote_record<'a>(repo_id: i64, name: &'a str, task: &'a str) -> RemoteSessionRecord<'a> {
    RemoteSessionRecord {
        repo_id,
        remote: "devbox",
        name,
        task,
        branch: "owt/fix-login",
        base_branch: "main",
        worktree: "/home/me/src/app.worktrees/fix-login",
        provider: "claude",
        kind: owt_protocol::SessionKind::Worktree,
        created_at: 1_000,
    }
}

/// Remote sessions are kept apart from the local ones every
/// worktree-handling verb walks (guard, doctor, sync), so a path on
/// another machine is never taken for a local one.
#[test]
fn remote_sessions_are_apart_from_local_ones() {
    let (_dir, mut store) = store();
    let repo = store
        .ensure_repo(Path::new("/r/.git"), Path::new("/r"))
        .unwrap();
    let local = store
        .insert_session(&new_session(repo.id, "fix-login"), |_| false)
        .unwrap();
    let remote = store
        .upsert_remote_session(&remote_record(repo.id, "devbox:fix-login", "fix it"))
        .unwrap();
    assert_eq!(remote.created_at, 1_000);
    assert_eq!(
        remote.remote(),
        Some(("devbox", "/home/me/src/app.worktrees/fix-login".to_string()))
    );
    assert_eq!(local.remote(), None);
    let names = |rows: Vec<SessionRow>| rows.into_iter().map(|r| r.name).collect::<Vec<_>>();
    assert_eq!(names(store.sessions(repo.id).unwrap()), ["fix-login"]);
    assert_eq!(
        names(store.all_sessions(repo.id).unwrap()),
        ["devbox:fix-login", "fix-login"]
    );
    assert_eq!(
        names(store.remote_sessions(repo.id, Some("devbox")).unwrap()),
        ["devbox:fix-login"]
    );
    assert!(store
        .remote_sessions(repo.id, Some("dev"))
        .unwrap()
        .is_empty());
    // Upserting again updates in place (same id and short id).
    let again = store
        .upsert_remote_session(&remote_record(repo.id, "devbox:fix-login", "fix it well"))
        .unwrap();
    assert_eq!((again.id, &again.short_id), (remote.id, &remote.short_id));
    assert_eq!(
        store.session_by_id(remote.id).unwrap().unwrap().task,
        "fix it well"
    );
    // A local session's name is never taken over.
    let err = store
        .upsert_remote_session(&remote_record(repo.id, "fix-login", "x"))
        .unwrap_err();
    assert!(matches!(err, StoreError::NameTaken(_)), "{err}");
}

/// Two processes' worth of writers appending to one list fact: with
/// `update_fact` (one IMMEDIATE transaction per read-modify-write) no
/// append is lost. (With a read, then a `record_fact`, they were.)
#[test]
fn update_fact_loses_no_concurrent_append() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    let repo = store
        .ensure_repo(Path::new("/r/.git"), Path::new("/r"))
        .unwrap();
    let session = store
        .insert_session(&new_session(repo.id, "s"), |_| false)
        .unwrap();
    let writers: Vec<_> = (0..2)
        .map(|w| {
            let home = dir.path().to_path_buf();
            std::thread::spawn(move || {
                let store = Store::open(&home).unwrap();
                for i in 0..50 {
                    store
                        .update_fact(session.id, "list", |old: Option<Vec<u32>>| {
                            let mut all = old.unwrap_or_default();
                            all.push(w * 100 + i);
                            Ok::<_, StoreError>((all, ()))
                        })
                        .unwrap();
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    let (all, _) = store.fact::<Vec<u32>>(session.id, "list").unwrap().unwrap();
    assert_eq!(all.len(), 100, "{all:?}");
    // A failing update writes nothing.
    let err = store.update_fact(session.id, "list", |_: Option<Vec<u32>>| {
        Err::<(Vec<u32>, ()), _>(StoreError::from(rusqlite::Error::InvalidQuery))
    });
    assert!(err.is_err());
    assert_eq!(
        store
            .fact::<Vec<u32>>(session.id, "list")
            .unwrap()
            .unwrap()
            .0
            .len(),
        100
    );
}

#[test]
fn a_read_of_the_store_sees_one_state_and_cannot_write() {
    let (dir, store) = store();
    let repo = store
        .ensure_repo(Path::new("/r/.git"), Path::new("/r"))
        .unwrap();
    let other = Store::open(dir.path()).unwrap();
    let (first, second) = store.reading(|s| {
        let first = s.count("repos").unwrap();
        // Another connection's commit meanwhile is not seen in this read.
        other
            .ensure_repo(Path::new("/o/.git"), Path::new("/o"))
            .unwrap();
        let second = s.count("repos").unwrap();
        // A write fails at once (it could not always become a write
        // transaction): nothing is recorded.
        let write = s.trust_file(Path::new("/r/.owt.toml"), "inside");
        assert!(write.is_err(), "a write inside a read succeeded");
        // Nested: runs inside the outer read.
        assert_eq!(s.reading(|s| s.count("repos").unwrap()), first);
        assert!(
            s.trust_file(Path::new("/r/.owt.toml"), "inside").is_err(),
            "a nested read let the outer one write"
        );
        (first, second)
    });
    assert_eq!((first, second), (1, 1));
    // After it, the store sees the other commit and takes writes again.
    assert_eq!(store.count("repos").unwrap(), 2);
    let trusted = Path::new("/r/.owt.toml");
    assert_eq!(store.trusted_file(trusted).unwrap(), None);
    store.trust_file(trusted, "after").unwrap();
    assert_eq!(store.trusted_file(trusted).unwrap().unwrap().0, "after");
    assert_eq!(
        repo.id,
        store
            .ensure_repo(Path::new("/r/.git"), Path::new("/r"))
            .unwrap()
            .id
    );
}

#[test]
fn opening_makes_an_open_state_folder_private_and_keeps_the_trash_files_modes() {
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let chmod =
        |p: &Path, m: u32| std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("owt");
    drop(Store::open(&home).unwrap());
    for sub in ["logs", "run", "trash/t1"] {
        std::fs::create_dir_all(home.join(sub)).unwrap();
    }
    for file in ["logs/a.log", "run/a.spec.json", "trash/t1/kept.txt"] {
        std::fs::write(home.join(file), "x").unwrap();
        chmod(&home.join(file), 0o644);
    }
    // An older owt's install: everything open.
    for open in ["", "logs", "run", "trash", "trash/t1"] {
        chmod(&home.join(open), 0o755);
    }
    chmod(&home.join("owt.db"), 0o644);
    drop(Store::open(&home).unwrap());
    for private in ["", "logs", "run", "trash", "trash/t1"] {
        assert_eq!(mode(&home.join(private)), 0o700, "{private}");
    }
    for private in ["owt.db", "logs/a.log", "run/a.spec.json"] {
        assert_eq!(mode(&home.join(private)), 0o600, "{private}");
    }
    assert_eq!(mode(&home.join("trash/t1/kept.txt")), 0o644);

    // A folder opened later inside a private home has its files fixed too.
    chmod(&home.join("logs"), 0o755);
    chmod(&home.join("logs/a.log"), 0o644);
    drop(Store::open(&home).unwrap());
    assert_eq!(mode(&home.join("logs")), 0o700);
    assert_eq!(mode(&home.join("logs/a.log")), 0o600);
}
