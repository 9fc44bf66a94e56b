//! Placeholder on the host branch so the crate builds; main's `ops::delete` replaces it on merge.
