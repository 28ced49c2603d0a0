//! `run.json`: how a result folder was produced (provenance, the profile text, each cell's
//! effective broker.conf). Written before the first job and rewritten after every job, so a
//! crash at any point leaves the record of what was being measured; `status` says how far the
//! run got.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;

use serde_json::{json, Value};

use crate::provenance::Provenance;
use harness_model::fnv::fnv1a64;
use harness_model::matrix::Cell;
use harness_model::profile::Profile;
use harness_model::shard::Spread;

/// Everything `run.json` records.
pub struct RunRecord<'a> {
    pub provenance: &'a Provenance,
    /// CPUs the harness was allowed to use.
    pub cores: usize,
    pub start: &'a str,
    /// None while the run is going.
    pub end: Option<&'a str>,
    pub command_line: &'a str,
    pub target: Option<SocketAddr>,
    pub broker_bin: Option<&'a Path>,
    /// FNV-1a 64 of `broker_bin`'s bytes ([`crate::provenance::file_hash`]).
    pub broker_bin_hash: Option<&'a str>,
    /// Each kind of broker the run started or drove, once: kind, version, program, checksum,
    /// runtime (`java -version` for Apache RocketMQ).
    pub brokers: &'a [Value],
    /// (broker CPUs, harness CPUs).
    pub pinning: Option<&'a (Vec<usize>, Vec<usize>)>,
    pub profile: &'a Profile,
    /// The profile file as it was when the run started (read once, not per rewrite).
    pub profile_text: &'a str,
    /// From [`cell_json`], in cell order.
    pub cells: &'a [Value],
    pub jobs_planned: usize,
    pub jobs_done: usize,
    pub status: RunStatus,
    /// `--shard` and `--start-at`.
    pub spread: &'a Spread,
}

/// How far a run got; `running` in a folder whose process is gone means it crashed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunStatus {
    Running,
    Finished,
    Interrupted,
}

impl RunStatus {
    fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Finished => "finished",
            RunStatus::Interrupted => "interrupted",
        }
    }
}

impl RunRecord<'_> {
    pub fn to_json(&self) -> serde_json::Result<String> {
        let profile = self.profile;
        let value = json!({
            "harness_revision": self.provenance.harness_revision,
            "harness_tree": self.provenance.harness_tree.as_json(),
            "harness_bin_fnv1a64": self.provenance.harness_bin_hash,
            "host": self.provenance.host,
            "cores": self.cores,
            "kernel": self.provenance.kernel,
            "start": self.start,
            "end": self.end,
            "command_line": self.command_line,
            "target": self.target.map(|a| a.to_string()),
            "broker_bin": self.broker_bin.map(|p| p.display().to_string()),
            "broker_bin_fnv1a64": self.broker_bin_hash,
            "brokers": self.brokers,
            "pinning": self.pinning.map(|(b, h)| json!({"broker_cpus": b, "harness_cpus": h})),
            "pin_requested": profile.pin,
            "profile": {
                "name": profile.name, "path": profile.path.display().to_string(), "description": profile.description,
                "repetitions": profile.repetitions, "order": profile.order, "seed": profile.seed, "key_metric": profile.key_metric,
                "validity": profile.validity, "text": self.profile_text,
            },
            "cells": self.cells,
            "jobs_planned": self.jobs_planned,
            "jobs_done": self.jobs_done,
            "status": self.status.as_str(),
            "interrupted": self.status == RunStatus::Interrupted,
            "shard": self.spread.shard.index,
            "shards": self.spread.shard.count,
            "start_at": self.spread.start_at.map(|s| humantime::format_rfc3339_millis(s.at).to_string()),
            "start_skew_ms": self.spread.start_at.map(|s| s.skew.as_millis() as u64),
        });
        serde_json::to_string_pretty(&value)
    }
}

/// One cell's entry: its parameters, workload and effective broker.conf with the conf's hash.
pub fn cell_json(cell: &Cell, conf: &BTreeMap<String, String>) -> Value {
    let text: String = conf.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
    let hash = format!("{:016x}", fnv1a64(text.as_bytes()));
    json!({
        "cell_id": cell.id, "label": cell.label, "params": cell.params.iter().cloned().collect::<BTreeMap<_, _>>(),
        "workload": cell.workload, "broker_conf": conf, "broker_conf_hash": hash,
        "consumer": cell.consumer,
    })
}
