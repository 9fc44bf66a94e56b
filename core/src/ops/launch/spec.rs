//! The session host's spec for an agent: its argv and environment, built
//! once and checked against exec's limits, and its first prompt.

use std::collections::BTreeMap;
use std::path::Path;

use super::{exec, LaunchOptions, SUMMARY_FACT};
use crate::ops::Context;
use crate::provider::integration::Integration;
use crate::provider::{self, LaunchMode};
use crate::session::HostSpec;
use crate::store::SessionRow;

/// The session host's spec for `session`'s agent: argv (checked against
/// exec's limits), environment (config, provider, native-signal
/// integration, ports), first prompt, terminal size, scrollback; with
/// what the user should know (an integration that could not be set up).
pub(crate) fn host_spec(
    ctx: &mut Context,
    session: &SessionRow,
    resolved: &provider::Resolved,
    options: &LaunchOptions,
) -> anyhow::Result<(HostSpec, Vec<String>)> {
    let mut warnings = Vec::new();
    let mode = options.mode();
    let mut env = ctx.config.config.agent.env.clone();
    env.extend(resolved.provider.env.clone());
    let integration = native_signals(ctx, resolved, options, mode, &env, &mut warnings);
    let (launch, transport) = agent_launch(ctx, session, resolved, options, mode, &integration)?;
    env.extend(launch.env.clone());
    env.extend(integration.env);
    env.extend(crate::ops::ports::env(&crate::ops::ports::of(
        &ctx.store, session.id,
    )));
    exec::check_exec(Path::new(&launch.argv[0]), &launch.argv, &env)?;
    usage_record_env(ctx, session, resolved, &mut env);
    let spec = HostSpec {
        transport,
        acp_load: None,
        acp_mcp_servers: options.acp_mcp_servers.clone(),
        session_id: session.id,
        session_name: session.name.clone(),
        short_id: session.short_id.clone(),
        provider: resolved.provider.name.clone(),
        argv: launch.argv,
        cwd: session.worktree_path.clone(),
        env,
        typed_prompt: launch.typed_prompt,
        prompt_in_argv: launch.prompt_in_argv,
        headless: options.headless,
        home: ctx.home.clone(),
        rows: options.rows,
        cols: options.cols,
        scrollback: ctx.scrollback(),
        on_limit_wait: ctx.config.config.agent.on_limit == crate::config::OnLimit::Wait,
    };
    Ok((spec, warnings))
}

/// The agent's native status signals, for this session only (arguments,
/// environment, files under `$OWT_HOME`: nothing in the worktree); none
/// for an ACP session (the protocol is the status signal), or when they
/// cannot be set up (said in `warnings`: the screen is read instead).
fn native_signals(
    ctx: &Context,
    resolved: &provider::Resolved,
    options: &LaunchOptions,
    mode: LaunchMode,
    env: &BTreeMap<String, String>,
    warnings: &mut Vec<String>,
) -> Integration {
    let integration = crate::platform::exe::owt()
        .map_err(|e| e.to_string())
        .and_then(|owt| {
            if options.acp {
                return Ok(Integration::default());
            }
            provider::integration::prepare(&resolved.provider.name, mode, &owt, &ctx.home, env)
                .map_err(|e| e.to_string())
        });
    match integration {
        Ok(integration) => integration,
        Err(e) => {
            warnings.push(format!(
                "owt will read {}'s status from its screen only: {e}",
                resolved.provider.name
            ));
            Integration::default()
        }
    }
}

/// The agent's launch with its first prompt (the task as is with
/// `--raw`): over ACP, the prompt goes through the protocol; in a
/// terminal, the provider's argv with the placement and native-signal
/// arguments.
fn agent_launch(
    ctx: &mut Context,
    session: &SessionRow,
    resolved: &provider::Resolved,
    options: &LaunchOptions,
    mode: LaunchMode,
    integration: &Integration,
) -> anyhow::Result<(provider::Launch, owt_protocol::host::Transport)> {
    let prompt = first_prompt(ctx, session, options)?;
    let prompt = if options.raw {
        session.task.trim().to_string()
    } else {
        prompt
    };
    // `owt fork`: Claude Code forks the conversation; another agent is
    // told the forked session's task and diff.
    let forked = options
        .fork
        .as_ref()
        .map(|from| super::fork::prepare(ctx, session, resolved, options, from));
    let (prompt, fork_args) = match forked {
        Some(Some(fork_args)) => (super::fork::forked_prompt(session), fork_args),
        Some(None) => {
            let from = options.fork.as_ref().map(|f| f.context.as_str());
            (
                format!("{prompt}\n\n{}", from.unwrap_or_default()),
                Vec::new(),
            )
        }
        None => (prompt, Vec::new()),
    };
    if options.acp {
        let launch = provider::Launch {
            argv: resolved.provider.acp_argv()?,
            typed_prompt: (!options.no_prompt).then_some(prompt),
            prompt_in_argv: false,
            env: resolved.provider.env.clone(),
        };
        return Ok((launch, owt_protocol::host::Transport::Acp));
    }
    let mut args = provider::integration::placement_args(
        &resolved.provider.name,
        mode,
        &session.worktree_path,
    );
    args.extend(integration.args.iter().cloned());
    let mut launch = resolved
        .provider
        .launch_with(&resolved.binary_path, &prompt, mode, &args)?;
    launch.argv.splice(1..1, fork_args);
    Ok((launch, owt_protocol::host::Transport::Pty))
}

/// Where the agent can keep an exact record of its tokens for owt: the
/// environment that tells it, unless the user set those variables.
fn usage_record_env(
    ctx: &Context,
    session: &SessionRow,
    resolved: &provider::Resolved,
    env: &mut BTreeMap<String, String>,
) {
    let places = ctx.usage_places();
    let record_env = crate::usage::agent_env(
        &resolved.provider.name,
        &places,
        &session.short_id,
        |name| env.contains_key(name) || std::env::var_os(name).is_some(),
    );
    if !record_env.is_empty() {
        if let Err(e) = crate::usage::aider::prepare(&places) {
            tracing::warn!("creating {}: {e}", places.owt_usage.display());
        }
        env.extend(record_env);
    }
}

/// The agent's first prompt: the task with its protocol, the session, the
/// notes and the other agents' work (see [`crate::ops::prompt`]).
fn first_prompt(
    ctx: &mut Context,
    session: &SessionRow,
    options: &LaunchOptions,
) -> anyhow::Result<String> {
    let notes: Vec<String> = ctx
        .store
        .notes(ctx.repo_row.id)?
        .into_iter()
        .map(|n| n.text)
        .collect();
    let peers: Vec<(String, String)> = ctx
        .store
        .sessions(ctx.repo_row.id)?
        .into_iter()
        .filter(|s| s.id != session.id)
        .map(|s| {
            let summary = ctx
                .store
                .fact::<serde_json::Value>(s.id, SUMMARY_FACT)
                .ok()
                .flatten()
                .and_then(|(v, _)| v["summary"].as_str().map(str::to_string))
                .unwrap_or_else(|| s.task.lines().next().unwrap_or_default().to_string());
            (s.name, summary)
        })
        .collect();
    let input = crate::ops::prompt::PromptInput {
        task: &session.task,
        template: options.template.as_deref(),
        templates: Some(&ctx.config.config.templates),
        session: &session.name,
        branch: &session.branch,
        base: &session.base_branch,
        notes: &notes,
        peers: &peers,
        plan: options.plan,
        budget: crate::ops::prompt::DEFAULT_BUDGET,
    };
    crate::ops::prompt::build(&input).map_err(|e| anyhow::anyhow!(e))
}
