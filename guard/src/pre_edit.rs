//! The preventive guard: before an agent writes a file, which other
//! participants are changing the lines it is about to change
//! (`owt hook --pre-edit`, called by the agent's own pre-tool hook).
//!
//! Only the one file is looked at: for every other participant, its copy
//! of the file against the merge base of its HEAD with its base branch
//! gives the lines it changed; those are mapped into the editing session's
//! current copy (the same mapping the editor's diagnostics use) and
//! compared with the lines the edit replaces. Nothing is written anywhere:
//! no snapshot, no object, no fact.
//!
//! Invariant: every question it cannot answer (unreadable input, a path
//! outside the worktree, a repository git cannot open) is "nobody else is
//! there": the hook fails open.

use std::path::{Path, PathBuf};

use git2::Repository;
use owt_protocol::guard::LineRange;
use serde_json::Value;
use similar::{DiffOp, TextDiff};

use super::engine::{Participant, YOU};
use super::line_map::LineMap;
use super::unsaved::{blob_id, changed_old_lines, resolved, UnsavedFile};

/// What an edit tool is about to do to one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Planned {
    /// The whole file replaced by this text (Write).
    Write(String),
    /// Each text replaced by something else (Edit, MultiEdit).
    Replace(Vec<String>),
    /// Some of the file, which lines unknown (NotebookEdit).
    Whole,
}

/// One edit as the agent's hook reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedEdit {
    pub tool: String,
    pub path: PathBuf,
    pub planned: Planned,
}

/// Reads Claude Code's `PreToolUse` input (`tool_name`, `tool_input` with
/// `file_path` / `notebook_path`, `content`, `old_string`, `edits`), and
/// Gemini CLI's `BeforeTool` input (the same fields; its tools
/// `write_file` and `replace`). `None` for any other tool or a shape it
/// does not know.
pub fn parse_hook_input(input: &Value) -> Option<PlannedEdit> {
    let tool = input.get("tool_name")?.as_str()?.to_string();
    let args = input.get("tool_input")?;
    let field = |name: &str| args.get(name).and_then(Value::as_str);
    let (path, planned) = match tool.as_str() {
        "Write" | "write_file" => (
            field("file_path")?,
            Planned::Write(field("content")?.into()),
        ),
        "Edit" | "replace" => (
            field("file_path")?,
            Planned::Replace(vec![field("old_string")?.into()]),
        ),
        "MultiEdit" => (
            field("file_path")?,
            Planned::Replace(
                args.get("edits")?
                    .as_array()?
                    .iter()
                    .filter_map(|e| e.get("old_string")?.as_str().map(str::to_string))
                    .collect(),
            ),
        ),
        "NotebookEdit" => (field("notebook_path")?, Planned::Whole),
        _ => return None,
    };
    let mut path = PathBuf::from(path);
    if path.is_relative() {
        if let Some(cwd) = input.get("cwd").and_then(Value::as_str) {
            path = Path::new(cwd).join(path);
        }
    }
    Some(PlannedEdit {
        tool,
        path,
        planned,
    })
}

/// The 1-based inclusive lines of `current` an edit replaces (`None`: the
/// file does not exist yet, the edit creates it). An insertion counts as
/// the line it goes before.
pub fn edit_lines(current: Option<&str>, planned: &Planned) -> Option<Vec<(u32, u32)>> {
    let current = current?;
    let last = current.lines().count().max(1) as u32;
    let whole = vec![(1, last)];
    Some(match planned {
        Planned::Whole => whole,
        Planned::Write(new) => {
            let diff = TextDiff::from_lines(current, new.as_str());
            let mut out = Vec::new();
            for op in diff.ops() {
                match *op {
                    DiffOp::Equal { .. } => {}
                    DiffOp::Delete {
                        old_index, old_len, ..
                    }
                    | DiffOp::Replace {
                        old_index, old_len, ..
                    } => out.push((old_index as u32 + 1, (old_index + old_len) as u32)),
                    DiffOp::Insert { old_index, .. } => {
                        let line = (old_index as u32 + 1).min(last);
                        out.push((line, line));
                    }
                }
            }
            out
        }
        Planned::Replace(olds) => {
            let mut out = Vec::new();
            for old in olds {
                match current.find(old.as_str()) {
                    Some(at) if !old.is_empty() => {
                        let first = current[..at].matches('\n').count() as u32 + 1;
                        let lines = old.trim_end_matches('\n').matches('\n').count() as u32;
                        out.push((first, first + lines));
                    }
                    // Not found (the tool will refuse it) or empty: the
                    // whole file stands for it.
                    _ => return Some(whole),
                }
            }
            out
        }
    })
}

/// Another participant on the lines (or the file) an edit is about to
/// change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    pub name: String,
    /// Its changed lines that meet the edit, 1-based inclusive, in the
    /// editing session's current copy.
    pub lines: Vec<(u32, u32)>,
    /// `editing`, `adding` (a file new on both sides) or `deleting`.
    pub how: &'static str,
}

/// A file of a checkout as the hook reads it: a regular file of at most
/// 16 MiB, through no link out of `root` (else taken for a missing file:
/// a link to `/dev/zero` or a FIFO never hangs or fills the hook).
fn read_checkout_file(root: &Path, path: &Path) -> Option<Vec<u8>> {
    crate::safe_fs::read_regular(path, super::big::BIG_FILE, Some(root))
        .ok()
        .flatten()
}

/// The lines one participant changed in `rel`, in the coordinates of its
/// merge base with its base branch, and that merge base's copy of the
/// file. `None` when it did not change the file.
fn changed_lines(participant: &Participant, rel: &str) -> Option<(Option<String>, Change)> {
    let repo = Repository::open(&participant.worktree).ok()?;
    let head = repo.head().ok()?.peel_to_commit().ok()?;
    let base_tip = repo
        .revparse_single(&format!("refs/heads/{}", participant.base_branch))
        .or_else(|_| repo.revparse_single(&participant.base_branch))
        .ok()
        .and_then(|o| o.peel_to_commit().ok())
        .map(|c| c.id());
    let merge_base = match base_tip {
        Some(tip) => repo.merge_base(head.id(), tip).unwrap_or(head.id()),
        None => head.id(),
    };
    let base_text = repo
        .find_commit(merge_base)
        .ok()?
        .tree()
        .ok()?
        .get_path(Path::new(rel))
        .ok()
        .and_then(|entry| entry.to_object(&repo).ok())
        .and_then(|object| {
            object
                .as_blob()
                .map(|b| String::from_utf8_lossy(b.content()).into_owned())
        });
    let theirs = read_checkout_file(&participant.worktree, &participant.worktree.join(rel))
        .map(|b| String::from_utf8_lossy(&b).into_owned());
    match (base_text, theirs) {
        (None, None) => None,
        (Some(base), Some(theirs)) if base == theirs => None,
        (None, Some(_)) => Some((None, Change::Added)),
        (Some(base), None) => Some((Some(base), Change::Deleted)),
        (Some(base), Some(theirs)) => {
            let ranges = changed_old_lines(&base, &theirs);
            Some((Some(base), Change::Lines(ranges)))
        }
    }
}

enum Change {
    Added,
    Deleted,
    Lines(Vec<LineRange>),
}

/// Every other participant changing lines of `edit.path` that the edit
/// changes, or lines right next to them (git's merge conflicts there
/// too), and your unsaved editor buffers (`unsaved`, from
/// [`super::unsaved::live`]) that change such lines of the file in any
/// participant's checkout, this one's included (hits named after the
/// checkout, `how` `unsaved` or `unsaved-adding`). `me` is the editing
/// participant; `others` everyone else. Returns the path relative to
/// `me`'s checkout too.
pub fn who_else(
    me: &Participant,
    others: &[Participant],
    edit: &PlannedEdit,
    unsaved: &[UnsavedFile],
) -> (String, Vec<Hit>) {
    let root = std::fs::canonicalize(&me.worktree).unwrap_or_else(|_| me.worktree.clone());
    let path = edit
        .path
        .parent()
        .and_then(|dir| std::fs::canonicalize(dir).ok())
        .and_then(|dir| Some(dir.join(edit.path.file_name()?)))
        .unwrap_or_else(|| edit.path.clone());
    let Ok(rel) = path.strip_prefix(&root) else {
        return (String::new(), Vec::new());
    };
    let Some(rel) = rel.to_str().map(str::to_string) else {
        return (String::new(), Vec::new());
    };
    if rel.is_empty() || rel.split('/').next() == Some(".git") {
        return (rel, Vec::new());
    }
    let current =
        read_checkout_file(&root, &path).map(|b| String::from_utf8_lossy(&b).into_owned());
    let mine = edit_lines(current.as_deref(), &edit.planned);
    let mut hits = Vec::new();
    for other in others {
        if other.id == me.id {
            continue;
        }
        let Some((base, change)) = changed_lines(other, &rel) else {
            continue;
        };
        let hit = match (&change, &mine, &current) {
            // New on both sides.
            (Change::Added, None, _) => Some((vec![], "adding")),
            (Change::Added, Some(_), _) | (_, None, _) | (_, _, None) => None,
            (Change::Deleted, Some(mine), Some(_)) => Some((mine.clone(), "deleting")),
            (Change::Lines(ranges), Some(mine), Some(current)) => {
                let map = LineMap::new(base.as_deref().unwrap_or(current), current);
                let theirs: Vec<(u32, u32)> = ranges
                    .iter()
                    .map(|r| {
                        let (a, b) = map.range(*r);
                        (a + 1, b + 1)
                    })
                    .collect();
                let met: Vec<(u32, u32)> = theirs
                    .into_iter()
                    .filter(|(a, b)| meets(mine, *a, *b))
                    .collect();
                (!met.is_empty()).then_some((met, "editing"))
            }
        };
        if let Some((lines, how)) = hit {
            hits.push(Hit {
                name: other.id.clone(),
                lines,
                how,
            });
        }
    }
    for hit in unsaved_hits(
        me,
        others,
        &rel,
        current.as_deref(),
        mine.as_deref(),
        unsaved,
    ) {
        if !hits.contains(&hit) {
            hits.push(hit);
        }
    }
    (rel, hits)
}

/// The unsaved buffers of `rel` (in any participant's checkout) whose
/// changed lines, mapped from the file on disk into `current` (the editing
/// session's copy), meet `mine`; a buffer of a file that is on disk
/// nowhere yet meets an edit that creates it.
fn unsaved_hits(
    me: &Participant,
    others: &[Participant],
    rel: &str,
    current: Option<&str>,
    mine: Option<&[(u32, u32)]>,
    unsaved: &[UnsavedFile],
) -> Vec<Hit> {
    if unsaved.is_empty() {
        return Vec::new();
    }
    let roots: Vec<(&Participant, PathBuf)> = std::iter::once(me)
        .chain(others.iter().filter(|p| p.id != me.id))
        .filter(|p| !p.worktree.as_os_str().is_empty())
        .map(|p| (p, resolved(&p.worktree)))
        .collect();
    let mut hits = Vec::new();
    for buffer in unsaved {
        // The checkout it is in: the deepest root holding it.
        let Some((owner, root)) = roots
            .iter()
            .filter(|(_, root)| buffer.path.starts_with(root))
            .max_by_key(|(_, root)| root.as_os_str().len())
        else {
            continue;
        };
        if buffer.path.strip_prefix(root).ok().and_then(Path::to_str) != Some(rel) {
            continue;
        }
        let disk = read_checkout_file(root, &buffer.path);
        if disk.as_deref().and_then(blob_id) != buffer.disk {
            // The file changed on disk since the record was written.
            continue;
        }
        let hit = match (disk, current, mine) {
            (None, None, _) => Some((Vec::new(), "unsaved-adding")),
            (Some(disk), Some(current), Some(mine)) => {
                let disk = String::from_utf8_lossy(&disk);
                let map = LineMap::new(&disk, current);
                let met: Vec<(u32, u32)> = buffer
                    .lines
                    .iter()
                    .map(|r| {
                        let (a, b) = map.range(*r);
                        (a + 1, b + 1)
                    })
                    .filter(|(a, b)| meets(mine, *a, *b))
                    .collect();
                (!met.is_empty()).then_some((met, "unsaved"))
            }
            _ => None,
        };
        if let Some((lines, how)) = hit {
            hits.push(Hit {
                name: owner.id.clone(),
                lines,
                how,
            });
        }
    }
    hits
}

/// Whether lines `a..=b` meet (or touch) one of `mine`.
fn meets(mine: &[(u32, u32)], a: u32, b: u32) -> bool {
    mine.iter()
        .any(|(x, y)| a <= y.saturating_add(1) && *x <= b.saturating_add(1))
}

/// `lines 40–58, 70` (1-based inclusive ranges).
pub fn lines_text(lines: &[(u32, u32)]) -> String {
    let parts: Vec<String> = lines
        .iter()
        .map(|(a, b)| {
            if a == b {
                a.to_string()
            } else {
                format!("{a}–{b}")
            }
        })
        .collect();
    match parts.len() {
        0 => String::new(),
        1 if !parts[0].contains('–') => format!("line {}", parts[0]),
        _ => format!("lines {}", parts.join(", ")),
    }
}

/// What the agent is told about one hit: `who` describes the participant
/// (`a0 (claude)`).
pub fn hit_text(hit: &Hit, who: &str, rel: &str) -> String {
    let doing = match hit.how {
        "adding" => format!("is also creating {rel}"),
        "unsaved-adding" => format!("are also creating {rel}"),
        "unsaved" => format!("are changing {} of {rel}", lines_text(&hit.lines)),
        "deleting" => format!("is deleting {rel}"),
        _ if hit.name == YOU => format!("has changes on {} of {rel}", lines_text(&hit.lines)),
        _ => format!("is editing {} of {rel}", lines_text(&hit.lines)),
    };
    format!("{who} {doing}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_lines_an_edit_replaces() {
        let current = "a\nb\nc\nd\ne\n";
        assert_eq!(
            edit_lines(Some(current), &Planned::Replace(vec!["c\nd\n".into()])),
            Some(vec![(3, 4)])
        );
        assert_eq!(
            edit_lines(Some(current), &Planned::Write("a\nB\nc\nd\ne\nf\n".into())),
            Some(vec![(2, 2), (5, 5)]),
            "a replaced line, and an appended one counted as the last"
        );
        assert_eq!(
            edit_lines(Some(current), &Planned::Replace(vec!["zzz".into()])),
            Some(vec![(1, 5)]),
            "text not found: the whole file"
        );
        assert_eq!(edit_lines(None, &Planned::Write("x\n".into())), None);
    }

    #[test]
    fn claude_code_tool_inputs() {
        let edit = parse_hook_input(&json!({
            "hook_event_name": "PreToolUse", "cwd": "/w",
            "tool_name": "MultiEdit",
            "tool_input": {"file_path": "src/a.rs", "edits": [{"old_string": "x", "new_string": "y"}]}
        }))
        .unwrap();
        assert_eq!(edit.path, PathBuf::from("/w/src/a.rs"));
        assert_eq!(edit.planned, Planned::Replace(vec!["x".into()]));
        assert!(
            parse_hook_input(&json!({"tool_name": "Bash", "tool_input": {"command": "ls"}}))
                .is_none()
        );
        assert!(parse_hook_input(&json!({"tool_name": "Write", "tool_input": {}})).is_none());
    }

    #[test]
    fn gemini_cli_tool_inputs() {
        // BeforeTool's input, as gemini 0.61.0 sends it.
        let edit = parse_hook_input(&json!({
            "hook_event_name": "BeforeTool", "cwd": "/w", "session_id": "s",
            "tool_name": "replace",
            "tool_input": {"file_path": "/w/a.txt", "old_string": "x\n", "new_string": "y\n", "allow_multiple": false}
        }))
        .unwrap();
        assert_eq!(edit.path, PathBuf::from("/w/a.txt"));
        assert_eq!(edit.planned, Planned::Replace(vec!["x\n".into()]));
        let edit = parse_hook_input(&json!({"hook_event_name": "BeforeTool", "cwd": "/w",
            "tool_name": "write_file", "tool_input": {"file_path": "b.txt", "content": "z\n"}}))
        .unwrap();
        assert_eq!(edit.path, PathBuf::from("/w/b.txt"));
        assert_eq!(edit.planned, Planned::Write("z\n".into()));
        assert!(parse_hook_input(&json!({"tool_name": "run_shell_command",
            "tool_input": {"command": "ls"}}))
        .is_none());
    }

    #[test]
    fn lines_read_naturally() {
        assert_eq!(lines_text(&[(4, 4)]), "line 4");
        assert_eq!(lines_text(&[(40, 58)]), "lines 40–58");
        assert_eq!(lines_text(&[(1, 2), (9, 9)]), "lines 1–2, 9");
    }
}
