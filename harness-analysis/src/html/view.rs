//! One result folder as the report sees it: its CSVs as written, its cell labels and `[slo]`
//! from run.json, and its latency intervals.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::error::ReportError;
use super::hlog::{Intervals, JobKey};
use super::table::Table;

/// A loaded result folder.
pub struct RunView {
    pub dir: PathBuf,
    pub profile: String,
    pub summary: Table,
    /// Empty when the run has no timeseries.csv.
    pub series: Table,
    pub intervals: Intervals,
    pub key_metric: String,
    /// cell_id → label from run.json (falls back to the id).
    pub labels: BTreeMap<String, String>,
    /// `(column, limit, term)` of every `[slo]` term of the form `column CMP number`.
    pub slo_limits: Vec<(String, f64, String)>,
    /// cell_id → the consumers' flow-control thresholds (cells with a `[consumer]` table).
    pub thresholds: BTreeMap<String, Thresholds>,
    /// The profile's brokers replicate (`[cluster] slaves = 1`): its cells get the replication
    /// picture (a lone master reports its HA keys too, as zeros).
    pub pairs: bool,
}

/// A cell's push-consumer pull thresholds as run.json records them, over all its queues.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Thresholds {
    /// Cached messages at which the count gate starts delaying pulls (all queues together).
    pub messages: Option<f64>,
    /// Cached body MiB at which the size gate starts (all queues together).
    pub mib: Option<f64>,
}

impl Thresholds {
    /// RocketMQ applies pullThresholdForQueue / pullThresholdSizeForQueue per process queue;
    /// the report's cache is the sum over queues, so the line is the per-queue limit × queues.
    /// A topic-wide limit (not -1) replaces it: the client divides it over its queues, so
    /// every instance holds at most the topic limit.
    fn from_json(consumer: &serde_json::Value, queues: f64) -> Thresholds {
        let limit = |queue: &str, topic: &str| {
            let instances = consumer["instances"].as_f64().unwrap_or(1.0).max(1.0);
            match consumer[topic].as_f64() {
                Some(t) if t >= 0.0 => Some(t * instances),
                _ => consumer[queue]
                    .as_f64()
                    .filter(|q| *q >= 0.0)
                    .map(|q| q * queues),
            }
        };
        Thresholds {
            messages: limit("pull_threshold_for_queue", "pull_threshold_for_topic"),
            mib: limit(
                "pull_threshold_size_for_queue",
                "pull_threshold_size_for_topic",
            ),
        }
    }
}

/// A job: one cell and repetition.
pub type Job = (String, String);

impl RunView {
    pub fn load(dir: &Path) -> Result<RunView, ReportError> {
        let summary_path = dir.join("summary.csv");
        if !summary_path.is_file() {
            return Err(ReportError::NotARun {
                path: dir.to_owned(),
            });
        }
        let summary = Table::read(&summary_path)?;
        let series_path = dir.join("timeseries.csv");
        let series = if series_path.is_file() {
            Table::read(&series_path)?
        } else {
            Table::default()
        };
        let intervals = Intervals::read(&dir.join("latency.hlog"))?;
        let run_json: serde_json::Value = std::fs::read_to_string(dir.join("run.json"))
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default();
        let profile_json = &run_json["profile"];
        let labels = run_json["cells"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| {
                Some((
                    c["cell_id"].as_str()?.to_owned(),
                    c["label"].as_str()?.to_owned(),
                ))
            })
            .collect();
        let thresholds = run_json["cells"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|c| c["consumer"].is_object())
            .filter_map(|c| {
                let queues = c["workload"]["queues"].as_f64().unwrap_or(1.0).max(1.0);
                Some((
                    c["cell_id"].as_str()?.to_owned(),
                    Thresholds::from_json(&c["consumer"], queues),
                ))
            })
            .collect();
        let parsed = profile_json["text"].as_str().and_then(|text| {
            harness_model::profile::Profile::parse(text, "run.json", Path::new("run.json"), &[])
                .ok()
        });
        let pairs = parsed
            .as_ref()
            .and_then(|p| p.cluster.as_ref())
            .is_some_and(|c| c.slaves > 0);
        let slo_limits = parsed
            .and_then(|p| p.slo)
            .map(|slo| {
                slo.terms
                    .iter()
                    .filter_map(|t| {
                        t.column_limit()
                            .map(|(c, v)| (c.to_owned(), v, t.text.clone()))
                    })
                    .collect()
            })
            .unwrap_or_default();
        let profile = match summary.rows.first() {
            Some(r) => summary.text(r, "profile").to_owned(),
            None => String::new(),
        };
        Ok(RunView {
            dir: dir.to_owned(),
            profile,
            key_metric: profile_json["key_metric"]
                .as_str()
                .unwrap_or("ok_rate")
                .to_owned(),
            summary,
            series,
            intervals,
            labels,
            slo_limits,
            thresholds,
            pairs,
        })
    }

    /// Whether this is a knee run (its rows carry `slo_met`).
    pub fn is_knee(&self) -> bool {
        self.summary
            .rows
            .iter()
            .any(|r| !self.summary.text(r, "slo_met").is_empty())
    }

    pub fn label(&self, cell_id: &str) -> String {
        self.labels
            .get(cell_id)
            .cloned()
            .unwrap_or_else(|| cell_id.to_owned())
    }

    /// The jobs in the order of summary.csv.
    pub fn jobs(&self) -> Vec<Job> {
        let mut jobs: Vec<Job> = Vec::new();
        for r in &self.summary.rows {
            let j = (
                self.summary.text(r, "cell_id").to_owned(),
                self.summary.text(r, "repetition").to_owned(),
            );
            if !jobs.contains(&j) {
                jobs.push(j);
            }
        }
        jobs
    }

    /// The summary rows of one job.
    pub fn job_rows(&self, job: &Job) -> Vec<&Vec<String>> {
        self.summary
            .rows
            .iter()
            .filter(|r| {
                self.summary.text(r, "cell_id") == job.0
                    && self.summary.text(r, "repetition") == job.1
            })
            .collect()
    }

    /// The seconds of one job (every phase), in file order.
    pub fn job_seconds(&self, job: &Job) -> Vec<&Vec<String>> {
        self.series
            .rows
            .iter()
            .filter(|r| {
                self.series.text(r, "cell_id") == job.0
                    && self.series.text(r, "repetition") == job.1
            })
            .collect()
    }

    /// The step whose latency the spectrum shows: the knee probe's in a knee run (its last
    /// passing probe at `knee_rate`), else None (the whole job).
    pub fn spectrum_step(&self, job: &Job) -> Option<String> {
        let s = &self.summary;
        self.job_rows(job)
            .into_iter()
            .rev()
            .find(|r| {
                s.text(r, "slo_met") == "true"
                    && s.num(r, "knee_rate").is_some()
                    && s.num(r, "target_rate") == s.num(r, "knee_rate")
            })
            .map(|r| s.text(r, "step").to_owned())
    }

    /// The job's latency over its measured seconds (warm-up and drain skipped), as spectrum
    /// points; in a knee run, at the knee probe.
    pub fn spectrum(&self, job: &Job) -> Option<Vec<(f64, f64)>> {
        let step = self.spectrum_step(job);
        if self.is_knee() && step.is_none() {
            return None;
        }
        let seconds: Vec<&Vec<String>> = self
            .job_seconds(job)
            .into_iter()
            .filter(|r| {
                step.as_deref()
                    .is_none_or(|p| self.series.text(r, "step") == p)
            })
            .collect();
        let count = |phase: &str| {
            seconds
                .iter()
                .filter(|r| self.series.text(r, "phase") == phase)
                .count()
        };
        let key: JobKey = (job.0.clone(), job.1.clone(), step);
        let h = self
            .intervals
            .merged(&key, count("warmup"), count("measure"))?;
        Some(super::hlog::spectrum(&h))
    }
}
