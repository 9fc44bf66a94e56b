//! Links the `owt` binary with packed relative relocations (`-z
//! pack-relative-relocs`, DT_RELR) when building for this machine with a
//! linker and a C library that know them (binutils ≥ 2.38, glibc ≥ 2.36):
//! the 23,600 relative relocations of the position-independent binary
//! take 6 KiB instead of 570 KiB, which every `owt` command read at start
//! (bench/results.md, "Listing: packed relocations"). Elsewhere (another
//! target, an older glibc, whose loader would refuse such a binary, or
//! `OWT_NO_RELR` set) the binary is linked as before.

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=OWT_NO_RELR");
    let target = std::env::var("TARGET").unwrap_or_default();
    let host = std::env::var("HOST").unwrap_or_default();
    if target != host
        || !target.ends_with("-linux-gnu")
        || std::env::var_os("OWT_NO_RELR").is_some()
    {
        return;
    }
    if glibc_at_least(2, 36) && linker_packs_relocations() {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}

/// Whether this machine's glibc is at least `major.minor`.
fn glibc_at_least(major: u32, minor: u32) -> bool {
    let Some(out) = output("getconf", &["GNU_LIBC_VERSION"]) else {
        return false;
    };
    // "glibc 2.36"
    let version = out.trim().strip_prefix("glibc ").unwrap_or("");
    let mut parts = version.split('.').map(|p| p.parse::<u32>().ok());
    match (parts.next().flatten(), parts.next().flatten()) {
        (Some(a), Some(b)) => (a, b) >= (major, minor),
        _ => false,
    }
}

/// Whether the linker (`ld`, as `cc` runs it) has the option.
fn linker_packs_relocations() -> bool {
    output("ld", &["--help"]).is_some_and(|help| help.contains("pack-relative-relocs"))
}

fn output(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}
