//! `initialized`: say what the repository was not trusted with, read the
//! sessions (which starts the git refresher and the live guard), publish
//! the first diagnostics and serve `owt guard`'s queries.

use tower_lsp_server::ls_types::MessageType;

use super::super::owner::Owner;

pub fn handle(owner: &mut Owner) {
    let state = &mut owner.state;
    state.initialized = true;
    if let Some(notice) = state.trust_notice.take() {
        state
            .outbox
            .show_message(MessageType::WARNING, format!("owt: {notice}"));
    }
    owner.refresh_sessions(true);
    if let Some(ctx) = &owner.state.ctx {
        super::super::guard_socket::start(&ctx.home, ctx.repo.main_root(), owner.guard.slot());
    }
    // Clears the records of killed servers soon (the pre-edit hook's).
    owner.unsaved.changed();
}
