//! The row file: what each fidelity row measures and what it expects, written before any run
//! (no tolerance is chosen after seeing the data). One `[[row]]` per question of issue 46, in
//! the table's order; each holds one or more `[[row.check]]`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// Why a row file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum RowsError {
    #[error("{path}: cannot read: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Toml { path: PathBuf, message: String },
    #[error("{path}: row {row}: {message}")]
    Invalid {
        path: PathBuf,
        row: String,
        message: String,
    },
    #[error("--rows {wanted}: no such row (rows: {known})")]
    UnknownRow { wanted: String, known: String },
}

/// The whole file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RowsFile {
    #[serde(default)]
    pub row: Vec<RowSpec>,
}

/// One row of the table.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RowSpec {
    /// The issue's row number, with a letter when a question takes two profiles (`4a`).
    pub id: String,
    pub title: String,
    /// The profile, relative to the working folder. None: the row cannot run here and
    /// `not_run` says why.
    pub profile: Option<PathBuf>,
    /// In the `--quick` (FIDELITY_QUICK=1) subset. Default: false.
    pub quick: bool,
    /// `--set` overrides for every run of the row. Default: none.
    pub set: Vec<String>,
    /// Further `--set` overrides for a quick run (fewer versions, shorter jobs). Default: none.
    pub quick_set: Vec<String>,
    /// Why the row has no profile: what was tried and what failed.
    pub not_run: Option<String>,
    /// What the row's figures mean and, for a "differ", why (written after a run explains; it
    /// never changes a tolerance).
    pub note: String,
    /// Run once per broker, at rates derived from another row's figure (row 3: 1.5× each
    /// broker's own knee) instead of once with both brokers in the matrix. Default: none.
    pub rate_from: Option<RateFrom>,
    /// How the row's brokers share the machine. Default: `alternating`.
    pub brokers: Brokers,
    pub check: Vec<Check>,
}

/// How a row's brokers share the machine.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Brokers {
    /// One run, the brokers' cells one after another in the profile's seeded order: what a
    /// row that measures speed needs (neither broker shares a core with the other).
    #[default]
    Alternating,
    /// One run per broker of the profile's `broker.kind` × `broker.version` axes, all at once,
    /// each into `<row>/<kind>-<version>`: for a row whose load is light and whose figures are
    /// counted on the broker's own timers, not measured as speed (row 9: 500 then 100 sends/s,
    /// RocketMQ's first clean round 60 s after the store starts). It halves the row's time.
    SideBySide,
}

/// Each broker's rate from an earlier row's figure: `steps` of `stair` each at `ramp` × the
/// figure (warming a JVM up, not starting it cold at the overload), then one at `factor` ×.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RateFrom {
    /// The earlier row whose folder holds the figure.
    pub row: String,
    pub metric: String,
    #[serde(rename = "where")]
    pub cells: BTreeMap<String, String>,
    /// The matching cells' figures to one: `median` (default) or `max` (row 3: the highest
    /// knee a broker reached, the best guess at what it carries).
    pub aggregate: Aggregate,
    /// Warm-up stairs, as fractions of the figure. Default: none.
    pub ramp: Vec<f64>,
    /// The measured stair, as a multiple of the figure.
    pub factor: f64,
    /// Each stair's length, e.g. `"10s"`.
    pub stair: String,
}

impl RateFrom {
    /// `workload.steps` for a figure of `base` sends/s, as a `--set` value.
    pub fn steps(&self, base: f64) -> String {
        let stairs: Vec<String> = self
            .ramp
            .iter()
            .chain(std::iter::once(&self.factor))
            .map(|f| {
                format!(
                    "{{ rate = {:.0}, duration = \"{}\" }}",
                    f * base,
                    self.stair
                )
            })
            .collect();
        format!("[{}]", stairs.join(", "))
    }
}

/// One figure compared between the two brokers.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Check {
    pub name: String,
    pub relation: Relation,
    /// `ratio`: the two brokers' figures within a factor of 1 + tolerance. `direction`,
    /// `monotone`: a change smaller than this fraction counts as flat. `presence`: a figure
    /// above this counts as present.
    pub tolerance: f64,
    /// The summary.csv column read, in the cells `where` selects.
    pub metric: String,
    #[serde(rename = "where")]
    pub cells: BTreeMap<String, String>,
    /// `ratio` and `direction`: the denominator (its metric defaults to `metric`). A `ratio`
    /// without one compares the metric itself: only for figures that are not a speed (a
    /// configured delay, a share of the messages).
    pub over: Option<Side>,
    /// `monotone`: the matrix axis the metric is read along, in numeric order.
    pub axis: Option<String>,
    /// How the rows of the selected cells (repetitions, knee probes) become one number.
    pub aggregate: Aggregate,
    /// A broker whose selected cells timed out more than this share of their sends has no
    /// figure: it did not serve the load, so its shape says nothing (a cold or starved JVM).
    /// Knee probes past the knee and sends during a kill time out by design: those checks
    /// set 1. Default: 0.05.
    pub max_timeout_share: f64,
}

impl Default for Check {
    fn default() -> Check {
        Check {
            name: String::new(),
            relation: Relation::default(),
            tolerance: 0.0,
            metric: String::new(),
            cells: BTreeMap::new(),
            over: None,
            axis: None,
            aggregate: Aggregate::default(),
            max_timeout_share: 0.05,
        }
    }
}

/// The denominator of a ratio.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Side {
    pub metric: Option<String>,
    #[serde(rename = "where")]
    pub cells: BTreeMap<String, String>,
}

/// The relation expected between the model's figure and the real broker's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Relation {
    /// metric / over (or the metric), per broker; the two within a factor of 1 + tolerance.
    #[default]
    Ratio,
    /// metric / over, per broker, classed as above 1, about 1 or below 1; the same class.
    Direction,
    /// metric along `axis`, per broker, classed rising / falling / flat / mixed; the same class.
    Monotone,
    /// metric above `tolerance` or not, per broker; the same answer.
    Presence,
}

/// Rows of the selected cells to one number.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Aggregate {
    #[default]
    Median,
    Max,
    Sum,
}

impl Relation {
    /// How the relation reads in the table, with its tolerance.
    pub fn describe(self, tolerance: f64) -> String {
        let pct = |t: f64| format!("{:.0}%", t * 100.0);
        match self {
            Relation::Ratio => format!("ratio within ×{:.2}", 1.0 + tolerance),
            Relation::Direction => format!("same side of 1 (±{})", pct(tolerance)),
            Relation::Monotone => format!("same shape (steps < {} flat)", pct(tolerance)),
            Relation::Presence => format!("both > {tolerance} or both not"),
        }
    }
}

impl RowsFile {
    pub fn load(path: &Path) -> Result<RowsFile, RowsError> {
        let text = std::fs::read_to_string(path).map_err(|source| RowsError::Io {
            path: path.to_owned(),
            source,
        })?;
        RowsFile::parse(path, &text)
    }

    pub fn parse(path: &Path, text: &str) -> Result<RowsFile, RowsError> {
        let file: RowsFile = toml::from_str(text).map_err(|e| RowsError::Toml {
            path: path.to_owned(),
            message: e.to_string(),
        })?;
        file.validate(path)?;
        Ok(file)
    }

    /// Contradictions fail hard: a row file is written once and must say what it means.
    fn validate(&self, path: &Path) -> Result<(), RowsError> {
        let bad = |row: &RowSpec, message: String| RowsError::Invalid {
            path: path.to_owned(),
            row: row.id.clone(),
            message,
        };
        let mut seen = std::collections::BTreeSet::new();
        for row in &self.row {
            if row.id.is_empty() || !seen.insert(row.id.clone()) {
                return Err(bad(row, "every row needs its own `id`".into()));
            }
            match (&row.profile, &row.not_run) {
                (None, None) => {
                    return Err(bad(
                        row,
                        "give a `profile`, or `not_run` saying why it cannot run".into(),
                    ))
                }
                (Some(_), None) if row.check.is_empty() => {
                    return Err(bad(
                        row,
                        "a row with a profile needs a [[row.check]]".into(),
                    ))
                }
                _ => {}
            }
            if row.brokers == Brokers::SideBySide && row.rate_from.is_some() {
                return Err(bad(
                    row,
                    "`brokers = \"side_by_side\"` and `rate_from` both say how the brokers run: keep one".into(),
                ));
            }
            if let Some(r) = &row.rate_from {
                let before = self.row.iter().take_while(|o| o.id != row.id);
                if !before.clone().any(|o| o.id == r.row) {
                    return Err(bad(
                        row,
                        format!("`rate_from.row` = {:?} must name an earlier row", r.row),
                    ));
                }
                if r.factor.is_nan() || r.factor <= 0.0 || r.metric.is_empty() || r.stair.is_empty()
                {
                    return Err(bad(
                        row,
                        "`rate_from` needs `metric`, `factor` > 0 and `stair`".into(),
                    ));
                }
            }
            for c in &row.check {
                let named = |m: &str| bad(row, format!("check `{}`: {m}", c.name));
                if c.metric.is_empty() {
                    return Err(named("needs a `metric`"));
                }
                if !(c.tolerance.is_finite() && c.tolerance >= 0.0) {
                    return Err(named("`tolerance` must be a number ≥ 0"));
                }
                match c.relation {
                    Relation::Direction if c.over.is_none() => {
                        return Err(named("`direction` needs `over` (its denominator)"))
                    }
                    Relation::Monotone if c.axis.is_none() => {
                        return Err(named("`monotone` needs `axis`"))
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// The rows to run: all, or those `--rows` names (in the file's order), or the quick
    /// subset.
    pub fn select(&self, ids: &[String], quick: bool) -> Result<Vec<&RowSpec>, RowsError> {
        for id in ids {
            if !self.row.iter().any(|r| &r.id == id) {
                return Err(RowsError::UnknownRow {
                    wanted: id.clone(),
                    known: self
                        .row
                        .iter()
                        .map(|r| r.id.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                });
            }
        }
        Ok(self
            .row
            .iter()
            .filter(|r| ids.is_empty() || ids.contains(&r.id))
            .filter(|r| !quick || !ids.is_empty() || r.quick)
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The message a row file is refused with.
    fn refused(text: &str) -> String {
        RowsFile::parse(Path::new("r"), text)
            .unwrap_err()
            .to_string()
    }

    const GOOD: &str = r#"
[[row]]
id = "5"
title = "flush"
profile = "profiles/fidelity/flush.toml"
quick = true
[[row.check]]
name = "sync/async"
relation = "direction"
tolerance = 0.5
metric = "ok_rate"
where = { "broker.flushDiskType" = "SYNC_FLUSH" }
over = { where = { "broker.flushDiskType" = "ASYNC_FLUSH" } }

[[row]]
id = "8"
title = "paused slave"
not_run = "master/slave on Apache: not yet"
"#;

    #[test]
    fn a_row_file_parses_and_selects() {
        let f = RowsFile::parse(Path::new("rows.toml"), GOOD).unwrap();
        assert_eq!(f.row.len(), 2);
        assert_eq!(f.row[0].check[0].relation, Relation::Direction);
        let quick: Vec<&str> = f
            .select(&[], true)
            .unwrap()
            .iter()
            .map(|r| r.id.as_str())
            .collect();
        assert_eq!(quick, ["5"]);
        assert_eq!(f.select(&[], false).unwrap().len(), 2);
        assert_eq!(f.select(&["8".into()], true).unwrap()[0].id, "8");
        let e = f.select(&["9".into()], false).unwrap_err().to_string();
        assert!(e.contains("rows: 5, 8"), "{e}");
    }

    #[test]
    fn rates_from_a_figure_ramp_then_overload() {
        let r = RateFrom {
            factor: 1.5,
            ramp: vec![0.5, 1.0],
            stair: "10s".into(),
            ..RateFrom::default()
        };
        assert_eq!(
            r.steps(1000.0),
            "[{ rate = 500, duration = \"10s\" }, { rate = 1000, duration = \"10s\" }, { rate = 1500, duration = \"10s\" }]"
        );
        let later = format!("{GOOD}\n[row.rate_from]\nrow = \"9\"\nmetric = \"knee_rate\"\nfactor = 1.5\nstair = \"10s\"\n");
        let e = refused(&later);
        assert!(e.contains("earlier row"), "{e}");
    }

    #[test]
    fn contradictions_are_refused() {
        let no_over = GOOD.replace(
            "over = { where = { \"broker.flushDiskType\" = \"ASYNC_FLUSH\" } }",
            "",
        );
        let e = refused(&no_over);
        assert!(e.contains("needs `over`"), "{e}");
        let neg = GOOD.replace("tolerance = 0.5", "tolerance = -1");
        assert!(RowsFile::parse(Path::new("r"), &neg).is_err());
        let nothing = GOOD.replace("not_run = \"master/slave on Apache: not yet\"", "");
        let e = refused(&nothing);
        assert!(e.contains("row 8"), "{e}");
        let typo = GOOD.replace("tolerance = 0.5", "tolerence = 0.5");
        assert!(RowsFile::parse(Path::new("r"), &typo).is_err());
    }

    #[test]
    fn brokers_alternate_unless_a_row_runs_them_side_by_side() {
        let f = RowsFile::parse(Path::new("r"), GOOD).unwrap();
        assert_eq!(f.row[0].brokers, Brokers::Alternating);
        let side = GOOD.replace("quick = true", "quick = true\nbrokers = \"side_by_side\"");
        let f = RowsFile::parse(Path::new("r"), &side).unwrap();
        assert_eq!(f.row[0].brokers, Brokers::SideBySide);
        let typo = GOOD.replace("quick = true", "quick = true\nbrokers = \"side-by-side\"");
        let e = refused(&typo);
        assert!(e.contains("side_by_side"), "{e}");
        // Two ways of running a row's brokers: refused.
        let both = side.replace(
            "\n[[row]]\nid = \"8\"",
            "[row.rate_from]\nrow = \"8\"\nmetric = \"knee_rate\"\nfactor = 1.5\nstair = \"8s\"\n\n[[row]]\nid = \"8\"",
        );
        let e = refused(&both);
        assert!(e.contains("row 5") && e.contains("keep one"), "{e}");
    }
}
