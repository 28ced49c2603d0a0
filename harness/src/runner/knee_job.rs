//! One cell and repetition of `model = "knee"`: the probes the search asks for, each an
//! open-loop job at one rate (`settle` unmeasured, then `probe_duration` measured), judged
//! against `[slo]`; every probe is a row (`step` = probe index), and every row carries the
//! search's result. A probe that is invalid (generator late, …) is run once more before it
//! counts as a failure.

use std::borrow::Borrow;

use crate::kind::{Lifecycle, Member};
use crate::report::{summary_csv, SummaryRow};
use crate::runner::context::{Ctx, Probe, ProbeStage};
use crate::runner::job::{kept_broker_exited, run_job, start_broker, stop_kept};
use crate::runner::knee::{KneeOutcome, KneeSearch, SearchParams};
use crate::runner::knee_warm_up::warm_up;
use crate::runner::warm_up::WarmUpEnd;
use harness_model::matrix::Cell;
use harness_model::profile::{Knee, Model, Slo};
use harness_model::rules::{Env, EvalError};
use harness_results::cells::Fixed;
use harness_results::read::{CellKey, Row};

/// Runs the knee search of one cell and repetition. Like `run_job`, never fails: problems
/// become invalid rows, and a probe that could send nothing ends the search.
pub fn run_knee_job(ctx: &mut Ctx, cell: &Cell, repetition: u32) -> (Vec<SummaryRow>, bool) {
    let profile = ctx.profile;
    let knee = &profile.knee;
    let Some(slo) = profile.slo.as_ref() else {
        // The profile refuses model = "knee" without [slo]; nothing to search against.
        return (Vec::new(), false);
    };
    let mut params = SearchParams::from_profile(knee, cell.workload.rate);
    let job_dir = ctx.out_dir.join(format!("{}-r{repetition}", cell.id));
    // One broker for every probe unless the profile asks for a fresh one each time. When it
    // cannot start, the first probe starts its own and reports why in its row.
    let mut shared: Option<Box<dyn Member>> = None;
    // A cluster (`[cluster]` or `--namesrv`) is set up by each probe's job: its own name server
    // and brokers, or the existing cluster's route.
    let cluster = profile.cluster.is_some() || ctx.opts.namesrv.is_some();
    let owned = ctx.kind.lifecycle() == Lifecycle::Owned;
    if !knee.fresh_broker_per_probe
        && owned
        && !cluster
        && std::fs::create_dir_all(&job_dir).is_ok()
    {
        shared = start_broker(ctx, cell, &job_dir).ok();
    }
    let mut rows: Vec<SummaryRow> = Vec::new();
    // The row of each probe the search counted (an invalid probe's rerun replaces it).
    let mut counted: Vec<usize> = Vec::new();
    let mut rerun = false;
    let mut interrupted = false;
    if knee.warm_up.is_some() {
        // Warming needs one broker that outlives the warm-up: the search's own, or the one an
        // existing broker's kind drives. A cluster is started by each probe's job.
        let broker = shared.as_ref().map(|p| (p.addr(), p.pid()));
        if cluster || (owned && broker.is_none()) {
            ctx.progress.line(
                "  warm-up skipped: no broker outlives it (a cluster, or the broker did not start)",
            );
        } else {
            let done = warm_up(ctx, cell, repetition, broker, &job_dir);
            interrupted = done.end == WarmUpEnd::Interrupted;
            if let Some(start) = start_from(knee, done.last_ok_per_s) {
                ctx.progress.line(&format!(
                    "  knee search starts at {start:.1} sends/s ({} x the warm-up's last window)",
                    knee.start_from_warm_up.unwrap_or_default()
                ));
                params.start = start;
            }
        }
    }
    let mut search = KneeSearch::new(params);
    while let Some(rate) = search.next_rate() {
        if interrupted || ctx.opts.cancel.is_cancelled() {
            interrupted = true;
            break;
        }
        let index = rows.len();
        ctx.progress
            .line(&format!("  knee probe {index}: {rate:.1} sends/s"));
        ctx.probe = Some(Probe {
            index,
            broker: shared.as_ref().map(|p| (p.addr(), p.pid())),
            stage: ProbeStage::Measured,
        });
        let (mut probe_rows, was_interrupted) = run_job(
            ctx,
            &probe_cell(cell, rate, knee, index == 0 || knee.fresh_broker_per_probe),
            repetition,
        );
        ctx.probe = None;
        let Some(mut row) = probe_rows.pop() else {
            break;
        };
        if let Some(st) = shared.as_mut().and_then(|p| p.exited()) {
            row.invalidate(kept_broker_exited(st, "the probe"));
        }
        row.step = Some(index);
        let failed = failed_term(slo, &ctx.axis_keys, &row);
        row.knee.slo_met = Some(failed.is_none());
        row.knee.slo_failed = failed.unwrap_or_default();
        let unusable = !row.valid
            && (row.seg.sent == 0
                || row
                    .invalid_kinds
                    .contains(&harness_results::InvalidKind::BrokerExited));
        let (met, valid) = (row.knee.slo_met == Some(true), row.valid);
        rows.push(row);
        if was_interrupted {
            interrupted = true;
            break;
        }
        if unusable {
            break;
        }
        // An invalid probe (the generator was late, say) says little about the broker: it is
        // run once more at the same rate before it counts as a failure. Both rows are kept.
        if !valid && !rerun {
            rerun = true;
            continue;
        }
        rerun = false;
        counted.push(index);
        search.record(met);
    }
    if let Some(p) = shared {
        stop_kept(ctx, cell, p, &job_dir, interrupted);
    }
    let (knee_rate, limited_by) = match search.outcome() {
        Some(o @ KneeOutcome::Knee { rate, .. }) => (
            o.rate(),
            search
                .first_failure_above(rate)
                .and_then(|i| rows.get(*counted.get(i)?))
                .map(|r| r.knee.slo_failed.clone())
                .unwrap_or_default(),
        ),
        Some(KneeOutcome::AboveMax { rate }) => (
            Some(rate),
            harness_results::columns::KNEE_ABOVE_MAX.to_owned(),
        ),
        Some(KneeOutcome::BelowMin) => (
            None,
            rows.last()
                .map(|r| r.knee.slo_failed.clone())
                .unwrap_or_default(),
        ),
        None => (None, "search not finished".to_owned()),
    };
    let share = knee_rate
        .and_then(|k| at_knee(&rows, k))
        .map(broker_share)
        .unwrap_or_default();
    for r in &mut rows {
        r.knee.knee_rate = knee_rate.map(Fixed);
        r.knee.knee_limited_by = limited_by.clone();
        r.knee.knee_broker_share = share.clone();
    }
    if let Some(rate) = knee_rate {
        ctx.progress.line(&format!(
            "  knee: {rate:.1} sends/s after {} probes (limited by: {limited_by})",
            rows.len()
        ));
    }
    (rows, interrupted)
}

/// The first probe's rate under `start_from_warm_up`: that fraction of the warm-up's last
/// window, or None (the profile's start) when either is missing.
fn start_from(knee: &Knee, last_ok_per_s: Option<f64>) -> Option<f64> {
    Some(knee.start_from_warm_up? * last_ok_per_s?)
}

/// The probe that confirmed the knee `k`: the last one at that rate that met the SLO.
fn at_knee<R: Borrow<SummaryRow>>(rows: &[R], k: f64) -> Option<&SummaryRow> {
    rows.iter().map(Borrow::borrow).rev().find(|r| {
        r.knee.slo_met == Some(true) && r.target_rate.is_some_and(|t| (t - k).abs() < 0.05)
    })
}

/// Each cluster broker's share of a probe's acknowledged attempts, `name=0.502;…` in route
/// order; empty with one broker.
pub fn broker_share(row: &SummaryRow) -> String {
    let s = &row.seg;
    let total: u64 = s.per_broker.iter().map(|b| b[0]).sum();
    if s.broker_names.is_empty() || total == 0 {
        return String::new();
    }
    s.broker_names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let ok = s.per_broker.get(i).map_or(0, |b| b[0]);
            format!("{n}={:.3}", ok as f64 / total as f64)
        })
        .collect::<Vec<_>>()
        .join(";")
}

/// The cell as one open-loop probe at `rate`.
fn probe_cell(cell: &Cell, rate: f64, knee: &Knee, first: bool) -> Cell {
    let mut c = cell.clone();
    c.workload.model = Model::Open;
    c.workload.rate = rate;
    c.workload.warmup = match knee.first_settle {
        Some(s) if first => s,
        _ => knee.settle,
    };
    c.workload.duration = knee.probe_duration;
    c
}

/// The first SLO term `row` does not meet. An invalid row fails too: on the term it missed,
/// with the reason it is invalid (a broker past capacity also makes the generator late, through
/// TCP back-pressure), or on `valid` when it met every term.
fn failed_term(slo: &Slo, axis_keys: &[String], row: &SummaryRow) -> Option<String> {
    let term = match RowValues::of(axis_keys, row) {
        Ok(env) => match slo.first_failure(&env) {
            Ok(t) => t.map(|t| t.text.clone()),
            Err(e) => Some(e.to_string()),
        },
        Err(e) => Some(format!("unreadable row: {e}")),
    };
    match (row.valid, term) {
        (true, term) => term,
        (false, Some(t)) => Some(format!("{t} (invalid: {})", row.invalid_reason)),
        (false, None) => Some(format!("valid ({})", row.invalid_reason)),
    }
}

/// A row's `summary.csv` cells as the gate reads them, so an SLO term means exactly what the
/// same expression means in `[gate]`.
struct RowValues(Row);

impl RowValues {
    fn of(axis_keys: &[String], row: &SummaryRow) -> Result<RowValues, String> {
        let bytes = summary_csv(axis_keys, std::slice::from_ref(row)).map_err(|e| e.to_string())?;
        let mut reader = csv::Reader::from_reader(bytes.as_slice());
        let header = reader.headers().map_err(|e| e.to_string())?.clone();
        let record = reader
            .records()
            .next()
            .ok_or("no row")?
            .map_err(|e| e.to_string())?;
        let mut values = std::collections::BTreeMap::new();
        for (col, raw) in header.iter().zip(record.iter()) {
            let v = match raw {
                "" => None,
                "true" => Some(1.0),
                "false" => Some(0.0),
                _ => match raw.parse::<f64>() {
                    Ok(v) => Some(v),
                    Err(_) => continue,
                },
            };
            values.insert(col.to_owned(), v);
        }
        Ok(RowValues(Row {
            line: 0,
            cell_id: row.cell_id.clone(),
            repetition: row.repetition.to_string(),
            key: CellKey {
                params: Default::default(),
                step: String::new(),
            },
            values,
            text: Default::default(),
        }))
    }
}

impl Env for RowValues {
    fn column(&self, name: &str) -> Result<Option<f64>, EvalError> {
        self.0
            .get(name)
            .map_err(|_| EvalError::UnknownColumn(name.to_owned()))
    }
    fn at(&self, column: &str, _: &[(String, String)]) -> Result<Option<f64>, EvalError> {
        // Refused when the profile is read; kept an error rather than a panic.
        Err(EvalError::NoSuchCell(format!(
            "at({column}) in an SLO term"
        )))
    }
}

/// "Capacity per configuration": one line per cell and repetition of a knee run, with the
/// figures of its confirming probe. Empty when the run has no knee rows.
pub fn capacity_table(rows: &[SummaryRow]) -> String {
    let mut groups: Vec<(&str, u32, Vec<&SummaryRow>)> = Vec::new();
    for r in rows.iter().filter(|r| r.knee.slo_met.is_some()) {
        match groups
            .iter_mut()
            .find(|g| g.0 == r.cell_id && g.1 == r.repetition)
        {
            Some(g) => g.2.push(r),
            None => groups.push((&r.cell_id, r.repetition, vec![r])),
        }
    }
    if groups.is_empty() {
        return String::new();
    }
    let w = rows.iter().map(|r| r.label.len()).max().unwrap_or(4).max(4);
    let mut out = format!(
        "\ncapacity: the highest rate that met [slo]\n{:<w$} {:>3} {:>10} {:>6} {:>9} {:>8}  limited by\n",
        "cell", "rep", "knee/s", "probes", "p99 ms", "busy%"
    );
    for (_, rep, probes) in &groups {
        let knee = probes[0].knee.knee_rate.map(|f| f.0);
        // The figures at the knee: its last passing probe (the confirmation).
        let at = knee.and_then(|k| at_knee(probes, k));
        let (p99, busy) = at.map_or(("-".into(), "-".into()), |r| {
            (
                format!("{:.3}", r.seg.latency_us[2] as f64 / 1000.0),
                format!("{:.2}%", r.busy_rate() * 100.0),
            )
        });
        out.push_str(&format!(
            "{:<w$} {:>3} {:>10} {:>6} {:>9} {:>8}  {}\n",
            probes[0].label,
            rep,
            knee.map_or("none".into(), |k| format!("{k:.1}")),
            probes.len(),
            p99,
            busy,
            probes[0].knee.knee_limited_by
        ));
        if !probes[0].knee.knee_broker_share.is_empty() {
            out.push_str(&format!(
                "    share of ok at the knee: {}\n",
                probes[0].knee.knee_broker_share.replace(';', " ")
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{probe_cell, start_from};
    use harness_model::profile::{Profile, Secs};

    #[test]
    fn the_first_probe_on_a_broker_settles_first_settle_the_others_settle() {
        let text = "name = \"k\"\n[workload]\nmodel = \"knee\"\nrate = 1000\n[knee]\nsettle = \"2s\"\nfirst_settle = \"8s\"\n[slo]\nterms = [\"p99_ms <= 100\"]\n";
        let profile = Profile::parse(text, "k.toml", std::path::Path::new("k.toml"), &[]).unwrap();
        let cell = &harness_model::matrix::expand(&profile).unwrap()[0];
        let first = probe_cell(cell, 4000.0, &profile.knee, true);
        let later = probe_cell(cell, 8000.0, &profile.knee, false);
        assert_eq!(first.workload.warmup, Secs(8.0));
        assert_eq!(later.workload.warmup, Secs(2.0));
        assert_eq!(later.workload.rate, 8000.0);
        let mut plain = profile.knee.clone();
        plain.first_settle = None;
        assert_eq!(
            probe_cell(cell, 4000.0, &plain, true).workload.warmup,
            Secs(2.0)
        );
    }

    #[test]
    fn start_from_warm_up_scales_the_warm_ups_last_window() {
        let mut knee = harness_model::profile::Knee {
            warm_up: Some(Secs(60.0)),
            ..Default::default()
        };
        assert_eq!(start_from(&knee, Some(50_000.0)), None);
        knee.start_from_warm_up = Some(0.5);
        assert_eq!(start_from(&knee, Some(50_000.0)), Some(25_000.0));
        // A warm-up that measured nothing leaves the profile's start.
        assert_eq!(start_from(&knee, None), None);
    }
}
