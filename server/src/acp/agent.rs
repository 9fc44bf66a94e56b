//! `owt acp`: placeholder
