//! What exec needs to start the agent, checked before anything is created:
//! exec fails in the session host's child otherwise, where its error is
//! lost.

use std::path::Path;

use anyhow::{bail, Context as _};

/// Linux's limit on one argument or environment string (`MAX_ARG_STRLEN`).
const MAX_ARG_STRLEN: usize = 32 * 4096;

/// Whether exec can start `binary` with `argv` and `env` (on top of owt's
/// own environment): no NUL, no argument over [`MAX_ARG_STRLEN`], all of it
/// under `ARG_MAX`, and a script's `#!` interpreter exists and runs. Exec
/// fails in the session host's child otherwise, where its error is lost.
pub(super) fn check_exec(
    binary: &Path,
    argv: &[String],
    env: &std::collections::BTreeMap<String, String>,
) -> anyhow::Result<()> {
    let strings = argv
        .iter()
        .map(|a| (a.as_str(), "an argument"))
        .chain(env.iter().flat_map(|(k, v)| {
            [
                (k.as_str(), "an environment variable name"),
                (v.as_str(), "an environment value"),
            ]
        }));
    let mut total = 0usize;
    for (text, what) in strings {
        if text.contains('\0') {
            bail!(
                "{what} of the agent contains a NUL character, which exec cannot pass: `{}`",
                crate::printable::line(&text.chars().take(80).collect::<String>())
            );
        }
        if text.len() >= MAX_ARG_STRLEN {
            bail!(
                "{what} of the agent is {} KiB, over the {} KiB the system allows one argument (MAX_ARG_STRLEN); shorten the task, or write it to a file and ask the agent to read that file",
                text.len() / 1024,
                MAX_ARG_STRLEN / 1024
            );
        }
        total += text.len() + 1 + std::mem::size_of::<usize>();
    }
    for (k, v) in std::env::vars_os() {
        total += k.len() + v.len() + 2 + std::mem::size_of::<usize>();
    }
    let arg_max = crate::platform::process::arg_max().unwrap_or(usize::MAX);
    if total.saturating_add(4096) > arg_max {
        bail!(
            "the agent's arguments and environment take {} KiB, over the system's limit of {} KiB (ARG_MAX); shorten the task, or write it to a file and ask the agent to read that file",
            total / 1024,
            arg_max / 1024
        );
    }
    check_interpreter(binary)
}

/// A script's `#!` line must name an interpreter that exists and runs.
fn check_interpreter(binary: &Path) -> anyhow::Result<()> {
    use std::io::Read;
    let mut head = [0u8; 256];
    let n = std::fs::File::open(binary)
        .and_then(|mut f| f.read(&mut head))
        .with_context(|| format!("reading {}", binary.display()))?;
    let head = &head[..n];
    let Some(rest) = head.strip_prefix(b"#!") else {
        return Ok(());
    };
    let Some(end) = rest.iter().position(|b| *b == b'\n') else {
        bail!(
            "cannot start {}: its `#!` line is longer than the 255 bytes the system reads",
            binary.display()
        );
    };
    let line = String::from_utf8_lossy(&rest[..end]);
    let interpreter = line.split_whitespace().next().unwrap_or("");
    if interpreter.is_empty() {
        bail!(
            "cannot start {}: its `#!` line names no interpreter",
            binary.display()
        );
    }
    use std::os::unix::fs::PermissionsExt;
    let runs = std::fs::metadata(interpreter)
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
    if !runs {
        bail!(
            "cannot start {}: its first line `#!{}` names {}, which {}",
            binary.display(),
            crate::printable::line(line.trim()),
            interpreter,
            if Path::new(interpreter).exists() {
                "is not an executable file"
            } else {
                "does not exist"
            }
        );
    }
    Ok(())
}
