//! `owt usage`: local counts from the store's history (nothing leaves the machine).

use owt_protocol::UsageOutput;

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
    Ok(UsageOutput {
        days,
        sessions_started: total("created"),
        shipped: total("shipped"),
        merged: total("merged"),
        deleted: total("deleted") + total("cleaned-up"),
        by_provider,
    })
}
