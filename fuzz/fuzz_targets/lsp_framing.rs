//! LSP input guard (framing), then JSON-RPC, params and position decoding.
//! The invariants live in `owt::fuzzing::lsp_framing`, shared with the corpus
//! replay test that runs on stable Rust.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| owt::fuzzing::lsp_framing(data));
