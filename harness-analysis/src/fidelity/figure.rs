//! One check on one result folder: for each release in the folder, the model's figure (cells
//! with `broker.kind` = `in-tree`, or no kind) and the real broker's (`apache`), and whether
//! they stand in the relation the row expects. A figure is a ratio or a shape, never an
//! absolute speed: a JVM on 2 cores is slower by design.

use std::collections::{BTreeMap, BTreeSet};

use harness_results::read::{Row, RunData};

use super::rows::{Aggregate, Check, Relation};

const KIND: &str = "broker.kind";
const VERSION: &str = "broker.version";

/// One broker's figure for a check.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    /// The number compared by `ratio` (and shown), if there is one.
    pub value: Option<f64>,
    /// The class compared by `direction`, `monotone` and `presence`.
    pub class: Option<&'static str>,
    /// As the table shows it.
    pub text: String,
}

impl Figure {
    fn missing(why: &str) -> Figure {
        Figure {
            value: None,
            class: None,
            text: format!("— ({why})"),
        }
    }
}

/// Agree, differ, or cannot say (a figure is missing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Agree,
    Differ,
    Unknown,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Agree => "agree",
            Verdict::Differ => "differ",
            Verdict::Unknown => "no figure",
        }
    }
}

/// A check's outcome for one release.
#[derive(Debug, Clone, PartialEq)]
pub struct Judged {
    /// `broker.version` of the cells (empty when the profile has no version axis).
    pub version: String,
    pub model: Figure,
    pub real: Figure,
    pub verdict: Verdict,
}

/// Judges `check` on `data`, once per release present.
pub fn evaluate_check(data: &RunData, check: &Check) -> Vec<Judged> {
    let versions: BTreeSet<String> = data
        .rows
        .iter()
        .map(|r| r.key.params.get(VERSION).cloned().unwrap_or_default())
        .collect();
    versions
        .into_iter()
        .map(|version| {
            let model = figure(data, check, Broker::Model, &version);
            let real = figure(data, check, Broker::Real, &version);
            let verdict = judge(check, &model, &real);
            Judged {
                version,
                model,
                real,
                verdict,
            }
        })
        .collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Broker {
    Model,
    Real,
}

impl Broker {
    fn owns(self, row: &Row) -> bool {
        let kind = row.key.params.get(KIND).map_or("in-tree", String::as_str);
        match self {
            Broker::Model => kind == "in-tree",
            Broker::Real => kind == "apache",
        }
    }
}

fn judge(check: &Check, model: &Figure, real: &Figure) -> Verdict {
    match check.relation {
        Relation::Ratio => match (model.value, real.value) {
            (Some(a), Some(b)) if a > 0.0 && b > 0.0 => {
                if a.max(b) / a.min(b) <= 1.0 + check.tolerance + 1e-12 {
                    Verdict::Agree
                } else {
                    Verdict::Differ
                }
            }
            _ => Verdict::Unknown,
        },
        Relation::Direction | Relation::Monotone | Relation::Presence => {
            match (model.class, real.class) {
                (Some(a), Some(b)) if a == b => Verdict::Agree,
                (Some(_), Some(_)) => Verdict::Differ,
                _ => Verdict::Unknown,
            }
        }
    }
}

/// One broker's figure for a metric over some cells: `(kind, version, value)`, for every
/// kind and release in `data` (`how` over the matching rows). `release` stands in for a missing
/// `broker.version`.
pub fn broker_values(
    data: &RunData,
    metric: &str,
    cells: &BTreeMap<String, String>,
    how: Aggregate,
    release: &str,
) -> Vec<(String, String, f64)> {
    let pairs: BTreeSet<(String, String)> = data
        .rows
        .iter()
        .map(|r| {
            (
                r.key
                    .params
                    .get(KIND)
                    .cloned()
                    .unwrap_or_else(|| "in-tree".into()),
                r.key.params.get(VERSION).cloned().unwrap_or_default(),
            )
        })
        .collect();
    pairs
        .into_iter()
        .filter_map(|(kind, version)| {
            let broker = if kind == "apache" {
                Broker::Real
            } else {
                Broker::Model
            };
            let rows: Vec<&Row> = select(data, broker, &version, cells).collect();
            let v = aggregate(rows.into_iter(), metric, how)?;
            let version = if version.is_empty() {
                release.to_owned()
            } else {
                version
            };
            Some((kind, version, v))
        })
        .collect()
}

/// The rows of `broker` and `version` whose parameters match `cells` (`step` matches the
/// stair of a steps workload). A row that sent nothing is no measurement (a cell whose brokers
/// did not start writes its zeros and its reason), so it is left out: with no other row the
/// figure is missing, never a 0 that a presence check would read as "absent".
fn select<'a, 'b>(
    data: &'a RunData,
    broker: Broker,
    version: &'b str,
    cells: &'b BTreeMap<String, String>,
) -> impl Iterator<Item = &'a Row> + 'b
where
    'a: 'b,
{
    data.rows.iter().filter(move |r| {
        broker.owns(r)
            && r.get("sent").ok().flatten() != Some(0.0)
            && r.key.params.get(VERSION).map_or("", String::as_str) == version
            && cells.iter().all(|(k, v)| {
                if k == "step" {
                    return r.key.step == *v;
                }
                r.key.params.get(k).is_some_and(|p| same_value(p, v))
            })
    })
}

/// `8` and `8.0`, `true` and `True` are the same parameter value.
fn same_value(a: &str, b: &str) -> bool {
    if a.eq_ignore_ascii_case(b) {
        return true;
    }
    matches!((a.parse::<f64>(), b.parse::<f64>()), (Ok(x), Ok(y)) if x == y)
}

fn aggregate<'a>(rows: impl Iterator<Item = &'a Row>, metric: &str, how: Aggregate) -> Option<f64> {
    let mut v: Vec<f64> = rows
        .filter_map(|r| r.get(metric).ok().flatten())
        .filter(|x| x.is_finite())
        .collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(match how {
        Aggregate::Median => {
            let n = v.len();
            if n % 2 == 1 {
                v[n / 2]
            } else {
                (v[n / 2 - 1] + v[n / 2]) / 2.0
            }
        }
        Aggregate::Max => v[v.len() - 1],
        Aggregate::Sum => v.iter().sum(),
    })
}

fn number(x: f64) -> String {
    if x != 0.0 && x.abs() < 0.01 {
        format!("{x:.4}")
    } else if x.abs() < 10.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.0}")
    }
}

/// The share of sends that timed out in the rows of `broker` and `version` that `check` reads.
fn timeout_share(data: &RunData, check: &Check, broker: Broker, version: &str) -> f64 {
    let mut rows: Vec<&Row> = select(data, broker, version, &check.cells).collect();
    if let Some(over) = &check.over {
        rows.extend(select(data, broker, version, &over.cells));
    }
    let sum = |m: &str| -> f64 { rows.iter().filter_map(|r| r.get(m).ok().flatten()).sum() };
    let sent = sum("sent");
    if sent > 0.0 {
        sum("timeouts") / sent
    } else {
        0.0
    }
}

fn figure(data: &RunData, check: &Check, broker: Broker, version: &str) -> Figure {
    let share = timeout_share(data, check, broker, version);
    if share > check.max_timeout_share {
        return Figure::missing(&format!(
            "{:.0}% of sends timed out: it did not serve the load",
            share * 100.0
        ));
    }
    // A knee the harness's own validity stopped (a late generator) measures the harness.
    let mut rows: Vec<&Row> = select(data, broker, version, &check.cells).collect();
    if let Some(over) = &check.over {
        rows.extend(select(data, broker, version, &over.cells));
    }
    let limited_by = |p: &dyn Fn(&str) -> bool| {
        rows.iter()
            .any(|r| r.text.get("knee_limited_by").is_some_and(|t| p(t)))
    };
    if limited_by(&|t| t.starts_with("valid")) {
        return Figure::missing("a knee stopped by the harness's validity, not by the broker");
    }
    // A knee at the search's ceiling is a lower bound: a ratio with it says nothing.
    if limited_by(&|t| t == harness_results::columns::KNEE_ABOVE_MAX) {
        return Figure::missing(
            "a knee above the search's ceiling (knee.max_rate): a bound, not a knee",
        );
    }
    let mut fig = figure_of(data, check, broker, version);
    if let Some(jit) = jit_range(&rows) {
        fig.text.push_str(&format!(", JIT {jit}"));
    }
    if let Some(steal) = steal_max(&rows) {
        fig.text.push_str(&format!(", steal {steal:.0}%"));
    }
    fig
}

/// From this share of one core in a measured second (`steal_cpu_max`) a figure says how much
/// the hypervisor took: on 7 December 21:46 it took up to 94% of a core in the seconds of the
/// model's row 4a cells, which ran at 14-19k sends/s against 33-48k/s half an hour before.
/// Below it (a quiet host reads 0-12%) nothing is added.
pub const STEAL_SHOWN: f64 = 15.0;

/// The most the hypervisor took from the machine in one measured second of the cells, when
/// at least [`STEAL_SHOWN`]; None below it, or for a folder written before the column.
fn steal_max(rows: &[&Row]) -> Option<f64> {
    rows.iter()
        .filter_map(|r| r.get("steal_cpu_max").ok().flatten())
        .reduce(f64::max)
        .filter(|s| *s >= STEAL_SHOWN)
}

/// How much of their measured windows the cells' JVM compiled (`broker_jit_pct`), as
/// `lo-hi%`: a figure taken while the JIT is busy is partly the JIT's. None for a broker
/// without perf data, or a folder written before the column.
fn jit_range(rows: &[&Row]) -> Option<String> {
    let pcts: Vec<f64> = rows
        .iter()
        .filter_map(|r| r.get("broker_jit_pct").ok().flatten())
        .collect();
    let lo = pcts.iter().copied().reduce(f64::min)?;
    let hi = pcts.iter().copied().fold(lo, f64::max);
    Some(if hi - lo < 0.5 {
        format!("{lo:.0}%")
    } else {
        format!("{lo:.0}-{hi:.0}%")
    })
}

fn figure_of(data: &RunData, check: &Check, broker: Broker, version: &str) -> Figure {
    let value = |cells: &BTreeMap<String, String>, metric: &str| -> Option<f64> {
        let rows: Vec<&Row> = select(data, broker, version, cells).collect();
        aggregate(rows.into_iter(), metric, check.aggregate)
    };
    match check.relation {
        Relation::Ratio | Relation::Direction => {
            let Some(over) = check.over.as_ref() else {
                return match value(&check.cells, &check.metric) {
                    Some(x) => Figure {
                        value: Some(x),
                        class: None,
                        text: number(x),
                    },
                    None => Figure::missing("no cells"),
                };
            };
            let over_metric = over.metric.as_deref().unwrap_or(&check.metric);
            let (Some(num), Some(den)) = (
                value(&check.cells, &check.metric),
                value(&over.cells, over_metric),
            ) else {
                return Figure::missing("no cells");
            };
            if den == 0.0 {
                return Figure::missing(&format!("{} / 0", number(num)));
            }
            let r = num / den;
            let class = if r > 1.0 + check.tolerance {
                "above 1"
            } else if r < 1.0 / (1.0 + check.tolerance) {
                "below 1"
            } else {
                "about 1"
            };
            Figure {
                value: Some(r),
                class: Some(class),
                text: format!("{} ({} / {})", number(r), number(num), number(den)),
            }
        }
        Relation::Presence => match value(&check.cells, &check.metric) {
            None => Figure::missing("no cells"),
            Some(x) => {
                let class = if x > check.tolerance {
                    "present"
                } else {
                    "absent"
                };
                Figure {
                    value: Some(x),
                    class: Some(class),
                    text: format!("{} ({class})", number(x)),
                }
            }
        },
        Relation::Monotone => {
            let axis = check.axis.as_deref().unwrap_or_default();
            let mut points: Vec<String> = select(data, broker, version, &check.cells)
                .filter_map(|r| r.key.params.get(axis).cloned())
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect();
            points.sort_by(|a, b| match (a.parse::<f64>(), b.parse::<f64>()) {
                (Ok(x), Ok(y)) => x.total_cmp(&y),
                _ => a.cmp(b),
            });
            let series: Vec<f64> = points
                .iter()
                .filter_map(|p| {
                    let mut cells = check.cells.clone();
                    cells.insert(axis.to_owned(), p.clone());
                    value(&cells, &check.metric)
                })
                .collect();
            if series.len() < 2 || series.len() != points.len() {
                return Figure::missing("fewer than 2 points");
            }
            let class = shape(&series, check.tolerance);
            Figure {
                value: None,
                class: Some(class),
                text: format!(
                    "{class} ({})",
                    series
                        .iter()
                        .map(|x| number(*x))
                        .collect::<Vec<_>>()
                        .join(" → ")
                ),
            }
        }
    }
}

/// A series' shape: each step counts as a rise or a fall when it moves more than `tolerance`
/// of the larger of its two ends, else flat.
fn shape(series: &[f64], tolerance: f64) -> &'static str {
    let (mut up, mut down) = (false, false);
    for w in series.windows(2) {
        let scale = w[0].abs().max(w[1].abs());
        if w[1] - w[0] > tolerance * scale && w[1] > w[0] {
            up = true;
        } else if w[0] - w[1] > tolerance * scale && w[0] > w[1] {
            down = true;
        }
    }
    match (up, down) {
        (true, false) => "rising",
        (false, true) => "falling",
        (false, false) => "flat",
        (true, true) => "mixed",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_count_small_steps_as_flat() {
        assert_eq!(shape(&[1.0, 2.0, 4.0], 0.1), "rising");
        assert_eq!(shape(&[4.0, 2.0, 2.05], 0.1), "falling");
        assert_eq!(shape(&[1.0, 1.05, 0.98], 0.1), "flat");
        assert_eq!(shape(&[1.0, 3.0, 1.0], 0.1), "mixed");
        assert_eq!(shape(&[0.0, 0.0], 0.1), "flat");
    }

    #[test]
    fn values_compare_as_numbers_or_words() {
        assert!(same_value("8", "8.0"));
        assert!(same_value("true", "TRUE"));
        assert!(!same_value("1", "2"));
    }
}
