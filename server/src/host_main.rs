//! The `owt-host` binary: owt's session host (`owt __host run`) without the
//! rest of owt linked in; `owt` starts it when it is installed beside it.

#![forbid(unsafe_code)]

fn main() -> std::process::ExitCode {
    owt::cli::host::host_binary_main()
}
