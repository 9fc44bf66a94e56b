//! The corpus spec `bench/corpus/extract.py` writes, and the repository
//! built from it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use git2::{Oid, Repository};
use serde::Deserialize;

use super::super::tree;
use super::git;

/// What `bench/corpus/extract.py` writes.
#[derive(Debug, Deserialize)]
pub struct Spec {
    /// The commit the topics were merged into.
    pub base: usize,
    pub topics: Vec<SpecTopic>,
    /// In an order where parents come first.
    pub commits: Vec<SpecCommit>,
    pub blobs: Vec<SpecBlob>,
    /// The number of the empty line.
    #[serde(default)]
    pub empty_line: Option<u64>,
    #[serde(default)]
    pub source: serde_json::Value,
}

#[derive(Debug, Deserialize)]
pub struct SpecTopic {
    pub name: String,
    pub tip: usize,
}

#[derive(Debug, Deserialize)]
pub struct SpecCommit {
    pub parents: Vec<usize>,
    /// Path → (blob, mode in octal).
    pub files: BTreeMap<String, (usize, String)>,
}

#[derive(Debug, Deserialize)]
pub struct SpecBlob {
    #[serde(default)]
    pub binary: Option<u64>,
    #[serde(default)]
    pub seed: Option<u64>,
    #[serde(default)]
    pub lines: Option<Vec<u64>>,
    /// A delta against this earlier blob.
    #[serde(default, rename = "ref")]
    pub reference: Option<usize>,
    /// `[start, count]` copies lines of the reference; `["+", n…]` is new
    /// lines.
    #[serde(default)]
    pub ops: Option<Vec<serde_json::Value>>,
}

impl Spec {
    /// Reads a spec (`.json`, or `.json.gz` through `gzip -dc`).
    pub fn read(path: &Path) -> Result<Spec, String> {
        let bytes = if path.extension().is_some_and(|e| e == "gz") {
            let out = Command::new("gzip")
                .arg("-dc")
                .arg(path)
                .output()
                .map_err(|e| format!("gzip: {e}"))?;
            if !out.status.success() {
                return Err(format!(
                    "gzip -dc {}: {}",
                    path.display(),
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
            out.stdout
        } else {
            std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?
        };
        serde_json::from_slice(&bytes).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Every blob's line numbers (`None` for a binary one).
    fn lines(&self) -> Result<Vec<Option<Vec<u64>>>, String> {
        let mut out: Vec<Option<Vec<u64>>> = Vec::with_capacity(self.blobs.len());
        for (i, blob) in self.blobs.iter().enumerate() {
            if blob.binary.is_some() {
                out.push(None);
                continue;
            }
            if let Some(lines) = &blob.lines {
                out.push(Some(lines.clone()));
                continue;
            }
            let (Some(reference), Some(ops)) = (blob.reference, &blob.ops) else {
                return Err(format!("blob {i} has neither lines nor a delta"));
            };
            let old = out
                .get(reference)
                .and_then(Option::as_ref)
                .ok_or_else(|| format!("blob {i}: bad reference {reference}"))?;
            let mut lines = Vec::new();
            for op in ops {
                let items = op.as_array().ok_or("a delta op is not a list")?;
                if items.first().and_then(|v| v.as_str()) == Some("+") {
                    lines.extend(items[1..].iter().filter_map(|v| v.as_u64()));
                } else {
                    let start = items.first().and_then(|v| v.as_u64()).unwrap_or(0) as usize;
                    let count = items.get(1).and_then(|v| v.as_u64()).unwrap_or(0) as usize;
                    lines.extend_from_slice(
                        old.get(start..start + count)
                            .ok_or_else(|| format!("blob {i}: copy out of range"))?,
                    );
                }
            }
            out.push(Some(lines));
        }
        Ok(out)
    }
}

/// Content for a spec blob: each line number becomes a line of its own
/// (`l<n>`; the empty line stays empty), so lines are equal exactly when
/// they were; a binary blob becomes bytes from its seed.
fn render(lines: Option<&[u64]>, blob: &SpecBlob, empty: Option<u64>) -> Vec<u8> {
    match lines {
        Some(lines) => lines
            .iter()
            .map(|n| {
                if Some(*n) == empty {
                    String::new()
                } else {
                    format!("l{n}")
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
            .into_bytes(),
        None => {
            let mut x = blob.seed.unwrap_or(1).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
            let size = blob.binary.unwrap_or(64).clamp(16, 4096) as usize;
            let mut bytes: Vec<u8> = (0..size)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect();
            bytes[0] = 0;
            bytes
        }
    }
}

/// Builds the repository of `spec` at `dir/main` (`main` = its base,
/// `topic/NN-name` = its topics) and returns the main checkout.
pub fn build(spec: &Spec, dir: &Path) -> Result<PathBuf, String> {
    let main = dir.join("main");
    if main.exists() {
        return Err(format!("{} exists", main.display()));
    }
    std::fs::create_dir_all(&main).map_err(|e| e.to_string())?;
    git(&main, &["init", "-q", "-b", "main"]);
    let repo = Repository::open(&main).map_err(|e| e.to_string())?;
    let lines = spec.lines()?;
    let mut blob_ids = Vec::with_capacity(spec.blobs.len());
    for (i, blob) in spec.blobs.iter().enumerate() {
        let bytes = render(lines[i].as_deref(), blob, spec.empty_line);
        blob_ids.push(repo.blob(&bytes).map_err(|e| e.to_string())?);
    }
    let mut commits: Vec<Oid> = Vec::with_capacity(spec.commits.len());
    for (i, commit) in spec.commits.iter().enumerate() {
        let mut files = BTreeMap::new();
        for (path, (blob, mode)) in &commit.files {
            let mode = i32::from_str_radix(mode, 8).map_err(|e| e.to_string())?;
            let id = *blob_ids.get(*blob).ok_or("bad blob index")?;
            files.insert(path.clone(), Some((id, mode)));
        }
        let tree_id = tree::overlay(&repo, None, &files).map_err(|e| e.to_string())?;
        let tree = repo.find_tree(tree_id).map_err(|e| e.to_string())?;
        let parents = commit
            .parents
            .iter()
            .map(|p| {
                commits
                    .get(*p)
                    .ok_or_else(|| format!("commit {i}: parent {p} not built yet"))
                    .and_then(|id| repo.find_commit(*id).map_err(|e| e.to_string()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let parents: Vec<&git2::Commit<'_>> = parents.iter().collect();
        let time = git2::Time::new(1_700_000_000 + i as i64 * 60, 0);
        let signature = git2::Signature::new("Corpus", "corpus@example.com", &time)
            .map_err(|e| e.to_string())?;
        let id = repo
            .commit(
                None,
                &signature,
                &signature,
                &format!("commit {i}"),
                &tree,
                &parents,
            )
            .map_err(|e| e.to_string())?;
        commits.push(id);
    }
    let base = *commits.get(spec.base).ok_or("bad base index")?;
    repo.reference("refs/heads/main", base, true, "corpus base")
        .map_err(|e| e.to_string())?;
    for (i, topic) in spec.topics.iter().enumerate() {
        let tip = *commits.get(topic.tip).ok_or("bad tip index")?;
        let name = format!("refs/heads/topic/{i:02}-{}", topic.name.replace('/', "-"));
        repo.reference(&name, tip, true, "corpus topic")
            .map_err(|e| e.to_string())?;
    }
    git(&main, &["checkout", "-q", "-f", "main"]);
    Ok(main)
}
