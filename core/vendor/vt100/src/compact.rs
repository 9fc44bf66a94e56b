//! owt: scrollback rows kept compact — a row's text with its attributes
//! run-length encoded, instead of a 32-byte [`Cell`](crate::Cell) for
//! every column.
//!
//! Upstream keeps each scrolled-off row as it was on screen: `cols` cells
//! of 32 bytes, so 5,000 lines of a 200-column terminal hold 32 MB. A
//! [`CompactRow`] holds the same row losslessly in about one byte per
//! printed ASCII character: [`CompactRow::expand`] gives back a row equal,
//! cell for cell (contents, wide flags, attributes) and in its wrap flag,
//! to the one [`CompactRow::new`] was given. Rows are expanded only while
//! the scrollback is in view (`Grid::set_scrollback`).
//!
//! Encoding of `data`, cell by cell from column 0; the cells after the
//! last one that differs from an empty default cell are left out:
//! - `0x01..=0x7f`: a cell holding that one ASCII byte, no wide flags;
//! - `0x00`: an empty cell (no contents, no flags);
//! - `0xff, len, bytes…`: any other cell — `len` is the cell's length byte
//!   as stored (its low bits count the content bytes that follow, its high
//!   bits are the wide flags);
//! - `0xfe` followed by 9 bytes: the attributes of the cells that follow
//!   change (they start as the default attributes).
//!
//! `0xfe` and `0xff` never start a UTF-8 character, so a marker is never
//! mistaken for contents.

const EMPTY: u8 = 0x00;
const ATTRS: u8 = 0xfe;
const OTHER: u8 = 0xff;
const ATTRS_LEN: usize = 9;

/// A row of the scrollback, compact; see the module doc.
#[derive(Clone, Debug)]
pub struct CompactRow {
    data: Box<[u8]>,
    cols: u16,
    wrapped: bool,
}

impl CompactRow {
    /// The compact form of `row`, leaving `row` cleared (blank default
    /// cells, not wrapped): a row scrolled off the top, to be reused at
    /// the bottom. Each cell is blanked right after it is read (one pass
    /// over the row's memory), and only up to the last non-blank one.
    pub fn take(row: &mut crate::row::Row) -> Self {
        let wrapped = row.wrapped();
        let cells = row.cells_slice_mut();
        let used = used_cells(cells);
        let mut data = Vec::with_capacity(used + ATTRS_LEN + 1);
        let mut attrs = crate::attrs::Attrs::default();
        for cell in &mut cells[..used] {
            push_cell(&mut data, &mut attrs, cell);
            *cell = crate::Cell::new();
        }
        let compact = Self::from_data(data, cells.len(), wrapped);
        row.wrap(false);
        compact
    }

    /// The compact form of `row`.
    pub fn new(row: &crate::row::Row) -> Self {
        let cells = row.cells_slice();
        let used = used_cells(cells);
        let mut data = Vec::with_capacity(used + ATTRS_LEN + 1);
        let mut attrs = crate::attrs::Attrs::default();
        for cell in &cells[..used] {
            push_cell(&mut data, &mut attrs, cell);
        }
        Self::from_data(data, cells.len(), row.wrapped())
    }

    fn from_data(data: Vec<u8>, cols: usize, wrapped: bool) -> Self {
        Self {
            data: data.into_boxed_slice(),
            // we limit the number of cols to a u16 (see Size)
            cols: u16::try_from(cols).unwrap(),
            wrapped,
        }
    }

    /// The row this was made from.
    pub fn expand(&self) -> crate::row::Row {
        let mut row = crate::row::Row::new(self.cols);
        self.expand_into(&mut row);
        row
    }

    /// Writes the row this was made from into `row`, which must be a
    /// row of default cells of the same width.
    fn expand_into(&self, row: &mut crate::row::Row) {
        let mut attrs = crate::attrs::Attrs::default();
        let mut col: u16 = 0;
        let mut at = 0;
        let data = &self.data;
        while at < data.len() {
            let b = data[at];
            at += 1;
            let cell = match b {
                ATTRS => {
                    attrs = read_attrs(&data[at..at + ATTRS_LEN]);
                    at += ATTRS_LEN;
                    continue;
                }
                EMPTY => crate::Cell::from_raw(0, &[], attrs),
                OTHER => {
                    let len = data[at];
                    let n = crate::Cell::content_len(len);
                    let cell = crate::Cell::from_raw(
                        len,
                        &data[at + 1..at + 1 + n],
                        attrs,
                    );
                    at += 1 + n;
                    cell
                }
                ascii => crate::Cell::from_raw(1, &[ascii], attrs),
            };
            // the encoder wrote at most `cols` cells
            *row.get_mut(col).unwrap() = cell;
            col += 1;
        }
        row.wrap(self.wrapped);
    }

    /// Heap bytes this row holds.
    #[cfg(test)]
    pub fn heap_bytes(&self) -> usize {
        self.data.len()
    }
}

/// How many of `cells` a compact row holds: up to the last one that is
/// not blank.
fn used_cells(cells: &[crate::Cell]) -> usize {
    cells
        .iter()
        .rposition(|cell| !cell.is_blank())
        .map_or(0, |i| i + 1)
}

/// Appends `cell` to `data`, after its attributes if they differ from
/// `attrs` (the previous cell's, which it then becomes). Inlined into
/// the per-cell loops: as a call it was 17% of a session host's parser.
#[allow(clippy::inline_always)]
#[inline(always)]
fn push_cell(
    data: &mut Vec<u8>,
    attrs: &mut crate::attrs::Attrs,
    cell: &crate::Cell,
) {
    let (len, contents) = cell.raw();
    if let [b @ 0x01..=0x7f] = contents {
        // the common case first: one ASCII byte, no wide flags, the
        // previous cell's attributes
        if len == 1 && cell.attrs() == attrs {
            data.push(*b);
            return;
        }
    }
    if cell.attrs() != attrs {
        *attrs = *cell.attrs();
        data.push(ATTRS);
        write_attrs(data, attrs);
    }
    match contents {
        [] if len == 0 => data.push(EMPTY),
        [b @ 0x01..=0x7f] if len == 1 => data.push(*b),
        _ => {
            data.push(OTHER);
            data.push(len);
            data.extend_from_slice(contents);
        }
    }
}

fn write_color(out: &mut Vec<u8>, color: crate::Color) {
    match color {
        crate::Color::Default => out.extend_from_slice(&[0, 0, 0, 0]),
        crate::Color::Idx(i) => out.extend_from_slice(&[1, i, 0, 0]),
        crate::Color::Rgb(r, g, b) => out.extend_from_slice(&[2, r, g, b]),
    }
}

fn read_color(bytes: &[u8]) -> crate::Color {
    match bytes[0] {
        1 => crate::Color::Idx(bytes[1]),
        2 => crate::Color::Rgb(bytes[1], bytes[2], bytes[3]),
        _ => crate::Color::Default,
    }
}

fn write_attrs(out: &mut Vec<u8>, attrs: &crate::attrs::Attrs) {
    write_color(out, attrs.fgcolor);
    write_color(out, attrs.bgcolor);
    out.push(attrs.mode);
}

fn read_attrs(bytes: &[u8]) -> crate::attrs::Attrs {
    crate::attrs::Attrs {
        fgcolor: read_color(&bytes[0..4]),
        bgcolor: read_color(&bytes[4..8]),
        mode: bytes[8],
    }
}

#[cfg(test)]
mod tests {
    use super::CompactRow;

    fn cells_of(row: &crate::row::Row) -> Vec<crate::Cell> {
        row.cells_slice().to_vec()
    }

    #[test]
    fn a_row_comes_back_cell_for_cell() {
        let mut parser = crate::Parser::new(3, 12, 0);
        parser.process(
            "a\x1b[1;31mb\x1b[48;2;1;2;3m你\x1b[me\u{301}\x1b[7m  \x1b[m😀x"
                .as_bytes(),
        );
        let row = parser.screen().grid_row_for_tests(0).clone();
        let compact = CompactRow::new(&row);
        let back = compact.expand();
        assert_eq!(cells_of(&back), cells_of(&row));
        assert_eq!(back.wrapped(), row.wrapped());
        // Five attribute changes (10 bytes each) and eight cells, against
        // the 384 bytes of twelve cells.
        assert_eq!(compact.heap_bytes(), 75);
    }

    #[test]
    fn plain_ascii_costs_a_byte_a_character() {
        let mut parser = crate::Parser::new(2, 200, 0);
        parser.process(&[b'x'; 150]);
        let row = parser.screen().grid_row_for_tests(0).clone();
        let compact = CompactRow::new(&row);
        assert_eq!(compact.heap_bytes(), 150);
        assert_eq!(cells_of(&compact.expand()), cells_of(&row));
    }

    #[test]
    fn wrapped_and_empty_rows() {
        let mut parser = crate::Parser::new(3, 5, 0);
        parser.process(b"abcdefg");
        let row = parser.screen().grid_row_for_tests(0).clone();
        assert!(row.wrapped());
        assert!(CompactRow::new(&row).expand().wrapped());
        let empty = parser.screen().grid_row_for_tests(2).clone();
        let compact = CompactRow::new(&empty);
        assert_eq!(compact.heap_bytes(), 0);
        assert_eq!(cells_of(&compact.expand()), cells_of(&empty));
    }
}
