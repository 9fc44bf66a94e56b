//! SQLite's process-wide settings, set through its C interface.

/// No up-front page cache or lookaside allocations per connection
/// (`SQLITE_CONFIG_PAGECACHE` and `SQLITE_CONFIG_LOOKASIDE` at 0). Call
/// before this process opens any connection (it has no effect after).
pub fn no_upfront_allocations() {
    use rusqlite::ffi;
    // SAFETY: sqlite3_config is called before SQLite is initialised (the
    // caller has opened no connection, no other thread uses SQLite); it
    // then only sets global options, with the argument types each option
    // documents (PAGECACHE: void*, int, int; LOOKASIDE: int, int).
    unsafe {
        ffi::sqlite3_config(
            ffi::SQLITE_CONFIG_PAGECACHE,
            std::ptr::null_mut::<std::ffi::c_void>(),
            0 as std::ffi::c_int,
            0 as std::ffi::c_int,
        );
        ffi::sqlite3_config(
            ffi::SQLITE_CONFIG_LOOKASIDE,
            0 as std::ffi::c_int,
            0 as std::ffi::c_int,
        );
    }
}
