//! The semantic notes: a signature one side changed that the other side's
//! written lines use by name ([`semantic_notes`]).

use git2::Repository;
use owt_protocol::guard::{LineRange, SemanticNote};

use super::super::changes::{Change, ChangeKind};
use super::signatures::is_text_file;
use super::{written_lines, Lang, SignatureChange, Symbol, SymbolIndex};

/// Ranges of `lines` (ascending line numbers) merged into runs.
fn runs(lines: &[u32]) -> Vec<LineRange> {
    let mut out: Vec<LineRange> = Vec::new();
    for &line in lines {
        match out.last_mut() {
            Some(r) if r.start + r.lines == line => r.lines += 1,
            _ => out.push(LineRange {
                start: line,
                lines: 1,
            }),
        }
    }
    out
}

/// Signature changes `changer` made (`changed`) that `user`'s changed
/// lines use by name, in any of `user`'s changed files of the same
/// language family. `user_changed`: `user`'s own signature changes (a
/// change both made identically is not reported).
#[allow(clippy::too_many_arguments)]
pub fn semantic_notes(
    repo: &Repository,
    index: &mut SymbolIndex,
    changer: &str,
    changed: &[SignatureChange],
    user: &str,
    user_changes: &[Change],
    user_changed: &[SignatureChange],
) -> Vec<SemanticNote> {
    let mut notes = Vec::new();
    if changed.is_empty() {
        return notes;
    }
    for change in user_changes.iter().filter(|c| is_text_file(c)) {
        if change.kind == ChangeKind::Deleted {
            continue;
        }
        let Some(lang) = Lang::of_path(&change.path) else {
            continue;
        };
        // Parsed only when its written lines name a changed function.
        let names_one = index.written_words(repo, change).is_some_and(|words| {
            changed
                .iter()
                .any(|s| s.lang.family() == lang.family() && words.contains(&s.name))
        });
        if !names_one {
            continue;
        }
        // Around its written lines only (`regions`): the uses there.
        let written = written_lines(change);
        let Some(symbols) = change
            .new
            .and_then(|e| index.symbols_near(repo, &change.path, e.0, lang, &written))
        else {
            continue;
        };
        for sig in changed.iter().filter(|s| s.lang.family() == lang.family()) {
            if sig.file_local && sig.path != change.path {
                continue;
            }
            if user_changed.iter().any(|u| {
                u.name == sig.name && u.after == sig.after && u.lang.family() == sig.lang.family()
            }) {
                continue;
            }
            let Some(lines) = symbols.uses.get(&sig.name) else {
                continue;
            };
            let used: Vec<u32> = lines
                .iter()
                .copied()
                .filter(|l| {
                    written
                        .iter()
                        .any(|r| r.start <= *l && *l < r.start.saturating_add(r.lines))
                })
                .collect();
            let Some(&first) = used.first() else {
                continue;
            };
            notes.push(SemanticNote {
                changed_by: changer.to_string(),
                symbol: sig.symbol.clone(),
                path: sig.path.clone(),
                lines: sig.lines,
                before: sig.before.clone(),
                after: sig.after.clone(),
                used_by: user.to_string(),
                used_in: change.path.clone(),
                used_at: runs(&used),
                used_inside: symbols.around(first).map(Symbol::label),
            });
        }
    }
    notes
}
