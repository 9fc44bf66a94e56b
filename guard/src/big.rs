//! Files too large to diff: above [`BIG_FILE`] (16 MiB) a working file is
//! hashed by streaming it into the object database (a fixed-size buffer,
//! whatever its size: a 1 GiB file costs no more memory than a small one),
//! and the guard compares it by blob id only — changed or not, never line
//! by line: [`small_blob`] leaves such a blob unread where a diff or a
//! symbol index would load it whole.
//!
//! Hashing 1 GiB takes seconds, so [`big_blob`] remembers each file's id
//! across runs (a new `owt guard` process) by its stat, as git's index does
//! for tracked files: one small entry per file under
//! `<git common dir>/owt-big-blobs/`, naming the file's path, device,
//! inode, size, mtime and ctime and its blob id. An entry is trusted only
//! when all of these match the file now and the blob is still in the
//! object database; it is written only when the file's mtime and ctime are
//! [`SETTLED`] older than the read began and its stat did not change
//! during the read (git's "racily clean" rule: a write in the same clock
//! tick as the read cannot hide behind an unchanged stat). Bounded to
//! [`MAX_ENTRIES`] (the oldest written go); no failure here is an error:
//! the cache only saves the hashing.

use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use git2::{Blob, ObjectType, Oid, Repository};

use super::GuardError;

/// The largest file the guard reads whole (to diff it, to find its
/// symbols); larger ones are compared by blob id only.
pub const BIG_FILE: u64 = 16 << 20;

/// The folder of remembered big-file ids, in the repository's common git
/// dir (shared by its worktrees, as the object database is).
const DIR: &str = "owt-big-blobs";

/// Files remembered at most (a worktree rarely holds more than a few files
/// this large; an entry is under 300 bytes).
const MAX_ENTRIES: usize = 256;

/// How much older than the read a file's mtime and ctime must be for its
/// id to be remembered.
const SETTLED: Duration = Duration::from_secs(1);

/// The blob id of the file at `path`, over [`BIG_FILE`] bytes, `meta` its
/// `lstat`: remembered from an earlier run when its stat is unchanged,
/// else streamed into the object database ([`stream_blob`]) and
/// remembered. `None` when the file vanished meanwhile.
pub fn big_blob(
    repo: &Repository,
    path: &Path,
    meta: &std::fs::Metadata,
) -> Result<Option<Oid>, GuardError> {
    big_blob_settled(repo, path, meta, SETTLED)
}

/// [`big_blob`], remembering a file whose mtime and ctime are `settle`
/// older than the read.
fn big_blob_settled(
    repo: &Repository,
    path: &Path,
    meta: &std::fs::Metadata,
    settle: Duration,
) -> Result<Option<Oid>, GuardError> {
    let key = stat_key(path, meta);
    let entry = entry_path(repo, &key);
    if let Some(id) = remembered(repo, &entry, &key) {
        return Ok(Some(id));
    }
    let began = SystemTime::now();
    let Some(id) = stream_blob(repo, path, meta.len())? else {
        return Ok(None);
    };
    let unchanged = std::fs::symlink_metadata(path).is_ok_and(|now| stat_key(path, &now) == key);
    if unchanged && settled(meta, began, settle) {
        remember(repo, &entry, &key, id);
    }
    Ok(Some(id))
}

/// What identifies the file's content without reading it (one line).
fn stat_key(path: &Path, meta: &std::fs::Metadata) -> String {
    format!(
        "{} {} {} {} {}.{} {}.{} {}",
        meta.dev(),
        meta.ino(),
        meta.len(),
        meta.mode(),
        meta.mtime(),
        meta.mtime_nsec(),
        meta.ctime(),
        meta.ctime_nsec(),
        path.display()
    )
    .replace('\n', " ")
}

/// Whether the file's mtime and ctime are `settle` older than `began`.
fn settled(meta: &std::fs::Metadata, began: SystemTime, settle: Duration) -> bool {
    let at = |secs: i64, nanos: i64| {
        let secs = u64::try_from(secs).unwrap_or(0);
        SystemTime::UNIX_EPOCH + Duration::new(secs, u32::try_from(nanos).unwrap_or(0))
    };
    let newest = at(meta.mtime(), meta.mtime_nsec()).max(at(meta.ctime(), meta.ctime_nsec()));
    newest + settle <= began
}

fn entry_path(repo: &Repository, key: &str) -> PathBuf {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    key.hash(&mut hasher);
    repo.commondir()
        .join(DIR)
        .join(format!("{:016x}", hasher.finish()))
}

/// The id an entry holds for exactly `key`, when its blob is still there.
fn remembered(repo: &Repository, entry: &Path, key: &str) -> Option<Oid> {
    let text = std::fs::read_to_string(entry).ok()?;
    let (line, id) = text.trim_end().rsplit_once('\n')?;
    let id = Oid::from_str(id).ok()?;
    (line == key && repo.odb().ok()?.exists(id)).then_some(id)
}

/// Writes an entry (a temporary file, private to the user as every file
/// owt keeps, renamed into place) and keeps the folder within
/// [`MAX_ENTRIES`]; best effort.
fn remember(repo: &Repository, entry: &Path, key: &str, id: Oid) {
    let Some(dir) = entry.parent() else {
        return;
    };
    let temp = dir.join(format!(".tmp-{}", std::process::id()));
    let written = std::fs::create_dir_all(dir)
        .and_then(|()| crate::store::write_private(&temp, format!("{key}\n{id}\n").as_bytes()))
        .and_then(|()| std::fs::rename(&temp, entry));
    if let Err(e) = written {
        tracing::debug!("big-file ids: not kept ({e})");
        let _ = std::fs::remove_file(&temp);
        return;
    }
    prune(&repo.commondir().join(DIR), MAX_ENTRIES);
}

/// Removes the oldest written entries past `max`.
fn prune(dir: &Path, max: usize) {
    let Ok(read) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<(SystemTime, PathBuf)> = read
        .flatten()
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .collect();
    if entries.len() <= max {
        return;
    }
    entries.sort();
    for (_, path) in &entries[..entries.len() - max] {
        let _ = std::fs::remove_file(path);
    }
}

/// Writes the `size` bytes of the file at `path` to `repo`'s object
/// database as a blob, streaming (no git filters: a file this large is
/// compared by id only). `None` when the file vanished meanwhile.
pub fn stream_blob(repo: &Repository, path: &Path, size: u64) -> Result<Option<Oid>, GuardError> {
    let io = |error| GuardError::Io {
        path: path.to_path_buf(),
        error,
    };
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io(e)),
    };
    let odb = repo.odb()?;
    let mut writer = odb.writer(size as usize, ObjectType::Blob)?;
    let copied = std::io::copy(&mut file.take(size), &mut writer).map_err(io)?;
    if copied != size {
        // It shrank since its stat: the next change event reads it again.
        return Err(io(std::io::Error::other(format!(
            "changed while being read ({copied} of {size} bytes)"
        ))));
    }
    Ok(Some(writer.finalize()?))
}

/// The blob `id` when it is at most [`BIG_FILE`] bytes (its size read from
/// the object's header, not its content); `None` for a larger or missing
/// one.
pub fn small_blob(repo: &Repository, id: Oid) -> Option<Blob<'_>> {
    let (size, _) = repo.odb().ok()?.read_header(id).ok()?;
    if size as u64 > BIG_FILE {
        return None;
    }
    repo.find_blob(id).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_streamed_blob_is_gits_blob_and_is_not_read_back_whole() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        let path = dir.path().join("big.bin");
        let mut bytes = vec![b'x'; (BIG_FILE + 5) as usize];
        bytes[7] = b'\n';
        std::fs::write(&path, &bytes).unwrap();
        let id = stream_blob(&repo, &path, bytes.len() as u64)
            .unwrap()
            .unwrap();
        assert_eq!(id, Oid::hash_file(ObjectType::Blob, &path).unwrap());
        assert_eq!(repo.find_blob(id).unwrap().content(), &bytes[..]);
        assert!(small_blob(&repo, id).is_none(), "over 16 MiB: by id only");
        let small = repo.blob(b"small\n").unwrap();
        assert!(small_blob(&repo, small).is_some());
        assert_eq!(
            stream_blob(&repo, &dir.path().join("gone"), 3).unwrap(),
            None
        );
    }

    #[test]
    fn a_big_files_id_is_remembered_by_its_stat_only_once_settled() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        let path = dir.path().join("big.bin");
        std::fs::write(&path, vec![b'a'; (BIG_FILE + 1) as usize]).unwrap();
        let meta = std::fs::symlink_metadata(&path).unwrap();
        let (key, id) = (
            stat_key(&path, &meta),
            Oid::hash_file(ObjectType::Blob, &path).unwrap(),
        );
        let entry = entry_path(&repo, &key);
        // Just written: racily clean, so not remembered. (An hour for the
        // rule's second: writing and hashing 16 MiB on a loaded machine
        // can take longer than the second itself.)
        assert_eq!(
            big_blob_settled(&repo, &path, &meta, Duration::from_secs(3600)).unwrap(),
            Some(id)
        );
        assert!(
            !entry.exists(),
            "a file written within the settling time is not remembered"
        );
        assert_eq!(
            big_blob_settled(&repo, &path, &meta, Duration::ZERO).unwrap(),
            Some(id)
        );
        assert_eq!(remembered(&repo, &entry, &key), Some(id));
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&entry).unwrap().permissions().mode() & 0o777,
            0o600,
            "the entry names a path: private to the user"
        );
        // Another stat (new content) is another key: hashed again.
        std::fs::write(&path, vec![b'b'; (BIG_FILE + 1) as usize]).unwrap();
        let meta = std::fs::symlink_metadata(&path).unwrap();
        let other = Oid::hash_file(ObjectType::Blob, &path).unwrap();
        assert_eq!(
            remembered(
                &repo,
                &entry_path(&repo, &stat_key(&path, &meta)),
                &stat_key(&path, &meta)
            ),
            None
        );
        assert_eq!(big_blob(&repo, &path, &meta).unwrap(), Some(other));
        // An entry whose key is not the file's is not trusted.
        assert_eq!(remembered(&repo, &entry, "another key"), None);
    }

    #[test]
    fn the_remembered_ids_stay_bounded_dropping_the_oldest() {
        let dir = tempfile::tempdir().unwrap();
        for n in 0..5u64 {
            let path = dir.path().join(format!("e{n}"));
            std::fs::write(&path, "x").unwrap();
            let when = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000 + n);
            std::fs::File::options()
                .write(true)
                .open(&path)
                .unwrap()
                .set_modified(when)
                .unwrap();
        }
        prune(dir.path(), 3);
        let mut left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(left, ["e2", "e3", "e4"]);
    }
}
