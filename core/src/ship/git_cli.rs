//! Running the `git` CLI: owt-sys's one runner ([`owt_sys::git`]), named
//! here as ship always named it.

pub use crate::platform::git::{GitCli, GitCliError};
