//! The prompt builder: the first prompt an agent receives — its task, a
//! working protocol for the kind of task, the session's branch and base,
//! the shared notes and what the other agents are doing — assembled by
//! priority within a size budget.
//!
//! Invariants: pure (no I/O); the task is never cut — when the budget is
//! short, whole sections are dropped, lowest priority first.

use std::collections::BTreeMap;

use crate::config::TemplateConfig;

/// The kind of task, which picks the protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskKind {
    Feature,
    Bugfix,
    Hotfix,
    Refactor,
    Test,
    Docs,
}

impl TaskKind {
    pub fn from_name(name: &str) -> Option<TaskKind> {
        Some(match name {
            "feature" => TaskKind::Feature,
            "bugfix" | "fix" => TaskKind::Bugfix,
            "hotfix" => TaskKind::Hotfix,
            "refactor" => TaskKind::Refactor,
            "test" | "tests" => TaskKind::Test,
            "docs" | "doc" => TaskKind::Docs,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            TaskKind::Feature => "feature",
            TaskKind::Bugfix => "bugfix",
            TaskKind::Hotfix => "hotfix",
            TaskKind::Refactor => "refactor",
            TaskKind::Test => "test",
            TaskKind::Docs => "docs",
        }
    }

    fn steps(self) -> &'static [&'static str] {
        match self {
            TaskKind::Feature => &["ORIENT", "EXPLORE", "IMPLEMENT", "TEST", "VERIFY", "COMMIT"],
            TaskKind::Bugfix | TaskKind::Hotfix => &[
                "REPRODUCE",
                "DIAGNOSE",
                "FIX",
                "VERIFY",
                "REGRESSION TEST",
                "COMMIT",
            ],
            TaskKind::Refactor => &[
                "BASELINE", "PLAN", "REFACTOR", "VERIFY", "CLEAN UP", "COMMIT",
            ],
            TaskKind::Test => &["SURVEY", "IDENTIFY", "WRITE", "RUN", "COVERAGE", "COMMIT"],
            TaskKind::Docs => &["READ", "DRAFT", "EXAMPLES", "REVIEW", "COMMIT"],
        }
    }

    fn guidance(self) -> &'static str {
        match self {
            TaskKind::Feature => "Read the code around the change first, follow its conventions, and add tests for the new behaviour.",
            TaskKind::Bugfix => "Reproduce the bug before changing anything; fix the root cause, not the symptom; add a test that fails without the fix.",
            TaskKind::Hotfix => "Production fix: make the smallest change that fixes it, nothing else; no refactoring; add a regression test.",
            TaskKind::Refactor => "Behaviour must not change: run the tests before and after; move in small steps that each keep the tests green.",
            TaskKind::Test => "Find the untested behaviour that matters most; write tests that would fail on a real bug; run them.",
            TaskKind::Docs => "Read the code the docs describe; keep examples runnable and true to the code.",
        }
    }
}

/// Guesses the kind of task from its words, only when they say it
/// plainly; `None` when unsure (the prompt then carries the general
/// protocol). Regression (#34.9): "Fix typos in CONTRIBUTING" got the
/// bugfix protocol (asking for a failing test): "fix" alone says no bug.
pub fn detect(task: &str) -> Option<TaskKind> {
    let lower = task.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let has = |list: &[&str]| words.iter().any(|w| list.iter().any(|k| w.starts_with(k)));
    let first_is = |list: &[&str]| words.first().is_some_and(|w| list.contains(w));
    if has(&["hotfix", "outage", "incident", "cve"]) {
        Some(TaskKind::Hotfix)
    } else if has(&["typo", "spelling", "grammar", "wording"])
        || has(&["docs", "readme", "documentation", "changelog", "docstring"])
        || first_is(&["document"])
    {
        Some(TaskKind::Docs)
    } else if has(&[
        "bug",
        "crash",
        "broken",
        "regression",
        "exception",
        "panic",
        "failing",
        "fails",
        "failure",
        "leak",
    ]) {
        Some(TaskKind::Bugfix)
    } else if first_is(&["refactor", "restructure", "simplify", "extract", "rename"]) {
        Some(TaskKind::Refactor)
    } else if has(&["coverage"])
        || (first_is(&["test", "add", "write"]) && has(&["tests", "test"]) && words.len() <= 6)
    {
        Some(TaskKind::Test)
    } else if first_is(&[
        "add",
        "implement",
        "create",
        "support",
        "build",
        "introduce",
        "allow",
        "enable",
    ]) {
        Some(TaskKind::Feature)
    } else {
        None
    }
}

/// Which protocol a prompt carries, and whether it was guessed: for `owt
/// new` to say (`None`: the general one).
pub fn chosen_template(task: &str, template: Option<&str>) -> (Option<String>, bool) {
    match template {
        Some(name) => (Some(name.to_string()), false),
        None => (detect(task).map(|k| k.name().to_string()), true),
    }
}

/// The protocol when the kind of task is not known: the habits every kind
/// shares.
const GENERAL_PROTOCOL: &str = "## How to work\nRead the code around the change first and follow its conventions; check that the change does what the task asks (run the tests that cover it); commit it on this branch.";

/// What goes into a first prompt.
#[derive(Debug, Clone, Default)]
pub struct PromptInput<'a> {
    pub task: &'a str,
    /// From `--template` (built-in name or `[templates.NAME]`); else detected.
    pub template: Option<&'a str>,
    pub templates: Option<&'a BTreeMap<String, TemplateConfig>>,
    pub session: &'a str,
    pub branch: &'a str,
    pub base: &'a str,
    pub notes: &'a [String],
    /// `(peer name, what it is doing)`.
    pub peers: &'a [(String, String)],
    /// Plan first, then execute (`--plan-mode` / `--workflow`).
    pub plan: bool,
    /// Maximum size in characters (the task alone may exceed it).
    pub budget: usize,
}

/// Default size budget of a first prompt, in characters.
pub const DEFAULT_BUDGET: usize = 6000;

/// Builds the prompt; errors name an unknown template.
pub fn build(input: &PromptInput<'_>) -> Result<String, String> {
    let custom = input
        .template
        .and_then(|name| input.templates.and_then(|t| t.get(name)));
    let kind = task_kind(input, custom)?;
    let sections = sections(input, kind, custom);
    Ok(fit(input.task.trim(), sections, input.budget))
}

/// The kind of task: the template's (a custom template may name one, else
/// it is detected from the task), or detected (`None`: not sure); an
/// unknown template is an error naming the known ones.
fn task_kind(
    input: &PromptInput<'_>,
    custom: Option<&TemplateConfig>,
) -> Result<Option<TaskKind>, String> {
    Ok(match (input.template, custom) {
        (_, Some(custom)) => custom
            .kind
            .as_deref()
            .and_then(TaskKind::from_name)
            .or_else(|| detect(input.task)),
        (Some(name), None) => Some(TaskKind::from_name(name).ok_or_else(|| {
            let mut known: Vec<String> =
                ["feature", "bugfix", "hotfix", "refactor", "test", "docs"]
                    .iter()
                    .map(|s| s.to_string())
                    .collect();
            if let Some(t) = input.templates {
                known.extend(t.keys().cloned());
            }
            format!("unknown template `{name}`; templates: {}", known.join(", "))
        })?),
        (None, None) => detect(input.task),
    })
}

/// The sections after the task, as (priority, text): lower numbers are
/// kept longer.
fn sections(
    input: &PromptInput<'_>,
    kind: Option<TaskKind>,
    custom: Option<&TemplateConfig>,
) -> Vec<(u8, String)> {
    let mut sections: Vec<(u8, String)> = Vec::new();
    let mut protocol = match kind {
        Some(kind) => format!(
            "## How to work ({} task)\n{}\n{}",
            kind.name(),
            kind.steps().join(" → "),
            kind.guidance()
        ),
        None => GENERAL_PROTOCOL.to_string(),
    };
    if let Some(extra) = custom.and_then(|c| c.instructions.as_deref()) {
        protocol.push('\n');
        protocol.push_str(extra.trim());
    }
    if input.plan {
        protocol.push_str("\nStart in plan mode: write the plan first and wait for approval, then execute it step by step.");
    }
    sections.push((1, protocol));
    sections.push((
        2,
        format!(
            "## Your session\nYou are `{}`, working on branch `{}` in your own git worktree; it will be merged into `{}`. Commit your work on this branch when it is done.",
            input.session, input.branch, input.base
        ),
    ));
    if !input.notes.is_empty() {
        let notes: Vec<String> = input.notes.iter().map(|n| format!("- {n}")).collect();
        sections.push((3, format!("## Shared notes\n{}", notes.join("\n"))));
    }
    if !input.peers.is_empty() {
        let peers: Vec<String> = input
            .peers
            .iter()
            .map(|(name, what)| format!("- {name}: {what}"))
            .collect();
        sections.push((
            4,
            format!(
                "## Other agents working in this repository now\n{}\nAvoid changing the same code; if you must, say so.",
                peers.join("\n")
            ),
        ));
    }
    sections
}

/// The task, then the sections, dropping the least important ones until
/// it fits in `budget` characters (the task itself always stays).
fn fit(task: &str, mut sections: Vec<(u8, String)>, budget: usize) -> String {
    let render = |sections: &[(u8, String)]| {
        let mut out = String::from(task);
        for (_, text) in sections {
            out.push_str("\n\n");
            out.push_str(text);
        }
        out
    };
    while render(&sections).chars().count() > budget {
        let Some(lowest) = sections
            .iter()
            .enumerate()
            .max_by_key(|(_, (p, _))| *p)
            .map(|(i, _)| i)
        else {
            break;
        };
        sections.remove(lowest);
    }
    render(&sections)
}

#[cfg(test)]
mod tests {
    use super::*;
    use expect_test::expect;

    fn input<'a>(
        task: &'a str,
        notes: &'a [String],
        peers: &'a [(String, String)],
    ) -> PromptInput<'a> {
        PromptInput {
            task,
            session: "add-jwt-auth",
            branch: "owt/add-jwt-auth",
            base: "main",
            notes,
            peers,
            budget: DEFAULT_BUDGET,
            ..PromptInput::default()
        }
    }

    #[test]
    fn detects_kinds() {
        for (task, kind) in [
            ("Add JWT auth", Some(TaskKind::Feature)),
            ("Fix the login crash", Some(TaskKind::Bugfix)),
            ("HOTFIX: outage in billing", Some(TaskKind::Hotfix)),
            ("Refactor the router", Some(TaskKind::Refactor)),
            ("Increase test coverage of auth", Some(TaskKind::Test)),
            ("Update the README", Some(TaskKind::Docs)),
            // Regression (#34.9): "fix" alone is no bug.
            ("Fix typos in CONTRIBUTING", Some(TaskKind::Docs)),
            ("Fix login", None),
            ("Make the cache faster", None),
            ("Say hello", None),
        ] {
            assert_eq!(detect(task), kind, "{task}");
        }
    }

    #[test]
    fn feature_prompt() {
        let notes = vec!["Users table has verified_at".to_string()];
        let peers = vec![(
            "fix-login".to_string(),
            "working: Fix the login redirect".to_string(),
        )];
        let prompt = build(&input("Add JWT auth", &notes, &peers)).unwrap();
        expect![[r#"
            Add JWT auth

            ## How to work (feature task)
            ORIENT → EXPLORE → IMPLEMENT → TEST → VERIFY → COMMIT
            Read the code around the change first, follow its conventions, and add tests for the new behaviour.

            ## Your session
            You are `add-jwt-auth`, working on branch `owt/add-jwt-auth` in your own git worktree; it will be merged into `main`. Commit your work on this branch when it is done.

            ## Shared notes
            - Users table has verified_at

            ## Other agents working in this repository now
            - fix-login: working: Fix the login redirect
            Avoid changing the same code; if you must, say so."#]]
        .assert_eq(&prompt);
    }

    #[test]
    fn each_kind_has_its_protocol() {
        let cases = [
            (
                "bugfix",
                "REPRODUCE → DIAGNOSE → FIX → VERIFY → REGRESSION TEST → COMMIT",
            ),
            ("hotfix", "smallest change"),
            (
                "refactor",
                "BASELINE → PLAN → REFACTOR → VERIFY → CLEAN UP → COMMIT",
            ),
            (
                "test",
                "SURVEY → IDENTIFY → WRITE → RUN → COVERAGE → COMMIT",
            ),
            ("docs", "READ → DRAFT → EXAMPLES → REVIEW → COMMIT"),
            (
                "feature",
                "ORIENT → EXPLORE → IMPLEMENT → TEST → VERIFY → COMMIT",
            ),
        ];
        for (template, needle) in cases {
            let mut i = input("do the thing", &[], &[]);
            i.template = Some(template);
            let prompt = build(&i).unwrap();
            assert!(prompt.contains(needle), "{template}: {prompt}");
            assert!(prompt.contains(&format!("({template} task)")), "{prompt}");
        }
    }

    #[test]
    fn small_budget_drops_lowest_priority_first_never_the_task() {
        let notes = vec!["note one".to_string()];
        let peers = vec![("peer".to_string(), "busy".to_string())];
        let full = build(&input("Add JWT auth", &notes, &peers)).unwrap();
        let mut i = input("Add JWT auth", &notes, &peers);
        i.budget = full.chars().count() - 10;
        let cut = build(&i).unwrap();
        assert!(
            cut.contains("Shared notes") && !cut.contains("Other agents"),
            "{cut}"
        );
        i.budget = 20;
        let tiny = build(&i).unwrap();
        assert_eq!(tiny, "Add JWT auth", "only the task is left");
        let long_task = "x".repeat(100);
        i.task = &long_task;
        i.budget = 10;
        assert_eq!(build(&i).unwrap(), long_task, "the task is never cut");
    }

    #[test]
    fn plan_mode_and_custom_templates() {
        let mut templates = BTreeMap::new();
        templates.insert(
            "migration".to_string(),
            TemplateConfig {
                kind: Some("refactor".into()),
                instructions: Some("Write a reversible migration.".into()),
            },
        );
        let mut i = input("Move users to the new schema", &[], &[]);
        i.template = Some("migration");
        i.templates = Some(&templates);
        i.plan = true;
        let prompt = build(&i).unwrap();
        assert!(
            prompt.contains("(refactor task)") && prompt.contains("Write a reversible migration."),
            "{prompt}"
        );
        assert!(prompt.contains("plan mode"), "{prompt}");
        i.template = Some("nope");
        let err = build(&i).unwrap_err();
        assert!(
            err.contains("unknown template `nope`") && err.contains("migration"),
            "{err}"
        );
    }
}
