//! ACP line framing (an agent's stdout, an editor's stdin), then JSON-RPC
//! decoding and the readers of ACP messages into a transcript. The
//! invariants live in `owt::fuzzing::acp_framing`, shared with the corpus
//! replay test that runs on stable Rust.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| owt::fuzzing::acp_framing(data));
