//! The slug and worktree path builder.
//! The invariants live in `owt::fuzzing::slug`, shared with the corpus
//! replay test that runs on stable Rust.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| owt::fuzzing::slug(data));
