/// A parser for terminal output which produces an in-memory representation of
/// the terminal contents.
// owt: `parser` is upstream's name; the lint came with owt's `ground`.
#[allow(clippy::struct_field_names)]
pub struct Parser<CB: crate::callbacks::Callbacks = ()> {
    parser: vte::Parser,
    screen: crate::perform::WrappedScreen<CB>,
    /// owt: vte is known to be in its ground state with no UTF-8
    /// character cut short, so the next bytes may skip it (see
    /// [`Parser::process`]).
    ground: bool,
}

impl Parser {
    /// Creates a new terminal parser of the given size and with the given
    /// amount of scrollback.
    #[must_use]
    pub fn new(rows: u16, cols: u16, scrollback_len: usize) -> Self {
        Self {
            parser: vte::Parser::new(),
            screen: crate::perform::WrappedScreen::new(
                rows,
                cols,
                scrollback_len,
            ),
            ground: true,
        }
    }
}

impl<CB: crate::callbacks::Callbacks> Parser<CB> {
    /// Creates a new terminal parser of the given size and with the given
    /// amount of scrollback. Terminal events will be reported via method
    /// calls on the provided [`Callbacks`](crate::callbacks::Callbacks)
    /// implementation.
    pub fn new_with_callbacks(
        rows: u16,
        cols: u16,
        scrollback_len: usize,
        callbacks: CB,
    ) -> Self {
        Self {
            parser: vte::Parser::new(),
            screen: crate::perform::WrappedScreen::new_with_callbacks(
                rows,
                cols,
                scrollback_len,
                callbacks,
            ),
            ground: true,
        }
    }

    /// Processes the contents of the given byte string, and updates the
    /// in-memory terminal state.
    ///
    /// owt: while vte is known to be in its ground state, text and C0
    /// controls skip it — the screen gets the calls vte's ground state
    /// makes (runs of printable ASCII at once) — and so do complete CSI
    /// and two-byte escape sequences, each handed to vte alone. Anything
    /// else (a string sequence, invalid or cut UTF-8, a sequence cut at the
    /// end of `bytes`) goes to vte with the rest of `bytes`; vte is known
    /// to be in ground again once a callback only made there (a print, a
    /// dispatch) came after the last ESC and no UTF-8 character is left
    /// cut at the end.
    pub fn process(&mut self, bytes: &[u8]) {
        self.unpark();
        let mut rest = bytes;
        while self.ground && !rest.is_empty() {
            rest = self.ground_text(rest);
            match rest.first() {
                None => {}
                Some(0x1b) => match escape_len(rest) {
                    Some(n) => {
                        self.advance_witnessed(&rest[..n]);
                        rest = &rest[n..];
                    }
                    None => self.ground = false,
                },
                Some(_) => self.ground = false,
            }
        }
        if !rest.is_empty() {
            let tail = rest
                .iter()
                .rposition(|&b| b == 0x1b)
                .map_or(0, |esc| esc + 1);
            self.parser.advance(&mut self.screen, &rest[..tail]);
            self.advance_witnessed(&rest[tail..]);
            // a UTF-8 character cut at the end waits in vte
            if rest.last().is_some_and(|&b| b >= 0x80) {
                self.ground = false;
            }
        }
        // the printable ASCII the stream ended on (see
        // `WrappedScreen::flush`)
        self.screen.flush();
    }

    /// owt: hands `bytes` (no ESC after the first byte) to vte; afterwards
    /// vte is in ground if it made a call only made there (`bytes` holds
    /// no ESC that could leave it again).
    fn advance_witnessed(&mut self, bytes: &[u8]) {
        self.screen.in_ground = false;
        self.parser.advance(&mut self.screen, bytes);
        self.screen.flush();
        self.ground = self.screen.in_ground;
    }

    /// owt: what vte's ground state does with the text and C0 controls at
    /// the start of `bytes` (`execute` for C0 and C1 controls, `print` for
    /// the rest, printable ASCII a run at a time), up to an ESC or invalid
    /// or cut UTF-8; the bytes left.
    fn ground_text<'a>(&mut self, mut bytes: &'a [u8]) -> &'a [u8] {
        use vte::Perform as _;
        loop {
            let run = bytes
                .iter()
                .position(|b| !(b' '..=b'~').contains(b))
                .unwrap_or(bytes.len());
            if run > 0 {
                self.screen.print_ascii(&bytes[..run]);
                bytes = &bytes[run..];
            }
            match bytes.first() {
                None | Some(0x1b) => return bytes,
                Some(&b) if b < 0x80 => {
                    // a C0 control, or DEL (which vte prints)
                    if b == 0x7f {
                        self.screen.print('\x7f');
                    } else {
                        self.screen.execute(b);
                    }
                    bytes = &bytes[1..];
                }
                Some(_) => {
                    let end = bytes
                        .iter()
                        .position(|&b| b < 0x80)
                        .unwrap_or(bytes.len());
                    let (text, valid) =
                        match std::str::from_utf8(&bytes[..end]) {
                            Ok(text) => (text, true),
                            Err(e) => (
                                // valid up to there, by definition
                                std::str::from_utf8(
                                    &bytes[..e.valid_up_to()],
                                )
                                .unwrap_or_default(),
                                false,
                            ),
                        };
                    for c in text.chars() {
                        match u8::try_from(c) {
                            Ok(c1 @ 0x80..=0x9f) => self.screen.execute(c1),
                            _ => self.screen.print(c),
                        }
                    }
                    bytes = &bytes[text.len()..];
                    if !valid {
                        return bytes;
                    }
                }
            }
        }
    }

    /// Returns a reference to a [`Screen`](crate::Screen) object containing
    /// the terminal state.
    ///
    /// owt: not while the parser is parked (see [`Parser::park`]): its
    /// screen's rows are away then (its modes and size are not, see
    /// [`Parser::parked_screen`]).
    #[must_use]
    pub fn screen(&self) -> &crate::Screen {
        debug_assert!(
            !self.is_parked(),
            "vt100: the screen of a parked parser was read; unpark it first"
        );
        &self.screen.screen
    }

    /// Returns a mutable reference to a [`Screen`](crate::Screen) object
    /// containing the terminal state.
    ///
    /// owt: unparks the parser first (see [`Parser::park`]).
    #[must_use]
    pub fn screen_mut(&mut self) -> &mut crate::Screen {
        self.unpark();
        &mut self.screen.screen
    }

    /// owt: keeps the screen's rows (both grids') compact, about a byte
    /// a printed character, until the parser is next used: what an idle
    /// screen nobody looks at costs (40×120 cells hold 150 KiB). Unparked
    /// by [`Parser::process`], [`Parser::screen_mut`] and
    /// [`Parser::unpark`], cell for cell as it was; [`Parser::screen`]
    /// must not be called in between.
    pub fn park(&mut self) {
        self.screen.screen.park();
    }

    /// owt: gives a parked screen its rows back (nothing if not parked).
    pub fn unpark(&mut self) {
        self.screen.screen.unpark();
    }

    /// owt: whether the screen is parked (see [`Parser::park`]).
    #[must_use]
    pub fn is_parked(&self) -> bool {
        self.screen.screen.is_parked()
    }

    /// owt: the screen, parked or not, for what parking leaves in place:
    /// its size and modes (`size`, `bracketed_paste`, `application_cursor`,
    /// `mouse_protocol_mode`, ...). Never read its rows through it (they
    /// read as empty while parked).
    #[must_use]
    pub fn parked_screen(&self) -> &crate::Screen {
        &self.screen.screen
    }

    /// Returns a reference to the [`Callbacks`](crate::callbacks::Callbacks)
    /// state object passed into the constructor.
    pub fn callbacks(&self) -> &CB {
        &self.screen.callbacks
    }

    /// Returns a mutable reference to the
    /// [`Callbacks`](crate::callbacks::Callbacks) state object passed into
    /// the constructor.
    pub fn callbacks_mut(&mut self) -> &mut CB {
        &mut self.screen.callbacks
    }
}

/// owt: the length of the CSI (`ESC [`, parameter and intermediate bytes,
/// a final byte) or two-byte escape sequence `bytes` starts with, when it
/// is complete in `bytes` and no string sequence (OSC, DCS, SOS, PM, APC)
/// nor vte's other states come into it.
fn escape_len(bytes: &[u8]) -> Option<usize> {
    match *bytes.get(1)? {
        b'[' => {
            let end = 2 + bytes
                .get(2..)?
                .iter()
                .position(|b| !(0x20..=0x3f).contains(b))?;
            (0x40..=0x7e).contains(&bytes[end]).then_some(end + 1)
        }
        b']' | b'P' | b'X' | b'^' | b'_' => None,
        0x30..=0x7e => Some(2),
        _ => None,
    }
}

impl Default for Parser {
    /// Returns a parser with dimensions 80x24 and no scrollback.
    fn default() -> Self {
        Self::new(24, 80, 0)
    }
}

impl std::io::Write for Parser {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.process(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
