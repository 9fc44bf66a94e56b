//! `owt version`.

use std::process::ExitCode;

use owt_protocol::VersionOutput;

pub fn run(out: &super::Out) -> anyhow::Result<ExitCode> {
    let doc = VersionOutput {
        version: env!("CARGO_PKG_VERSION").to_string(),
        host_protocol: owt_protocol::host::HOST_PROTOCOL_VERSION,
        bridge_protocol: owt_protocol::bridge::BRIDGE_PROTOCOL_VERSION,
    };
    out.emit(&doc, || format!("owt {}", doc.version))?;
    Ok(ExitCode::SUCCESS)
}
