//! `owt usage`: local counts from the store's history, and the tokens the
//! agents recorded (nothing leaves the machine).

use std::collections::BTreeMap;

use owt_protocol::{AgentUsage, DayUsage, SessionUsage, TokenUsage, UsageOutput};

use super::Context;
use crate::store::now_ms;

pub fn usage(ctx: &Context, days: u32) -> anyhow::Result<UsageOutput> {
    let since = now_ms() - i64::from(days) * 86_400_000;
    let counts = ctx.store.event_counts(Some(ctx.repo_row.id), since)?;
    let total = |kind: &str| {
        counts
            .iter()
            .filter(|(k, _, _)| k == kind)
            .map(|(_, _, n)| n)
            .sum::<u64>()
    };
    let mut by_provider: Vec<(String, u64)> = counts
        .iter()
        .filter(|(k, _, _)| k == "created")
        .map(|(_, provider, n)| (provider.clone(), *n))
        .collect();
    by_provider.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));

    let live = ctx.store.sessions(ctx.repo_row.id)?;
    crate::usage::refresh_all(&ctx.store, &ctx.usage_places(), &live);
    let rows = ctx
        .store
        .usage_rows(Some(ctx.repo_row.id), &crate::usage::local_day(since))?;
    let mut tokens = TokenUsage::default();
    let mut sessions: BTreeMap<String, SessionUsage> = BTreeMap::new();
    let mut agents: BTreeMap<String, TokenUsage> = BTreeMap::new();
    let mut by_day: BTreeMap<String, TokenUsage> = BTreeMap::new();
    for row in &rows {
        tokens.add(&row.tokens);
        sessions
            .entry(row.session_short_id.clone())
            .or_insert_with(|| SessionUsage {
                name: row.session_name.clone(),
                id: row.session_short_id.clone(),
                provider: row.provider.clone(),
                live: live.iter().any(|s| s.short_id == row.session_short_id),
                tokens: TokenUsage::default(),
            })
            .tokens
            .add(&row.tokens);
        agents
            .entry(row.provider.clone())
            .or_default()
            .add(&row.tokens);
        by_day.entry(row.day.clone()).or_default().add(&row.tokens);
    }
    let mut sessions: Vec<SessionUsage> = sessions.into_values().collect();
    sessions.sort_by(|a, b| {
        b.tokens
            .total_tokens()
            .cmp(&a.tokens.total_tokens())
            .then(a.name.cmp(&b.name))
    });
    let mut by_agent: Vec<AgentUsage> = agents
        .into_iter()
        .map(|(provider, tokens)| AgentUsage { provider, tokens })
        .collect();
    by_agent.sort_by(|a, b| {
        b.tokens
            .total_tokens()
            .cmp(&a.tokens.total_tokens())
            .then(a.provider.cmp(&b.provider))
    });
    Ok(UsageOutput {
        days,
        sessions_started: total("created"),
        shipped: total("shipped"),
        merged: total("merged"),
        deleted: total("deleted") + total("cleaned-up"),
        by_provider,
        tokens,
        sessions,
        by_agent,
        by_day: by_day
            .into_iter()
            .map(|(day, tokens)| DayUsage { day, tokens })
            .collect(),
    })
}
