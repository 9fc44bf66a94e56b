//! Feedback loops: what tells an agent its work is not done yet.
//!
//! - [`run`]: one command in its own process group, bounded log, timeout;
//! - [`excerpt`]: bounded, printable excerpts of output (pure);
//! - [`messages`]: every text owt types into an agent on its own (pure);
//! - [`checks`]: one `[checks]` run of a session, recorded as facts (also
//!   `owt checks --run` and the gate of `owt ship` / `owt pr`);
//! - [`turn`]: the loop a session host runs: checks when the agent's turn
//!   ends, the failure typed back, a new turn cancelling an outdated run,
//!   then the pull request's part (push fixes, open one with `[pr] auto`:
//!   asked of the use cases above through [`turn::TurnHooks`]);
//! - [`notify`]: notifications out (`[notify]`), sent by a session's host
//!   when its status turns to one that wants a human.
//!
//! The use cases that talk to other agents are in `crate::ops`: the
//! pull-request watcher (`ops::pr_monitor`) and Conflict Guard's new real
//! conflicts, typed into the agents concerned once each
//! (`ops::conflicts`, `[feedback] conflicts`).
//!
//! Invariants: facts go to the store (kinds in
//! [`crate::status::feedback::kind`]); text reaches an agent only as one
//! typed input, never while it shows a permission dialog.

pub mod checks;
pub mod excerpt;
pub mod messages;
pub mod notify;
pub mod run;
pub mod turn;
