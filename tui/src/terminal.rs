//! The terminal the control plane owns: raw mode and the alternate screen
//! on the way in, everything put back on the way out (also on a panic and
//! around an attach); the bell or OSC 9 and the window title; and stderr
//! sent to a log file meanwhile, so that no log line or progress line of
//! the layers below lands on the board.

use std::io::{self, Write};

use crossterm::event::{DisableBracketedPaste, EnableBracketedPaste};
use crossterm::terminal::{self, EnterAlternateScreen, LeaveAlternateScreen, SetTitle};
use crossterm::{cursor, execute};
use owt_core::config::UiBell;
use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;

pub type Term = Terminal<CrosstermBackend<io::Stdout>>;

/// Raw mode, the alternate screen, no cursor; a panic puts them back
/// before its message prints.
pub fn enter() -> anyhow::Result<Term> {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        leave();
        restore_stderr();
        hook(info);
    }));
    take()
}

/// Takes the terminal (again, after an attach).
pub fn take() -> anyhow::Result<Term> {
    terminal::enable_raw_mode()?;
    execute!(
        io::stdout(),
        EnterAlternateScreen,
        EnableBracketedPaste,
        cursor::Hide
    )?;
    let mut term = Terminal::new(CrosstermBackend::new(io::stdout()))?;
    term.clear()?;
    Ok(term)
}

/// Gives the terminal back as it was (best effort: it may be gone).
pub fn leave() {
    let _ = execute!(
        io::stdout(),
        DisableBracketedPaste,
        LeaveAlternateScreen,
        cursor::Show
    );
    let _ = terminal::disable_raw_mode();
}

/// Calls for attention as `[ui] bell` says.
pub fn ring(bell: UiBell, text: &str) {
    let mut out = io::stdout();
    let _ = match bell {
        UiBell::Off => return,
        UiBell::Bell => out.write_all(b"\x07"),
        UiBell::Osc9 => write!(out, "\x1b]9;{}\x07", printable(text)),
        UiBell::Both => write!(out, "\x07\x1b]9;{}\x07", printable(text)),
    };
    let _ = out.flush();
}

/// The window title: `owt · repo · 2 need you`.
pub fn set_title(title: &str) {
    let _ = execute!(io::stdout(), SetTitle(printable(title)));
}

/// No control characters in what goes inside an escape sequence.
fn printable(text: &str) -> String {
    text.chars().filter(|c| !c.is_control()).collect()
}

/// Sends stderr (fd 2) to `log` (appended, 0600) until [`restore_stderr`]
/// (which a panic calls too, so its message reaches the terminal).
pub fn divert_stderr(log: &std::path::Path) {
    use std::os::unix::fs::OpenOptionsExt;
    if let Some(folder) = log.parent() {
        let _ = std::fs::create_dir_all(folder);
    }
    let Ok(file) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(log)
    else {
        return;
    };
    owt_core::platform::fd::divert_stderr(&file);
}

/// Puts stderr back where it was (once; later calls do nothing).
pub fn restore_stderr() {
    owt_core::platform::fd::restore_stderr();
}
