//! Placeholder on the host branch so the crate builds; main's `ops::list` replaces it on merge.
