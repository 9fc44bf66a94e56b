//! Conversions between LSP types and owt's: positions (UTF-16 code units)
//! to byte offsets, incremental edits, URIs to paths, errors to JSON-RPC
//! error codes.

use std::path::{Path, PathBuf};

use tower_lsp_server::jsonrpc::{Error, ErrorCode};
use tower_lsp_server::ls_types::{Position, Range, TextDocumentContentChangeEvent, Uri};

/// Byte offset of an LSP position in `text` (clamped to the text).
pub fn offset(text: &str, pos: Position) -> usize {
    let mut line_start = 0;
    for _ in 0..pos.line {
        match text[line_start..].find('\n') {
            Some(i) => line_start += i + 1,
            None => return text.len(),
        }
    }
    let line_end = text[line_start..]
        .find('\n')
        .map_or(text.len(), |i| line_start + i);
    let mut units = 0u32;
    for (i, c) in text[line_start..line_end].char_indices() {
        if units >= pos.character {
            return line_start + i;
        }
        units += c.len_utf16() as u32;
    }
    line_end
}

/// Applies one `didChange` content change (full or ranged).
pub fn apply_change(text: &mut String, change: &TextDocumentContentChangeEvent) {
    match change.range {
        None => text.clone_from(&change.text),
        Some(range) => {
            let start = offset(text, range.start);
            let end = offset(text, range.end).max(start);
            text.replace_range(start..end, &change.text);
        }
    }
}

/// A range covering whole lines `first..=last` (0-based).
pub fn line_range(first: u32, last: u32) -> Range {
    Range {
        start: Position {
            line: first,
            character: 0,
        },
        end: Position {
            line: last + 1,
            character: 0,
        },
    }
}

pub fn uri_to_path(uri: &Uri) -> Option<PathBuf> {
    uri.to_file_path().map(|p| p.into_owned())
}

pub fn path_to_uri(path: &Path) -> Option<Uri> {
    Uri::from_file_path(path)
}

/// A request that failed for a reason a person can act on.
pub fn failed(err: &anyhow::Error) -> Error {
    Error {
        code: ErrorCode::ServerError(-32803),
        message: format!("{err:#}").into(),
        data: None,
    }
}

/// Bad arguments.
pub fn invalid_params(message: impl Into<String>) -> Error {
    Error {
        code: ErrorCode::InvalidParams,
        message: message.into().into(),
        data: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pos(line: u32, character: u32) -> Position {
        Position { line, character }
    }

    #[test]
    fn offsets_count_utf16_units() {
        let text = "ab\n€x😀y\nlast";
        assert_eq!(offset(text, pos(0, 1)), 1);
        assert_eq!(
            offset(text, pos(1, 1)),
            3 + 3,
            "€ is one UTF-16 unit, three bytes"
        );
        assert_eq!(offset(text, pos(1, 2)), 3 + 4);
        assert_eq!(offset(text, pos(1, 4)), 3 + 4 + 4, "😀 is two UTF-16 units");
        assert_eq!(offset(text, pos(1, 99)), 3 + 9, "clamped to the line end");
        assert_eq!(offset(text, pos(9, 0)), text.len());
    }

    #[test]
    fn incremental_changes_apply() {
        let mut text = String::from("one\ntwo\nthree\n");
        apply_change(
            &mut text,
            &TextDocumentContentChangeEvent {
                range: Some(Range {
                    start: pos(1, 0),
                    end: pos(1, 3),
                }),
                range_length: None,
                text: "TWO\nand a half".into(),
            },
        );
        assert_eq!(text, "one\nTWO\nand a half\nthree\n");
        apply_change(
            &mut text,
            &TextDocumentContentChangeEvent {
                range: None,
                range_length: None,
                text: "all new".into(),
            },
        );
        assert_eq!(text, "all new");
    }
}
