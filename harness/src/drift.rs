//! `harness drift RUN_DIR`: does a long run stay the same from its first minute to its last?
//!
//! A soak is only worth its hour if the broker and the generator are the same at the end as at
//! the start. For every job in `timeseries.csv` this compares the first and the last window of
//! measured seconds: the ok rate, the per-second p99, the broker's RSS and the harness's own
//! RSS. `--max-harness-rss-growth-mb` turns the last into a check (exit 1 when exceeded), which
//! is how `make soak` holds the generator to flat memory.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use crate::compare::load::{load, Second};

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
const METRICS: [(&str, &str); 4] = [
    ("ok/s", "ok"),
    ("p99 ms", "p99_ms"),
    ("broker RSS MiB", "broker_rss_mb"),
    ("harness RSS MiB", "harness_rss_mb"),
];

/// First-versus-last window figures of every job's measured seconds.
pub fn drift(seconds_by_job: &[(String, Vec<Second>)], window: Duration) -> Vec<Drift> {
    let mut out = Vec::new();
    for (job, secs) in seconds_by_job {
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

pub fn run_drift(args: &DriftArgs) -> anyhow::Result<ExitCode> {
    let data = load(&args.run).map_err(crate::exit::invalid)?;
    if data.series.is_empty() {
        return Err(crate::exit::invalid(anyhow::anyhow!(
            "{}: no measured seconds in timeseries.csv",
            args.run.display()
        )));
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
    let rows = drift(&jobs, args.window);
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
        "windows: the first and the last {}s of measured seconds of each job",
        args.window.as_secs()
    );
    if let Some(limit) = args.max_harness_rss_growth_mb {
        let worst = rows
            .iter()
            .filter(|r| r.metric == "harness RSS MiB")
            .filter_map(|r| r.change().map(|c| (c, &r.job)))
            .max_by(|a, b| a.0.total_cmp(&b.0));
        match worst {
            Some((growth, job)) if growth > limit => {
                println!("FAIL: harness RSS grew {growth:.1} MiB in {job} (limit {limit} MiB)");
                return Ok(ExitCode::from(crate::exit::VERDICT_NO));
            }
            Some((growth, _)) => {
                println!("PASS: harness RSS growth at most {growth:.1} MiB (limit {limit} MiB)")
            }
            None => {
                return Err(crate::exit::invalid(anyhow::anyhow!(
                    "{}: no harness_rss_mb values to check (written by harness runs since the streaming time series)",
                    args.run.display()
                )))
            }
        }
    }
    Ok(ExitCode::SUCCESS)
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
        let rows = drift(&[("job".into(), secs)], Duration::from_secs(5));
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
        let rows = drift(&[("job".into(), secs)], Duration::from_secs(60));
        let ok = rows.iter().find(|r| r.metric == "ok/s").unwrap();
        assert_eq!((ok.first, ok.last), (Some(0.5), Some(4.5)));
    }
}
