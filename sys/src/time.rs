//! The local calendar, from the C library (which reads `TZ` and the
//! system's zone files).

/// The local (year, month 1–12, day 1–31) of Unix second `secs`, in the
/// time zone of this process; `None` when the C library cannot say.
pub fn local_date(secs: i64) -> Option<(i32, u32, u32)> {
    let secs = libc::time_t::try_from(secs).ok()?;
    let mut tm = std::mem::MaybeUninit::<libc::tm>::zeroed();
    // SAFETY: `tm` is a valid, zeroed (a valid `tm`) out-parameter and
    // `secs` a valid in-parameter; localtime_r is the thread-safe form and
    // writes only `tm`, which is read only when it succeeded.
    let tm = unsafe {
        if libc::localtime_r(&secs, tm.as_mut_ptr()).is_null() {
            return None;
        }
        tm.assume_init()
    };
    Some((tm.tm_year + 1900, (tm.tm_mon + 1) as u32, tm.tm_mday as u32))
}
