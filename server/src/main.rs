//! The `owt` binary: see `owt --help`.

fn main() -> std::process::ExitCode {
    owt::cli::main()
}
