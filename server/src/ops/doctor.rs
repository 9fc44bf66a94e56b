//! Placeholder on the host branch so the crate builds; main's `ops::doctor` replaces it on merge.
