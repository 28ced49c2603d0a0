//! `harness drift RUN_DIR`: does a long run stay the same from its first minute to its last?
//!
//! A soak is only worth its hour if the broker and the generator are the same at the end as at
//! the start. For every job in `timeseries.csv` this compares the first and the last window of
//! measured seconds: the ok rate, the per-second p99, the broker's RSS and the harness's own
//! RSS, and the broker's store folder. `--max-harness-rss-growth-mb`,
//! `--max-broker-rss-growth-mb` and `--max-store-growth-mb` turn those into checks (exit 1 when
//! exceeded), which is how `make soak` holds the generator, the broker's memory and its disk
//! flat. `--settle` starts the first window later: once retention deletes files, the store
//! and the broker's mapped pages stop growing, and only growth after that is a leak.

use std::path::PathBuf;
use std::time::Duration;

use harness_results::read::{load, LoadError, Second};

#[derive(clap::Args, Debug, Clone)]
pub struct DriftArgs {
    /// A result folder (or its summary.csv) with timeseries.csv.
    pub run: PathBuf,
    /// Length of the first and the last window ("60s", "5m"); shortened to a third of the
    /// measured seconds on shorter runs.
    #[arg(long, default_value = "60s", value_parser = humantime::parse_duration)]
    pub window: Duration,
    /// Fail (exit 1) when the harness's RSS grew by more than this many MiB between the windows.
    #[arg(long)]
    pub max_harness_rss_growth_mb: Option<f64>,
    /// Fail when the broker's RSS grew by more than this many MiB between the windows.
    #[arg(long)]
    pub max_broker_rss_growth_mb: Option<f64>,
    /// Fail when the store folder (`store_disk_mb`) grew by more than this many MiB.
    #[arg(long)]
    pub max_store_growth_mb: Option<f64>,
    /// Measured time skipped before the first window ("2m"): until retention runs, the store
    /// and the broker's mapped memory grow by design.
    #[arg(long, default_value = "0s", value_parser = humantime::parse_duration)]
    pub settle: Duration,
}

/// Why `harness drift` could not judge the run (exit 3, invalid input).
#[derive(Debug, thiserror::Error)]
pub enum DriftError {
    #[error(transparent)]
    Load(#[from] LoadError),
    #[error("{}: no measured seconds in timeseries.csv", run.display())]
    NoSeconds { run: PathBuf },
    #[error("{}: no {column} values to check", run.display())]
    NoValues { run: PathBuf, column: &'static str },
}

/// What the growth checks said (`harness` exits 0 or 1 on it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DriftVerdict {
    /// Every limit given held (or none was given).
    Within,
    /// At least one metric grew past its limit.
    Exceeded,
}

/// One metric of one job: its mean over the first and over the last window.
#[derive(Debug, Clone, PartialEq)]
pub struct Drift {
    pub job: String,
    pub metric: &'static str,
    pub first: Option<f64>,
    pub last: Option<f64>,
}

impl Drift {
    pub fn change(&self) -> Option<f64> {
        Some(self.last? - self.first?)
    }
}

/// The metrics compared, with the column each is read from.
const METRICS: [(&str, &str); 5] = [
    ("ok/s", "ok"),
    ("p99 ms", "p99_ms"),
    ("broker RSS MiB", "broker_rss_mb"),
    ("harness RSS MiB", "harness_rss_mb"),
    ("store MiB", "store_disk_mb"),
];

/// First-versus-last window figures of every job's measured seconds, after skipping the
/// first `settle` seconds of each (never more than two thirds of them).
pub fn drift(
    seconds_by_job: &[(String, Vec<Second>)],
    window: Duration,
    settle: Duration,
) -> Vec<Drift> {
    let mut out = Vec::new();
    for (job, secs) in seconds_by_job {
        let skip = (settle.as_secs() as usize).min(secs.len() * 2 / 3);
        let secs = &secs[skip..];
        let n = (window.as_secs().max(1) as usize)
            .min(secs.len() / 3)
            .max(1);
        if secs.is_empty() {
            continue;
        }
        let (first, last) = (
            &secs[..n.min(secs.len())],
            &secs[secs.len().saturating_sub(n)..],
        );
        for (metric, col) in METRICS {
            out.push(Drift {
                job: job.clone(),
                metric,
                first: mean(first, col),
                last: mean(last, col),
            });
        }
    }
    out
}

fn mean(secs: &[Second], col: &str) -> Option<f64> {
    let v: Vec<f64> = secs.iter().filter_map(|s| s.get(col)).collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// `harness drift`: prints the first-versus-last table and the checks' PASS/FAIL lines to
/// stdout, and says whether every limit held.
pub fn run_drift(args: &DriftArgs) -> Result<DriftVerdict, DriftError> {
    let data = load(&args.run)?;
    if data.series.is_empty() {
        return Err(DriftError::NoSeconds {
            run: args.run.clone(),
        });
    }
    let jobs: Vec<(String, Vec<Second>)> = data
        .series
        .iter()
        .map(|((cell, rep, step), secs)| {
            let step = if step.is_empty() {
                String::new()
            } else {
                format!(" step {step}")
            };
            (format!("{cell} r{rep}{step}"), secs.clone())
        })
        .collect();
    let rows = drift(&jobs, args.window, args.settle);
    let fmt = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{v:.1}"));
    println!(
        "{:<22} {:<16} {:>12} {:>12} {:>10}",
        "job", "metric", "first", "last", "change"
    );
    for r in &rows {
        let pct = match (r.change(), r.first) {
            (Some(c), Some(f)) if f.abs() > 1e-9 => format!(" ({:+.1}%)", c / f * 100.0),
            _ => String::new(),
        };
        println!(
            "{:<22} {:<16} {:>12} {:>12} {:>10}{pct}",
            r.job,
            r.metric,
            fmt(r.first),
            fmt(r.last),
            r.change().map_or("-".to_owned(), |c| format!("{c:+.1}"))
        );
    }
    println!(
        "windows: the first and the last {}s of measured seconds of each job, after the first {}s",
        args.window.as_secs(),
        args.settle.as_secs()
    );
    let checks = [
        (
            "harness RSS MiB",
            "harness RSS",
            "harness_rss_mb",
            args.max_harness_rss_growth_mb,
        ),
        (
            "broker RSS MiB",
            "broker RSS",
            "broker_rss_mb",
            args.max_broker_rss_growth_mb,
        ),
        (
            "store MiB",
            "store folder",
            "store_disk_mb",
            args.max_store_growth_mb,
        ),
    ];
    let mut verdict = DriftVerdict::Within;
    for (metric, what, column, limit) in checks {
        let Some(limit) = limit else { continue };
        match check_growth(&rows, metric, limit) {
            Growth::Within(growth) => {
                println!("PASS: {what} growth at most {growth:.1} MiB (limit {limit} MiB)")
            }
            Growth::Over(growth, job) => {
                println!("FAIL: {what} grew {growth:.1} MiB in {job} (limit {limit} MiB)");
                verdict = DriftVerdict::Exceeded;
            }
            Growth::NoData => {
                return Err(DriftError::NoValues {
                    run: args.run.clone(),
                    column,
                })
            }
        }
    }
    Ok(verdict)
}

/// The worst growth of one metric over every job, against a limit.
#[derive(Debug, PartialEq)]
enum Growth {
    Within(f64),
    Over(f64, String),
    NoData,
}

fn check_growth(rows: &[Drift], metric: &str, limit: f64) -> Growth {
    let worst = rows
        .iter()
        .filter(|r| r.metric == metric)
        .filter_map(|r| r.change().map(|c| (c, &r.job)))
        .max_by(|a, b| a.0.total_cmp(&b.0));
    match worst {
        None => Growth::NoData,
        Some((g, job)) if g > limit => Growth::Over(g, job.clone()),
        Some((g, _)) => Growth::Within(g),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn second(ok: f64, rss: f64) -> Second {
        let mut s = Second::default();
        s.values.insert("ok".into(), Some(ok));
        s.values.insert("harness_rss_mb".into(), Some(rss));
        s
    }

    #[test]
    fn compares_the_first_and_last_window() {
        let secs: Vec<Second> = (0..30)
            .map(|i| second(100.0 + i as f64, 10.0 + i as f64 * 0.1))
            .collect();
        let rows = drift(
            &[("job".into(), secs)],
            Duration::from_secs(5),
            Duration::ZERO,
        );
        let ok = rows.iter().find(|r| r.metric == "ok/s").unwrap();
        assert_eq!(ok.first, Some(102.0)); // mean of 100..=104
        assert_eq!(ok.last, Some(127.0)); // mean of 125..=129
        let p99 = rows.iter().find(|r| r.metric == "p99 ms").unwrap();
        assert_eq!(p99.first, None);
        assert_eq!(p99.change(), None);
        let rss = rows.iter().find(|r| r.metric == "harness RSS MiB").unwrap();
        assert!((rss.change().unwrap() - 2.5).abs() < 1e-9);
    }

    #[test]
    fn a_short_run_uses_thirds() {
        let secs: Vec<Second> = (0..6).map(|i| second(i as f64, 0.0)).collect();
        let rows = drift(
            &[("job".into(), secs)],
            Duration::from_secs(60),
            Duration::ZERO,
        );
        let ok = rows.iter().find(|r| r.metric == "ok/s").unwrap();
        assert_eq!((ok.first, ok.last), (Some(0.5), Some(4.5)));
    }

    /// The store grows until retention starts, then saw-tooths around a level: skipping the
    /// fill makes the check see the level, and a store that keeps growing still fails.
    #[test]
    fn settle_skips_the_fill_and_growth_after_it_fails() {
        let store = |mb: f64| {
            let mut s = Second::default();
            s.values.insert("store_disk_mb".into(), Some(mb));
            s
        };
        // 60 s of fill to 600 MiB, then 120 s flat around it.
        let flat: Vec<Second> = (0..180)
            .map(|i| {
                store(if i < 60 {
                    i as f64 * 10.0
                } else {
                    600.0 + (i % 7) as f64
                })
            })
            .collect();
        let jobs = [("job".to_owned(), flat)];
        let rows = drift(&jobs, Duration::from_secs(30), Duration::ZERO);
        assert!(matches!(
            check_growth(&rows, "store MiB", 50.0),
            Growth::Over(..)
        ));
        let rows = drift(&jobs, Duration::from_secs(30), Duration::from_secs(60));
        assert!(matches!(
            check_growth(&rows, "store MiB", 50.0),
            Growth::Within(_)
        ));
        let leaking: Vec<Second> = (0..180).map(|i| store(i as f64 * 10.0)).collect();
        let rows = drift(
            &[("job".to_owned(), leaking)],
            Duration::from_secs(30),
            Duration::from_secs(60),
        );
        assert!(matches!(
            check_growth(&rows, "store MiB", 50.0),
            Growth::Over(..)
        ));
        assert_eq!(check_growth(&rows, "broker RSS MiB", 50.0), Growth::NoData);
    }
}
