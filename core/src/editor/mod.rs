//! Editor configuration that owt generates for editors it cannot extend with
//! a plugin of its own (today: Helix, see [`helix`]).
//!
//! Invariants: everything here is pure — functions take the text of a
//! configuration file (and owt's own tables) and return new text plus a
//! report of what changed. Nothing in this module reads or writes files,
//! looks at `PATH` or the environment; the CLI (`cli/editor.rs`) decides which
//! file to touch, reads it, keeps a backup and writes the result.

pub mod helix;
