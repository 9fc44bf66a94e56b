use std::os::unix::fs::symlink;
use std::path::Path;

use super::*;

#[test]
fn writes_create_folders_and_refuse_links_anywhere_on_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("wt");
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    write_beneath(&root, Path::new("a/b/c.json"), b"{}\n", None).unwrap();
    assert_eq!(std::fs::read(root.join("a/b/c.json")).unwrap(), b"{}\n");
    // Shorter content truncates the old.
    write_beneath(&root, Path::new("a/b/c.json"), b"1", Some(0o600)).unwrap();
    assert_eq!(std::fs::read(root.join("a/b/c.json")).unwrap(), b"1");

    symlink(outside.join("missing.json"), root.join("dangling.json")).unwrap();
    symlink(&outside, root.join("folder")).unwrap();
    std::fs::write(outside.join("kept"), "kept").unwrap();
    symlink(outside.join("kept"), root.join("kept")).unwrap();
    for rel in [
        "dangling.json",
        "folder/x.json",
        "folder/new/x.json",
        "kept",
    ] {
        let err = write_beneath(&root, Path::new(rel), b"owt", None).unwrap_err();
        assert!(matches!(err, SafeFsError::Link { .. }), "{rel}: {err}");
        assert!(err.to_string().contains("symbolic link"), "{err}");
        assert!(read_beneath(&root, Path::new(rel), 100).is_err(), "{rel}");
    }
    assert!(!outside.join("missing.json").exists());
    assert!(!outside.join("x.json").exists());
    assert!(!outside.join("new").exists());
    assert_eq!(
        std::fs::read_to_string(outside.join("kept")).unwrap(),
        "kept"
    );
    for rel in ["/etc/x", "../x", "a/../../x", ""] {
        let err = write_beneath(&root, Path::new(rel), b"owt", None).unwrap_err();
        assert!(
            matches!(err, SafeFsError::NotBeneath { .. }),
            "{rel}: {err}"
        );
    }
    assert_eq!(read_beneath(&root, Path::new("nope/x"), 10).unwrap(), None);
    assert_eq!(
        read_beneath(&root, Path::new("a/b/c.json"), 10).unwrap(),
        Some(b"1".to_vec())
    );
}

#[test]
fn reads_refuse_what_is_not_a_regular_file() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    symlink("/dev/zero", root.join("zero")).unwrap();
    let fifo = root.join("fifo");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    assert!(made.unwrap().success());
    std::fs::write(root.join("big"), vec![b'x'; 11]).unwrap();
    std::fs::write(root.join("ok"), "ok").unwrap();
    symlink(root.join("ok"), root.join("inside")).unwrap();

    let err = read_regular(&root.join("zero"), 10, None).unwrap_err();
    assert!(
        err.to_string().contains("is a device, not a regular file"),
        "{err}"
    );
    let err = read_regular(&root.join("zero"), 10, Some(root)).unwrap_err();
    assert!(err.to_string().contains("is a link to outside"), "{err}");
    let err = read_regular(&fifo, 10, None).unwrap_err();
    assert!(err.to_string().contains("is a FIFO"), "{err}");
    let err = read_beneath(root, Path::new("fifo"), 10).unwrap_err();
    assert!(err.to_string().contains("is a FIFO"), "{err}");
    let err = write_beneath(root, Path::new("fifo"), b"x", None).unwrap_err();
    assert!(err.to_string().contains("is a FIFO"), "{err}");
    let err = read_regular(&root.join("big"), 10, None).unwrap_err();
    assert!(err.to_string().contains("larger than 10 bytes"), "{err}");
    assert_eq!(
        read_regular(&root.join("inside"), 10, Some(root)).unwrap(),
        Some(b"ok".to_vec())
    );
    assert_eq!(
        read_regular(&root.join("missing"), 10, Some(root)).unwrap(),
        None
    );
}
