//! The `owt` command line: clap definitions and one thin file per verb.
//!
//! Invariant: a verb parses its arguments, calls one library function in
//! [`crate::ops`] (or [`crate::session`]), and formats the result — text
//! sentences for people, the `owt-protocol` type for `--json`. No git,
//! SQLite or PTY calls here.

mod acp;
mod approve;
pub mod attach;
mod auto_resume;
mod board;
mod branch;
mod bridge;
mod checks;
mod cleanup;
mod comment;
mod completions;
mod config;
mod db;
mod delete;
mod deny;
mod diff;
mod doctor;
mod editor;
mod fork;
mod guard;
pub mod hook;
pub mod host;
mod list;
mod lsp;
mod mcp;
mod merge;
pub(crate) mod new;
mod note;
pub mod peek;
mod pr;
mod queue;
mod remote;
mod resume;
mod review;
pub mod send;
mod ship;
mod start;
mod sync;
mod trust;
mod usage;
mod version;
pub mod wait;
mod watch;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use serde::Serialize;

const ABOUT: &str = "Supervise parallel AI coding agents, each in its own git worktree.";
const LONG_ABOUT: &str = "\
owt runs coding agents (Claude Code, Codex, OpenCode, Aider, Gemini CLI, …) side by side, \
each in its own git worktree and branch, inside a terminal that owt owns. Run `owt` alone \
in a terminal for the control plane: a live board driven from the keyboard — n new, \
a attach, s ship, m merge, d delete, ? every key, q quit. `owt --print` (or `owt | cat`) \
prints the board once instead. The board: NEEDS YOU, READY TO SHIP, IN FLIGHT, READY TO CLEAN.

Start:   owt new \"Add JWT auth\"
Watch:   owt                       (the control plane; owt list prints once)
Inspect: owt attach add-jwt-auth   (detach with Ctrl-\\ d)
Finish:  owt delete add-jwt-auth";

#[derive(Debug, Parser)]
#[command(name = "owt", version, about = ABOUT, long_about = LONG_ABOUT)]
pub struct Cli {
    /// Run as if owt was started in DIR (any folder of the repository or of one of its worktrees).
    #[arg(short = 'C', global = true, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Print machine-readable JSON (the owt-protocol types) on stdout.
    #[arg(long, global = true)]
    pub json: bool,
    /// Format of log lines on stderr.
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// More log output (-v debug, -vv trace). RUST_LOG overrides.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Without a verb: print the static board and exit, even in a terminal
    /// (where `owt` alone opens the control plane).
    #[arg(long)]
    pub print: bool,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Start an agent on a task in a new worktree and branch.
    #[command(visible_alias = "n")]
    New(new::Args),
    /// Start an agent on a new branch in your own checkout (no worktree).
    Branch(branch::Args),
    /// List sessions with their status, branch, worktree and changes.
    #[command(visible_alias = "ls")]
    List(list::Args),
    /// Stop a session's agent and remove its worktree and branch.
    #[command(visible_alias = "rm")]
    Delete(delete::Args),
    /// Attach this terminal to an agent (detach: Ctrl-\ then d; an ACP session: its transcript and a prompt line).
    ///
    /// While attached, `[notify] terminal` (osc9, osc777; default: osc9
    /// when `[notify] desktop = true`) tells you by a desktop notification
    /// through the terminal when another session of the repository needs
    /// you; it goes between the agent's escape sequences, never inside one.
    Attach(attach::Args),
    /// Attach to an agent (another name for attach).
    #[command(visible_alias = "s")]
    Switch(attach::Args),
    /// Start a queued session's agent now, beyond [agent] max_running.
    Start(start::Args),
    /// Restart a session whose agent is gone, continuing its conversation.
    Resume(resume::Args),
    /// Start a new session from another's working state, its conversation forked.
    Fork(fork::Args),
    /// Type text (then Enter) into an agent, or into all of them.
    Send(send::Args),
    /// Print an agent's current screen (an ACP session: its transcript's tail).
    Peek(peek::Args),
    /// Approve the permission dialog on an agent's screen (its key for "allow once"), or an ACP session's request (the first "allow" option, or OPTION).
    Approve(approve::Args),
    /// Refuse the permission dialog on an agent's screen, or an ACP session's request.
    Deny(deny::Args),
    /// Block until an agent is done, needs input, or exited.
    Wait(wait::Args),
    /// Merge a session's branch into its base branch (two phases, conflict-safe).
    #[command(visible_alias = "m")]
    Merge(merge::Args),
    /// Commit, merge and delete a session in one shot (behind its [checks]).
    Ship(ship::Args),
    /// Show an agent's changes against its base: what ship would commit.
    Diff(diff::Args),
    /// Where an agent's changes are (file:line per hunk), and mark files reviewed.
    Review(review::Args),
    /// Send a review comment on lines of an agent's file to the agent.
    Comment(comment::CommentArgs),
    /// List (or resolve) the review comments sent to an agent.
    Comments(comment::CommentsArgs),
    /// Show a session's [checks], or run them now (--run).
    Checks(checks::Args),
    /// Push a session's branch and open a pull request (gh, glab).
    Pr(pr::Args),
    /// Watch the sessions' pull requests and route CI failures and reviews to their agents.
    Watch(watch::Args),
    /// Share a note with every agent (now and in future first prompts).
    Note(note::Args),
    /// Bring the base branch (updated from its upstream) into session branches.
    Sync(sync::Args),
    /// List (and with --force remove) stale sessions.
    Cleanup(cleanup::Args),
    /// Sessions and tokens per agent, session and day (local records only).
    ///
    /// Counts sessions started, shipped, merged and deleted in this
    /// repository, and the tokens each agent recorded in its own files, per
    /// session, agent and day, with the cost where the agent reports one
    /// (Aider, OpenCode, Pi). Records are read where each agent keeps
    /// them: Claude Code's transcripts (~/.claude/projects), Codex's
    /// rollouts ($CODEX_HOME/sessions), OpenCode's database
    /// (~/.local/share/opencode), Pi's sessions (~/.pi/agent/sessions),
    /// Gemini CLI's chat records (~/.gemini/tmp/<project>/chats), Aider's
    /// analytics log (owt asks Aider to write one under $OWT_HOME/usage)
    /// or its chat history. A deleted session's tokens stay until `owt db
    /// purge` drops them by age. Nothing leaves the machine.
    ///
    /// `in` counts input that was neither read from nor written to the
    /// prompt cache, so in + out + cache read + cache written is every
    /// token billed.
    Usage(usage::Args),
    /// Conflict Guard: which agents (and you) touch the same code, down to the lines.
    ///
    /// Every pair of sessions and your checkout, least first: `same-change`
    /// (both made the very same change), `overlap` (both changed a path),
    /// `hunk-overlap` (their changed lines meet), `semantic` (git merges
    /// them, but one changed or removed a function's signature that the
    /// other's changed lines use; Rust, Python, JavaScript, TypeScript, Go,
    /// C, C++, Java), `conflict` (merging one's working state after shipping the
    /// other's into the base fails, in either order; with the conflicting
    /// lines on each side). And per session, `base-conflict`: its working
    /// state no longer merges into its base branch's tip. Committed,
    /// staged, unstaged and untracked work all count. A live agent's
    /// checkout is read from its session host's journal of writes; any
    /// other checkout is walked (`--json` names which per participant:
    /// `scan`). Results are recorded for `owt list` and editors.
    ///
    /// While an `owt lsp` of the repository runs (an editor is open), its
    /// live guard answers, in milliseconds: it applies every file change
    /// already made first, and leaves your unsaved buffers out, so the
    /// report is the one computed here. With none answering within 500 ms,
    /// or with `--cold`, it is computed here; `-v` says which.
    Guard(guard::Args),
    /// Sessions ready to ship, in the merge order with the fewest conflicts.
    Queue(queue::Args),
    /// Find and repair orphaned worktrees and sessions.
    Doctor(doctor::Args),
    /// Trust this repository's own files that make owt run programs (.owt.toml, .owt/setup.sh).
    Trust(trust::Args),
    /// Machines agents run on over SSH: list, check, setup, install.
    #[command(subcommand)]
    Remote(remote::Command),
    /// Show or validate the configuration.
    #[command(subcommand)]
    Config(config::Command),
    /// Maintain the status store.
    #[command(subcommand)]
    Db(db::Command),
    /// The LSP sidecar on stdio (started by editors).
    Lsp(lsp::Args),
    /// Serve MCP peer tools to an agent on stdio.
    Mcp(mcp::Args),
    /// Be an Agent Client Protocol agent on stdio (for Zed, JetBrains, Neovim, Emacs, …):
    /// the owt sessions of the workspace behind one connection.
    Acp(acp::Args),
    /// Print or install editor configuration.
    #[command(subcommand)]
    Editor(editor::Command),
    /// Print the version.
    Version,
    /// Print a shell completion script.
    Completions(completions::Args),
    /// Record an agent hook event (called by agents' hooks).
    #[command(hide = true)]
    Hook(hook::Args),
    /// The session host (started by owt itself).
    #[command(name = "__host", hide = true)]
    Host(host::Args),
    /// The sessions of the repository here, one a line (for the shell
    /// completion scripts).
    #[command(name = "__complete-names", hide = true)]
    CompleteNames,
    /// Start the queued sessions there is room for (run by session hosts
    /// and `owt lsp`).
    #[command(name = "__admit", hide = true)]
    Admit,
    /// The bridge to a remote (started by owt itself).
    #[command(name = "__bridge", hide = true)]
    Bridge(bridge::Args),
    /// Write owt's commit-graph of a repository (started by `owt new`, in
    /// the background).
    #[command(name = "__commit-graph", hide = true)]
    CommitGraph(guard::GraphArgs),
}

/// Entry point of the binary.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    // A session host logs to its own file, set up by `__host` itself.
    if !matches!(cli.command, Some(Command::Host(_))) {
        init_logging(cli.log_format, cli.verbose);
    }
    let json = cli.json;
    let cid = correlation_id();
    let span = tracing::info_span!("command", cid = %cid);
    let _guard = span.enter();
    match run(cli) {
        Ok(code) => code,
        Err(err) => report_error(&err, json),
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let out = Out { json: cli.json };
    let dir = cli.dir.as_deref();
    if auto_resume::applies_to(&cli.command) {
        auto_resume::run(dir, &out);
    }
    match cli.command {
        None => board::run(dir, &out, cli.print),
        Some(Command::New(args)) => new::run(dir, &out, args),
        Some(Command::Branch(args)) => branch::run(dir, &out, args),
        Some(Command::List(args)) => list::run(dir, &out, args),
        Some(Command::Delete(args)) => delete::run(dir, &out, args),
        Some(Command::Attach(args)) | Some(Command::Switch(args)) => attach::run(dir, &out, args),
        Some(Command::Send(args)) => send::run(dir, &out, args),
        Some(Command::Peek(args)) => peek::run(dir, &out, args),
        Some(Command::Approve(args)) => approve::run(dir, &out, args),
        Some(Command::Deny(args)) => deny::run(dir, &out, args),
        Some(Command::Wait(args)) => wait::run(dir, &out, args),
        Some(Command::Hook(args)) => hook::run(dir, &out, args),
        Some(Command::Host(args)) => host::run(dir, &out, args),
        Some(Command::Start(args)) => start::run(dir, &out, args),
        Some(Command::Resume(args)) => resume::run(dir, &out, args),
        Some(Command::Fork(args)) => fork::run(dir, &out, args),
        Some(Command::Admit) => start::admit(),
        Some(Command::CommitGraph(args)) => guard::write_graph(args),
        Some(Command::CompleteNames) => completions::names(dir),
        Some(Command::Merge(args)) => merge::run(dir, &out, args),
        Some(Command::Ship(args)) => ship::run(dir, &out, args),
        Some(Command::Diff(args)) => diff::run(dir, &out, args),
        Some(Command::Review(args)) => review::run(dir, &out, args),
        Some(Command::Comment(args)) => comment::run_comment(dir, &out, args),
        Some(Command::Comments(args)) => comment::run_comments(dir, &out, args),
        Some(Command::Checks(args)) => checks::run(dir, &out, args),
        Some(Command::Pr(args)) => pr::run(dir, &out, args),
        Some(Command::Watch(args)) => watch::run(dir, &out, args),
        Some(Command::Note(args)) => note::run(dir, &out, args),
        Some(Command::Sync(args)) => sync::run(dir, &out, args),
        Some(Command::Cleanup(args)) => cleanup::run(dir, &out, args),
        Some(Command::Usage(args)) => usage::run(dir, &out, args),
        Some(Command::Guard(args)) => guard::run(dir, &out, args),
        Some(Command::Queue(args)) => queue::run(dir, &out, args),
        Some(Command::Doctor(args)) => doctor::run(dir, &out, args),
        Some(Command::Trust(args)) => trust::run(dir, &out, args),
        Some(Command::Remote(cmd)) => remote::run(dir, &out, cmd),
        Some(Command::Bridge(args)) => bridge::run(dir, &out, args),
        Some(Command::Config(cmd)) => config::run(dir, &out, cmd),
        Some(Command::Db(cmd)) => db::run(&out, cmd),
        Some(Command::Lsp(args)) => lsp::run(args),
        Some(Command::Mcp(args)) => mcp::run(dir, &out, args),
        Some(Command::Acp(args)) => acp::run(dir, args),
        Some(Command::Editor(cmd)) => editor::run(dir, &out, cmd),
        Some(Command::Version) => version::run(&out),
        Some(Command::Completions(args)) => completions::run(args),
    }
}

/// How a verb prints: JSON documents or sentences.
pub struct Out {
    pub json: bool,
}

impl Out {
    /// Prints `value` as JSON, or `text()` for people.
    pub fn emit<T: Serialize>(
        &self,
        value: &T,
        text: impl FnOnce() -> String,
    ) -> anyhow::Result<()> {
        if self.json {
            let mut doc = serde_json::to_string_pretty(value)?;
            doc.push('\n');
            write_stdout(&doc)
        } else {
            let mut text = text();
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            write_stdout(&text)
        }
    }

    /// A progress line on stderr (text mode only). Progress, warnings and
    /// errors name files, folders and branches that came from disk: their
    /// control characters are printed escaped (`printable::text`).
    pub fn progress(&self, line: &str) {
        if !self.json {
            eprintln!("{}", crate::printable::text(line));
        }
    }

    /// A warning on stderr (both modes).
    pub fn warn(&self, line: &str) {
        eprintln!("warning: {}", crate::printable::text(line));
    }

    /// An error that does not end the verb (one target of several
    /// failed), on stderr in both modes.
    pub fn error(&self, line: &str) {
        eprintln!("Error: {}", crate::printable::text(line));
    }

    /// The hint under an error [`Out::error`] printed (text mode only).
    pub fn hint(&self, line: &str) {
        if !self.json {
            eprintln!("Hint: {}", crate::printable::text(line));
        }
    }

    /// A sentence on stdout in both modes (for verbs whose output is a
    /// terminal session, not a document).
    pub fn say(&self, line: &str) -> anyhow::Result<()> {
        write_stdout(&format!("{line}\n"))
    }
}

fn write_stdout(text: &str) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(text.as_bytes())?;
    stdout.flush()?;
    Ok(())
}

/// A hint that helps with an error, printed under it: asked of the typed
/// errors in its chain (never read from its text).
pub(crate) fn hint_for(err: &anyhow::Error) -> Option<String> {
    use crate::git::GitError;
    use crate::provider::ProviderError;
    use crate::session::SessionError;
    use crate::store::StoreError;
    let storage = || {
        crate::ops::owt_home()
            .ok()
            .and_then(|home| crate::store::storage_diagnosis(&home))
    };
    for cause in err.chain() {
        if let Some(e) = cause.downcast_ref::<GitError>() {
            if matches!(e, GitError::NotARepository { .. }) {
                return Some("run owt inside a git repository, or point at one with -C DIR".into());
            }
        } else if let Some(e) = cause.downcast_ref::<ProviderError>() {
            if matches!(
                e,
                ProviderError::NotInstalled { .. } | ProviderError::NoneInstalled { .. }
            ) {
                return Some("or declare your own agent under [tools.NAME] in ~/.config/owt/config.toml, or in .owt.toml and then `owt trust` (see `owt config show`)".into());
            }
        } else if let Some(e) = cause.downcast_ref::<StoreError>() {
            // The store failed on its file system (full, read-only): say which.
            if e.is_storage_failure() {
                return storage();
            }
        } else if let Some(e) = cause.downcast_ref::<crate::ops::allowed::Refused>() {
            return e.hint.clone();
        } else if let Some(e) = cause.downcast_ref::<SessionError>() {
            if let SessionError::Store(store) = e {
                if store.is_storage_failure() {
                    return storage();
                }
            }
            return e.hint();
        }
    }
    None
}

fn report_error(err: &anyhow::Error, json: bool) -> ExitCode {
    let broken_pipe = err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    });
    if broken_pipe {
        return ExitCode::SUCCESS;
    }
    let message = format!("{err:#}");
    let hint = hint_for(err);
    if json {
        let doc = owt_protocol::ErrorOutput {
            error: message,
            hint: hint.clone(),
        };
        eprintln!("{}", serde_json::to_string(&doc).unwrap_or_default());
    } else {
        // Errors name files, branches and folders that came from disk (a
        // merge's conflicting paths): never raw on the terminal.
        eprintln!("Error: {}", crate::printable::text(&message));
        if let Some(hint) = hint {
            eprintln!("Hint: {}", crate::printable::text(&hint));
        }
    }
    ExitCode::FAILURE
}

fn init_logging(format: LogFormat, verbose: u8) {
    use tracing_subscriber::EnvFilter;
    let default = match verbose {
        0 => "warn",
        1 => "debug",
        _ => "trace",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder
            .json()
            .with_current_span(true)
            .with_span_list(true)
            .try_init(),
    };
}

/// A short id that ties together the log lines of one command.
fn correlation_id() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("{:08x}", nanos ^ std::process::id().rotate_left(13))
}

/// ` 3m ago` of a Unix ms time (empty for a time in the future).
pub fn age_suffix(then_ms: i64) -> String {
    let now = crate::store::now_ms();
    if then_ms > now {
        return String::new();
    }
    format!(", {} ago", age(then_ms, now))
}

/// A count as people read it at a glance: `950`, `12.3k`, `456k`, `4.5M`.
pub fn compact_count(n: u64) -> String {
    let f = n as f64;
    match n {
        0..=999 => n.to_string(),
        1_000..=9_999 => format!("{:.1}k", f / 1e3),
        10_000..=999_999 => format!("{:.0}k", f / 1e3),
        1_000_000..=9_999_999 => format!("{:.1}M", f / 1e6),
        10_000_000..=999_999_999 => format!("{:.0}M", f / 1e6),
        _ => format!("{:.1}G", f / 1e9),
    }
}

/// US dollars: cents above a dime, else two significant digits (`$0.0038`).
pub fn dollars(usd: f64) -> String {
    if usd == 0.0 || usd.abs() >= 0.1 {
        format!("${usd:.2}")
    } else {
        let digits = (1 - usd.abs().log10().floor() as i32).clamp(2, 8) as usize;
        format!("${usd:.digits$}")
    }
}

/// A session's tokens in a few characters: `12.3k tok`, `1.2M tok $0.42`
/// (all tokens, cache reads included; the cost where the agent reports it).
pub fn usage_figure(usage: &owt_protocol::TokenUsage) -> String {
    let mut s = format!("{} tok", compact_count(usage.total_tokens()));
    if let Some(cost) = usage.cost_usd {
        s.push(' ');
        s.push_str(&dollars(cost));
    }
    s
}

pub use crate::printable::age;
