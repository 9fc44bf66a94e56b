//! owt: a position on the screen, in its own module so that `term` (the
//! escape sequences, which take positions) does not need `grid` (which
//! writes them): the vendored modules then import one way.

#[derive(Copy, Clone, Debug, Default, Eq, PartialEq)]
pub struct Pos {
    pub row: u16,
    pub col: u16,
}
