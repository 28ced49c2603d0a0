//! The command line's side of sharding: `--shard`, `--start-at` and `--start-skew` as a
//! [`Spread`], and the cells a sharded run refuses. The types are the model's
//! ([`harness_model::shard`]).

use std::time::Duration;

use harness_model::matrix::Cell;
use harness_model::profile::Model;
use harness_model::shard::{Shard, Spread, StartAt};

/// Refuses a sharded run whose cells cannot be split: a closed loop has no schedule to share.
pub fn check_cells(spread: &Spread, cells: &[Cell]) -> anyhow::Result<()> {
    if spread.shard.is_whole() {
        return Ok(());
    }
    if let Some(c) = cells.iter().find(|c| c.workload.model == Model::Closed) {
        return Err(crate::exit::invalid(anyhow::anyhow!(
            "--shard {}: cell {} ({}) is a closed loop (model = \"closed\"), which has no schedule to split among shards; use model = \"open\" or \"steps\", or run without --shard",
            spread.shard,
            c.id,
            c.label
        )));
    }
    // Every shard would run its own injector (one kill per shard) or its own search (each on a
    // share of the load it takes for the whole), so neither splits.
    if let Some(c) = cells.iter().find(|c| c.fault.is_some()) {
        return Err(crate::exit::invalid(anyhow::anyhow!(
            "--shard {}: cell {} ({}) has a [fault], and each shard would inject it on its own; run fault experiments in one process (no --shard)",
            spread.shard,
            c.id,
            c.label
        )));
    }
    if let Some(c) = cells.iter().find(|c| c.workload.model == Model::Knee) {
        return Err(crate::exit::invalid(anyhow::anyhow!(
            "--shard {}: cell {} ({}) is a knee search (model = \"knee\"), whose next rate depends on the whole load's answers; search in one process, or split a model = \"steps\" ladder over shards",
            spread.shard,
            c.id,
            c.label
        )));
    }
    Ok(())
}

/// The domain value of `--shard`, `--start-at` and `--start-skew`.
pub fn spread_from_cli(
    shard: Option<&str>,
    start_at: Option<&str>,
    skew: Duration,
) -> anyhow::Result<Spread> {
    let shard = shard.map(Shard::parse).transpose()?.unwrap_or_default();
    let start_at = start_at.map(|t| StartAt::parse(t, skew)).transpose()?;
    if !shard.is_whole() && start_at.is_none() {
        eprintln!(
            "warning: --shard {shard} without --start-at: this shard's schedule starts when it is ready, not on a timeline shared with the other shards"
        );
    }
    Ok(Spread { shard, start_at })
}
