//! Which cells pair up: across two runs by equal parameters, or within one run against a
//! reference value of one parameter.

use std::collections::BTreeMap;

use harness_results::read::{CellKey, RunData};

use crate::compare::error::PairError;

/// Per-repetition values of a metric in a cell (missing values skipped).
pub fn cell_values(run: &RunData, key: &CellKey, name: &str) -> Vec<f64> {
    run.cell_rows(key)
        .iter()
        .filter_map(|r| r.get(name).ok().flatten())
        .collect()
}

/// Parameters whose value differs between cells; those make a useful label.
pub fn varying_keys<'a>(keys: impl Iterator<Item = &'a CellKey>) -> Vec<String> {
    let mut seen: BTreeMap<String, std::collections::BTreeSet<String>> = BTreeMap::new();
    for k in keys {
        for (p, v) in &k.params {
            seen.entry(p.clone()).or_default().insert(v.clone());
        }
    }
    seen.into_iter()
        .filter(|(_, vals)| vals.len() > 1)
        .map(|(k, _)| k)
        .collect()
}

/// A matched pair: base cell key in `base_run`, candidate cell key in `cand_run`.
pub struct Pair {
    pub base: CellKey,
    pub candidate: CellKey,
}

/// Pair cells of two runs by parameters + step.
pub fn pair_runs(base: &RunData, cand: &RunData) -> (Vec<Pair>, Vec<CellKey>, Vec<CellKey>) {
    let pairs = cand
        .cells
        .keys()
        .filter(|k| base.cells.contains_key(*k))
        .map(|k| Pair {
            base: k.clone(),
            candidate: k.clone(),
        })
        .collect();
    let ub = base
        .cells
        .keys()
        .filter(|k| !cand.cells.contains_key(*k))
        .cloned()
        .collect();
    let uc = cand
        .cells
        .keys()
        .filter(|k| !base.cells.contains_key(*k))
        .cloned()
        .collect();
    (pairs, ub, uc)
}

/// Strip an optional `param_` prefix from a user-given parameter name.
pub fn param_name(key: &str) -> &str {
    key.strip_prefix("param_").unwrap_or(key)
}

/// Within one run, pair every cell with the cell that has `key=value` and otherwise the
/// same parameters and step. Returns pairs and the cells that have no reference.
pub fn pair_reference(
    run: &RunData,
    key: &str,
    value: &str,
) -> Result<(Vec<Pair>, Vec<CellKey>), PairError> {
    let key = param_name(key);
    if !run.param_keys.iter().any(|k| k == key) {
        return Err(PairError::NoParameter {
            run: run.source.clone(),
            key: key.to_string(),
            params: run.param_keys.clone(),
        });
    }
    if !run
        .cells
        .keys()
        .any(|k| k.params.get(key).map(String::as_str) == Some(value))
    {
        let values: std::collections::BTreeSet<&str> = run
            .cells
            .keys()
            .filter_map(|k| k.params.get(key).map(String::as_str))
            .collect();
        return Err(PairError::NoValue {
            run: run.source.clone(),
            key: key.to_string(),
            value: value.to_string(),
            present: values.into_iter().map(str::to_string).collect(),
        });
    }
    let mut pairs = Vec::new();
    let mut orphans = Vec::new();
    for k in run.cells.keys() {
        if k.params.get(key).map(String::as_str) == Some(value) {
            continue;
        }
        let mut r = k.clone();
        r.params.insert(key.to_string(), value.to_string());
        if run.cells.contains_key(&r) {
            pairs.push(Pair {
                base: r,
                candidate: k.clone(),
            });
        } else {
            orphans.push(k.clone());
        }
    }
    Ok((pairs, orphans))
}
