//! The Conflict Guard's use cases: participants from the store's sessions
//! and the repository, the guard's facts recorded in the store, the
//! reports `owt guard` and `owt queue` print, and the overlap counts `owt
//! list` shows, or `owt guard`'s report as a running `owt lsp` answers it.
//!
//! Invariants: the only code that records the guard's facts (`guard`,
//! `overlaps`); the git fact the guard's snapshots yield is handed to
//! [`super::list::record_git_fact`], its one writer. It computes on demand
//! (the LSP keeps a live [`GuardEngine`] instead).

use std::collections::BTreeSet;
use std::sync::Arc;

use anyhow::Context as _;
use owt_protocol::guard::{GuardReport, QueueReport, QueueStep};
use owt_protocol::SessionView;

use super::Context;
use crate::git;
use crate::guard::kind;
use crate::guard::queue::{self, Candidate};
use crate::guard::{GuardEngine, Participant, YOU};
use crate::session;
use crate::status::{self, GitFact, OverlapFact};
use crate::store::Store;

/// Every session with a checkout on disk, and the human's checkout (unless
/// an in-place session already stands for it).
pub fn participants(ctx: &Context) -> anyhow::Result<Vec<Participant>> {
    let mut out = Vec::new();
    let mut main_taken = false;
    for row in ctx.store.sessions(ctx.repo_row.id)? {
        if !row.worktree_path.exists() {
            continue;
        }
        if git::same_path(&row.worktree_path, ctx.repo.main_root()) {
            main_taken = true;
        }
        out.push(Participant {
            id: row.name.clone(),
            session_id: Some(row.id),
            worktree: row.worktree_path.clone(),
            base_branch: row.base_branch.clone(),
            journal: Some(Arc::new(session::HostJournal::new(session::socket_path(
                &ctx.home,
                &row.short_id,
            )))),
        });
    }
    if !main_taken {
        out.push(Participant {
            id: YOU.to_string(),
            session_id: None,
            worktree: ctx.repo.main_root().to_path_buf(),
            base_branch: ctx.repo.default_base().unwrap_or_else(|_| "HEAD".into()),
            journal: None,
        });
    }
    Ok(out)
}

/// A fully computed engine for the repository of `ctx`.
pub fn compute(ctx: &Context) -> anyhow::Result<GuardEngine> {
    let mut engine = engine(ctx)?;
    engine
        .full_recompute()
        .context("computing the conflict guard")?;
    Ok(engine)
}

/// An engine with every participant of the repository of `ctx`, not
/// computed yet ([`GuardEngine::full_recompute`]; e.g. once a
/// [`crate::guard::Watching`] watches it).
pub fn engine(ctx: &Context) -> anyhow::Result<GuardEngine> {
    let mut engine = GuardEngine::new(ctx.repo.main_root(), &ctx.config.config.guard.ignore)
        .context("starting the conflict guard")?;
    engine.set_symbols(ctx.config.config.guard.symbols);
    engine.set_symbol_cache(Some(&ctx.home));
    engine.set_commit_graph(Some(&ctx.home));
    for participant in participants(ctx)? {
        let name = participant.id.clone();
        engine
            .add_participant(participant)
            .with_context(|| format!("opening the checkout of {name}"))?;
    }
    crate::remote::add_guard_participants(ctx, &mut engine)?;
    Ok(engine)
}

/// Starts bringing owt's commit-graph of the repository of `ctx` up to
/// date with `commits` (and their history) in the background (`owt
/// __commit-graph`: detached, at a low priority), unless the repository
/// has a graph of its own. `owt new` does, with the new session's
/// commits, so that the guard's first run finds them in the graph: on a
/// long history the graph's first write reads every commit once, and a
/// fork's commits new to it cost a layer (the guard would write them
/// before its first merge of forks' commits; it waits for a write still
/// running). Best effort: what goes wrong is logged.
pub fn prepare_history(ctx: &Context, commits: &[git2::Oid]) {
    let git_dir = ctx.repo.common_dir();
    let kept = crate::guard::commit_graph::CommitGraph::for_repo(&ctx.home, git_dir).is_some();
    if !kept || commits.is_empty() {
        return;
    }
    let mut args: Vec<std::ffi::OsString> = vec!["__commit-graph".into(), git_dir.into()];
    args.extend(commits.iter().map(|c| c.to_string().into()));
    if let Err(e) = session::spawn_detached(&ctx.home, &args, "commit-graph.log") {
        tracing::warn!("starting a write of the commit-graph: {e}");
    }
}

/// `owt __commit-graph`: brings owt's commit-graph of the repository whose
/// common git folder is `git_dir` up to date with `commits` (the
/// background half of [`prepare_history`]); an id that is not one is an
/// error, and nothing is written.
pub fn write_commit_graph(
    home: &std::path::Path,
    git_dir: &std::path::Path,
    commits: &[String],
) -> anyhow::Result<()> {
    let commits = commits
        .iter()
        .map(|c| git2::Oid::from_str(c).with_context(|| format!("not a commit id: {c}")))
        .collect::<anyhow::Result<Vec<_>>>()?;
    if let Some(mut graph) = crate::guard::commit_graph::CommitGraph::for_repo(home, git_dir) {
        graph.cover(&commits);
    }
    Ok(())
}

/// A session's git fact as the guard's snapshot shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct SnapshotGitFact {
    /// The session's name (its participant id).
    pub session: String,
    pub session_id: i64,
    pub fact: GitFact,
}

/// Records the guard fact of every session (of those in `changed`, when
/// given) and every session's overlap count (when it changed: a pair's
/// other member counts differently too), and returns the git fact each
/// recorded session's snapshot shows (commits ahead, changed files: no
/// second scan of the worktree for `owt list` and the board), for
/// [`super::list::record_git_fact`].
pub fn record_facts(
    store: &Store,
    engine: &GuardEngine,
    changed: Option<&BTreeSet<String>>,
) -> anyhow::Result<Vec<SnapshotGitFact>> {
    let mut git_facts = Vec::new();
    for participant in engine.participants() {
        let Some(session_id) = participant.session_id else {
            continue;
        };
        // A remote session's git and guard facts come from its machine.
        let remote = participant.worktree.as_os_str().is_empty();
        let wanted = !remote && changed.is_none_or(|changed| changed.contains(&participant.id));
        if let Some(fact) = engine.guard_fact(&participant.id).filter(|_| wanted) {
            git_facts.push(SnapshotGitFact {
                session: participant.id.clone(),
                session_id,
                fact: GitFact {
                    ahead: commits_ahead(engine, fact.head.as_deref(), &participant.base_branch),
                    changed_files: fact.changes.len() as u32,
                },
            });
            store.record_fact(session_id, kind::GUARD, &fact)?;
        }
        let count = OverlapFact {
            count: engine.overlap_count(&participant.id),
            conflicts_with: conflicts_with(engine, &participant.id),
            base_conflicts: engine
                .base_conflict(&participant.id)
                .map(|c| c.conflicting_paths.clone())
                .unwrap_or_default(),
        };
        let stored = store
            .fact::<OverlapFact>(session_id, status::kind::OVERLAPS)
            .ok()
            .flatten()
            .map(|(f, _)| f);
        if stored.as_ref() != Some(&count) {
            store.record_fact(session_id, status::kind::OVERLAPS, &count)?;
        }
    }
    Ok(git_facts)
}

/// The other sessions `id`'s work conflicts with (not the human's
/// checkout), in name order.
fn conflicts_with(engine: &GuardEngine, id: &str) -> Vec<String> {
    engine
        .pairs_of(id)
        .into_iter()
        .filter(|p| p.level == owt_protocol::guard::Level::Conflict)
        .map(|p| if p.a == id { p.b.clone() } else { p.a.clone() })
        .filter(|other| other != YOU)
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect()
}

/// [`record_facts`] of every session, and their git facts.
pub fn record_all_facts(store: &Store, engine: &GuardEngine) -> anyhow::Result<()> {
    for git in record_facts(store, engine, None)? {
        super::list::record_git_fact(store, git.session_id, &git.fact)?;
    }
    Ok(())
}

/// `owt hook --pre-edit`: what the pre-edit hook of the session with short
/// id `short_id` answers for the tool call `input`, in the dialect of the
/// agent that sent it (its `hook_event_name`): Claude Code's (and Droid's)
/// `PreToolUse` output, or Gemini CLI's `BeforeTool` / `AfterTool`
/// output; `None` to say nothing (the edit goes on as usual). Per
/// `[guard] pre_edit`: `warn` adds who else is there to the agent's
/// context, `block` denies the edit with a reason the agent can act on.
pub fn pre_edit(
    ctx: &Context,
    short_id: &str,
    input: &serde_json::Value,
) -> anyhow::Result<Option<serde_json::Value>> {
    use crate::config::PreEdit;
    let mode = ctx.config.config.guard.pre_edit;
    if mode == PreEdit::Off {
        return Ok(None);
    }
    let event = input
        .get("hook_event_name")
        .and_then(serde_json::Value::as_str)
        .unwrap_or("PreToolUse");
    if event == "AfterTool" {
        // Gemini: the warning its BeforeTool could not hand to the model.
        return Ok(gemini_warning(ctx, short_id, input, None).map(|text| {
            serde_json::json!({"hookSpecificOutput": {
                "hookEventName": "AfterTool", "additionalContext": text}})
        }));
    }
    let Some(edit) = crate::guard::pre_edit::parse_hook_input(input) else {
        return Ok(None);
    };
    let Some((said, first)) = others_on_lines(ctx, short_id, &edit)? else {
        return Ok(None);
    };
    let (refused, warned) = match first {
        Some(first) => (
            format!(
                "owt Conflict Guard refused this edit: {said}. Coordinate with `owt send {first} \"…\"` or change other lines."
            ),
            format!(
                "owt Conflict Guard: {said}. Your edit goes through; merging may conflict there: coordinate with `owt send {first} \"…\"` or change other lines."
            ),
        ),
        // Only the person is there.
        None => (
            format!("owt Conflict Guard refused this edit: {said}. Change other lines, or ask the person first."),
            format!(
                "owt Conflict Guard: {said}. Your edit goes through; it may clash with theirs there: change other lines, or ask the person first."
            ),
        ),
    };
    let block = mode == PreEdit::Block;
    if event == "BeforeTool" {
        // Gemini CLI: `decision: deny` goes to the model as the tool's
        // error; a warning is shown to the person now and handed to the
        // model by the AfterTool hook, with the tool's result.
        if block {
            return Ok(Some(
                serde_json::json!({"decision": "deny", "reason": refused}),
            ));
        }
        gemini_warning(ctx, short_id, input, Some(&warned));
        return Ok(Some(serde_json::json!({"systemMessage": warned})));
    }
    let output = if block {
        serde_json::json!({
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": refused,
        })
    } else {
        serde_json::json!({
            "hookEventName": "PreToolUse",
            "additionalContext": warned,
        })
    };
    Ok(Some(serde_json::json!({ "hookSpecificOutput": output })))
}

/// Who else is changing the lines `edit` of the session with short id
/// `short_id` touches (other sessions, your checkout, your unsaved editor
/// buffers): their sentences joined with "; ", and the first other
/// session's name (for `owt send`; `None` when only you are there);
/// `None` when nobody is.
fn others_on_lines(
    ctx: &Context,
    short_id: &str,
    edit: &crate::guard::pre_edit::PlannedEdit,
) -> anyhow::Result<Option<(String, Option<String>)>> {
    use crate::guard::pre_edit::{hit_text, who_else};
    let Some(row) = ctx.store.session_by_short_id(short_id)? else {
        return Ok(None);
    };
    let everyone = participants(ctx)?;
    let Some(me) = everyone.iter().find(|p| p.id == row.name) else {
        return Ok(None);
    };
    let unsaved = crate::guard::unsaved::live(&ctx.home);
    let (rel, hits) = who_else(me, &everyone, edit, &unsaved);
    if hits.is_empty() {
        return Ok(None);
    }
    let rows = ctx.store.sessions(ctx.repo_row.id)?;
    let who = |hit: &crate::guard::pre_edit::Hit| -> String {
        let name = hit.name.as_str();
        if hit.how.starts_with("unsaved") {
            return match name {
                YOU => "you (unsaved in your editor)".into(),
                _ if name == me.id => "you (unsaved in your editor, in this worktree)".into(),
                _ => format!("you (unsaved in your editor, in {name}'s worktree)"),
            };
        }
        if name == YOU {
            return "the main checkout (you)".into();
        }
        match rows.iter().find(|r| r.name == name) {
            Some(r) => format!("{} ({})", r.name, r.provider),
            None => name.to_string(),
        }
    };
    let said: Vec<String> = hits.iter().map(|h| hit_text(h, &who(h), &rel)).collect();
    let first = hits
        .iter()
        .find(|h| h.name != YOU && !h.how.starts_with("unsaved"))
        .map(|h| h.name.clone());
    Ok(Some((said.join("; "), first)))
}

/// Gemini's warnings between its `BeforeTool` and `AfterTool` hooks: one
/// per session, for one tool call (`tool_name` and `tool_input` the same
/// in both), in `$OWT_HOME/pre-edit/SHORT_ID.json`. With `text`, keeps it;
/// without, takes the one kept for this call (and removes the file).
/// Best effort: a warning that cannot be kept is only shown to the person.
fn gemini_warning(
    ctx: &Context,
    short_id: &str,
    input: &serde_json::Value,
    text: Option<&str>,
) -> Option<String> {
    if short_id.is_empty()
        || !short_id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-')
    {
        return None;
    }
    let call = serde_json::json!([input.get("tool_name"), input.get("tool_input")]).to_string();
    let file = ctx.home.join("pre-edit").join(format!("{short_id}.json"));
    if let Some(text) = text {
        let _ = std::fs::create_dir_all(file.parent()?);
        let _ = std::fs::write(
            &file,
            serde_json::json!({"call": call, "text": text}).to_string(),
        );
        return None;
    }
    let kept: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).ok()?).ok()?;
    if kept["call"].as_str() != Some(call.as_str()) {
        return None;
    }
    let _ = std::fs::remove_file(&file);
    kept["text"].as_str().map(str::to_string)
}

/// Commits on `head` that `base` does not have.
fn commits_ahead(engine: &GuardEngine, head: Option<&str>, base: &str) -> u32 {
    let repo = engine.repo();
    let Some(head) = head.and_then(|h| git2::Oid::from_str(h).ok()) else {
        return 0;
    };
    let Some(base_tip) = repo
        .find_branch(base, git2::BranchType::Local)
        .ok()
        .and_then(|b| b.get().target())
    else {
        return 0;
    };
    repo.graph_ahead_behind(head, base_tip)
        .map_or(0, |(ahead, _)| ahead as u32)
}

/// `owt guard [NAME]`: computes, records facts, and reports every pair (or
/// only the pairs of `name`).
pub fn report(ctx: &Context, name: Option<&str>) -> anyhow::Result<GuardReport> {
    check_name(ctx, name)?;
    let engine = compute(ctx)?;
    record_all_facts(&ctx.store, &engine)?;
    Ok(only(
        engine.report(&ctx.repo.main_root().to_string_lossy()),
        name,
    ))
}

/// How long `owt guard` waits for a running `owt lsp` to answer.
pub const WARM_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(500);

/// Where a report came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answered {
    /// A running `owt lsp` (its pid) answered from its live engine.
    Warm(u32),
    /// Computed here: asked to (`--cold`), or why no server answered.
    Cold(Option<String>),
}

/// [`report`], answered by a running `owt lsp` of the repository when one
/// answers within [`WARM_TIMEOUT`] (the same report: every file event
/// applied first, no unsaved buffers; [`crate::guard::warm`]), computed
/// here otherwise or when `cold`.
pub fn report_from(
    ctx: &Context,
    name: Option<&str>,
    cold: bool,
) -> anyhow::Result<(GuardReport, Answered)> {
    if cold {
        return Ok((report(ctx, name)?, Answered::Cold(None)));
    }
    check_name(ctx, name)?;
    let why = match crate::guard::warm::ask(&ctx.home, ctx.repo.main_root(), WARM_TIMEOUT) {
        Ok((pid, report)) => return Ok((only(report, name), Answered::Warm(pid))),
        Err(why) => why,
    };
    Ok((report(ctx, name)?, Answered::Cold(Some(why))))
}

/// Fails when `name` is neither a session nor `you`.
fn check_name(ctx: &Context, name: Option<&str>) -> anyhow::Result<()> {
    if let Some(name) = name {
        if name != YOU {
            ctx.session(name)?;
        }
    }
    Ok(())
}

/// `report` with only the pairs (and base conflicts) of `name`, if given.
fn only(mut report: GuardReport, name: Option<&str>) -> GuardReport {
    if let Some(name) = name {
        report.pairs.retain(|p| p.a == name || p.b == name);
        report.base_conflicts.retain(|c| c.name == name);
    }
    report
}

/// Refreshes the overlap facts `owt list` shows (best effort).
pub fn refresh_overlaps(ctx: &Context) -> anyhow::Result<()> {
    if ctx.store.sessions(ctx.repo_row.id)?.is_empty() {
        return Ok(());
    }
    let engine = compute(ctx)?;
    record_all_facts(&ctx.store, &engine)
}

/// `owt queue`: the sessions in READY TO SHIP (the board's lane,
/// [`crate::actions::in_ship_queue`]), the Conflict Guard's facts
/// refreshed first, in merge order: those with commits as the guard's
/// queue orders them, then those whose work is not committed yet (ship
/// commits it first) or whose branch is on another machine. Each step's
/// overlap count is the board's.
pub fn queue_report(ctx: &Context) -> anyhow::Result<QueueReport> {
    if let Err(e) = refresh_overlaps(ctx) {
        tracing::warn!("refreshing the conflict guard's facts failed: {e:#}");
    }
    let ready: Vec<SessionView> = super::list::session_views(ctx)?
        .into_iter()
        .filter(crate::actions::in_ship_queue)
        .collect();
    let candidates = ready
        .iter()
        .filter(|v| v.ahead > 0 && v.remote.is_none())
        .map(|v| Candidate {
            name: v.name.clone(),
            branch: v.branch.clone(),
            base: v.base.clone(),
            ahead: v.ahead,
        })
        .collect();
    let planned = queue::plan(ctx.repo.git2(), candidates).context("planning the merge queue")?;
    Ok(QueueReport {
        repository: ctx.repo.main_root().to_string_lossy().into_owned(),
        steps: ship_queue_steps(planned, &ready),
    })
}

/// The queue's steps (pure): the `planned` ones of the `ready` sessions
/// with the board's overlap counts, then the ready sessions the plan left
/// out (work not committed yet, or a branch on another machine).
pub fn ship_queue_steps(mut steps: Vec<QueueStep>, ready: &[SessionView]) -> Vec<QueueStep> {
    steps.retain(|s| ready.iter().any(|v| v.name == s.session));
    for view in ready {
        match steps.iter_mut().find(|s| s.session == view.name) {
            Some(step) => step.overlaps = view.overlaps,
            None => steps.push(QueueStep {
                position: 0,
                session: view.name.clone(),
                branch: view.branch.clone(),
                base: view.base.clone(),
                ahead: view.ahead,
                changed_files: view.changed_files,
                overlaps: view.overlaps,
                conflict_free: true,
                predicted_conflicts: Vec::new(),
            }),
        }
    }
    for (i, step) in steps.iter_mut().enumerate() {
        step.position = i as u32 + 1;
    }
    steps
}

#[cfg(test)]
mod tests {
    //! The guard's facts as the use case records them (moved from the
    //! guard's own tests when it became the crate owt-guard, which does
    //! not know the store or `status`).

    use std::path::{Path, PathBuf};
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use super::*;
    use crate::guard::GuardWatcher;
    use crate::store::NewSession;

    use owt_e2e::ten_lines as lines;

    /// `lines()` with line `n` (1-based) replaced.
    fn with_line(n: usize, text: &str) -> String {
        owt_e2e::with_line(&lines(), n, text)
    }

    fn write(root: &Path, path: &str, text: &str) {
        owt_e2e::write_file(root, path, text);
    }

    /// A repository on `main` with `files` committed, and linked worktrees.
    struct Fixture {
        _dir: tempfile::TempDir,
        main: PathBuf,
        root: PathBuf,
    }

    impl Fixture {
        fn new(files: &[(&str, &str)]) -> Fixture {
            owt_e2e::hermetic_git_process();
            let dir = tempfile::tempdir().unwrap();
            let root = std::fs::canonicalize(dir.path()).unwrap();
            let main = root.join("main");
            std::fs::create_dir_all(&main).unwrap();
            owt_e2e::git(&main, ["init", "-q", "-b", "main"]);
            for (path, text) in files {
                write(&main, path, text);
            }
            owt_e2e::git(&main, ["add", "-A"]);
            owt_e2e::git(&main, ["commit", "-q", "-m", "initial"]);
            Fixture {
                _dir: dir,
                main,
                root,
            }
        }

        /// A linked worktree on a new branch `name` from `main`.
        fn worktree(&self, name: &str) -> PathBuf {
            let path = self.root.join(name);
            let path_arg = path.to_str().unwrap();
            owt_e2e::git(
                &self.main,
                ["worktree", "add", "-q", "-b", name, path_arg, "main"],
            );
            path
        }
    }

    #[test]
    fn watcher_records_guard_facts_in_the_store() {
        let fx = Fixture::new(&[("f.txt", &lines())]);
        let a = fx.worktree("a");
        let b = fx.worktree("b");
        write(&b, "f.txt", &with_line(2, "b"));
        let home = fx.root.join("owt-home");
        let mut store = Store::open(&home).unwrap();
        let repo_row = store.ensure_repo(&fx.main.join(".git"), &fx.main).unwrap();
        let mut ids = Vec::new();
        for (name, worktree) in [("a", &a), ("b", &b)] {
            let row = store
                .insert_session(
                    &NewSession {
                        repo_id: repo_row.id,
                        name,
                        task: "t",
                        branch_template: "{name}",
                        base_branch: "main",
                        worktree_template: worktree.to_str().unwrap(),
                        provider: "fake",
                        kind: owt_protocol::SessionKind::Worktree,
                    },
                    |_| false,
                )
                .unwrap();
            ids.push(row.id);
        }
        let mut engine = GuardEngine::new(&fx.main, &[]).unwrap();
        for ((name, worktree), id) in [("a", &a), ("b", &b)].into_iter().zip(&ids) {
            engine
                .add_participant(Participant {
                    id: name.into(),
                    session_id: Some(*id),
                    worktree: worktree.clone(),
                    base_branch: "main".into(),
                    journal: None,
                })
                .unwrap();
        }
        engine.full_recompute().unwrap();
        record_all_facts(&store, &engine).unwrap();
        let fact = |store: &Store| {
            store
                .fact::<crate::guard::GuardFact>(ids[0], kind::GUARD)
                .unwrap()
                .unwrap()
                .0
        };
        assert!(fact(&store).changes.is_empty());
        let engine = Arc::new(Mutex::new(engine));
        let (tx, rx) = std::sync::mpsc::channel();
        let _watcher = GuardWatcher::start(engine, Duration::from_millis(30), move |engine, _| {
            record_all_facts(&store, engine).unwrap();
            let _ = tx.send(());
        })
        .unwrap();
        write(&a, "f.txt", &with_line(9, "a"));
        rx.recv_timeout(Duration::from_secs(10))
            .expect("facts recorded within 10 s of the write");
        let reader = Store::open(&home).unwrap();
        let guard_fact = fact(&reader);
        assert_eq!(guard_fact.changes.len(), 1);
        assert_eq!(guard_fact.changes[0].path, "f.txt");
        assert_eq!(guard_fact.changes[0].hunks[0].old_start, 9);
        let overlaps = reader
            .fact::<OverlapFact>(ids[0], status::kind::OVERLAPS)
            .unwrap()
            .unwrap()
            .0;
        assert_eq!(overlaps.count, 1);
    }
}
