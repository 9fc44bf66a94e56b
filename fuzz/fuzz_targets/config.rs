//! The config parser: parse_file and load_files.
//! The invariants live in `owt::fuzzing::config`, shared with the corpus
//! replay test that runs on stable Rust.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| owt::fuzzing::config(data));
