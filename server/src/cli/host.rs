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
    Run {
        /// The host spec (JSON), or `-` for standard input.
        #[arg(long)]
        spec: PathBuf,
        /// Descriptor of the readiness pipe.
        #[arg(long)]
        ready_fd: Option<i32>,
    },
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
        HostCommand::Run { spec, ready_fd } => {
            // Before any thread: one arena, and the journal's walks
            // allocate megabytes now and then in a process that otherwise
            // idles.
            crate::allocator::configure_host_allocator();
            session::configure_for_idle_process();
            init_host_logs();
            session::run_host(read_spec(&spec)?, ready_fd, ops::host::turn_hooks())?;
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
