//! Files too large to diff: above [`BIG_FILE`] (16 MiB) a working file is
//! hashed by streaming it into the object database (a fixed-size buffer,
//! whatever its size: a 1 GiB file costs no more memory than a small one),
//! and the guard compares it by blob id only — changed or not, never line
//! by line: [`small_blob`] leaves such a blob unread where a diff or a
//! symbol index would load it whole.

use std::io::Read;
use std::path::Path;

use git2::{Blob, ObjectType, Oid, Repository};

use super::GuardError;

/// The largest file the guard reads whole (to diff it, to find its
/// symbols); larger ones are compared by blob id only.
pub const BIG_FILE: u64 = 16 << 20;

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
}
