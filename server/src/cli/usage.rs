//! `owt usage [--days N]`.

use std::path::Path;
use std::process::ExitCode;

use owt_protocol::{TokenUsage, UsageOutput};

use super::{compact_count, dollars, usage_figure};
use crate::ops;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Count the last N days.
    #[arg(long, default_value_t = 30)]
    pub days: u32,
}

pub fn run(dir: Option<&Path>, out: &super::Out, args: Args) -> anyhow::Result<ExitCode> {
    let ctx = ops::Context::open(dir)?;
    let usage = ops::usage::usage(&ctx, args.days)?;
    out.emit(&usage, || render(&usage))?;
    Ok(ExitCode::SUCCESS)
}

/// `in 12k · out 3.4k · cache 1.1M read, 40k written · $0.42`.
fn breakdown(t: &TokenUsage) -> String {
    let mut s = format!(
        "in {} · out {} · cache {} read, {} written",
        compact_count(t.input_tokens),
        compact_count(t.output_tokens),
        compact_count(t.cache_read_tokens),
        compact_count(t.cache_write_tokens)
    );
    if let Some(cost) = t.cost_usd {
        s.push_str(&format!(" · {}", dollars(cost)));
    }
    s
}

/// The text report.
pub fn render(usage: &UsageOutput) -> String {
    let mut lines = vec![format!(
        "Last {} days: {} sessions started, {} shipped, {} merged, {} deleted.",
        usage.days, usage.sessions_started, usage.shipped, usage.merged, usage.deleted
    )];
    if !usage.by_provider.is_empty() {
        let by: Vec<String> = usage
            .by_provider
            .iter()
            .map(|(p, n)| format!("{p} {n}"))
            .collect();
        lines.push(format!("By agent: {}", by.join(", ")));
    }
    if usage.sessions.is_empty() {
        lines.push("No token records from the agents in these days.".into());
        return lines.join("\n");
    }
    lines.push(format!(
        "Tokens: {} ({})",
        compact_count(usage.tokens.total_tokens()),
        breakdown(&usage.tokens)
    ));
    let agents: Vec<String> = usage
        .by_agent
        .iter()
        .map(|a| format!("{} {}", a.provider, usage_figure(&a.tokens)))
        .collect();
    lines.push(format!("Tokens by agent: {}", agents.join(", ")));
    lines.push("Tokens by day:".into());
    for d in &usage.by_day {
        lines.push(format!("  {}  {}", d.day, usage_figure(&d.tokens)));
    }
    lines.push("Tokens by session:".into());
    let width = usage
        .sessions
        .iter()
        .map(|s| s.name.chars().count())
        .max()
        .unwrap_or(0);
    for s in &usage.sessions {
        lines.push(format!(
            "  {:<width$}  {} {} ({}){}",
            s.name,
            s.provider,
            compact_count(s.tokens.total_tokens()),
            breakdown(&s.tokens),
            if s.live { "" } else { " · gone" }
        ));
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use owt_protocol::{AgentUsage, DayUsage, SessionUsage};

    use super::*;

    fn tokens(input: u64, output: u64, read: u64, write: u64, cost: Option<f64>) -> TokenUsage {
        TokenUsage {
            input_tokens: input,
            output_tokens: output,
            cache_read_tokens: read,
            cache_write_tokens: write,
            cost_usd: cost,
        }
    }

    #[test]
    fn report_shows_tokens_per_agent_day_and_session() {
        let claude = tokens(2021, 49, 1_033_000, 95, None);
        let aider = tokens(2119, 91, 0, 0, Some(0.007722));
        let mut all = claude.clone();
        all.add(&aider);
        let usage = UsageOutput {
            days: 7,
            sessions_started: 2,
            shipped: 1,
            merged: 0,
            deleted: 0,
            by_provider: vec![("aider".into(), 1), ("claude".into(), 1)],
            tokens: all.clone(),
            sessions: vec![
                SessionUsage {
                    name: "auth".into(),
                    id: "0a1b2c3d".into(),
                    provider: "claude".into(),
                    live: true,
                    tokens: claude.clone(),
                },
                SessionUsage {
                    name: "docs-fix".into(),
                    id: "4e5f6a7b".into(),
                    provider: "aider".into(),
                    live: false,
                    tokens: aider.clone(),
                },
            ],
            by_agent: vec![
                AgentUsage {
                    provider: "claude".into(),
                    tokens: claude,
                },
                AgentUsage {
                    provider: "aider".into(),
                    tokens: aider,
                },
            ],
            by_day: vec![DayUsage {
                day: "2026-12-01".into(),
                tokens: all,
            }],
        };
        expect_test::expect![[r#"
            Last 7 days: 2 sessions started, 1 shipped, 0 merged, 0 deleted.
            By agent: aider 1, claude 1
            Tokens: 1.0M (in 4.1k · out 140 · cache 1.0M read, 95 written · $0.0077)
            Tokens by agent: claude 1.0M tok, aider 2.2k tok $0.0077
            Tokens by day:
              2026-12-01  1.0M tok $0.0077
            Tokens by session:
              auth      claude 1.0M (in 2.0k · out 49 · cache 1.0M read, 95 written)
              docs-fix  aider 2.2k (in 2.1k · out 91 · cache 0 read, 0 written · $0.0077) · gone"#]]
        .assert_eq(&render(&usage));
    }

    #[test]
    fn figures_are_compact() {
        let cases = [
            (0, "0"),
            (999, "999"),
            (1000, "1.0k"),
            (12_345, "12k"),
            (1_240_000, "1.2M"),
            (45_000_000, "45M"),
        ];
        for (n, text) in cases {
            assert_eq!(compact_count(n), text);
        }
        assert_eq!(dollars(0.0), "$0.00");
        assert_eq!(dollars(0.003828), "$0.0038");
        assert_eq!(dollars(0.04), "$0.040");
        assert_eq!(dollars(1.256), "$1.26");
        assert_eq!(usage_figure(&tokens(500, 500, 0, 0, None)), "1.0k tok");
    }
}
