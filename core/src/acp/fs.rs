//! The files an ACP agent asks its client for (`fs/read_text_file`,
//! `fs/write_text_file`), confined to the session's worktree.
//!
//! Invariants: a path is resolved (symbolic links followed, `..` applied)
//! before it is checked, so no link or `..` reaches outside the worktree;
//! a write then opens what it resolved without following a link
//! ([`crate::safe_fs`]), so a dangling link is refused too;
//! nothing is written inside the worktree's `.git`; a refused request
//! changes nothing.

use std::path::{Component, Path, PathBuf};

use super::rpc::RpcError;

/// Resolves `path` (absolute, or relative to `root`) to a real path inside
/// `root` (itself resolved). The part that does not exist yet must be plain
/// names.
pub fn confine(root: &Path, path: &str) -> Result<PathBuf, RpcError> {
    let outside = || {
        RpcError::invalid_params(format!(
            "{path} is outside this session's worktree {}; owt lets the agent read and write only there",
            root.display()
        ))
    };
    if path.is_empty() || path.contains('\0') {
        return Err(RpcError::invalid_params(format!("bad path {path:?}")));
    }
    let root = root
        .canonicalize()
        .map_err(|e| RpcError::internal(format!("resolving {}: {e}", root.display())))?;
    let wanted = Path::new(path);
    let wanted = if wanted.is_absolute() {
        wanted.to_path_buf()
    } else {
        root.join(wanted)
    };
    // Apply `..` and `.` lexically first, then resolve the longest existing
    // prefix through the file system (links included).
    let mut lexical = PathBuf::new();
    for c in wanted.components() {
        match c {
            Component::ParentDir => {
                lexical.pop();
            }
            Component::CurDir => {}
            other => lexical.push(other.as_os_str()),
        }
    }
    let mut existing = lexical.clone();
    let mut rest = Vec::new();
    let resolved_prefix = loop {
        match existing.canonicalize() {
            Ok(p) => break p,
            Err(_) => {
                let Some(name) = existing.file_name().map(|n| n.to_os_string()) else {
                    return Err(outside());
                };
                rest.push(name);
                if !existing.pop() {
                    return Err(outside());
                }
            }
        }
    };
    let mut resolved = resolved_prefix;
    for name in rest.into_iter().rev() {
        resolved.push(name);
    }
    if !resolved.starts_with(&root) {
        return Err(outside());
    }
    Ok(resolved)
}

/// `fs/read_text_file`: the file's text, from 1-based `line`, at most
/// `limit` lines.
pub fn read_text(
    root: &Path,
    path: &str,
    line: Option<u64>,
    limit: Option<u64>,
) -> Result<String, RpcError> {
    let file = confine(root, path)?;
    let bytes = std::fs::read(&file).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => RpcError::not_found(format!(
            "Resource not found: {path} (No such file or directory)"
        )),
        _ => RpcError::internal(format!("reading {path}: {e}")),
    })?;
    let text = String::from_utf8(bytes)
        .map_err(|_| RpcError::internal(format!("{path} is not UTF-8 text")))?;
    if line.is_none() && limit.is_none() {
        return Ok(text);
    }
    let skip = line.unwrap_or(1).saturating_sub(1) as usize;
    let take = limit.map_or(usize::MAX, |l| l as usize);
    Ok(text.split_inclusive('\n').skip(skip).take(take).collect())
}

/// `fs/write_text_file`: writes `content` (creating folders inside the
/// worktree as needed). Returns the file written.
pub fn write_text(root: &Path, path: &str, content: &str) -> Result<PathBuf, RpcError> {
    let file = confine(root, path)?;
    let canonical_root = root
        .canonicalize()
        .map_err(|e| RpcError::internal(format!("resolving {}: {e}", root.display())))?;
    let inside = file.strip_prefix(&canonical_root).unwrap_or(&file);
    if inside.components().next() == Some(Component::Normal(".git".as_ref())) {
        return Err(RpcError::invalid_params(format!(
            "{path} is inside the worktree's .git; owt does not let the agent write there"
        )));
    }
    if file == canonical_root {
        return Err(RpcError::invalid_params(format!(
            "{path} is the worktree itself"
        )));
    }
    // Written without following a link: `confine` let a dangling link
    // through (its target does not exist yet, so it resolves to itself).
    crate::safe_fs::write_beneath(&canonical_root, inside, content.as_bytes(), None).map_err(
        |e| match e.is_refusal() {
            true => RpcError::invalid_params(format!("{path}: {e}")),
            false => RpcError::internal(format!("writing {path}: {e}")),
        },
    )?;
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_and_writes_stay_in_the_worktree() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("wt");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("secret"), "secret").unwrap();
        std::os::unix::fs::symlink(&outside, root.join("link")).unwrap();
        std::os::unix::fs::symlink(outside.join("secret"), root.join("file-link")).unwrap();
        std::os::unix::fs::symlink(outside.join("created"), root.join("dangling")).unwrap();

        let w = |p: &str| write_text(&root, p, "x\n");
        assert!(w(&root.join("src/new/deep.txt").to_string_lossy()).is_ok());
        assert_eq!(
            std::fs::read_to_string(root.join("src/new/deep.txt")).unwrap(),
            "x\n"
        );
        assert!(w("relative.txt").is_ok());
        assert!(root.join("relative.txt").is_file());
        for bad in [
            outside.join("x").to_string_lossy().into_owned(),
            root.join("../outside/x").to_string_lossy().into_owned(),
            root.join("link/x").to_string_lossy().into_owned(),
            root.join("file-link").to_string_lossy().into_owned(),
            root.join("dangling").to_string_lossy().into_owned(),
            "dangling".into(),
            root.join(".git/config").to_string_lossy().into_owned(),
            "/etc/passwd".into(),
            "../../x".into(),
        ] {
            let err = w(&bad).unwrap_err();
            assert_eq!(
                err.code,
                super::super::rpc::code::INVALID_PARAMS,
                "{bad}: {err}"
            );
        }
        assert_eq!(
            std::fs::read_to_string(outside.join("secret")).unwrap(),
            "secret"
        );
        assert!(!outside.join("x").exists());
        assert!(
            !outside.join("created").exists(),
            "a dangling link is not written through"
        );

        std::fs::write(root.join("lines.txt"), "a\nb\nc\nd\n").unwrap();
        let p = root.join("lines.txt").to_string_lossy().into_owned();
        assert_eq!(read_text(&root, &p, None, None).unwrap(), "a\nb\nc\nd\n");
        assert_eq!(read_text(&root, &p, Some(2), Some(2)).unwrap(), "b\nc\n");
        let missing =
            read_text(&root, &root.join("nope").to_string_lossy(), None, None).unwrap_err();
        assert_eq!(missing.code, super::super::rpc::code::RESOURCE_NOT_FOUND);
        assert!(missing.message.contains("Resource not found"));
        assert!(read_text(&root, &root.join("file-link").to_string_lossy(), None, None).is_err());
    }
}
