//! The symbols of parsed blobs kept on disk across runs, so that a second
//! cold `owt guard` (or `owt lsp` start) reads what an earlier one parsed
//! instead of parsing it again: one small file per `(blob, language)`
//! under `$OWT_HOME/cache/symbols/<version>/`, holding the [`FileSymbols`]
//! the notes and messages need (never a parse tree).
//!
//! - keyed by blob id and language, under a folder named by owt's version
//!   and a hash of the grammar code ([`version_dir`]): a new owt or a
//!   changed extraction reads none of an old one's entries (and prunes
//!   them);
//! - bounded: past [`MAX_TOTAL`] bytes the least recently used entries
//!   (by modification time, refreshed on a hit) go ([`DiskCache::prune`]);
//! - each entry is written to a temporary file and renamed into place, so
//!   a reader sees a whole entry or none.
//!
//! Invariants: an entry is trusted only when its magic, blob id, language,
//! length and checksum all match and it decodes within bounds; anything
//! else reads as a miss (the blob is parsed) and the entry is removed. No
//! failure here (a read-only or full disk, a race with another process's
//! prune) is an error: the cache is an optimisation only.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use git2::Oid;

use super::{FileSymbols, Lang, Symbol};

/// The folder under `$OWT_HOME`.
const DIR: &str = "cache/symbols";

/// What the entries of every version hold together, at most (about; a
/// prune runs when a process has written an eighth of it since the last).
pub const MAX_TOTAL: u64 = 32 << 20;

/// One entry larger than this is not read (nor written).
const MAX_ENTRY: u64 = 4 << 20;

/// An entry's first bytes.
const MAGIC: &[u8; 8] = b"owtsym2\0";

/// Every `Symbol::kind` the grammar gives (an entry stores its index).
const KINDS: [&str; 15] = [
    "fn",
    "def",
    "func",
    "function",
    "method",
    "struct",
    "enum",
    "trait",
    "mod",
    "impl",
    "class",
    "interface",
    "type",
    "union",
    "namespace",
];

const LANGS: [Lang; 9] = [
    Lang::Rust,
    Lang::Python,
    Lang::JavaScript,
    Lang::TypeScript,
    Lang::Tsx,
    Lang::Go,
    Lang::C,
    Lang::Cpp,
    Lang::Java,
];

/// FNV-1a, 64 bits.
const fn fnv(bytes: &[u8], mut hash: u64) -> u64 {
    let mut i = 0;
    while i < bytes.len() {
        hash ^= bytes[i] as u64;
        hash = hash.wrapping_mul(0x0100_0000_01b3);
        i += 1;
    }
    hash
}

const FNV_START: u64 = 0xcbf2_9ce4_8422_2325;

/// What a parse yields depends on this code and the grammars (pinned by
/// owt's version): an entry counts only for the same of both.
const GRAMMAR_HASH: u64 = fnv(
    include_bytes!("signatures.rs"),
    fnv(
        include_bytes!("grammar.rs"),
        fnv(include_bytes!("regions.rs"), FNV_START),
    ),
);

/// The folder of this owt's entries (under [`DIR`]).
fn version_dir() -> String {
    format!("{}-{:016x}", env!("CARGO_PKG_VERSION"), GRAMMAR_HASH)
}

/// The symbols of parsed blobs, on disk (see the module doc).
#[derive(Debug)]
pub struct DiskCache {
    /// `$OWT_HOME/cache/symbols`.
    root: PathBuf,
    /// This version's folder in it.
    dir: PathBuf,
    /// Bytes written since the last prune (`None`: none this process yet).
    since_prune: Option<u64>,
    /// Temporary files made (their names' counter).
    temps: u64,
    /// Entries read and used, written.
    pub hits: u64,
    pub writes: u64,
}

impl DiskCache {
    /// The cache under `home` (`$OWT_HOME`); nothing is made until an
    /// entry is written.
    pub fn new(home: &Path) -> DiskCache {
        DiskCache::at(home.join(DIR))
    }

    /// The cache in `root` itself (tests).
    pub fn at(root: PathBuf) -> DiskCache {
        DiskCache {
            dir: root.join(version_dir()),
            root,
            since_prune: None,
            temps: 0,
            hits: 0,
            writes: 0,
        }
    }

    fn entry_path(&self, id: Oid, lang: Lang) -> PathBuf {
        let hex = id.to_string();
        let (fan, rest) = hex.split_at(2.min(hex.len()));
        self.dir
            .join(fan)
            .join(format!("{rest}-{}", lang_index(lang)))
    }

    /// The symbols kept for blob `id` read as `lang`, when a sound entry
    /// holds them (a bad one is removed).
    pub fn get(&mut self, id: Oid, lang: Lang) -> Option<FileSymbols> {
        let path = self.entry_path(id, lang);
        let file = std::fs::File::open(&path).ok()?;
        if file.metadata().ok()?.len() > MAX_ENTRY {
            let _ = std::fs::remove_file(&path);
            return None;
        }
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut std::io::Read::take(&file, MAX_ENTRY + 1), &mut bytes)
            .ok()?;
        match decode(&bytes, id, lang) {
            Some(symbols) => {
                // Recently used: the last to be pruned.
                let _ = file.set_modified(SystemTime::now());
                self.hits += 1;
                Some(symbols)
            }
            None => {
                tracing::debug!("symbol cache: ignoring a bad entry {}", path.display());
                let _ = std::fs::remove_file(&path);
                None
            }
        }
    }

    /// Keeps the symbols of blob `id` read as `lang` (best effort).
    pub fn put(&mut self, id: Oid, lang: Lang, symbols: &FileSymbols) {
        let Some(bytes) = encode(id, lang, symbols) else {
            return;
        };
        if bytes.len() as u64 > MAX_ENTRY {
            return;
        }
        let path = self.entry_path(id, lang);
        let Some(folder) = path.parent() else {
            return;
        };
        self.temps += 1;
        let temp = self
            .dir
            .join(format!(".tmp-{}-{}", std::process::id(), self.temps));
        let written = std::os::unix::fs::DirBuilderExt::mode(
            std::fs::DirBuilder::new().recursive(true),
            0o700,
        )
        .create(folder)
        .and_then(|()| crate::store::write_private(&temp, &bytes))
        .and_then(|()| std::fs::rename(&temp, &path));
        if let Err(e) = written {
            tracing::debug!("symbol cache: not kept ({e})");
            let _ = std::fs::remove_file(&temp);
            return;
        }
        self.writes += 1;
        let since = self.since_prune.unwrap_or(0) + bytes.len() as u64;
        if self.since_prune.is_none() || since > MAX_TOTAL / 8 {
            self.prune(MAX_TOTAL);
            self.since_prune = Some(0);
        } else {
            self.since_prune = Some(since);
        }
    }

    /// Removes other versions' folders and, while this version's entries
    /// hold more than `max` bytes, the least recently used of them, down
    /// to three quarters of `max`.
    pub fn prune(&self, max: u64) {
        let version = version_dir();
        for other in read_dir(&self.root) {
            if other.file_name() != version.as_str() {
                let _ = std::fs::remove_dir_all(other.path());
            }
        }
        let mut entries: Vec<(SystemTime, u64, PathBuf)> = Vec::new();
        for fan in read_dir(&self.dir) {
            for entry in read_dir(&fan.path()) {
                if let Ok(meta) = entry.metadata() {
                    let used = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
                    entries.push((used, meta.len(), entry.path()));
                }
            }
        }
        // Temporary files another process left (killed mid-write), once
        // old.
        for entry in read_dir(&self.dir) {
            let stale = entry
                .metadata()
                .ok()
                .and_then(|m| m.modified().ok())
                .is_some_and(|t| {
                    t.elapsed()
                        .is_ok_and(|age| age > std::time::Duration::from_secs(600))
                });
            if entry.file_name().to_string_lossy().starts_with(".tmp-") && stale {
                let _ = std::fs::remove_file(entry.path());
            }
        }
        let mut total: u64 = entries.iter().map(|e| e.1).sum();
        if total <= max {
            return;
        }
        entries.sort();
        for (_, len, path) in entries {
            if total <= max / 4 * 3 {
                break;
            }
            if std::fs::remove_file(&path).is_ok() {
                total -= len;
            }
        }
    }

    /// Bytes this version's entries hold (tests).
    pub fn total_bytes(&self) -> u64 {
        read_dir(&self.dir)
            .iter()
            .flat_map(|fan| read_dir(&fan.path()))
            .filter_map(|e| e.metadata().ok())
            .filter(|m| m.is_file())
            .map(|m| m.len())
            .sum()
    }
}

/// A folder's entries (none when it cannot be read).
fn read_dir(dir: &Path) -> Vec<std::fs::DirEntry> {
    std::fs::read_dir(dir)
        .map(|d| d.flatten().collect())
        .unwrap_or_default()
}

fn lang_index(lang: Lang) -> u8 {
    LANGS.iter().position(|l| *l == lang).unwrap_or(0) as u8
}

/// An entry: magic, blob id (length first), language, payload length,
/// payload (symbols, uses, the lines covered when partial), checksum of
/// all before it. `None` when a kind is not one of
/// [`KINDS`] (such symbols are parsed each time rather than misread).
fn encode(id: Oid, lang: Lang, symbols: &FileSymbols) -> Option<Vec<u8>> {
    let mut payload = Vec::new();
    put_u32(&mut payload, symbols.symbols.len());
    for s in &symbols.symbols {
        payload.push(KINDS.iter().position(|k| *k == s.kind)? as u8);
        put_str(&mut payload, &s.name);
        for n in [s.first, s.last, s.head_last] {
            payload.extend_from_slice(&n.to_le_bytes());
        }
        payload.push(u8::from(s.signature.is_some()) | (u8::from(s.file_local) << 1));
        if let Some(sig) = &s.signature {
            put_str(&mut payload, sig);
        }
    }
    let mut uses: Vec<(&String, &Vec<u32>)> = symbols.uses.iter().collect();
    uses.sort();
    put_u32(&mut payload, uses.len());
    for (name, lines) in uses {
        put_str(&mut payload, name);
        put_u32(&mut payload, lines.len());
        for line in lines {
            payload.extend_from_slice(&line.to_le_bytes());
        }
    }
    // The segments a partial entry covers (`regions`), after a flag.
    payload.push(u8::from(symbols.covered.is_some()));
    if let Some(covered) = &symbols.covered {
        put_u32(&mut payload, covered.len());
        for (first, last) in covered {
            payload.extend_from_slice(&first.to_le_bytes());
            payload.extend_from_slice(&last.to_le_bytes());
        }
    }
    let mut out = MAGIC.to_vec();
    out.push(id.as_bytes().len() as u8);
    out.extend_from_slice(id.as_bytes());
    out.push(lang_index(lang));
    put_u32(&mut out, payload.len());
    out.extend_from_slice(&payload);
    let sum = fnv(&out, FNV_START);
    out.extend_from_slice(&sum.to_le_bytes());
    Some(out)
}

fn put_u32(out: &mut Vec<u8>, n: usize) {
    out.extend_from_slice(&(n as u32).to_le_bytes());
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    put_u32(out, s.len());
    out.extend_from_slice(s.as_bytes());
}

/// Reads an entry back: `None` unless it is sound and for `id` and `lang`.
fn decode(bytes: &[u8], id: Oid, lang: Lang) -> Option<FileSymbols> {
    let (body, sum) = bytes.split_at_checked(bytes.len().checked_sub(8)?)?;
    if fnv(body, FNV_START) != u64::from_le_bytes(sum.try_into().ok()?) {
        return None;
    }
    let mut r = Reader(body);
    if r.take(MAGIC.len())? != MAGIC {
        return None;
    }
    let id_len = r.byte()? as usize;
    if r.take(id_len)? != id.as_bytes() || r.byte()? != lang_index(lang) {
        return None;
    }
    let len = r.len()?;
    let payload = r.take(len)?;
    if !r.0.is_empty() {
        return None;
    }
    let mut r = Reader(payload);
    let mut out = FileSymbols::default();
    for _ in 0..r.len()? {
        let kind = *KINDS.get(r.byte()? as usize)?;
        let name = r.string()?;
        let (first, last, head_last) = (r.u32()?, r.u32()?, r.u32()?);
        let flags = r.byte()?;
        let signature = if flags & 1 == 1 {
            Some(r.string()?)
        } else {
            None
        };
        if first == 0 || first > last || head_last > last || flags > 3 {
            return None;
        }
        out.symbols.push(Symbol {
            kind,
            name,
            first,
            last,
            head_last,
            signature,
            file_local: flags & 2 == 2,
        });
    }
    for _ in 0..r.len()? {
        let name = r.string()?;
        let n = r.len()?;
        let lines = (0..n).map(|_| r.u32()).collect::<Option<Vec<u32>>>()?;
        out.uses.insert(name, lines);
    }
    match r.byte()? {
        0 => {}
        1 => {
            let n = r.len()?;
            let covered = (0..n)
                .map(|_| Some((r.u32()?, r.u32()?)))
                .collect::<Option<Vec<(u32, u32)>>>()?;
            if covered.iter().any(|&(a, b)| a == 0 || a > b) {
                return None;
            }
            out.covered = Some(covered);
        }
        _ => return None,
    }
    r.0.is_empty().then_some(out)
}

/// A cursor over an entry's bytes; every read checks the bounds.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, rest) = self.0.split_at_checked(n)?;
        self.0 = rest;
        Some(head)
    }

    fn byte(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    /// A count or length: never more than the bytes left (each counted
    /// thing takes at least one), so a bad one cannot ask for memory.
    fn len(&mut self) -> Option<usize> {
        let n = self.u32()? as usize;
        (n <= self.0.len()).then_some(n)
    }

    fn string(&mut self) -> Option<String> {
        let n = self.len()?;
        String::from_utf8(self.take(n)?.to_vec()).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(n: u32) -> FileSymbols {
        super::super::parse(
            format!(
                "static int f{n}(int a)\n{{\n\treturn g(a) + {n};\n}}\nstruct s {{ int b; }};\n"
            )
            .as_bytes(),
            Lang::C,
        )
        .unwrap()
    }

    fn blob(n: u32) -> Oid {
        Oid::hash_object(git2::ObjectType::Blob, &n.to_le_bytes()).unwrap()
    }

    #[test]
    fn an_entry_reads_back_only_for_its_blob_and_language() {
        let symbols = sample(1);
        assert!(symbols.symbols.iter().any(|s| s.file_local));
        let bytes = encode(blob(1), Lang::C, &symbols).unwrap();
        assert_eq!(decode(&bytes, blob(1), Lang::C), Some(symbols));
        assert_eq!(decode(&bytes, blob(2), Lang::C), None);
        assert_eq!(decode(&bytes, blob(1), Lang::Cpp), None);
        // Every cut and every flipped bit is refused, never a panic.
        for cut in 0..bytes.len() {
            assert_eq!(decode(&bytes[..cut], blob(1), Lang::C), None, "cut {cut}");
        }
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 1;
            assert_eq!(decode(&bad, blob(1), Lang::C), None, "byte {i}");
        }
        // A partial entry keeps the lines it covers.
        let part = FileSymbols {
            uses: Default::default(),
            covered: Some(vec![(1, 4), (9, u32::MAX)]),
            ..sample(2)
        };
        let bytes = encode(blob(2), Lang::C, &part).unwrap();
        assert_eq!(decode(&bytes, blob(2), Lang::C), Some(part));
    }

    #[test]
    fn every_kind_the_grammars_give_can_be_kept() {
        let words: std::collections::BTreeSet<&str> = KINDS.into_iter().collect();
        let source = include_str!("grammar.rs");
        let mut seen = 0;
        for (at, call) in source
            .match_indices("named(\"")
            .chain(source.match_indices("function(\""))
        {
            let word = source[at + call.len()..].split('"').next().unwrap();
            assert!(words.contains(word), "{word}");
            seen += 1;
        }
        assert!(seen > 10, "the grammar names its kinds as it did");
        for lang in LANGS {
            assert!(words.contains(lang.function_word()), "{lang:?}");
        }
    }

    #[test]
    fn the_cache_stays_under_its_bound_keeping_the_recently_used() {
        let dir = tempfile::tempdir().unwrap();
        let mut cache = DiskCache::at(dir.path().join("symbols"));
        // Another version's entries go at the first prune.
        let old = dir.path().join("symbols/0.0.0-old/ab");
        std::fs::create_dir_all(&old).unwrap();
        std::fs::write(old.join("cd-6"), b"stale").unwrap();
        let entry = encode(blob(0), Lang::C, &sample(0)).unwrap().len() as u64;
        let max = entry * 10;
        let day = std::time::Duration::from_secs(86_400);
        for n in 0..20 {
            cache.put(blob(n), Lang::C, &sample(n));
            // Written in order, a day apart: 0 the least recently used.
            let path = cache.entry_path(blob(n), Lang::C);
            let when = SystemTime::now() - day * (40 - n);
            std::fs::File::options()
                .write(true)
                .open(path)
                .unwrap()
                .set_modified(when)
                .unwrap();
        }
        assert!(!old.exists());
        assert_eq!(cache.get(blob(0), Lang::C), Some(sample(0)), "0 used now");
        cache.prune(max);
        assert!(
            cache.total_bytes() <= max,
            "{} > {max}",
            cache.total_bytes()
        );
        assert_eq!(
            cache.get(blob(0), Lang::C),
            Some(sample(0)),
            "recently used"
        );
        assert_eq!(cache.get(blob(1), Lang::C), None, "least recently used");
        assert_eq!(cache.get(blob(19), Lang::C), Some(sample(19)));
        assert_eq!(cache.hits, 3);
    }
}
