//! `initialized`: read the sessions (which starts the git refresher and the
//! live guard) and publish the first diagnostics.

use super::super::sessions;
use super::super::state::State;

pub fn handle(state: &mut State) {
    state.initialized = true;
    sessions::refresh(state, true);
}
