//! `owt completions SHELL`: clap's script, plus session names for the
//! verbs that take one (bash, zsh, fish: from `owt __complete-names`, run
//! when you press Tab, so the names are those of the repository you are
//! in); and `owt __complete-names` itself.

use std::io::Write as _;
use std::path::Path;
use std::process::ExitCode;

use clap::CommandFactory;
use clap_complete::Shell;

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Example: owt completions bash > ~/.local/share/bash-completion/completions/owt\n\
Session names complete too (bash, zsh, fish): the script asks `owt __complete-names`."
)]
pub struct Args {
    /// bash, zsh, fish, elvish or powershell.
    pub shell: clap_complete::Shell,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let mut cmd = super::Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "owt", &mut script);
    let script = with_session_names(args.shell, &String::from_utf8(script)?, &name_verbs());
    // A closed pipe (`owt completions bash | head`) is not an error.
    match std::io::stdout().write_all(script.as_bytes()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        other => other?,
    }
    Ok(ExitCode::SUCCESS)
}

/// `owt __complete-names`: the sessions of the repository here, one a
/// line; nothing (and success) outside a repository.
pub fn names(dir: Option<&Path>) -> anyhow::Result<ExitCode> {
    let Ok(ctx) = crate::ops::Context::open(dir) else {
        return Ok(ExitCode::SUCCESS);
    };
    let mut out = String::new();
    for session in ctx.store.all_sessions(ctx.repo_row.id)? {
        out.push_str(&session.name);
        out.push('\n');
    }
    let _ = std::io::stdout().write_all(out.as_bytes());
    Ok(ExitCode::SUCCESS)
}

/// The verbs (and their aliases) whose positional argument is a session
/// name.
fn name_verbs() -> Vec<String> {
    let cmd = super::Cli::command();
    let mut verbs = Vec::new();
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let takes_name = sub
            .get_positionals()
            .any(|a| matches!(a.get_id().as_str(), "name" | "names"));
        if takes_name {
            verbs.push(sub.get_name().to_string());
            verbs.extend(sub.get_all_aliases().map(str::to_string));
        }
    }
    verbs
}

/// `script` with session names completed after `verbs`.
fn with_session_names(shell: Shell, script: &str, verbs: &[String]) -> String {
    let list = verbs.join(" ");
    match shell {
        Shell::Bash => format!(
            "{script}
_owt_with_names() {{
    local cur=\"${{COMP_WORDS[COMP_CWORD]}}\"
    if [[ $COMP_CWORD -eq 2 && \" {list} \" == *\" ${{COMP_WORDS[1]}} \"* && \"$cur\" != -* ]]; then
        COMPREPLY=( $(compgen -W \"$(owt __complete-names 2>/dev/null)\" -- \"$cur\") )
        return 0
    fi
    _owt \"$@\"
}}
complete -F _owt_with_names -o nosort -o bashdefault -o default owt
"
        ),
        Shell::Zsh => {
            let names_fn = "_owt_session_names() {\n    local -a names\n    names=(${(f)\"$(owt __complete-names 2>/dev/null)\"})\n    _describe 'session' names\n}\n";
            let mut out = String::new();
            for line in script.lines() {
                let is_name =
                    line.starts_with("':name -- ") || line.starts_with("'*::names -- ");
                match line.strip_suffix(":_default' \\") {
                    Some(head) if is_name => {
                        out.push_str(head);
                        out.push_str(":_owt_session_names' \\");
                    }
                    _ => out.push_str(line),
                }
                out.push('\n');
                if line == "autoload -U is-at-least" {
                    out.push('\n');
                    out.push_str(names_fn);
                }
            }
            out
        }
        Shell::Fish => format!(
            "{script}complete -c owt -n \"__fish_seen_subcommand_from {list}\" -f -a \"(owt __complete-names 2>/dev/null)\"\n"
        ),
        _ => script.to_string(),
    }
}
