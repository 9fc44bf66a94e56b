//! Remotes as use cases: `owt remote list|check|setup|install`, `owt new
//! --on`, and what delete does with a remote session — plus the remote's
//! half of them (`owt __bridge info|commit`). Merging and shipping a
//! remote session are `ops::merge`'s (its `remote` part), which names this
//! module; this module names no `merge`.
//!
//! Invariants: a remote session is created, changed and deleted by the
//! remote's own owt (with its data-safety and trust rules); here only its
//! record, the fetched refs under `refs/owt/remotes/<remote>/` and — to
//! merge it — a branch and a short-lived worktree of owt's own are
//! written; a remote that cannot be reached changes nothing here.
//!
//! Parts: `machine` (check, install), `setup` (the clone there),
//! `session` (new --on, delete), `bridge` (the remote's half: `owt __bridge
//! info|commit`).

use anyhow::bail;
use owt_protocol::{RemoteList, RemoteView};

use super::Context;
use crate::remote::ssh::Ssh;
use crate::remote::{keeper, Remote};

mod bridge;
mod machine;
mod session;
mod setup;

pub use bridge::{commit, info};
pub use machine::{check, install};
pub(crate) use session::remote_of;
pub use session::{delete, new_on, NewOnRemote};
pub use setup::setup;

/// `owt __bridge serve`: the bridge's remote end for the repository
/// containing `dir`, recording the guard's facts as the board reads them.
pub fn serve(dir: Option<&std::path::Path>) -> anyhow::Result<()> {
    crate::remote::serve::serve(dir, super::guard::record_all_facts)
}

/// `owt remote list`.
pub fn list(ctx: &Context) -> anyhow::Result<RemoteList> {
    let mut remotes = Vec::new();
    for (name, config) in &ctx.config.config.remotes {
        let sessions = ctx
            .store
            .remote_sessions(ctx.repo_row.id, Some(name))?
            .len() as u32;
        remotes.push(RemoteView {
            name: name.clone(),
            host: config.host.clone(),
            path: config.path.clone(),
            owt: config.owt.clone(),
            sessions,
            bridge: keeper::state(&ctx.home, ctx.repo_row.id, name),
        });
    }
    Ok(RemoteList { remotes })
}

fn remote(ctx: &Context, name: &str) -> anyhow::Result<(Remote, Ssh)> {
    if let Some(why) = untrusted_remote(ctx, name) {
        bail!("{why}");
    }
    let remote = Remote::named(&ctx.config.config, name)?;
    let ssh = Ssh::new(&ctx.home, &remote);
    Ok((remote, ssh))
}

/// Why `[remotes.NAME]` was ignored, when only the repository's untrusted
/// file declares it.
fn untrusted_remote(ctx: &Context, name: &str) -> Option<String> {
    let withheld = ctx.config.withheld.as_ref()?;
    let held = withheld
        .untrusted
        .iter()
        .any(|key| *key == format!("remotes.{name}"));
    held.then(|| {
        format!(
            "[remotes.{name}] is declared by {}, which is not trusted, so it was ignored; review it with `owt trust --show`, trust it with `owt trust`, or declare the remote in ~/.config/owt/config.toml",
            withheld.file.display()
        )
    })
}
