//! The serde form of everything `owt --json <verb>` prints.
//!
//! One file per family: `status` (status, lane, kind, actions), `view`
//! (one session), `board`, `verbs` (the session verbs' results),
//! `housekeeping` (trust, doctor, trash, db, config, version, errors),
//! `usage`, `remote`.

mod board;
mod housekeeping;
mod remote;
mod status;
mod usage;
mod verbs;
mod view;

pub use board::*;
pub use housekeeping::*;
pub use remote::*;
pub use status::*;
pub use usage::*;
pub use verbs::*;
pub use view::*;
