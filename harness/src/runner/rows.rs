//! The rows a job part writes itself (`crate::part::Rows`): the consumers' `backlog` seconds
//! before the load and their `drain` seconds after it, numbered on from the job's seconds.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use hdrhistogram::Histogram;

use crate::part::{PartError, Rows};
use crate::proc::cpu::{self_cpu_time, self_rss_mb};
use crate::recorder::Interval;
use crate::report::TimeseriesRow;
use crate::runner::broker_sampler::BrokerSampler;
use crate::runner::context::Ctx;
use crate::runner::plan::LoadConfig;
use crate::runner::sample::{timeseries_row, Sample};
use harness_model::matrix::Cell;

/// One job's extra rows.
pub struct JobRows<'a, 'c> {
    pub ctx: &'a Ctx<'c>,
    pub cell: &'a Cell,
    pub repetition: u32,
    pub cfg: &'a LoadConfig,
    /// The job's last second so far.
    pub second: &'a mut u64,
    /// The broker's processes (backlog rows only; drain rows sample no broker).
    pub brokers: Option<&'a mut BrokerSampler>,
    /// The harness's CPU time and the instant of the last backlog row.
    clock: (Duration, Instant),
    empty: Interval,
}

impl<'a, 'c> JobRows<'a, 'c> {
    pub fn new(
        ctx: &'a Ctx<'c>,
        (cell, repetition): (&'a Cell, u32),
        cfg: &'a LoadConfig,
        second: &'a mut u64,
        brokers: Option<&'a mut BrokerSampler>,
    ) -> Self {
        JobRows {
            ctx,
            cell,
            repetition,
            cfg,
            second,
            brokers,
            clock: (Duration::ZERO, Instant::now()),
            empty: Interval::default(),
        }
    }

    fn row(&self, sample: &Sample) -> TimeseriesRow {
        let name = &self.ctx.profile.name;
        timeseries_row(
            name,
            self.cell,
            self.repetition,
            self.cfg,
            sample,
            &self.empty,
            None,
        )
    }
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64()
}

impl Rows for JobRows<'_, '_> {
    fn begin_backlog(&mut self) {
        if let Some(b) = self.brokers.as_deref_mut() {
            b.sample();
        }
        self.clock = (self_cpu_time(), Instant::now());
    }

    fn backlog_row(&mut self) -> TimeseriesRow {
        *self.second += 1;
        let cores = std::thread::available_parallelism().map_or(1.0, |n| n.get() as f64);
        let (cpu, now) = (self_cpu_time(), Instant::now());
        let (last_cpu, last_t) = self.clock;
        let (harness_s, wall) = (
            cpu.saturating_sub(last_cpu).as_secs_f64(),
            (now - last_t).as_secs_f64().max(1e-3),
        );
        let harness_cpu = harness_s / wall / cores * 100.0;
        self.clock = (cpu, now);
        let broker = self
            .brokers
            .as_deref_mut()
            .map(BrokerSampler::sample)
            .unwrap_or_default();
        let sample = Sample {
            partial: false,
            drain: false,
            second: *self.second,
            segment: None,
            broker: broker.usage,
            broker_cpu_s: broker.cpu_s,
            broker_jit_s: broker.jit_s,
            other_cpu: broker.other_cpu(harness_s, wall),
            steal_cpu: broker.steal_cpu(wall),
            harness_cpu,
            ok_per_s: 0.0,
            harness_rss_mb: self_rss_mb(),
            store_disk_mb: None,
            end_unix_s: unix_now(),
        };
        self.row(&sample)
    }

    fn drain_row(&mut self) -> TimeseriesRow {
        *self.second += 1;
        let sample = Sample {
            partial: false,
            drain: true,
            second: *self.second,
            segment: self.cfg.phases.last().map(|p| p.segment),
            broker: None,
            broker_cpu_s: None,
            broker_jit_s: None,
            other_cpu: None,
            steal_cpu: None,
            harness_cpu: 0.0,
            ok_per_s: 0.0,
            harness_rss_mb: self_rss_mb(),
            store_disk_mb: None,
            end_unix_s: unix_now(),
        };
        self.row(&sample)
    }

    fn append(&mut self, row: &TimeseriesRow) -> Result<(), PartError> {
        // A warm-up window's seconds, drain included, stay out of the streams.
        if !self.ctx.records() {
            return Ok(());
        }
        let mut streams = self.ctx.streams.lock();
        streams.series.append(row).map_err(PartError::Series)
    }

    fn write_second(
        &mut self,
        row: &TimeseriesRow,
        hists: &[(&str, &Histogram<u64>)],
    ) -> Result<(), PartError> {
        if !self.ctx.records() {
            return Ok(());
        }
        let start = SystemTime::now()
            .duration_since(self.ctx.run_start_wall)
            .unwrap_or_default()
            .as_secs_f64()
            - 1.0;
        let tag_base = crate::report::hlog_totals::job_tag(&self.cell.id, self.repetition);
        let mut streams = self.ctx.streams.lock();
        for (name, h) in hists {
            streams
                .hlog
                .push(&format!("{tag_base}/{name}"), start, 1.0, h);
        }
        streams
            .hlog
            .flush_second()
            .and_then(|()| streams.series.append(row))
            .map_err(PartError::Series)
    }

    fn cancelled(&self) -> bool {
        self.ctx.opts.cancel.is_cancelled()
    }

    fn line(&self, text: &str) {
        self.ctx.progress.line(text);
    }
}
