//! Parsing blobs, and several at once on the available cores: how a parse
//! is kept ([`SymbolIndex::keep_parse`], for [`SymbolIndex::symbols`]
//! too); what a side's signature changes need first (every old version of
//! its changed files, around its hunks: `regions`) is known before any of
//! it is parsed, so a cold run with an empty symbol
//! cache parses those blobs in parallel instead of one after another
//! ([`SymbolIndex::prefetch`]) — and a full recompute knows them for every
//! side before its pairs, so it starts those parses in the background
//! while git compares the pairs ([`SymbolIndex::start_parses_for`]); the
//! next call that needs a parse takes them in ([`SymbolIndex::settle`]).
//!
//! Invariants: the symbols are those [`SymbolIndex::symbols`] (or, for a
//! part, [`SymbolIndex::symbols_near`]) gives (a
//! fresh parse of the same blob), cached the same way (in memory, on disk,
//! the tree kept); blobs are read on the calling thread (a
//! [`Repository`] is not shared between threads), only parsed on others;
//! the background parses are the blobs a side's [`signature_changes`]
//! would parse first, for the sides [`SymbolIndex::semantic`] would ask
//! (so a cold run parses nothing it did not parse before).
//!
//! [`signature_changes`]: super::signature_changes

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use git2::{Oid, Repository};
use owt_protocol::guard::LineRange;

use super::regions::{parsable_blob, parse_near, Wanted};
use super::signatures::old_versions;
use super::{FileSymbols, Kept, Lang, SideRef, SymbolIndex, BYTES_PER_NODE};

/// Threads at most, whatever the cores.
const MAX_THREADS: usize = 8;

/// Source bytes at most in one background batch: every parse tree of a
/// batch is alive until it is taken in (~27 bytes of tree a byte of C
/// source), so a full recompute with many large changed files parses the
/// rest as each side asks, as before.
const BACKGROUND_BYTES: usize = 4 << 20;

/// One blob to parse: its path, id, language and text, and for a part of
/// it, the lines asked and what is known of it already.
type Job = (
    String,
    Oid,
    Lang,
    Vec<u8>,
    Option<(Vec<LineRange>, Option<Arc<FileSymbols>>)>,
);

/// What a parse of one job gives (none: the grammar gave up): the
/// symbols, and the tree of a whole file's parse.
type Parsed = Option<(FileSymbols, Option<tree_sitter::Tree>)>;

/// Parses running in the background, taken in by [`SymbolIndex::settle`]:
/// the thread gives back its jobs with what parsing them gave.
pub(super) type Pending = JoinHandle<(Vec<Job>, Vec<Parsed>)>;

/// Parses `jobs` on `threads` threads, largest first (the caller sorted
/// them), each thread taking the next as it finishes one.
fn parse_all(jobs: &[Job], threads: usize) -> Vec<Parsed> {
    let next = AtomicUsize::new(0);
    let done: Mutex<Vec<Parsed>> = Mutex::new((0..jobs.len()).map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some((_, _, lang, text, part)) = jobs.get(i) else {
                    return;
                };
                let parsed = match part {
                    Some((lines, have)) => parse_near(text, *lang, have.as_deref(), lines),
                    None => {
                        super::parse_from(text, *lang, None).map(|(s, tree, _)| (s, Some(tree)))
                    }
                };
                done.lock().unwrap_or_else(|p| p.into_inner())[i] = parsed;
            });
        }
    });
    done.into_inner().unwrap_or_else(|p| p.into_inner())
}

/// Threads for `jobs` parses: the cores, at most [`MAX_THREADS`].
fn threads_for(jobs: usize) -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(MAX_THREADS)
        .min(jobs)
}

impl SymbolIndex {
    /// A parse of blob `id` (`source`, as `lang`, at `path`) kept: on disk,
    /// its tree (a whole file's) for incremental parses; its symbols, for
    /// the caller to cache in memory.
    pub(super) fn keep_parse(
        &mut self,
        path: &str,
        id: Oid,
        lang: Lang,
        source: &[u8],
        symbols: FileSymbols,
        tree: Option<tree_sitter::Tree>,
    ) -> Arc<FileSymbols> {
        if let Some(disk) = &mut self.disk {
            disk.put(id, lang, &symbols);
        }
        let Some(tree) = tree else {
            return Arc::new(symbols);
        };
        self.keep(Kept {
            path: path.to_string(),
            lang,
            cost: source.len() + tree.root_node().descendant_count() * BYTES_PER_NODE,
            source: source.into(),
            tree,
            used: std::time::Instant::now(),
        });
        Arc::new(symbols)
    }

    /// Makes sure the symbols of each `(path, blob, language)` of `wanted`
    /// are cached, parsing those in neither cache in parallel; afterwards
    /// [`SymbolIndex::symbols`] finds each without parsing. Does nothing
    /// when fewer than two need a parse (the usual path parses them,
    /// incrementally where it can).
    pub(super) fn prefetch(&mut self, repo: &Repository, wanted: &[Wanted<'_>]) {
        self.settle();
        let jobs = self.jobs(repo, wanted);
        let threads = threads_for(jobs.len());
        if threads < 2 {
            return;
        }
        let parsed = parse_all(&jobs, threads);
        self.take_in(jobs, parsed);
    }

    /// Starts parsing, in the background, what the signature changes of
    /// `sides` will parse first: the old versions of each side's changed
    /// files, for each side whose old files share a word with another
    /// side's written lines (the sides [`SymbolIndex::semantic`] asks for
    /// signature changes when it compares every pair of `sides`), at most
    /// [`BACKGROUND_BYTES`] of them. Nothing when the index is off or
    /// parses are already running; the blobs are read here, the parses run
    /// on the cores meanwhile.
    pub fn start_parses_for(&mut self, repo: &Repository, sides: &[SideRef<'_>]) {
        if !self.enabled || self.pending.is_some() {
            return;
        }
        let mut wanted: Vec<Wanted<'_>> = Vec::new();
        for (i, changer) in sides.iter().enumerate() {
            if self.signature_changes.contains_key(&changer.key) {
                continue;
            }
            let mut asked = false;
            for (j, user) in sides.iter().enumerate() {
                if i != j {
                    let used = self.side_words(repo, user);
                    if self.old_files_mention(repo, changer, &used) {
                        asked = true;
                        break;
                    }
                }
            }
            if asked {
                wanted.extend(old_versions(changer.changes));
            }
        }
        let mut budget = BACKGROUND_BYTES;
        let jobs: Vec<Job> = self
            .jobs(repo, &wanted)
            .into_iter()
            .filter(|j| match budget.checked_sub(j.3.len()) {
                Some(left) => {
                    budget = left;
                    true
                }
                None => false,
            })
            .collect();
        if jobs.is_empty() {
            return;
        }
        let threads = threads_for(jobs.len());
        let parses = std::thread::Builder::new()
            .name("symbol-parses".into())
            .spawn(move || {
                let parsed = parse_all(&jobs, threads);
                (jobs, parsed)
            });
        match parses {
            Ok(parses) => self.pending = Some(parses),
            // No thread: the parses happen when they are needed, as before.
            Err(e) => tracing::debug!("symbol index: no thread for background parses: {e}"),
        }
    }

    /// Takes in the background parses, waiting for them when they are
    /// still running (nothing when none were started).
    pub(super) fn settle(&mut self) {
        let Some(pending) = self.pending.take() else {
            return;
        };
        match pending.join() {
            Ok((jobs, parsed)) => self.take_in(jobs, parsed),
            // A parse panicked: those blobs are parsed again when needed.
            Err(_) => tracing::warn!("symbol index: a background parse failed"),
        }
    }

    /// The blobs of `wanted` in neither cache, read, largest first (each
    /// once); the memory cache starts over when they would overfill it.
    fn jobs(&mut self, repo: &Repository, wanted: &[Wanted<'_>]) -> Vec<Job> {
        if self.files.len() + wanted.len() >= super::MAX_CACHED {
            self.files.clear();
        }
        let mut jobs: Vec<Job> = Vec::new();
        for (path, id, lang, lines) in wanted {
            let (id, lang) = (*id, *lang);
            if jobs.iter().any(|j| (j.1, j.2) == (id, lang)) {
                continue;
            }
            let lines = lines
                .as_ref()
                .filter(|_| self.regions && super::regions::segmented(lang));
            let have = self.cached_any(id, lang);
            let part = match (&have, lines) {
                // Known unparsable, or a whole file's known.
                (Some(None), _) => continue,
                (Some(Some(f)), _) if f.covered.is_none() => continue,
                (Some(Some(f)), Some(lines)) if f.covers(lines) => continue,
                (_, Some(lines)) => Some((lines.clone(), have.flatten())),
                (_, None) => None,
            };
            let Some(blob) = parsable_blob(repo, id) else {
                continue;
            };
            jobs.push((path.to_string(), id, lang, blob.content().to_vec(), part));
        }
        jobs.sort_by_key(|j| std::cmp::Reverse(j.3.len()));
        jobs
    }

    /// Caches what parsing `jobs` gave (`parsed`, in the same order).
    fn take_in(&mut self, jobs: Vec<Job>, parsed: Vec<Parsed>) {
        for ((path, id, lang, text, _), parsed) in jobs.into_iter().zip(parsed) {
            self.parsed += 1;
            let Some((symbols, tree)) = parsed else {
                self.files.insert((id, lang), None);
                continue;
            };
            let symbols = self.keep_parse(&path, id, lang, &text, symbols, tree);
            self.files.insert((id, lang), Some(symbols));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::super::changes::{Change, ChangeKind, Hunk};
    use super::super::parse;
    use super::*;

    /// A one-file modification from blob `old` to `new`, one hunk of
    /// `hunk` = (old start, old lines, new start, new lines).
    fn modified(path: &str, old: Oid, new: Oid, hunk: (u32, u32, u32, u32)) -> Change {
        Change {
            path: path.to_string(),
            old_path: None,
            kind: ChangeKind::Modified,
            old: Some((old, 0o100644)),
            new: Some((new, 0o100644)),
            binary: false,
            hunks: vec![Hunk {
                old_start: hunk.0,
                old_lines: hunk.1,
                new_start: hunk.2,
                new_lines: hunk.3,
            }],
        }
    }

    #[test]
    fn background_parses_are_the_old_versions_a_pair_asks_for_and_give_the_same_notes() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        let blob = |text: &str| repo.blob(text.as_bytes()).unwrap();
        let one = "pub fn alpha(n: u32) -> u32 {\n    let x = n;\n    x\n}\n";
        let two = "pub fn beta() -> i64 {\n    let y = 2;\n    y\n}\n";
        // a changes alpha's signature; b's written line calls alpha. b's
        // old file shares no word with a's written line: only a's old
        // version is asked for.
        let a_changes = [modified(
            "src/one.rs",
            blob(one),
            blob(&one.replace("alpha(n: u32)", "alpha(n: u32, m: u32)")),
            (1, 1, 1, 1),
        )];
        let b_changes = [modified(
            "src/two.rs",
            blob(two),
            blob(&two.replace("let y = 2;", "let y = alpha(2);")),
            (2, 1, 2, 1),
        )];
        let side = |name, key: u8, changes| SideRef {
            name,
            key: (Oid::zero(), Oid::from_bytes(&[key; 20]).unwrap()),
            changes,
        };
        let (a, b) = (side("a", 1, &a_changes[..]), side("b", 2, &b_changes[..]));

        let mut serial = SymbolIndex::default();
        let expected = serial.semantic(&repo, &a, &b);
        assert_eq!(expected.len(), 1, "{expected:?}");

        let mut index = SymbolIndex::default();
        index.start_parses_for(&repo, &[a, b]);
        assert!(index.pending.is_some(), "a's old version parsing");
        index.settle();
        assert!(index.pending.is_none());
        assert_eq!(index.parsed, 1, "only a's old version");
        assert_eq!(index.semantic(&repo, &a, &b), expected);
        assert_eq!(index.parsed, serial.parsed, "nothing parsed twice");

        // Nothing starts when the index is off.
        let mut off = SymbolIndex {
            enabled: false,
            ..SymbolIndex::default()
        };
        off.start_parses_for(&repo, &[a, b]);
        assert!(off.pending.is_none());
    }

    #[test]
    fn a_background_batch_stops_at_its_bytes_and_the_rest_is_parsed_when_asked() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        let blob = |text: &str| repo.blob(text.as_bytes()).unwrap();
        // Five old versions of ~0.9 MiB (a long comment, quick to parse),
        // each defining alpha, which b's written line calls.
        let filler = format!("// {}\n", "x".repeat(900 << 10));
        let paths: Vec<String> = (0..5).map(|n| format!("src/f{n}.rs")).collect();
        let a_changes: Vec<Change> = paths
            .iter()
            .enumerate()
            .map(|(n, path)| {
                let old = format!(
                    "{filler}pub fn alpha{n}(n: u32) -> u32 {{ n }}\npub fn alpha() {{}}\n"
                );
                let new = old.replace(&format!("alpha{n}(n: u32)"), &format!("alpha{n}(n: u64)"));
                let line = old.lines().count() as u32 - 1;
                modified(path, blob(&old), blob(&new), (line, 1, line, 1))
            })
            .collect();
        let b_changes = [modified(
            "src/b.rs",
            blob("fn b() {}\n"),
            blob("fn b() {}\nfn c() { alpha(); }\n"),
            (2, 0, 2, 1),
        )];
        let sides = [
            SideRef {
                name: "a",
                key: (Oid::zero(), Oid::from_bytes(&[1; 20]).unwrap()),
                changes: &a_changes,
            },
            SideRef {
                name: "b",
                key: (Oid::zero(), Oid::from_bytes(&[2; 20]).unwrap()),
                changes: &b_changes,
            },
        ];
        let mut index = SymbolIndex::default();
        index.start_parses_for(&repo, &sides);
        index.settle();
        assert_eq!(
            index.parsed, 4,
            "4 of ~0.9 MiB fit in {BACKGROUND_BYTES} bytes"
        );
        // The fifth is parsed when a side asks for it, as before.
        let (path, id, lang, _) = old_versions(&a_changes).swap_remove(4);
        assert!(index.symbols(&repo, path, id, lang).is_some());
        assert_eq!(index.parsed, 5);
    }

    #[test]
    fn blobs_parsed_at_once_are_what_a_parse_gives_and_are_not_parsed_again() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        let sources: Vec<String> = (0..5)
            .map(|n| format!("int f{n}(int a)\n{{\n\treturn g(a) + {n};\n}}\n"))
            .collect();
        let ids: Vec<Oid> = sources
            .iter()
            .map(|s| repo.blob(s.as_bytes()).unwrap())
            .collect();
        let paths: Vec<String> = (0..5).map(|n| format!("f{n}.c")).collect();
        let wanted: Vec<Wanted<'_>> = paths
            .iter()
            .zip(&ids)
            .map(|(p, id)| (p.as_str(), *id, Lang::C, None))
            .collect();
        let mut index = SymbolIndex::default();
        index.prefetch(&repo, &wanted);
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(index.parsed, if cores >= 2 { 5 } else { 0 });
        for (source, (path, id, lang, _)) in sources.iter().zip(&wanted) {
            let got = index.symbols(&repo, path, *id, *lang).expect("parsed");
            assert_eq!(*got, parse(source.as_bytes(), Lang::C).unwrap());
        }
        assert_eq!(index.parsed, 5, "each blob parsed once");
        assert_eq!(index.kept().0, 5, "their trees kept");
    }
}
