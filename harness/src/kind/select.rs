//! Each cell's kind of broker: `--target` / `--namesrv` drive brokers somebody else runs;
//! otherwise a cell's `[broker] kind` / `version` (or `--broker`) choose broker-under-test or
//! an Apache RocketMQ version. One shared instance per kind; every kind checks its own cells
//! before anything starts.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use harness_model::matrix::Cell;
use harness_model::profile::{BrokerChoice, Profile, KIND_KEY, VERSION_KEY};

use super::apache::Apache;
use super::in_tree::InTree;
use super::target::{Existing, Target};
use super::{Kind, KindRecord};

/// Where the run's brokers come from, as the command line says.
#[derive(Debug, Clone, Copy)]
pub struct Source<'a> {
    pub target: Option<SocketAddr>,
    pub target_pid: Option<u32>,
    pub namesrv: Option<SocketAddr>,
    pub broker_bin: Option<&'a Path>,
}

/// The kind of each cell (by index), after every kind checked its cells.
pub fn for_cells(src: Source<'_>, profile: &Profile, cells: &[Cell]) -> anyhow::Result<Vec<Kind>> {
    let external: Option<Kind> = match (src.target, src.namesrv) {
        (Some(addr), _) => Some(Arc::new(Target::Broker(Existing {
            addr,
            pid: src.target_pid,
        }))),
        (None, Some(ns)) => Some(Arc::new(Target::Cluster(ns))),
        (None, None) => None,
    };
    if let Some(kind) = external {
        kind.check_cells(profile, cells)?;
        return Ok(vec![kind; cells.len()]);
    }
    let mut choices = Vec::with_capacity(cells.len());
    for cell in cells {
        let choice = BrokerChoice::of(&cell.broker).map_err(|why| {
            let at = [KIND_KEY, VERSION_KEY]
                .iter()
                .find_map(|k| profile.broker_origins.get(*k))
                .cloned()
                .unwrap_or_else(|| profile.path.display().to_string());
            crate::exit::invalid(anyhow::anyhow!("{at}: cell {}: {why}", cell.id))
        })?;
        choices.push(choice);
    }
    let mut kinds: BTreeMap<BrokerChoice, Kind> = BTreeMap::new();
    for choice in &choices {
        if kinds.contains_key(choice) {
            continue;
        }
        kinds.insert(choice.clone(), for_choice(choice, src.broker_bin)?);
    }
    for (choice, kind) in &kinds {
        let mine: Vec<Cell> = cells
            .iter()
            .zip(&choices)
            .filter(|(_, c)| *c == choice)
            .map(|(cell, _)| cell.clone())
            .collect();
        kind.check_cells(profile, &mine)?;
    }
    Ok(choices.iter().map(|c| kinds[c].clone()).collect())
}

/// The kind a choice names: broker-under-test's binary (`--broker-bin`, else found or built),
/// or an Apache version's jars (fetched on first use).
pub fn for_choice(choice: &BrokerChoice, broker_bin: Option<&Path>) -> anyhow::Result<Kind> {
    Ok(match choice {
        BrokerChoice::InTree => Arc::new(InTree::locate(broker_bin)?),
        BrokerChoice::Apache { version } => Arc::new(Apache::new(version)?),
    })
}

/// What run.json records of the run's kinds, each once.
pub fn records(kinds: &[Kind]) -> Vec<KindRecord> {
    let mut out: Vec<KindRecord> = Vec::new();
    for k in kinds {
        let r = k.record();
        if !out.contains(&r) {
            out.push(r);
        }
    }
    out
}
