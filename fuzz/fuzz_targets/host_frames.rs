//! The session host's frame decoder: hello, requests, client-side payloads.
//! The invariants live in `owt::fuzzing::host_frames`, shared with the corpus
//! replay test that runs on stable Rust.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| owt::fuzzing::host_frames(data));
