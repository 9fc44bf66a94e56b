//! The `owt` binary: see `owt --help`.

#![forbid(unsafe_code)]

fn main() -> std::process::ExitCode {
    owt::cli::main()
}
