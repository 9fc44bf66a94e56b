//! The symbol index's disk cache through the engine: a second cold run
//! reads what the first parsed, and a bad entry is parsed again.

use std::path::Path;

use super::symbol_tests::held_back_fixture;
use super::tests::Fixture;
use super::GuardEngine;

const NAMES: [&str; 3] = ["a", "b", "c"];

/// A cold engine over `fx`'s three agents, with the disk cache at `home`,
/// fully computed (as `owt guard` does).
fn cold(fx: &Fixture, home: &Path) -> GuardEngine {
    let mut engine = fx.uncomputed_engine(&NAMES, &[]);
    engine.set_symbol_cache(Some(home));
    engine.full_recompute().unwrap();
    engine
}

fn assert_same_pairs(x: &GuardEngine, y: &GuardEngine) {
    for (i, a) in NAMES.iter().enumerate() {
        for b in &NAMES[i + 1..] {
            assert_eq!(x.pair(a, b), y.pair(a, b), "{a} × {b}");
        }
    }
}

/// Every entry file the cache holds.
fn entries(home: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![home.join("cache/symbols")];
    while let Some(dir) = dirs.pop() {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            if e.file_type().unwrap().is_dir() {
                dirs.push(e.path());
            } else {
                out.push(e.path());
            }
        }
    }
    out.sort();
    out
}

#[test]
fn a_second_cold_run_parses_nothing_the_first_kept() {
    let fx = held_back_fixture();
    let home = fx.root.join("owt-home");
    let without = fx.engine(&NAMES, &[]);
    let first = cold(&fx, &home);
    let parses = first.symbol_parses();
    assert!(parses > 0, "the fixture's notes need parses");
    assert_eq!(first.symbol_cache_hits(), (0, parses), "each parse kept");
    assert_same_pairs(&first, &without);
    assert_eq!(entries(&home).len() as u64, parses);

    let second = cold(&fx, &home);
    assert_eq!(second.symbol_parses(), 0, "every parse read back");
    assert_eq!(second.symbol_cache_hits(), (parses, 0));
    assert_same_pairs(&second, &without);
    assert!(second
        .pair("a", "b")
        .is_some_and(|p| !p.semantic.is_empty()));
}

#[test]
fn a_bad_entry_is_parsed_again_and_replaced() {
    let fx = held_back_fixture();
    let home = fx.root.join("owt-home");
    let without = fx.engine(&NAMES, &[]);
    let parses = cold(&fx, &home).symbol_parses();
    let files = entries(&home);
    assert!(files.len() >= 2);
    // One truncated, one with a byte flipped, the others garbage.
    for (i, path) in files.iter().enumerate() {
        let mut bytes = std::fs::read(path).unwrap();
        match i {
            0 => bytes.truncate(bytes.len() / 2),
            1 => {
                let mid = bytes.len() / 2;
                bytes[mid] ^= 0x40;
            }
            _ => bytes = b"owtsym1\0 not an entry".to_vec(),
        }
        std::fs::write(path, bytes).unwrap();
    }
    let again = cold(&fx, &home);
    assert_eq!(again.symbol_parses(), parses, "no bad entry was used");
    assert_eq!(again.symbol_cache_hits(), (0, parses), "each written again");
    assert_same_pairs(&again, &without);
    // Written again whole: a third run reads them all.
    let third = cold(&fx, &home);
    assert_eq!(third.symbol_parses(), 0);
    assert_same_pairs(&third, &without);
}
