//! Placeholder on the host branch so the crate builds; main's `ops::new` replaces it on merge.
