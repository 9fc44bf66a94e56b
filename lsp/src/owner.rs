//! What the owner thread owns ([`Owner`]): the [`State`] every part reads
//! and each subsystem's own part, which takes only what it needs.

use super::machine::MachineWatch;
use super::review_live::ReviewLive;
use super::state::State;
use super::unsaved::UnsavedRecord;

pub struct Owner {
    pub state: State,
    /// The record of unsaved buffers the pre-edit hook reads.
    pub unsaved: UnsavedRecord,
    pub review: ReviewLive,
    /// Memory pressure and room for queued sessions.
    pub machine: MachineWatch,
}

impl Owner {
    pub fn new(state: State) -> Owner {
        Owner {
            state,
            unsaved: UnsavedRecord::default(),
            review: ReviewLive::default(),
            machine: MachineWatch::default(),
        }
    }
}
