//! Placeholder on the host branch so the crate builds; main's `ops::setup` replaces it on merge.
