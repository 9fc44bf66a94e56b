//! `owt __host` (hidden): the session host process itself (`run`), and
//! `spawn`, which registers a session for an arbitrary argv in the current
//! repository and starts its host — what `owt new` does minus the worktree,
//! used by the end-to-end tests and the benchmark — and `stop`.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;

use crate::ops::{self, host::RawSession, Context};
use crate::session::{self, HostSpec};

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub command: HostCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum HostCommand {
    /// Run a session host in this process (started detached by owt).
    Run(HostRun),
    /// Register a session running ARGV in the current checkout and start
    /// its host; prints `{"name", "short_id", "host_pid", "agent_pid"}`.
    Spawn {
        #[arg(long)]
        name: String,
        /// Provider whose screen rules apply.
        #[arg(long, default_value = "generic")]
        provider: String,
        /// Typed into the agent once it is ready.
        #[arg(long)]
        typed_prompt: Option<String>,
        /// ARGV carries the agent's first prompt (an idle input box means
        /// it has not started on it yet).
        #[arg(long)]
        prompt_in_argv: bool,
        /// Run as a `--headless` session.
        #[arg(long)]
        headless: bool,
        /// ARGV is an ACP agent: the host is its client (the typed prompt
        /// is the first prompt).
        #[arg(long)]
        acp: bool,
        #[arg(long, default_value_t = 24)]
        rows: u16,
        #[arg(long, default_value_t = 80)]
        cols: u16,
        /// Lines of scrollback the host keeps.
        #[arg(long, default_value_t = session::DEFAULT_SCROLLBACK)]
        scrollback: usize,
        /// Extra environment, `KEY=VALUE`.
        #[arg(long = "env")]
        env: Vec<String>,
        #[arg(last = true, required = true)]
        argv: Vec<String>,
    },
    /// Stop a session's agent and host (what `owt delete` does first).
    Stop { name: String },
}

/// The host spec in the file at `spec` (`-`: standard input).
fn read_spec(spec: &Path) -> anyhow::Result<HostSpec> {
    let text = if spec.as_os_str() == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .context("reading the host spec")?;
        s
    } else {
        std::fs::read_to_string(spec).with_context(|| format!("reading {}", spec.display()))?
    };
    serde_json::from_str(&text).context("parsing the host spec")
}

pub fn run(ctx_dir: Option<&Path>, out: &super::Out, args: Args) -> anyhow::Result<ExitCode> {
    match args.command {
        HostCommand::Run(run) => {
            run_host(&run)?;
            Ok(ExitCode::SUCCESS)
        }
        HostCommand::Stop { name } => {
            let ctx = Context::open(ctx_dir)?;
            let name = ops::host::stop(&ctx, &name)?;
            out.emit(&serde_json::json!({ "stopped": name }), || {
                format!("Stopped {name}.")
            })?;
            Ok(ExitCode::SUCCESS)
        }
        HostCommand::Spawn {
            name,
            provider,
            typed_prompt,
            prompt_in_argv,
            headless,
            acp,
            rows,
            cols,
            scrollback,
            env,
            argv,
        } => {
            let mut ctx = Context::open(ctx_dir)?;
            let cwd = match ctx_dir {
                Some(d) => d.to_path_buf(),
                None => std::env::current_dir().context("reading the current directory")?,
            };
            let mut env_map = BTreeMap::new();
            for kv in env {
                let (k, v) = kv.split_once('=').context("--env wants KEY=VALUE")?;
                env_map.insert(k.to_string(), v.to_string());
            }
            let raw = RawSession {
                name,
                provider,
                typed_prompt,
                prompt_in_argv,
                headless,
                acp,
                rows,
                cols,
                scrollback,
                env: env_map,
                argv,
                cwd,
            };
            let (row, started) = ops::host::spawn(&mut ctx, raw)?;
            // One line of JSON in both modes: tests and benchmarks read it.
            let doc = serde_json::json!({
                "name": row.name,
                "short_id": row.short_id,
                "host_pid": started.host_pid,
                "agent_pid": started.agent_pid,
            });
            out.say(&doc.to_string())?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// What `__host run` is given (parsed by clap in `owt`, by hand in
/// `owt-host`).
#[derive(Debug, PartialEq, clap::Args)]
pub struct HostRun {
    /// The host spec (JSON), or `-` for standard input.
    #[arg(long)]
    spec: PathBuf,
    /// Descriptor of the readiness pipe.
    #[arg(long)]
    ready_fd: Option<i32>,
    /// The version of the owt that starts this host (it must be this
    /// program's).
    #[arg(long)]
    owt_version: Option<String>,
}

/// Runs the session host `run` names in this process.
fn run_host(run: &HostRun) -> anyhow::Result<()> {
    if let Some(theirs) = run.owt_version.as_deref() {
        let ours = session::OWT_VERSION;
        anyhow::ensure!(
            theirs == ours,
            "this session host is owt {ours}'s and was started by owt {theirs}: install owt again (`cargo install --locked --path server` installs owt and owt-host together)"
        );
    }
    // Before any thread: one arena, and the journal's walks allocate
    // megabytes now and then in a process that otherwise idles.
    crate::allocator::configure_host_allocator();
    session::configure_for_idle_process();
    init_host_logs();
    session::run_host(read_spec(&run.spec)?, run.ready_fd, ops::host::turn_hooks())?;
    Ok(())
}

/// What `owt-host --help` says.
const HOST_BINARY_HELP: &str = "\
owt-host: owt's session host (one per session: it owns the agent's terminal).
owt starts it as `owt-host __host run --spec FILE [--ready-fd N] [--owt-version V]`;
it is not run by hand. See `owt --help`.";

/// The `owt-host` binary: `owt __host run` without the rest of owt linked
/// in, so each session's host process maps less of the binary's relocated
/// data. Arguments are read by hand (no clap: its tables are relocated
/// data too).
pub fn host_binary_main() -> ExitCode {
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // (The first is the program's own name.)
    match parse_host_binary_args(argv.get(1..).unwrap_or_default()) {
        Ok(HostBinaryArgs::Help) => {
            println!("{HOST_BINARY_HELP}");
            ExitCode::SUCCESS
        }
        Ok(HostBinaryArgs::Version) => {
            println!("owt-host {}", session::OWT_VERSION);
            ExitCode::SUCCESS
        }
        Ok(HostBinaryArgs::Run(run)) => match run_host(&run) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("owt-host: error: {e:#}");
                ExitCode::FAILURE
            }
        },
        Err(message) => {
            eprintln!("owt-host: error: {message}\n\n{HOST_BINARY_HELP}");
            ExitCode::from(2)
        }
    }
}

/// What `owt-host` is asked.
#[derive(Debug, PartialEq)]
enum HostBinaryArgs {
    /// `--help`, `-h`, or nothing.
    Help,
    /// `--version`, `-V`.
    Version,
    Run(HostRun),
}

/// `owt-host`'s arguments.
fn parse_host_binary_args(args: &[std::ffi::OsString]) -> Result<HostBinaryArgs, String> {
    if args.is_empty() || args.iter().any(|a| a == "--help" || a == "-h") {
        return Ok(HostBinaryArgs::Help);
    }
    if args.iter().any(|a| a == "--version" || a == "-V") {
        return Ok(HostBinaryArgs::Version);
    }
    let (Some(verb), Some(sub)) = (args.first(), args.get(1)) else {
        return Err("expected `__host run`".into());
    };
    if verb != "__host" || sub != "run" {
        return Err(format!(
            "expected `__host run`, got `{} {}`",
            verb.to_string_lossy(),
            sub.to_string_lossy()
        ));
    }
    let mut spec = None;
    let mut ready_fd = None;
    let mut owt_version = None;
    let mut rest = args[2..].iter();
    while let Some(flag) = rest.next() {
        let flag = flag.to_string_lossy();
        let value = rest.next().ok_or_else(|| format!("{flag} wants a value"))?;
        match &*flag {
            "--spec" => spec = Some(PathBuf::from(value)),
            "--ready-fd" => {
                let text = value.to_string_lossy();
                let fd = text
                    .parse::<i32>()
                    .ok()
                    .filter(|fd| *fd >= 0)
                    .ok_or_else(|| format!("--ready-fd wants a descriptor number, got `{text}`"))?;
                ready_fd = Some(fd);
            }
            "--owt-version" => owt_version = Some(value.to_string_lossy().into_owned()),
            _ => return Err(format!("unknown argument `{flag}`")),
        }
    }
    let spec = spec.ok_or("--spec FILE is required")?;
    Ok(HostBinaryArgs::Run(HostRun {
        spec,
        ready_fd,
        owt_version,
    }))
}

/// The host's log (stderr, which the host's starter points at the
/// session's log file): `OWT_LOG` (default `info`), lines as `owt`'s other
/// logs write them. Through [`HostLog`], not `tracing_subscriber::fmt`,
/// whose span registry took 32 KiB of every idle host (the host makes no
/// spans).
fn init_host_logs() {
    use tracing_subscriber::layer::SubscriberExt as _;
    let filter = tracing_subscriber::EnvFilter::try_from_env("OWT_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing::subscriber::set_global_default(HostLog.with(filter));
}

/// Writes each event as one line (time, level, target, message, fields);
/// spans are accepted and forgotten.
struct HostLog;

impl tracing::Subscriber for HostLog {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }

    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}

    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}

    fn event(&self, event: &tracing::Event<'_>) {
        use std::io::Write as _;
        use tracing_subscriber::fmt::format::{DefaultFields, Writer};
        use tracing_subscriber::fmt::time::{FormatTime as _, SystemTime};
        use tracing_subscriber::fmt::FormatFields as _;
        let meta = event.metadata();
        let mut line = String::new();
        let mut writer = Writer::new(&mut line);
        let _ = SystemTime.format_time(&mut writer);
        let _ = write!(writer, " {:>5} {}: ", meta.level(), meta.target());
        let _ = DefaultFields::new().format_fields(writer.by_ref(), event);
        line.push('\n');
        let _ = std::io::stderr().write_all(line.as_bytes());
    }

    fn enter(&self, _: &tracing::span::Id) {}

    fn exit(&self, _: &tracing::span::Id) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<HostBinaryArgs, String> {
        let args: Vec<std::ffi::OsString> = args.iter().map(Into::into).collect();
        parse_host_binary_args(&args)
    }

    #[test]
    fn the_host_binary_reads_what_owt_gives_its_hosts() {
        assert_eq!(
            parse(&[
                "__host",
                "run",
                "--spec",
                "/h/logs/ab.spec.json",
                "--ready-fd",
                "3",
                "--owt-version",
                "1.2.3"
            ]),
            Ok(HostBinaryArgs::Run(HostRun {
                spec: "/h/logs/ab.spec.json".into(),
                ready_fd: Some(3),
                owt_version: Some("1.2.3".into()),
            }))
        );
        assert_eq!(
            parse(&["__host", "run", "--spec", "-"]),
            Ok(HostBinaryArgs::Run(HostRun {
                spec: "-".into(),
                ready_fd: None,
                owt_version: None,
            }))
        );
        assert_eq!(parse(&[]), Ok(HostBinaryArgs::Help));
        assert_eq!(parse(&["--help"]), Ok(HostBinaryArgs::Help));
        assert_eq!(parse(&["-V"]), Ok(HostBinaryArgs::Version));
    }

    #[test]
    fn the_host_binary_refuses_anything_else_and_says_what_it_wanted() {
        for (args, wanted) in [
            (&["run", "--spec", "x"][..], "expected `__host run`"),
            (&["__host"][..], "expected `__host run`"),
            (&["__host", "stop", "x"][..], "got `__host stop`"),
            (&["__host", "run"][..], "--spec FILE is required"),
            (&["__host", "run", "--spec"][..], "--spec wants a value"),
            (
                &["__host", "run", "--spec", "x", "--ready-fd", "three"][..],
                "descriptor number, got `three`",
            ),
            (
                &["__host", "run", "--spec", "x", "--ready-fd", "-1"][..],
                "got `-1`",
            ),
            (
                &["__host", "run", "--spec", "x", "--follow", "y"][..],
                "unknown argument `--follow`",
            ),
        ] {
            let err = parse(args).expect_err(wanted);
            assert!(err.contains(wanted), "{args:?}: {err}");
        }
    }

    #[test]
    fn a_host_started_by_another_owt_version_refuses_to_run_and_says_what_to_do() {
        let err = run_host(&HostRun {
            spec: "/nonexistent/spec.json".into(),
            ready_fd: None,
            owt_version: Some("0.0.0-other".into()),
        })
        .unwrap_err()
        .to_string();
        assert!(err.contains("started by owt 0.0.0-other"), "{err}");
        assert!(err.contains("install owt again"), "{err}");
    }
}
