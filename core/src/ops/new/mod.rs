//! `owt new`: branch + worktree + setup + session record + agent.

mod exec;

use std::path::Path;

use anyhow::{bail, Context as _};
use owt_protocol::SessionKind;
use serde::{Deserialize, Serialize};

use super::owned::OwnedFile;
use super::{setup, Context};
use crate::git::Repo;
use crate::names;
use crate::provider::{self, LaunchMode};
use crate::session::{self, HostSpec};
use crate::store::{NewSession, SessionRow};

/// What the user asked for.
#[derive(Debug, Clone, Default)]
pub struct NewRequest {
    pub task: String,
    pub name: Option<String>,
    pub branch: Option<String>,
    pub base: Option<String>,
    pub ai_tool: Option<String>,
    pub headless: bool,
    pub plan: bool,
    pub in_place: bool,
    /// `--template`: a built-in protocol (feature, bugfix, …) or `[templates.NAME]`.
    pub template: Option<String>,
    /// Pass the task verbatim, without the prompt builder's protocol and context.
    pub raw: bool,
    /// Terminal size for the agent (rows, cols).
    pub size: (u16, u16),
    /// Run the agent's ACP server instead of its terminal UI.
    pub acp: bool,
    /// Start the agent without a first prompt (`owt acp`: the editor sends
    /// it). Only with `acp`.
    pub no_prompt: bool,
    /// ACP: MCP servers to pass to the agent besides owt's own.
    pub acp_mcp_servers: Vec<serde_json::Value>,
    /// Start the agent now even beyond `[agent] max_running` or
    /// `min_free_memory` (never queue it).
    pub now: bool,
}

impl NewRequest {
    /// How the agent is to be launched (now, or once the queue starts it).
    pub fn launch_options(&self) -> LaunchOptions {
        LaunchOptions {
            headless: self.headless,
            plan: self.plan,
            template: self.template.clone(),
            raw: self.raw,
            rows: self.size.0,
            cols: self.size.1,
            acp: self.acp,
            no_prompt: self.no_prompt,
            acp_mcp_servers: self.acp_mcp_servers.clone(),
        }
    }
}

/// How a session's agent is launched: what `owt new` was asked. A queued
/// session keeps it (the `queued` fact) until its agent starts; the first
/// prompt is built when it does, so it names the peers of that moment.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaunchOptions {
    #[serde(default)]
    pub headless: bool,
    #[serde(default)]
    pub plan: bool,
    #[serde(default)]
    pub template: Option<String>,
    #[serde(default)]
    pub raw: bool,
    #[serde(default)]
    pub rows: u16,
    #[serde(default)]
    pub cols: u16,
    /// Run the agent's ACP server instead of its terminal UI.
    #[serde(default)]
    pub acp: bool,
    /// ACP: start the agent without a first prompt (the editor sends it).
    #[serde(default)]
    pub no_prompt: bool,
    /// ACP: MCP servers to pass to the agent besides owt's own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub acp_mcp_servers: Vec<serde_json::Value>,
}

impl LaunchOptions {
    fn mode(&self) -> LaunchMode {
        if self.headless {
            LaunchMode::Headless
        } else if self.plan {
            LaunchMode::Plan
        } else {
            LaunchMode::Interactive
        }
    }
}

/// A created session and what went wrong without stopping it.
#[derive(Debug, Clone)]
pub struct NewResult {
    pub session: SessionRow,
    pub warnings: Vec<String>,
    /// Whether the session host started the agent (the CLI exits non-zero
    /// when it did not, unless the session was queued).
    pub agent_started: bool,
    /// The session waits for room on the machine (`[agent] max_running`,
    /// `min_free_memory`): its agent starts when a running one ends or
    /// frees memory. Why, for people.
    pub queued: Option<String>,
}

/// Fact: how the session's branch came to be (so delete only deletes
/// branches owt created).
pub const BRANCH_FACT: &str = "branch";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BranchFact {
    pub created: bool,
}

/// Creates a session. Nothing is left behind when it fails before the
/// worktree exists; a failing setup script is a warning.
///
/// The phases, in order: [`validate`] the request (nothing is created),
/// [`reserve`] the name in the store and the session's ports,
/// [`host_spec`] (the agent's launch, built once and checked against
/// exec's limits), [`place_worktree`], [`install_integrations`] (setup,
/// hooks, MCP, owt's own files), then [`launch`] the session host, now or
/// through the queue.
pub fn new_session(
    ctx: &mut Context,
    req: &NewRequest,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<NewResult> {
    let mut warnings: Vec<String> = super::trust::notice(ctx).into_iter().collect();
    let plan = validate(ctx, req)?;
    let session = reserve(ctx, req, &plan)?;
    let _span = tracing::info_span!("session", session = %session.name).entered();
    tracing::info!(branch = %session.branch, provider = %plan.resolved.provider.name, "creating the session");
    // Its ports first: the setup script and the agent are told them.
    let ports = ctx.config.config.worktree.ports;
    if let Err(e) = super::ports::allocate(&mut ctx.store, &session, ports) {
        ctx.store.remove_session(&session, "failed")?;
        return Err(e);
    }
    // The agent's argv, checked before anything is created on disk: exec
    // would refuse it later with a cryptic failure in the host. (A queued
    // session's is built again when it starts.)
    let options = req.launch_options();
    let spec = match host_spec(ctx, &session, &plan.resolved, &options) {
        Ok((spec, notes)) => {
            warnings.extend(notes);
            spec
        }
        Err(e) => {
            ctx.store.remove_session(&session, "failed")?;
            return Err(e);
        }
    };
    let created_branch =
        match place_worktree(ctx, &session, &plan, req.in_place, progress, &mut warnings) {
            Ok(created) => created,
            Err(e) => {
                ctx.store.remove_session(&session, "failed")?;
                return Err(e);
            }
        };
    // From here on the worktree exists: a failure keeps the session.
    ctx.store.record_fact(
        session.id,
        BRANCH_FACT,
        &BranchFact {
            created: created_branch,
        },
    )?;
    // A branch session works in the human's own checkout: owt writes no
    // files there (no hooks, no MCP registration; status comes from the
    // screen). An ACP session's status comes from the protocol, and owt's
    // MCP server is passed in `session/new`: nothing is written for them.
    let write_integrations = !(req.in_place || req.acp);
    install_integrations(
        ctx,
        &session,
        &plan,
        write_integrations,
        progress,
        &mut warnings,
    );
    let (agent_started, queued) =
        launch(ctx, &session, req, &options, spec, progress, &mut warnings)?;
    Ok(NewResult {
        session,
        warnings,
        agent_started,
        queued,
    })
}

/// What [`validate`] found: the request checked against the repository,
/// the configuration and the agent, before anything is created.
struct Plan<'r> {
    task: &'r str,
    wanted_name: &'r str,
    resolved: provider::Resolved,
    base: String,
    explicit_branch: Option<String>,
    base_dir: std::path::PathBuf,
}

/// Checks the request; creates nothing.
fn validate<'r>(ctx: &Context, req: &'r NewRequest) -> anyhow::Result<Plan<'r>> {
    let task = req.task.trim();
    let wanted_name = req.name.as_deref().unwrap_or(task);
    if wanted_name.trim().is_empty() {
        bail!("a task is required: owt new \"describe the work\" (or give --name)");
    }
    if task.contains('\0') {
        bail!("the task contains a NUL character, which no program can receive as an argument; remove it");
    }
    check_template(ctx, req.template.as_deref())?;
    let resolved = resolve_agent(ctx, req.ai_tool.as_deref())?;
    // The agent can run this way at all (e.g. it has a headless form, an
    // ACP server).
    if req.acp {
        if req.headless || req.plan || req.in_place {
            bail!("--acp does not combine with --headless, --plan-mode or --in-place");
        }
        resolved.provider.acp_argv()?;
    } else {
        resolved.provider.supports(req.launch_options().mode())?;
    }
    let base = match &req.base {
        Some(base) => base.clone(),
        None => ctx.repo.default_base()?,
    };
    if !ctx.repo.branch_exists(&base) {
        bail!("base branch `{base}` does not exist");
    }
    Ok(Plan {
        task,
        wanted_name,
        resolved,
        base,
        explicit_branch: explicit_branch(ctx, req)?,
        base_dir: worktrees_folder(ctx)?,
    })
}

/// A `--template` names a built-in protocol or a `[templates.NAME]`.
fn check_template(ctx: &Context, template: Option<&str>) -> anyhow::Result<()> {
    let config = &ctx.config.config;
    let Some(template) = template else {
        return Ok(());
    };
    if super::prompt::TaskKind::from_name(template).is_some()
        || config.templates.contains_key(template)
    {
        return Ok(());
    }
    let mut names: Vec<&str> = vec!["feature", "bugfix", "hotfix", "refactor", "test", "docs"];
    names.extend(config.templates.keys().map(String::as_str));
    bail!(
        "unknown template `{template}`; templates: {}",
        names.join(", ")
    )
}

/// The agent to start, or why not (an untrusted repository's agent
/// settings say so).
fn resolve_agent(ctx: &Context, wanted: Option<&str>) -> anyhow::Result<provider::Resolved> {
    let e = match provider::resolve(&ctx.config.config, wanted) {
        Ok(resolved) => return Ok(resolved),
        Err(e) => e,
    };
    if let Some(why) = wanted.and_then(|name| super::trust::untrusted_agent(ctx, name)) {
        bail!("{why}");
    }
    match ctx.config.withheld.as_ref().filter(|w| !w.untrusted.is_empty()) {
        Some(withheld) => Err(anyhow::Error::new(e).context(format!(
            "{} is not trusted, so its agent settings were ignored (review them with `owt trust --show`, trust them with `owt trust`)",
            withheld.file.display()
        ))),
        None => Err(e.into()),
    }
}

/// `--branch`, checked: a valid name, not checked out elsewhere (a branch
/// session may take the main checkout's own branch).
fn explicit_branch(ctx: &Context, req: &NewRequest) -> anyhow::Result<Option<String>> {
    let Some(branch) = &req.branch else {
        return Ok(None);
    };
    if !Repo::is_valid_branch_name(branch) {
        bail!("`{branch}` is not a valid branch name");
    }
    let here = ctx.repo.checked_out_at(branch)?;
    let in_main = here
        .as_deref()
        .is_some_and(|p| crate::git::same_path(p, ctx.repo.main_root()));
    if let Some(path) = here.filter(|_| !(req.in_place && in_main)) {
        bail!(
            "branch `{branch}` is already checked out at {}; pick another branch or remove that checkout first",
            path.display()
        );
    }
    Ok(Some(branch.clone()))
}

/// `[worktree] base_directory`, outside the repository and any checkout
/// enclosing it.
fn worktrees_folder(ctx: &Context) -> anyhow::Result<std::path::PathBuf> {
    let base_dir = ctx.config.config.base_directory(ctx.repo.main_root());
    let base_dir = crate::config::normalize(&base_dir);
    if base_dir.starts_with(ctx.repo.main_root()) {
        bail!(
            "worktree base_directory {} is inside the repository; set [worktree] base_directory to a folder outside it",
            base_dir.display()
        );
    }
    if let Some(outer) = crate::git::outermost_enclosing_checkout(ctx.repo.main_root())
        .filter(|outer| base_dir.starts_with(outer))
    {
        bail!(
            "worktree base_directory {} is inside {}, a checkout that encloses this repository; set [worktree] base_directory to a folder outside it",
            base_dir.display(),
            outer.display()
        );
    }
    Ok(base_dir)
}

/// Reserves the session's name (and branch and worktree path) in the
/// store, atomically across processes.
fn reserve(ctx: &mut Context, req: &NewRequest, plan: &Plan) -> anyhow::Result<SessionRow> {
    let slug = names::slugify(plan.wanted_name);
    let branch_template = match &plan.explicit_branch {
        Some(branch) => branch.clone(),
        None => names::default_branch("{name}"),
    };
    let (kind, worktree_template) = if req.in_place {
        if let Some(other) = ctx
            .store
            .sessions(ctx.repo_row.id)?
            .into_iter()
            .find(|s| s.kind == SessionKind::Branch)
        {
            bail!(
                "the main checkout already hosts the branch session `{}`; ship or delete it first, or start this one in a worktree (without --in-place)",
                other.name
            );
        }
        let main_root = ctx.repo.main_root().to_string_lossy().into_owned();
        (SessionKind::Branch, main_root)
    } else {
        let template = plan.base_dir.join("{name}").to_string_lossy().into_owned();
        (SessionKind::Worktree, template)
    };
    let (in_place, repo) = (req.in_place, &ctx.repo);
    Ok(ctx.store.insert_session(
        &NewSession {
            repo_id: ctx.repo_row.id,
            name: &slug,
            task: plan.task,
            branch_template: &branch_template,
            base_branch: &plan.base,
            worktree_template: &worktree_template,
            provider: &plan.resolved.provider.name,
            kind,
        },
        |candidate| {
            (!in_place
                && (names::worktree_path(&plan.base_dir, candidate).exists()
                    || repo.worktree_admin_exists(candidate)))
                || (plan.explicit_branch.is_none()
                    && repo.branch_exists(&names::default_branch(candidate)))
        },
    )?)
}

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
    let task = session.task.trim();
    let mut env = ctx.config.config.agent.env.clone();
    env.extend(resolved.provider.env.clone());
    // The agent's native status signals, for this session only (arguments,
    // environment, files under $OWT_HOME: nothing in the worktree).
    let integration = std::env::current_exe()
        .map_err(|e| e.to_string())
        .and_then(|owt| {
            if options.acp {
                // The protocol is the status signal.
                return Ok(provider::integration::Integration::default());
            }
            provider::integration::prepare(&resolved.provider.name, mode, &owt, &ctx.home, &env)
                .map_err(|e| e.to_string())
        });
    let integration = match integration {
        Ok(integration) => integration,
        Err(e) => {
            warnings.push(format!(
                "owt will read {}'s status from its screen only: {e}",
                resolved.provider.name
            ));
            provider::integration::Integration::default()
        }
    };
    let prompt = first_prompt(ctx, session, options)?;
    let prompt = if options.raw {
        task.to_string()
    } else {
        prompt
    };
    let (launch, transport) = if options.acp {
        // The first prompt goes through the protocol.
        let launch = provider::Launch {
            argv: resolved.provider.acp_argv()?,
            typed_prompt: (!options.no_prompt).then_some(prompt),
            prompt_in_argv: false,
            env: resolved.provider.env.clone(),
        };
        (launch, owt_protocol::host::Transport::Acp)
    } else {
        let mut args = provider::integration::placement_args(
            &resolved.provider.name,
            mode,
            &session.worktree_path,
        );
        args.extend(integration.args.iter().cloned());
        let launch = resolved
            .provider
            .launch_with(&resolved.binary_path, &prompt, mode, &args)?;
        (launch, owt_protocol::host::Transport::Pty)
    };
    env.extend(launch.env.clone());
    env.extend(integration.env);
    env.extend(super::ports::env(&super::ports::of(&ctx.store, session.id)));
    exec::check_exec(Path::new(&launch.argv[0]), &launch.argv, &env)?;
    // Where the agent can keep an exact record of its tokens for owt.
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
        scrollback: ctx
            .config
            .config
            .agent
            .scrollback
            .map_or(session::DEFAULT_SCROLLBACK, |n| n as usize),
    };
    Ok((spec, warnings))
}

/// Creates the branch and the worktree (or switches the main checkout, for
/// a branch session); whether it created the branch.
fn place_worktree(
    ctx: &mut Context,
    session: &SessionRow,
    plan: &Plan,
    in_place: bool,
    progress: &mut dyn FnMut(&str),
    warnings: &mut Vec<String>,
) -> anyhow::Result<bool> {
    let create_branch = !ctx.repo.branch_exists(&session.branch);
    if in_place {
        let main_root = ctx.repo.main_root().to_path_buf();
        progress(&format!(
            "Switching your checkout {} to branch {}",
            main_root.display(),
            session.branch
        ));
        switch_in_place(&main_root, &session.branch, &plan.base, create_branch)
            .with_context(|| format!("switching your checkout to {}", session.branch))?;
    } else {
        progress(&format!(
            "Creating worktree {} on branch {}",
            session.worktree_path.display(),
            session.branch
        ));
        ctx.repo
            .add_worktree(
                &session.name,
                &session.worktree_path,
                &session.branch,
                &plan.base,
                create_branch,
            )
            .with_context(|| format!("creating the worktree for {}", session.name))?;
        if let Err(e) = super::doctor::write_metadata(ctx, session) {
            warnings.push(format!(
                "could not record the session beside its worktree (owt doctor uses it to re-adopt a session the store lost): {e:#}"
            ));
        }
    }
    Ok(create_branch)
}

/// The setup (copied files, dependencies, script), the agent's hooks and
/// MCP registration, and owt's and the agent's own files kept out of
/// commits and the guard. Each failure is a warning. Without
/// `write_agent_files` (a branch session, an ACP session) no hooks or MCP
/// registration are written.
fn install_integrations(
    ctx: &mut Context,
    session: &SessionRow,
    plan: &Plan,
    write_agent_files: bool,
    progress: &mut dyn FnMut(&str),
    warnings: &mut Vec<String>,
) {
    use provider::integration::{self, claude};
    let name = &plan.resolved.provider.name;
    let prepared = setup::prepare_worktree(ctx, session, progress);
    warnings.extend(prepared.warnings);
    let mut owt_files: Vec<OwnedFile> = prepared.owned;
    let hooks = if !write_agent_files {
        provider::Hooks::None
    } else {
        plan.resolved.provider.hooks
    };
    match claude::install_hooks(hooks, &session.worktree_path) {
        Ok(_) => owt_files.extend(claude::hooks_file(hooks).map(OwnedFile::written)),
        Err(e) => warnings.push(format!("could not install {name} hooks: {e}")),
    }
    let register = if !write_agent_files {
        Ok(Vec::new())
    } else {
        claude::register_mcp(name, &session.worktree_path)
    };
    match register {
        Ok(written) => owt_files.extend(written.iter().filter_map(|p| {
            p.strip_prefix(&session.worktree_path)
                .ok()
                .map(|rel| OwnedFile::written(&rel.to_string_lossy()))
        })),
        Err(e) => warnings.push(format!(
            "could not register the owt MCP server for {name}: {e}"
        )),
    }
    if let Err(e) = super::owned::own(ctx, session, &owt_files) {
        warnings.push(format!(
            "could not keep owt's own files out of commits: {e}"
        ));
    }
    // The files the agent writes into its checkout on its own (Aider's
    // history and caches) are kept out of commits and the guard the same
    // way (patterns in `info/exclude`; `owt delete` treats them as any
    // ignored file).
    let agent_files: Vec<String> = integration::own_files(name)
        .iter()
        .map(|p| p.to_string())
        .collect();
    if let Err(e) = crate::git::exclude_paths(&ctx.repo, &agent_files) {
        warnings.push(format!(
            "could not keep owt's own files out of commits: {e}"
        ));
    }
}

/// Starts the session host, now (`--now`) or through the queue: started
/// here when there is room and nothing queued before it, else when a
/// running agent ends or frees memory. Whether the agent started, and why
/// it waits when queued (a failure to start is a warning: the worktree is
/// kept).
fn launch(
    ctx: &mut Context,
    session: &SessionRow,
    req: &NewRequest,
    options: &LaunchOptions,
    spec: HostSpec,
    progress: &mut dyn FnMut(&str),
    warnings: &mut Vec<String>,
) -> anyhow::Result<(bool, Option<String>)> {
    let not_started = |e: &dyn std::fmt::Display| {
        format!(
            "the agent did not start: {e}; the worktree is kept (remove it with `owt delete {}`)",
            session.name
        )
    };
    if req.now {
        progress(&format!("Starting {} in {}", spec.provider, session.name));
        return Ok(match session::start_host(&spec) {
            Ok(_) => (true, None),
            Err(e) => {
                warnings.push(not_started(&e));
                (false, None)
            }
        });
    }
    drop(spec);
    ctx.store
        .record_fact(session.id, crate::status::kind::QUEUED, options)?;
    let admitted = super::queue::admit(&ctx.home, progress);
    let mine = admitted.iter().find(|a| a.session_id == session.id);
    Ok(match mine {
        Some(a) => match &a.outcome {
            Ok(()) => (true, None),
            Err(e) => {
                warnings.push(not_started(e));
                (false, None)
            }
        },
        // Another owt process may have started it meanwhile.
        None if !super::queue::is_queued(&ctx.store, session) => (true, None),
        None => (false, Some(super::queue::why_waiting(&ctx.home, session))),
    })
}

/// The agent's first prompt: the task with its protocol, the session, the
/// notes and the other agents' work (see [`super::prompt`]).
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
    let input = super::prompt::PromptInput {
        task: &session.task,
        template: options.template.as_deref(),
        templates: Some(&ctx.config.config.templates),
        session: &session.name,
        branch: &session.branch,
        base: &session.base_branch,
        notes: &notes,
        peers: &peers,
        plan: options.plan,
        budget: super::prompt::DEFAULT_BUDGET,
    };
    super::prompt::build(&input).map_err(|e| anyhow::anyhow!(e))
}

/// Puts the human's checkout on `branch` (created at `base` when
/// `create`), the way `git switch` does: uncommitted changes come along,
/// and git refuses (changing nothing) when they would be overwritten.
fn switch_in_place(
    main_root: &std::path::Path,
    branch: &str,
    base: &str,
    create: bool,
) -> anyhow::Result<()> {
    let git = crate::ship::git_cli::GitCli::new(main_root);
    let current = git
        .run(["symbolic-ref", "--quiet", "--short", "HEAD"])
        .unwrap_or_default();
    if current.trim() == branch {
        return Ok(());
    }
    if create {
        git.run(["switch", "--quiet", "-c", branch, base])?;
    } else {
        git.run(["switch", "--quiet", branch])?;
    }
    Ok(())
}

/// Fact kind of an agent's own summary of what it is doing (MCP `set_summary`).
pub const SUMMARY_FACT: &str = "summary";
