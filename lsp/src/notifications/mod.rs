//! One file per notification the server acts on (`textDocument/didSave`
//! only updates the record of unsaved buffers, [`super::unsaved`]: the
//! guard's watcher sees the file change).

pub mod did_change;
pub mod did_close;
pub mod did_open;
pub mod initialized;
