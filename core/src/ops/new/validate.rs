//! The request checked against the repository, the configuration and the
//! agent, before anything is created.

use anyhow::bail;

use super::{NewRequest, Plan};
use crate::git::Repo;
use crate::ops::Context;
use crate::provider;

/// Checks the request; creates nothing.
pub(super) fn validate<'r>(ctx: &Context, req: &'r NewRequest) -> anyhow::Result<Plan<'r>> {
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
    if crate::ops::prompt::TaskKind::from_name(template).is_some()
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
    if let Some(why) = wanted.and_then(|name| crate::ops::trust::untrusted_agent(ctx, name)) {
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
pub(crate) fn worktrees_folder(ctx: &Context) -> anyhow::Result<std::path::PathBuf> {
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
