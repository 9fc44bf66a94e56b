//! Parsing old versions around the lines asked (`symbols::regions`) gives
//! what parsing them whole gives, on real code: libgit2's C (vendored by
//! the `libgit2-sys` crate this workspace builds, found with `cargo
//! metadata`), owt's own Rust and the VS Code extension's TypeScript. Each
//! side edits a few files the way agents do (a signature changed, a
//! function removed, moved to the end, renamed, a body line added), and
//! its signature changes, the symbols around its hunks and the `semantic`
//! notes of another side calling the changed functions are compared
//! between an index that parses segments and one that parses whole files.

use std::path::{Path, PathBuf};

use git2::{DiffOptions, Oid, Patch, Repository};
use owt_protocol::guard::LineRange;

use super::changes::{Change, ChangeKind, Hunk};
use super::symbols::{
    each_segment, parse, reads_items_whole, signature_changes, Lang, SideRef, SymbolIndex,
};
use super::tests::Rng;

/// The C files of libgit2 as `libgit2-sys` vendors it.
fn libgit2_sources() -> Vec<PathBuf> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    // This machine's packages only: all of them are here (built).
    let rustc = std::process::Command::new("rustc")
        .arg("-vV")
        .output()
        .unwrap();
    let host = String::from_utf8_lossy(&rustc.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: ").map(str::to_string))
        .expect("rustc -vV names the host");
    let out = std::process::Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--offline"])
        .args(["--filter-platform", &host])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(out.status.success(), "cargo metadata: {out:?}");
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let manifest = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "libgit2-sys")
        .and_then(|p| p["manifest_path"].as_str())
        .expect("libgit2-sys is a dependency");
    let dir = Path::new(manifest).with_file_name("libgit2/src/libgit2");
    files_with(&dir, "c")
}

fn files_with(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    out.sort();
    out
}

/// The file's lines with one random edit of `kind` made to function
/// `n` of `functions` (1-based `(first, last, head_last)`, taken from the
/// bottom so earlier line numbers hold).
fn edit(lines: &mut Vec<String>, f: (u32, u32, u32), name: &str, kind: usize) {
    let (first, last, head_last) = (f.0 as usize - 1, f.1 as usize - 1, f.2 as usize - 1);
    match kind {
        // The signature: a parameter more before the head's last `)`.
        0 => {
            if let Some(at) = lines[head_last].rfind(')') {
                lines[head_last].insert_str(at, ", int owt_extra");
            }
        }
        // Removed.
        1 => {
            lines.drain(first..=last);
        }
        // Moved to the end of the file, unchanged.
        2 => {
            let moved: Vec<String> = lines.drain(first..=last).collect();
            lines.extend(moved);
        }
        // Renamed where it is.
        3 => {
            for line in &mut lines[first..=head_last] {
                if line.contains(name) {
                    *line = line.replacen(name, &format!("{name}_renamed"), 1);
                    break;
                }
            }
        }
        // A line of its body.
        _ => lines.insert((head_last + 2).min(last), "\towt_probe(1);".into()),
    }
}

/// A modification of `path` from `old` to `new`, its hunks as the guard
/// computes them (no context).
fn change(repo: &Repository, path: &str, old: &str, new: &str) -> Change {
    let mut opts = DiffOptions::new();
    opts.context_lines(0).interhunk_lines(0);
    let patch =
        Patch::from_buffers(old.as_bytes(), None, new.as_bytes(), None, Some(&mut opts)).unwrap();
    let hunks = (0..patch.num_hunks())
        .map(|i| {
            let (h, _) = patch.hunk(i).unwrap();
            Hunk {
                old_start: h.old_start(),
                old_lines: h.old_lines(),
                new_start: h.new_start(),
                new_lines: h.new_lines(),
            }
        })
        .collect();
    let blob = |text: &str| (repo.blob(text.as_bytes()).unwrap(), 0o100644);
    Change {
        path: path.to_string(),
        old_path: None,
        kind: ChangeKind::Modified,
        old: Some(blob(old)),
        new: Some(blob(new)),
        binary: false,
        hunks,
    }
}

#[test]
fn segments_around_the_hunks_give_the_whole_files_signature_changes_and_symbols() {
    let dir = tempfile::tempdir().unwrap();
    let repo = Repository::init(dir.path()).unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files: Vec<(PathBuf, Lang)> = Vec::new();
    // Every other file of each: enough layouts, a quick test.
    let every = |v: Vec<PathBuf>, lang| -> Vec<(PathBuf, Lang)> {
        v.into_iter().step_by(2).map(|p| (p, lang)).collect()
    };
    files.extend(every(libgit2_sources(), Lang::C));
    files.extend(every(files_with(&root.join("guard/src"), "rs"), Lang::Rust));
    files.extend(every(files_with(&root.join("core/src"), "rs"), Lang::Rust));
    files.extend(every(
        files_with(&root.join("editor-plugins/vscode/src"), "ts"),
        Lang::TypeScript,
    ));
    assert!(files.len() > 30, "{} files", files.len());
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let (mut sides, mut found, mut partial, mut notes) = (0, 0, 0, 0);
    // Three files a side, each with two or three edits.
    for side in files.chunks(3) {
        let mut changes: Vec<Change> = Vec::new();
        for (path, lang) in side {
            let old = std::fs::read_to_string(path).unwrap();
            // Where the whole parse cannot read the items, the two differ
            // by design (see the next test).
            if !reads_items_whole(old.as_bytes(), *lang) {
                continue;
            }
            let Some(whole) = parse(old.as_bytes(), *lang) else {
                continue;
            };
            let mut functions: Vec<(u32, u32, u32, String)> = whole
                .symbols
                .iter()
                .filter(|s| s.signature.is_some())
                .map(|s| (s.first, s.last, s.head_last, s.name.clone()))
                .collect();
            if functions.len() < 4 {
                continue;
            }
            // Non-overlapping picks, edited bottom first.
            let mut picked: Vec<(u32, u32, u32, String)> = Vec::new();
            for _ in 0..3 {
                let f = functions.swap_remove(rng.below(functions.len()));
                if picked.iter().all(|p| f.1 < p.0 || p.1 < f.0) {
                    picked.push(f);
                }
            }
            picked.sort_by_key(|f| std::cmp::Reverse(f.0));
            let mut lines: Vec<String> = old.lines().map(str::to_string).collect();
            for f in &picked {
                edit(&mut lines, (f.0, f.1, f.2), &f.3, rng.below(5));
            }
            let new = lines.join("\n") + "\n";
            let name = path.strip_prefix(&root).unwrap_or(path);
            changes.push(change(&repo, &name.to_string_lossy(), &old, &new));
        }
        let mut near = SymbolIndex::default();
        let mut whole = SymbolIndex::default();
        whole.regions = false;
        let got = signature_changes(&repo, &mut near, &changes);
        let want = signature_changes(&repo, &mut whole, &changes);
        assert_eq!(got, want, "{:?}", side);
        found += want.len();
        sides += 1;
        // Another side calls the changed functions in a body of the first
        // file: the same `semantic` notes.
        if let (Some(first), false) = (changes.first(), want.is_empty()) {
            let old = String::from_utf8(
                repo.find_blob(first.old.unwrap().0)
                    .unwrap()
                    .content()
                    .to_vec(),
            )
            .unwrap();
            let lang = Lang::of_path(&first.path).unwrap();
            let functions: Vec<u32> = parse(old.as_bytes(), lang)
                .unwrap()
                .symbols
                .iter()
                .filter(|s| s.signature.is_some() && s.last > s.head_last + 1)
                .map(|s| s.head_last + 1)
                .collect();
            let at = functions[rng.below(functions.len())] as usize;
            let mut lines: Vec<String> = old.lines().map(str::to_string).collect();
            for w in want.iter().take(3) {
                lines.insert(at, format!("\t{}(0);", w.name));
            }
            let user = [change(&repo, &first.path, &old, &(lines.join("\n") + "\n"))];
            let key = |n: u8| (Oid::zero(), Oid::from_bytes(&[n; 20]).unwrap());
            let a = SideRef {
                name: "a",
                key: key(1),
                changes: &changes,
            };
            let b = SideRef {
                name: "b",
                key: key(2),
                changes: &user,
            };
            let got = near.semantic(&repo, &a, &b);
            let want = whole.semantic(&repo, &a, &b);
            assert_eq!(got, want, "{:?}", side);
            notes += want.len();
        }
        // The symbols around each hunk, as messages ask them.
        for c in &changes {
            let lang = Lang::of_path(&c.path).unwrap();
            let old: Oid = c.old.unwrap().0;
            for h in &c.hunks {
                let range = LineRange {
                    start: h.old_start.max(1),
                    lines: h.old_lines,
                };
                let a = near
                    .symbols_near(&repo, &c.path, old, lang, &[range])
                    .unwrap();
                let b = whole.symbols(&repo, &c.path, old, lang).unwrap();
                partial += usize::from(a.covered.is_some());
                let labels = |f: &super::symbols::FileSymbols| -> Vec<String> {
                    f.enclosing(range).iter().map(|s| s.label()).collect()
                };
                assert_eq!(labels(&a), labels(&b), "{} {range:?}", c.path);
            }
        }
    }
    eprintln!("{sides} sides, {found} signature changes, {partial} partial, {notes} notes");
    assert!(
        sides > 10 && found > 10,
        "{sides} sides, {found} signature changes"
    );
    assert!(partial > 10, "segments were parsed: {partial}");
    assert!(notes > 5, "notes compared: {notes}");
}

#[test]
fn each_segment_alone_gives_the_whole_files_symbols_or_is_refused() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files: Vec<(PathBuf, Lang)> = Vec::new();
    files.extend(libgit2_sources().into_iter().map(|p| (p, Lang::C)));
    files.extend(
        files_with(&root.join("guard/src"), "rs")
            .into_iter()
            .map(|p| (p, Lang::Rust)),
    );
    files.extend(
        files_with(&root.join("editor-plugins/vscode/src"), "ts")
            .into_iter()
            .map(|p| (p, Lang::TypeScript)),
    );
    let (mut clean, mut refused, mut unread) = (0, 0, 0);
    for (path, lang) in &files {
        let text = std::fs::read(path).unwrap();
        // Where tree-sitter cannot read the whole file's items (an error
        // spanning items: libgit2.c's `#ifdef` inside an initializer makes
        // one ERROR of 235 lines), a segment alone reads its items better
        // than the whole parse: nothing to compare.
        if !reads_items_whole(&text, *lang) {
            unread += 1;
            continue;
        }
        let whole = parse(&text, *lang).unwrap();
        for part in each_segment(&text, *lang) {
            let Some(part) = part else {
                refused += 1;
                continue;
            };
            clean += 1;
            for (name, lines) in &part.uses {
                let all = whole.uses.get(name).map(Vec::as_slice).unwrap_or_default();
                assert!(
                    lines.iter().all(|l| all.contains(l)),
                    "{}: uses of {name} at {lines:?}, the whole parse's {all:?}",
                    path.display()
                );
            }
            for s in &part.symbols {
                assert!(
                    whole.symbols.contains(s),
                    "{}: {s:?} is not the whole parse's",
                    path.display()
                );
            }
        }
    }
    // Nearly every file is read whole, and nearly every segment of real
    // code parses alone.
    assert!(
        unread * 10 < files.len(),
        "{unread} of {} files not read whole",
        files.len()
    );
    assert!(
        clean > 2000 && refused * 20 < clean,
        "{clean} clean, {refused} refused"
    );
}

/// A touched file whose new version is not parsed (over the index's size
/// limit) defines nothing there: its functions read as removed, around
/// the hunks as with whole parses.
#[test]
fn a_new_version_too_large_to_parse_defines_nothing_either_way() {
    let dir = tempfile::tempdir().unwrap();
    let repo = Repository::init(dir.path()).unwrap();
    let body = (0..8)
        .map(|n| format!("int f{n}(int a)\n{{\n\treturn a + {n};\n}}\n"))
        .collect::<String>();
    let new = body.replace("int f3(int a)", "int f3(long a)")
        + &format!("/* {} */\n", "x".repeat(super::symbols::MAX_BYTES));
    let changes = [change(&repo, "big.c", &body, &new)];
    let mut near = SymbolIndex::default();
    let mut whole = SymbolIndex::default();
    whole.regions = false;
    let got = signature_changes(&repo, &mut near, &changes);
    assert_eq!(got, signature_changes(&repo, &mut whole, &changes));
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(
        (got[0].name.as_str(), got[0].after.as_str()),
        ("f3", "(removed)")
    );
}
