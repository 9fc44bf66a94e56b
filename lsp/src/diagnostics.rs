//! Conflict Guard → `publishDiagnostics`: for every pair of participants
//! that touched the same file, diagnostics on the lines the *other*
//! participant changed, mapped into the document as the editor has it now.
//!
//! The guard reports ranges in merge-base coordinates; [`LineMap`] maps them
//! through the line diff between the base version of the file and the
//! current text (the unsaved buffer, or the file on disk), so a diagnostic
//! follows the human's edits above it.
//!
//! Awareness (level `aware`, a hint): in a document open in the editor
//! that you have not changed, the lines another participant is changing,
//! before you type. Once you change the file (saved or not) the pair forms
//! and its overlap / hunk-overlap / conflict diagnostic replaces the hint.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use owt_protocol::guard::{GuardPair, GuardPath, Level, LineRange};
use owt_protocol::lsp::{DiagnosticData, Severities};
use owt_protocol::SessionView;
use tower_lsp_server::ls_types::*;

use super::convert::{line_range, path_to_uri};
use super::guard_view::{ChangedPath, GuardView, LivePair};
use owt_core::guard::line_map::LineMap;
use owt_core::guard::YOU;

/// Everything diagnostics are computed from.
pub struct Inputs<'a> {
    pub guard: &'a GuardView,
    /// The repository, for base versions of files.
    pub repo: &'a git2::Repository,
    /// Who "you" are: [`YOU`] or the session whose worktree is open.
    pub me: &'a str,
    /// The checkout the editor shows.
    pub my_root: &'a Path,
    pub sessions: &'a [SessionView],
    /// Text of open documents, by path.
    pub open: &'a HashMap<PathBuf, String>,
    pub severities: Option<&'a Severities>,
    /// Attach `relatedInformation` (the agent's copy of the lines).
    pub related: bool,
    /// Only these paths (relative to the checkouts); `None`: every path.
    pub only: Option<&'a BTreeSet<String>>,
    /// Awareness hints in open documents.
    pub awareness: bool,
}

/// The level name of awareness hints (not a pair level: only the editor
/// shows it).
pub const AWARE: &str = "aware";

/// The text of a file of the checkout at `root`, as the diagnostics read
/// it: a regular file of at most 16 MiB through no link out of `root`
/// (a FIFO or a link to a device is taken for a missing file).
fn read_text(root: &Path, file: &Path) -> Option<String> {
    let limit = owt_core::guard::big::BIG_FILE;
    let bytes = owt_core::safe_fs::read_regular(file, limit, Some(root)).ok()??;
    String::from_utf8(bytes).ok()
}

/// Diagnostics for every file of `my_root` that some pair touched (of
/// `only` those paths, when given).
pub fn diagnostics(inputs: &Inputs<'_>) -> HashMap<Uri, Vec<Diagnostic>> {
    let mut out: HashMap<Uri, Vec<Diagnostic>> = HashMap::new();
    let merge_base = inputs
        .guard
        .participant(inputs.me)
        .and_then(|p| p.merge_base.clone());
    for live in inputs.guard.pairs() {
        for path in &live.pair.paths {
            if inputs.only.is_some_and(|only| !only.contains(&path.path)) {
                continue;
            }
            let file = inputs.my_root.join(&path.path);
            let Some(uri) = path_to_uri(&file) else {
                continue;
            };
            let current = match inputs.open.get(&file) {
                Some(text) => Some(text.clone()),
                None => read_text(inputs.my_root, &file),
            };
            let Some(current) = current else { continue };
            let base = merge_base
                .as_deref()
                .and_then(|oid| base_text(inputs.repo, oid, &path.path))
                .unwrap_or_else(|| current.clone());
            let map = LineMap::new(&base, &current);
            for (other, other_ranges, symbols, also) in sides(&live.pair, path, inputs.me) {
                let side = Side {
                    live,
                    path,
                    other,
                    symbols,
                    also,
                };
                for diagnostic in path_diagnostics(inputs, &side, other_ranges, &map) {
                    out.entry(uri.clone()).or_default().push(diagnostic);
                }
            }
        }
    }
    semantic(inputs, &mut out);
    base_conflicts(inputs, &mut out);
    if inputs.awareness {
        awareness(inputs, &mut out);
    }
    out
}

/// My `base-conflict`: my state no longer merges into my base branch's
/// tip. On my conflicting lines (mapped like every diagnostic), naming the
/// base's lines they meet, routed like a conflict (Error by default).
fn base_conflicts(inputs: &Inputs<'_>, out: &mut HashMap<Uri, Vec<Diagnostic>>) {
    let Some(me) = inputs.guard.participant(inputs.me) else {
        return;
    };
    let Some(conflict) = &me.base_conflict else {
        return;
    };
    for path in &conflict.paths {
        if inputs.only.is_some_and(|only| !only.contains(&path.path)) {
            continue;
        }
        let file = inputs.my_root.join(&path.path);
        let Some(uri) = path_to_uri(&file) else {
            continue;
        };
        let current = match inputs.open.get(&file) {
            Some(text) => Some(text.clone()),
            None => read_text(inputs.my_root, &file),
        };
        let Some(current) = current else { continue };
        let base = me
            .merge_base
            .as_deref()
            .and_then(|oid| base_text(inputs.repo, oid, &path.path))
            .unwrap_or_else(|| current.clone());
        let map = LineMap::new(&base, &current);
        let theirs: Vec<String> = path
            .b_ranges
            .iter()
            .map(|r| {
                let (first, last) = map.range(*r);
                lines_text(first, last)
            })
            .collect();
        let inside = if path.b_symbols.is_empty() {
            String::new()
        } else {
            format!(" (in {})", path.b_symbols.join(", "))
        };
        let what = if theirs.is_empty() {
            format!("{} changed this file", conflict.base)
        } else {
            format!("{} changed {}{inside}", conflict.base, theirs.join(", "))
        };
        let whole_file = [LineRange { start: 1, lines: 1 }];
        let mine = if path.a_ranges.is_empty() {
            &whole_file[..]
        } else {
            &path.a_ranges[..]
        };
        for range in mine {
            let (first, last) = map.range(*range);
            out.entry(uri.clone()).or_default().push(diagnostic(
                (first, last),
                severity(Level::BaseConflict, inputs.severities),
                Level::BaseConflict.as_str(),
                format!(
                    "{what} since you started; your changes here no longer merge into {}",
                    conflict.base
                ),
                inputs.me,
            ));
        }
    }
}

/// The `semantic` notes of my pairs: on my uses of a signature another
/// participant changed, and on my changed definitions that another uses.
/// Their lines are my own copy's (the snapshot holds my unsaved text), so
/// they need no mapping.
fn semantic(inputs: &Inputs<'_>, out: &mut HashMap<Uri, Vec<Diagnostic>>) {
    for live in inputs.guard.pairs() {
        for note in &live.pair.semantic {
            let mine = if note.used_by == inputs.me {
                let at = note.used_at.clone();
                let message = format!(
                    "{} changed the signature of {} ({}): `{}` → `{}`; this use may no longer build",
                    who(inputs.sessions, &note.changed_by),
                    note.symbol,
                    note.path,
                    note.before,
                    note.after
                );
                Some((&note.used_in, at, message, &note.changed_by))
            } else if note.changed_by == inputs.me {
                let inside = note
                    .used_inside
                    .as_ref()
                    .map(|s| format!(" in {s}"))
                    .unwrap_or_default();
                let message = format!(
                    "{} uses {}{inside} ({}), whose signature you changed: `{}` → `{}`",
                    who(inputs.sessions, &note.used_by),
                    note.symbol,
                    note.used_in,
                    note.before,
                    note.after
                );
                Some((&note.path, vec![note.lines], message, &note.used_by))
            } else {
                None
            };
            let Some((path, ranges, message, other)) = mine else {
                continue;
            };
            if inputs.only.is_some_and(|only| !only.contains(path)) {
                continue;
            }
            let Some(uri) = path_to_uri(&inputs.my_root.join(path)) else {
                continue;
            };
            for range in ranges {
                let first = range.start.saturating_sub(1);
                let last = (first + range.lines.max(1)).saturating_sub(1);
                out.entry(uri.clone()).or_default().push(diagnostic(
                    (first, last),
                    severity(Level::Semantic, inputs.severities),
                    Level::Semantic.as_str(),
                    message.clone(),
                    other,
                ));
            }
        }
    }
}

/// Awareness hints (see the module doc): for each open document of my
/// checkout (of `only`, when given) and each other participant changing
/// that file, when no pair of mine with it names the file yet, a hint on
/// its changed lines.
fn awareness(inputs: &Inputs<'_>, out: &mut HashMap<Uri, Vec<Diagnostic>>) {
    let mut open: Vec<(&PathBuf, &String)> = inputs.open.iter().collect();
    open.sort();
    for (file, current) in open {
        let Ok(rel) = file.strip_prefix(inputs.my_root) else {
            continue;
        };
        let Some(rel) = rel.to_str() else { continue };
        if inputs.only.is_some_and(|only| !only.contains(rel)) {
            continue;
        }
        let Some(uri) = path_to_uri(file) else {
            continue;
        };
        for (name, side) in inputs.guard.participants() {
            if name == inputs.me {
                continue;
            }
            let paired = inputs.guard.pairs().any(|live| {
                let pair = &live.pair;
                (pair.a == inputs.me && pair.b == *name || pair.b == inputs.me && pair.a == *name)
                    && pair.paths.iter().any(|p| p.path == rel)
            });
            if paired {
                continue;
            }
            let Some(change) = side.changes.get(rel) else {
                continue;
            };
            // A file new on its side, or a binary, has no lines to point at
            // in yours: the first line stands for it.
            let base = side
                .merge_base
                .as_deref()
                .and_then(|oid| base_text(inputs.repo, oid, rel));
            let map = LineMap::new(base.as_deref().unwrap_or(current), current);
            let ranges: Vec<LineRange> = if change.binary || change.hunks.is_empty() {
                vec![LineRange { start: 1, lines: 1 }]
            } else {
                change.hunks.iter().map(|h| h.base_range()).collect()
            };
            let (verb, kind, churn) = awareness_words(change);
            let who_text = who(inputs.sessions, name);
            let severity = inputs
                .severities
                .and_then(|s| s.aware.as_deref())
                .and_then(named_severity)
                .unwrap_or(DiagnosticSeverity::HINT);
            for range in ranges {
                let (first, last) = map.range(range);
                let lines = lines_text(first, last);
                out.entry(uri.clone()).or_default().push(diagnostic(
                    (first, last),
                    severity,
                    AWARE,
                    format!("{who_text} {verb} {lines} here{kind}{churn}"),
                    name,
                ));
            }
        }
    }
}

/// What an awareness hint says another participant is doing to a file:
/// the verb, what kind of change (when not a plain edit) and its churn.
fn awareness_words(change: &ChangedPath) -> (&'static str, &'static str, String) {
    let (verb, kind) = match (change.added, change.deleted) {
        (true, _) => ("is adding", " (a new file on its side)"),
        (_, true) => ("is deleting", " (the whole file)"),
        _ if change.binary => ("is changing", " (binary)"),
        _ => ("is changing", ""),
    };
    let churn = if change.binary {
        String::new()
    } else {
        let (add, del) = change.hunks.iter().fold((0, 0), |(add, del), h| {
            (add + h.new_lines, del + h.old_lines)
        });
        format!(" (+{add} −{del})")
    };
    (verb, kind, churn)
}

/// An owt diagnostic on the document lines `first..=last` (0-based), with
/// its level's `code` and `data` naming the `session` it is about.
fn diagnostic(
    (first, last): (u32, u32),
    severity: DiagnosticSeverity,
    code: &str,
    message: String,
    session: &str,
) -> Diagnostic {
    Diagnostic {
        range: line_range(first, last),
        severity: Some(severity),
        code: Some(NumberOrString::String(code.to_string())),
        code_description: None,
        source: Some("owt".into()),
        message,
        related_information: None,
        tags: None,
        data: serde_json::to_value(DiagnosticData {
            session: session.to_string(),
            level: code.to_string(),
        })
        .ok(),
    }
}

/// "line N" or "lines N–M" (1-based) of the document lines `first..=last`.
fn lines_text(first: u32, last: u32) -> String {
    if first == last {
        format!("line {}", first + 1)
    } else {
        format!("lines {}–{}", first + 1, last + 1)
    }
}

fn named_severity(name: &str) -> Option<DiagnosticSeverity> {
    match name.to_ascii_lowercase().as_str() {
        "error" => Some(DiagnosticSeverity::ERROR),
        "warning" | "warn" => Some(DiagnosticSeverity::WARNING),
        "information" | "info" => Some(DiagnosticSeverity::INFORMATION),
        "hint" => Some(DiagnosticSeverity::HINT),
        _ => None,
    }
}

/// One side as [`sides`] gives it: the other participant, its ranges, the
/// symbols around them, and the pair's other member when neither is me.
type SideOf<'a> = (&'a str, &'a [LineRange], &'a [String], Option<&'a str>);

fn sides<'a>(pair: &'a GuardPair, path: &'a GuardPath, me: &str) -> Vec<SideOf<'a>> {
    if pair.a == me {
        vec![(pair.b.as_str(), &path.b_ranges, &path.b_symbols, None)]
    } else if pair.b == me {
        vec![(pair.a.as_str(), &path.a_ranges, &path.a_symbols, None)]
    } else {
        // Two others overlap: show the first's lines, naming both.
        vec![(
            pair.a.as_str(),
            &path.a_ranges,
            &path.a_symbols,
            Some(pair.b.as_str()),
        )]
    }
}

/// One participant's side of a pair in one path.
struct Side<'a> {
    live: &'a LivePair,
    path: &'a GuardPath,
    other: &'a str,
    /// The symbols around `other`'s lines (`fn parse_config`).
    symbols: &'a [String],
    /// The pair's other member, when neither is me.
    also: Option<&'a str>,
}

fn base_text(repo: &git2::Repository, merge_base: &str, path: &str) -> Option<String> {
    let oid = git2::Oid::from_str(merge_base).ok()?;
    let tree = repo.find_commit(oid).ok()?.tree().ok()?;
    let entry = tree.get_path(Path::new(path)).ok()?;
    let blob = repo.find_blob(entry.id()).ok()?;
    std::str::from_utf8(blob.content()).ok().map(str::to_string)
}

fn who(sessions: &[SessionView], name: &str) -> String {
    if name == YOU {
        return "you (the main checkout)".into();
    }
    match sessions.iter().find(|s| s.name == name) {
        Some(s) => format!("{} ({}, {})", s.name, s.provider, s.status_text),
        None => name.to_string(),
    }
}

fn severity(level: Level, severities: Option<&Severities>) -> DiagnosticSeverity {
    let configured = severities.and_then(|s| match level {
        Level::Overlap => s.overlap.as_deref(),
        Level::HunkOverlap => s.hunk_overlap.as_deref(),
        Level::Conflict | Level::BaseConflict => s.conflict.as_deref(),
        Level::SameChange | Level::Semantic => None,
    });
    match configured.and_then(named_severity) {
        Some(severity) => severity,
        None => match level {
            Level::SameChange => DiagnosticSeverity::HINT,
            Level::Overlap => DiagnosticSeverity::INFORMATION,
            Level::HunkOverlap | Level::Semantic => DiagnosticSeverity::WARNING,
            Level::Conflict | Level::BaseConflict => DiagnosticSeverity::ERROR,
        },
    }
}

/// `+added −removed` of `other`'s changes to `path` (from its hunks).
fn churn(side: &Side<'_>) -> Option<(u32, u32)> {
    let hunks = side.live.hunks(side.other, &side.path.path)?;
    Some(hunks.iter().fold((0, 0), |(add, del), h| {
        (add + h.new_lines, del + h.old_lines)
    }))
}

/// Lines of `other`'s own copy that a base range became (for relatedInformation).
fn other_copy_range(side: &Side<'_>, range: LineRange) -> Range {
    let hunk = side
        .live
        .hunks(side.other, &side.path.path)
        .and_then(|hunks| {
            hunks.iter().find(|h| {
                let start = h.old_start.max(1);
                let end = start + h.old_lines.max(1);
                range.start < end && start < range.start + range.lines.max(1)
            })
        });
    let (first, last) = match hunk {
        Some(h) if h.new_lines > 0 => {
            (h.new_start.saturating_sub(1), h.new_start + h.new_lines - 2)
        }
        Some(h) => (h.new_start.saturating_sub(1), h.new_start.saturating_sub(1)),
        None => (
            range.start.saturating_sub(1),
            (range.start + range.lines.max(1)).saturating_sub(2),
        ),
    };
    Range {
        start: Position {
            line: first,
            character: 0,
        },
        end: Position {
            line: last.max(first) + 1,
            character: 0,
        },
    }
}

/// What every diagnostic of `side` says after its lines: who changed them
/// (`{who} changed `) and the rest (`{churn}{consequence}{detail}`).
fn message_parts(inputs: &Inputs<'_>, side: &Side<'_>) -> (String, String) {
    let (path, other, also) = (side.path, side.other, side.also);
    let who_text = match also {
        Some(second) => format!(
            "{} and {}",
            who(inputs.sessions, other),
            who(inputs.sessions, second)
        ),
        None => who(inputs.sessions, other),
    };
    let churn = churn(side)
        .map(|(add, del)| format!(" (+{add} −{del})"))
        .unwrap_or_default();
    let consequence = match (path.level, also) {
        (Level::Conflict, None) => "; merging it with your changes will conflict",
        (Level::Conflict, Some(_)) => "; merging them will conflict",
        (Level::HunkOverlap, None) => ", on or next to lines you changed",
        (Level::HunkOverlap, Some(_)) => ", on or next to each other's changes",
        (Level::Overlap, None) => "; you changed other lines of this file",
        (Level::Overlap, Some(_)) => "; both changed this file",
        (Level::SameChange, None) => ", the same change as yours",
        (Level::SameChange, Some(_)) => ", the same change on both sides",
        (Level::Semantic, _) => "; it uses a signature the other side changed",
        (Level::BaseConflict, _) => "; it no longer merges into its base",
    };
    let detail = path
        .detail
        .as_deref()
        .map(|d| format!(" [{d}]"))
        .unwrap_or_default();
    let inside = if side.symbols.is_empty() {
        String::new()
    } else {
        format!(" (in {})", side.symbols.join(", "))
    };
    (who_text, format!("{inside}{churn}{consequence}{detail}"))
}

/// `other`'s copy of the lines of `range` (when the client shows related
/// information).
fn related(
    inputs: &Inputs<'_>,
    side: &Side<'_>,
    range: LineRange,
) -> Option<Vec<DiagnosticRelatedInformation>> {
    if !inputs.related {
        return None;
    }
    let root = &inputs.guard.participant(side.other)?.worktree;
    // A session on a remote has no copy on this machine to point at.
    if root.as_os_str().is_empty() {
        return None;
    }
    let uri = path_to_uri(&root.join(&side.path.path))?;
    Some(vec![DiagnosticRelatedInformation {
        location: Location {
            uri,
            range: other_copy_range(side, range),
        },
        message: format!("{}'s copy", side.other),
    }])
}

fn path_diagnostics(
    inputs: &Inputs<'_>,
    side: &Side<'_>,
    ranges: &[LineRange],
    map: &LineMap,
) -> Vec<Diagnostic> {
    let level = side.path.level;
    let (who_text, rest) = message_parts(inputs, side);
    let whole_file = [LineRange { start: 1, lines: 1 }];
    let ranges = if ranges.is_empty() {
        &whole_file[..]
    } else {
        ranges
    };
    ranges
        .iter()
        .map(|range| {
            let (first, last) = map.range(*range);
            let lines = lines_text(first, last);
            Diagnostic {
                related_information: related(inputs, side, *range),
                ..diagnostic(
                    (first, last),
                    severity(level, inputs.severities),
                    level.as_str(),
                    format!("{who_text} changed {lines} here{rest}"),
                    side.other,
                )
            }
        })
        .collect()
}
