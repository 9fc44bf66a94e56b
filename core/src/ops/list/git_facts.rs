//! A session's git facts (commits ahead, changed files, conflicted
//! files) brought up to date for a listing: from a live host's own record
//! when it holds, else read from the host's journal or the checkout.

use super::super::Context;
use crate::guard::counts::{self, WorkCounts};
use crate::guard::snapshot::ScanSource;
use crate::session;
use crate::ship;
use crate::status::{self, ConflictFact, GitFact, HostGitFact};
use crate::store::{SessionRow, Store};

/// Records the commits ahead and changed files of `rows` (local sessions
/// with a checkout here) when they changed.
///
/// A session whose host is live and recorded a `host-git` fact since it
/// started, for the HEAD and base tip seen now, has that fact taken as it
/// is: no host is asked and no checkout walked (see `session::host`'s
/// git-facts thread for how fresh it is). The others are read on a few
/// threads at once ([`read_git_fact`]): reading one mostly waits for its
/// host to answer.
pub(super) fn refresh_git_facts_of(ctx: &Context, rows: &[SessionRow]) {
    let to_read = git_jobs(ctx, rows);
    if to_read.is_empty() {
        return;
    }
    let jobs: Vec<&GitJob> = to_read.iter().map(|(_, job)| job).collect();
    for ((row, job), read) in to_read.iter().zip(read_on_threads(&jobs)) {
        let read = match read {
            Ok(read) => read,
            Err(e) => {
                tracing::warn!(session = %row.name, "reading the git facts failed: {e:#}");
                continue;
            }
        };
        tracing::debug!(session = %row.name, "git facts from {}", read.source);
        if job.journal.is_some()
            && job.host_fact_at.is_some()
            && read.source == ScanSource::Journal.name()
        {
            // Read from the host's journal for the HEAD and base tip of
            // now: as good as the host's own record (which waits for the
            // next change in the checkout, and never sees the base move),
            // so the next listing need not ask. Only for a host that
            // records them itself, and not over a record it made
            // meanwhile (it may be newer than this reading).
            record_host_git(ctx, row, job.host_fact_at, &read);
        }
        let fact = GitFact {
            ahead: read.ahead,
            changed_files: read.changed_files,
        };
        if let Err(e) = record_git_fact(&ctx.store, row.id, &fact) {
            tracing::warn!(session = %row.name, "recording git facts failed: {e}");
        }
    }
}

/// The sessions of `rows` whose git facts must be read (with how): the
/// local ones with a checkout here, except a live host's whose own record
/// holds (recorded as the session's git fact here).
fn git_jobs<'a>(ctx: &Context, rows: &'a [SessionRow]) -> Vec<(&'a SessionRow, GitJob)> {
    let mut to_read = Vec::new();
    // Each base branch's tip read once (64 sessions mostly share one).
    let mut base_tips = std::collections::HashMap::new();
    // A remote session's git facts come from its machine.
    let rows: Vec<&SessionRow> = rows
        .iter()
        .filter(|row| row.remote().is_none() && row.worktree_path.exists())
        .collect();
    // Read once, all in one read of the store: a listing of 64 sessions
    // makes every query 64 times.
    let all_facts: Vec<Vec<crate::store::FactRow>> = ctx.store.reading(|store| {
        rows.iter()
            .map(|row| store.facts(row.id).unwrap_or_default())
            .collect()
    });
    for (row, facts) in rows.into_iter().zip(all_facts) {
        let git_dir = git_dir_of(&row.worktree_path);
        refresh_conflict_fact(ctx, row, git_dir.as_deref(), &facts);
        let live = live_in(&facts);
        let mut host_fact_at = None;
        if live {
            match host_git_fact(ctx, row, git_dir.as_deref(), &facts, &mut base_tips) {
                HostGit::Holds(fact) => {
                    tracing::debug!(session = %row.name, "git facts from the host's record");
                    if fact_of::<GitFact>(&facts, status::kind::GIT).map(|(f, _)| f)
                        != Some(fact.clone())
                    {
                        if let Err(e) = ctx.store.record_fact(row.id, status::kind::GIT, &fact) {
                            tracing::warn!(session = %row.name, "recording git facts failed: {e}");
                        }
                    }
                    continue;
                }
                HostGit::Stale(at) => host_fact_at = at,
            }
        }
        to_read.push((
            row,
            GitJob {
                worktree: row.worktree_path.clone(),
                base_branch: row.base_branch.clone(),
                journal: live.then(|| session::socket_path(&ctx.home, &row.short_id)),
                host_fact_at,
            },
        ));
    }
    to_read
}

/// [`read_git_fact`] of each job, on up to `GIT_THREADS` threads (reading
/// one mostly waits for its host to answer), in the jobs' order.
fn read_on_threads(jobs: &[&GitJob]) -> Vec<anyhow::Result<WorkCounts>> {
    let threads = jobs.len().clamp(1, GIT_THREADS);
    let chunk = jobs.len().div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        let handles: Vec<_> = jobs
            .chunks(chunk)
            .map(|jobs| {
                scope.spawn(move || {
                    jobs.iter()
                        .map(|job| read_git_fact(job))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| {
                h.join()
                    .unwrap_or_else(|_| vec![Err(anyhow::anyhow!("a reading thread panicked"))])
            })
            .collect()
    })
}

/// What the store holds of a live host's own reading of its checkout.
enum HostGit {
    /// A `host-git` fact that holds: recorded since the host started, for
    /// the HEAD and base branch tip read now.
    Holds(GitFact),
    /// None that holds (a commit, a base that moved, a host just started):
    /// the host is asked. With when the one there is was recorded, when
    /// it was in this host's life: such a host keeps its record current,
    /// so what the listing reads may be recorded for it (a host that never
    /// recorded one — an ACP host, an older owt's — would not update it).
    Stale(Option<i64>),
}

/// The fact `kind` among `facts` (a session's), decoded, with when it was
/// observed.
fn fact_of<T: serde::de::DeserializeOwned>(
    facts: &[crate::store::FactRow],
    kind: &str,
) -> Option<(T, i64)> {
    let row = facts.iter().find(|f| f.kind == kind)?;
    let value = serde_json::from_value(row.value.clone()).ok()?;
    Some((value, row.observed_at))
}

/// The `host-git` fact of `row` among its `facts` (see [`HostGit`]);
/// `base_tips`: the base branches' tips read so far in this listing.
fn host_git_fact(
    ctx: &Context,
    row: &SessionRow,
    git_dir: Option<&std::path::Path>,
    facts: &[crate::store::FactRow],
    base_tips: &mut std::collections::HashMap<String, Option<String>>,
) -> HostGit {
    let Some((fact, at)) = fact_of::<HostGitFact>(facts, status::kind::HOST_GIT) else {
        return HostGit::Stale(None);
    };
    let host_at = facts
        .iter()
        .find(|f| f.kind == status::kind::HOST)
        .map(|f| f.observed_at);
    if host_at.is_none_or(|host_at| at < host_at) {
        return HostGit::Stale(None);
    }
    let repo = ctx.repo.git2();
    let head = git_dir.and_then(|git_dir| head_commit(repo, git_dir));
    let base_tip = base_tips
        .entry(row.base_branch.clone())
        .or_insert_with(|| {
            repo.find_branch(&row.base_branch, git2::BranchType::Local)
                .ok()
                .and_then(|b| b.get().target())
                .map(|t| t.to_string())
        })
        .clone();
    if head.is_some() && fact.head == head && fact.base_tip == base_tip {
        HostGit::Holds(GitFact {
            ahead: fact.ahead,
            changed_files: fact.changed_files,
        })
    } else {
        HostGit::Stale(Some(at))
    }
}

/// Records `read` (from the host's journal) as `row`'s `host-git` fact,
/// unless the one the store holds is not the one seen before the reading
/// (`seen_at`: the host recorded one meanwhile).
fn record_host_git(ctx: &Context, row: &SessionRow, seen_at: Option<i64>, read: &WorkCounts) {
    if seen_at.is_none() {
        return;
    }
    let now_at = ctx
        .store
        .fact::<HostGitFact>(row.id, status::kind::HOST_GIT)
        .ok()
        .flatten()
        .map(|(_, at)| at);
    if now_at != seen_at {
        return;
    }
    let fact = HostGitFact {
        ahead: read.ahead,
        changed_files: read.changed_files,
        head: read.head.clone(),
        base_tip: read.base_tip.clone(),
    };
    if let Err(e) = ctx.store.record_fact(row.id, status::kind::HOST_GIT, &fact) {
        tracing::warn!(session = %row.name, "recording the host's git facts failed: {e}");
    }
}

/// The git dir of the checkout at `worktree`, read from its `.git` file
/// (a linked worktree) or folder, without opening the repository.
fn git_dir_of(worktree: &std::path::Path) -> Option<std::path::PathBuf> {
    let dot_git = worktree.join(".git");
    let Some(text) = read_small(&dot_git) else {
        return std::fs::symlink_metadata(&dot_git)
            .is_ok_and(|meta| meta.is_dir())
            .then_some(dot_git);
    };
    let dir = std::path::Path::new(text.strip_prefix("gitdir:")?.trim());
    Some(if dir.is_absolute() {
        dir.to_path_buf()
    } else {
        worktree.join(dir)
    })
}

/// HEAD's commit in the checkout whose git dir is `git_dir` (its `HEAD`
/// file read, a symbolic ref resolved in `repo`, the repository they
/// share); `None` while unborn or unreadable.
fn head_commit(repo: &git2::Repository, git_dir: &std::path::Path) -> Option<String> {
    let text = read_small(&git_dir.join("HEAD"))?;
    let text = text.trim();
    match text.strip_prefix("ref:") {
        Some(name) => repo
            .refname_to_id(name.trim())
            .ok()
            .map(|id| id.to_string()),
        None => git2::Oid::from_str(text).ok().map(|id| id.to_string()),
    }
}

/// The text of the small file at `path` (a `.git` file, a `HEAD`): read
/// without asking its size first, as `read_to_string` does (a listing
/// reads two per session). `None` when unreadable, not text, or not small.
fn read_small(path: &std::path::Path) -> Option<String> {
    use std::io::Read;
    let mut file = std::fs::File::open(path).ok()?;
    let mut buf = [0u8; 4096];
    let mut len = 0;
    loop {
        match file.read(&mut buf[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
        if len == buf.len() {
            return None;
        }
    }
    String::from_utf8(buf[..len].to_vec()).ok()
}

/// Threads reading git facts at once.
const GIT_THREADS: usize = 8;

/// What [`read_git_fact`] needs of a session.
struct GitJob {
    worktree: std::path::PathBuf,
    base_branch: String,
    /// The socket of its session host, when the host is live.
    journal: Option<std::path::PathBuf>,
    /// When the `host-git` fact the store held before was recorded.
    host_fact_at: Option<i64>,
}

/// A session's commits ahead and changed files (HEAD against the merge
/// base with its base branch, as the Conflict Guard counts them: a rename
/// is one change), read without walking its checkout when its session host
/// is live: the host's work journal names the few paths that may differ
/// from HEAD, and only those are looked at (plus HEAD's tree diff against
/// the merge base, which skips every folder that did not change).
///
/// Fallback: a session whose host is not live (ended, lost, or an older
/// host without a journal), or whose journal is not ready (a walk under way
/// after a commit) or does not hold for the index and HEAD seen here, has
/// its checkout walked ([`WorkState::scan_full`] does that itself).
///
/// [`WorkState::scan_full`]: crate::guard::snapshot::WorkState::scan_full
fn read_git_fact(job: &GitJob) -> anyhow::Result<WorkCounts> {
    let journal = job.journal.as_ref().map(|socket| {
        std::sync::Arc::new(session::HostJournal::new(socket.clone()))
            as std::sync::Arc<dyn crate::guard::source::JournalSource>
    });
    Ok(counts::counts(&job.worktree, &job.base_branch, journal)?)
}

/// Whether the session's host is running (as the store knows it after
/// [`session::reconcile`]): it has a host fact and neither an exit nor a
/// lost host.
fn live_in(facts: &[crate::store::FactRow]) -> bool {
    let has = |kind: &str| facts.iter().any(|f| f.kind == kind);
    has(status::kind::HOST) && !has(status::kind::EXIT) && !has(status::kind::HOST_LOST)
}

/// Records a session's git fact (commits ahead, changed files) when it
/// changed; whether it did. The one writer of that fact: read from git by
/// [`refresh_git_facts`], or from the guard's snapshot
/// ([`super::guard::record_facts`]).
pub fn record_git_fact(store: &Store, session_id: i64, fact: &GitFact) -> anyhow::Result<bool> {
    let stored = store
        .fact::<GitFact>(session_id, status::kind::GIT)
        .ok()
        .flatten()
        .map(|(f, _)| f);
    if stored.as_ref() == Some(fact) {
        return Ok(false);
    }
    store.record_fact(session_id, status::kind::GIT, fact)?;
    Ok(true)
}

/// Records (or clears) the files of a merge or rebase stopped on conflicts
/// in the worktree (seen through the worktree's own git dir, `git_dir`
/// when the caller read it), against the session's stored `facts`.
fn refresh_conflict_fact(
    ctx: &Context,
    row: &SessionRow,
    git_dir: Option<&std::path::Path>,
    facts: &[crate::store::FactRow],
) {
    let in_progress = match git_dir {
        Some(git_dir) => ship::in_progress_in(git_dir),
        None => ship::in_progress(&row.worktree_path),
    };
    let files = match in_progress {
        Some(_) => ship::conflicted_files(&row.worktree_path).unwrap_or_default(),
        None => Vec::new(),
    };
    let stored = fact_of::<ConflictFact>(facts, status::kind::CONFLICT).map(|(f, _)| f.files);
    let result = match (files.is_empty(), stored) {
        (true, None) => Ok(()),
        (true, Some(_)) => ctx.store.clear_fact(row.id, status::kind::CONFLICT),
        (false, Some(old)) if old == files => Ok(()),
        (false, _) => {
            ctx.store
                .record_fact(row.id, status::kind::CONFLICT, &ConflictFact { files })
        }
    };
    if let Err(e) = result {
        tracing::warn!(session = %row.name, "recording conflict facts failed: {e}");
    }
}
