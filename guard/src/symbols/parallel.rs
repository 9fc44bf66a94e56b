//! Parsing blobs, and several at once on the available cores: which blobs
//! the index parses ([`parsable_blob`]), how a parse is kept
//! ([`SymbolIndex::keep_parse`], for [`SymbolIndex::symbols`] too); what a side's
//! signature changes need first (every old version of its changed files)
//! is known before any of it is parsed, so a cold run with an empty symbol
//! cache parses those blobs in parallel instead of one after another.
//!
//! Invariants: the symbols are those [`SymbolIndex::symbols`] gives (a
//! fresh parse of the same blob), cached the same way (in memory, on disk,
//! the tree kept); blobs are read on the calling thread (a
//! [`Repository`] is not shared between threads), only parsed on others.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use git2::{Oid, Repository};

use super::{parse_from, FileSymbols, Kept, Lang, SymbolIndex, BYTES_PER_NODE, MAX_BYTES};

/// Threads at most, whatever the cores.
const MAX_THREADS: usize = 8;

/// One blob to parse: its path, id, language and text.
type Job = (String, Oid, Lang, Vec<u8>);

impl SymbolIndex {
    /// A parse of blob `id` (`source`, as `lang`, at `path`) kept: on disk,
    /// its tree for incremental parses; its symbols, for the caller to
    /// cache in memory.
    pub(super) fn keep_parse(
        &mut self,
        path: &str,
        id: Oid,
        lang: Lang,
        source: &[u8],
        symbols: FileSymbols,
        tree: tree_sitter::Tree,
    ) -> Arc<FileSymbols> {
        if let Some(disk) = &mut self.disk {
            disk.put(id, lang, &symbols);
        }
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
    pub(super) fn prefetch(&mut self, repo: &Repository, wanted: &[(&str, Oid, Lang)]) {
        if self.files.len() + wanted.len() >= super::MAX_CACHED {
            self.files.clear();
        }
        let mut jobs: Vec<Job> = Vec::new();
        for &(path, id, lang) in wanted {
            if self.files.contains_key(&(id, lang)) || jobs.iter().any(|j| (j.1, j.2) == (id, lang))
            {
                continue;
            }
            if let Some(found) = self.disk.as_mut().and_then(|d| d.get(id, lang)) {
                self.files.insert((id, lang), Some(Arc::new(found)));
                continue;
            }
            let Some(blob) = parsable_blob(repo, id) else {
                continue;
            };
            jobs.push((path.to_string(), id, lang, blob.content().to_vec()));
        }
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(MAX_THREADS)
            .min(jobs.len());
        if threads < 2 {
            return;
        }
        // Largest first, each thread taking the next as it finishes one.
        jobs.sort_by_key(|j| std::cmp::Reverse(j.3.len()));
        let next = AtomicUsize::new(0);
        let done: Mutex<Vec<Option<(FileSymbols, tree_sitter::Tree)>>> =
            Mutex::new((0..jobs.len()).map(|_| None).collect());
        std::thread::scope(|scope| {
            for _ in 0..threads {
                scope.spawn(|| loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some((_, _, lang, text)) = jobs.get(i) else {
                        return;
                    };
                    let parsed = parse_from(text, *lang, None).map(|(s, tree, _)| (s, tree));
                    done.lock().unwrap_or_else(|p| p.into_inner())[i] = parsed;
                });
            }
        });
        let done = done.into_inner().unwrap_or_else(|p| p.into_inner());
        for ((path, id, lang, text), parsed) in jobs.into_iter().zip(done) {
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

/// Blob `id` when the index parses it: text, at most [`MAX_BYTES`].
pub(super) fn parsable_blob(repo: &Repository, id: Oid) -> Option<git2::Blob<'_>> {
    super::super::big::small_blob(repo, id)
        .filter(|b| !b.is_binary() && b.content().len() <= MAX_BYTES)
}

#[cfg(test)]
mod tests {
    use super::super::parse;
    use super::*;

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
        let wanted: Vec<(&str, Oid, Lang)> = paths
            .iter()
            .zip(&ids)
            .map(|(p, id)| (p.as_str(), *id, Lang::C))
            .collect();
        let mut index = SymbolIndex::default();
        index.prefetch(&repo, &wanted);
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(index.parsed, if cores >= 2 { 5 } else { 0 });
        for (source, (path, id, lang)) in sources.iter().zip(&wanted) {
            let got = index.symbols(&repo, path, *id, *lang).expect("parsed");
            assert_eq!(*got, parse(source.as_bytes(), Lang::C).unwrap());
        }
        assert_eq!(index.parsed, 5, "each blob parsed once");
        assert_eq!(index.kept().0, 5, "their trees kept");
    }
}
