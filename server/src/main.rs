//! The `owt` binary.

fn main() -> std::process::ExitCode {
    owt::cli::main()
}
