//! Fixture tests of the guard (real temporary repositories).
