//! Links the `owt` executable at a fixed address (not position
//! independent) on Linux.
//!
//! A position-independent executable is relocated by the loader at every
//! start: each pointer in its read-only tables (vtables, panic locations,
//! string tables: 352 KiB of `.data.rel.ro`) is rewritten, so every owt
//! process holds its own written copy of those pages. Every session host
//! is a long-lived owt process, one per agent: at 64 agents that was
//! 23 MiB of copies of the same bytes, a third of an idle host's own
//! memory (issue 22, bench/results.md). Linked at a fixed address the
//! linker resolves them once and the pages stay the file's, shared by
//! every owt process; each start also skips the relocation work. The
//! libraries, heap, stacks and mappings stay randomised (ASLR); only the
//! executable's own image is at a fixed address.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-link-arg-bin=owt=-no-pie");
    }
}
