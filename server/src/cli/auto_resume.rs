//! `[agent] auto_resume = true` at the CLI entry: before a verb runs, the
//! repository's sessions whose host died are resumed
//! (`ops::resume::auto_resume`), each said on stderr.

use std::path::Path;

use crate::ops;

/// Resumes what `[agent] auto_resume` asks for in the repository at `dir`
/// (none outside a repository, or when the store cannot be opened: the
/// verb itself says why).
pub fn run(dir: Option<&Path>, out: &super::Out) {
    let Ok(mut ctx) = ops::Context::open(dir) else {
        return;
    };
    for resumed in ops::resume::auto_resume(&mut ctx) {
        match resumed.outcome {
            Ok(how) => out.progress(&format!(
                "Resumed session {} ([agent] auto_resume): {how}.",
                resumed.name
            )),
            Err(e) => out.warn(&format!(
                "{} could not be resumed ([agent] auto_resume): {e:#}",
                resumed.name
            )),
        }
    }
}

/// Whether `command` resumes lost sessions first: every verb a person
/// runs, except those about one session's end or owt's own plumbing
/// (`resume` itself, `delete`, `cleanup`, `trust`, `config`, hooks,
/// hosts, completions).
pub fn applies_to(command: &Option<super::Command>) -> bool {
    use super::Command as C;
    !matches!(
        command,
        Some(
            C::Host(_)
                | C::Hook(_)
                | C::Admit
                | C::CommitGraph(_)
                | C::CompleteNames
                | C::Completions(_)
                | C::Version
                | C::Lsp(_)
                | C::Resume(_)
                | C::Delete(_)
                | C::Cleanup(_)
                | C::Trust(_)
                | C::Config(_)
                | C::Db(_)
                | C::Bridge(_)
                | C::Acp(_)
                | C::Doctor(_)
                | C::Remote(_)
        )
    )
}
