//! Each cell's kind of broker: `--target` / `--namesrv` drive brokers somebody else runs;
//! otherwise a cell's `[broker] kind` / `version` (or `--broker`) choose broker-under-test or
//! an Apache RocketMQ version. One shared instance per kind (per run, or across runs through a
//! [`KindCache`]); every kind checks its own cells before anything starts.

use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

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
    /// Kinds kept from earlier runs of the same process; None: the run's own.
    pub cache: Option<&'a KindCache>,
}

/// Kinds kept across the runs of one process (`harness fidelity`'s rows), one instance per
/// choice, so that an Apache version's name server, started by the first run that needs it,
/// serves every later run: 17 name servers took 2.4-3.4 s each of a 32-minute fidelity run,
/// one per row and version. Its files go to `namesrv_dir`. Dropping the cache (the last run's
/// kinds with it) stops those name servers.
#[derive(Default)]
pub struct KindCache {
    kinds: Mutex<BTreeMap<BrokerChoice, Kind>>,
    /// Where a shared name server writes its configuration and log; None: beside the cell
    /// folder of the first broker that needs it (its run's folder).
    namesrv_dir: Option<PathBuf>,
}

impl KindCache {
    pub fn new(namesrv_dir: Option<PathBuf>) -> KindCache {
        KindCache {
            kinds: Mutex::default(),
            namesrv_dir,
        }
    }

    fn get(&self, choice: &BrokerChoice, broker_bin: Option<&Path>) -> anyhow::Result<Kind> {
        let mut kinds = self.kinds.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(k) = kinds.get(choice) {
            return Ok(k.clone());
        }
        let k = make(choice, broker_bin, self.namesrv_dir.clone())?;
        kinds.insert(choice.clone(), k.clone());
        Ok(k)
    }
}

impl fmt::Debug for KindCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kinds = self.kinds.lock().unwrap_or_else(PoisonError::into_inner);
        f.debug_struct("KindCache")
            .field("kinds", &kinds.keys().collect::<Vec<_>>())
            .field("namesrv_dir", &self.namesrv_dir)
            .finish()
    }
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
        let kind = match src.cache {
            Some(cache) => cache.get(choice, src.broker_bin)?,
            None => for_choice(choice, src.broker_bin)?,
        };
        kinds.insert(choice.clone(), kind);
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
    make(choice, broker_bin, None)
}

fn make(
    choice: &BrokerChoice,
    broker_bin: Option<&Path>,
    namesrv_dir: Option<PathBuf>,
) -> anyhow::Result<Kind> {
    Ok(match choice {
        BrokerChoice::InTree => Arc::new(InTree::locate(broker_bin)?),
        BrokerChoice::Apache { version } => Arc::new(Apache::new(version, namesrv_dir)?),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cache_hands_every_run_the_same_kind_and_a_run_without_one_its_own() {
        // Any file will do: locating the in-tree kind only checks that it is there.
        let bin = std::env::current_exe().expect("the test binary");
        let cache = KindCache::new(None);
        let a = cache.get(&BrokerChoice::InTree, Some(&bin)).expect("kind");
        let b = cache.get(&BrokerChoice::InTree, Some(&bin)).expect("kind");
        assert!(Arc::ptr_eq(&a, &b), "one instance across runs");
        let own = for_choice(&BrokerChoice::InTree, Some(&bin)).expect("kind");
        assert!(
            !Arc::ptr_eq(&a, &own),
            "a run without the cache makes its own"
        );
        assert!(format!("{cache:?}").contains("InTree"));
    }
}
