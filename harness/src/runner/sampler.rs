//! The sampling loop of one job: the load runs while this thread takes one interval per second
//! (our counts and histograms, broker CPU/RSS, harness CPU, the broker's runtime info), then
//! compares the broker's own busy counters with ours. The job's parts (`crate::part`: consumers,
//! faults, cluster routing, replication and order columns) ride along through their hooks.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::cluster::job::JobCluster;
use crate::consumer::ConsumerFigures;
use crate::kind::Member;
use crate::part::{Brokers, JobColumns, JobParts, LoadStarted};
use crate::proc::cpu::self_cpu_time;
use crate::recorder::{quantile, BusyClass, Interval, Recorder};
use crate::report::{FaultColumns, OrderColumns, Resources};
use crate::runner::broker_sampler::BrokerSampler;
use crate::runner::context::Ctx;
use crate::runner::job_error::JobError;
use crate::runner::load::LoadHandle;
use crate::runner::plan::LoadConfig;
use crate::runner::rows::JobRows;
use crate::runner::sample::{timeseries_row, Sample};
use crate::runner::store_disk::store_disk_mb;
use harness_model::matrix::Cell;
use rmq_client::admin::AdminConn;

fn counter(info: &BTreeMap<String, String>, key: &str) -> Option<u64> {
    info.get(key).and_then(|v| v.trim().parse().ok())
}

/// The brokers one job's load runs against: the address that answers admin requests, the
/// broker the job owns (None for a cluster or one that runs already), the job's cluster, every
/// broker pid to sample, and the store folders of brokers the job started (for their size).
pub struct JobBrokers<'a> {
    pub addr: SocketAddr,
    pub process: Option<&'a mut Box<dyn Member>>,
    pub cluster: Option<&'a mut JobCluster>,
    pub pids: &'a [u32],
    pub store_dirs: Option<&'a Path>,
}

/// What [`drive`] measures for the job's rows.
pub struct JobOutput {
    /// Broker names in router order (a cluster's per-broker columns).
    pub broker_names: Vec<String>,
    pub samples: Vec<Sample>,
    pub recorder: Recorder,
    pub res: Resources,
    pub interrupted: bool,
    pub consumer: Option<ConsumerFigures>,
    pub order: OrderColumns,
    pub fault: FaultColumns,
}

impl JobOutput {
    /// Nothing measured yet, a recorder for `segments` segments.
    pub fn new(segments: usize) -> JobOutput {
        JobOutput {
            broker_names: Vec::new(),
            samples: Vec::new(),
            recorder: Recorder::new(segments),
            res: Resources::default(),
            interrupted: false,
            consumer: None,
            order: OrderColumns::default(),
            fault: FaultColumns::default(),
        }
    }
}

/// Topic, baseline counters, the load with per-second sampling, final counters. The job's
/// parts (`crate::part`) are called at each step; this loop knows none of them by name.
pub fn drive(
    ctx: &Ctx,
    cell: &Cell,
    repetition: u32,
    brokers: JobBrokers<'_>,
    parts: &mut JobParts,
    out: &mut JobOutput,
) -> Result<(), JobError> {
    let JobBrokers {
        addr,
        process,
        cluster,
        pids: broker_pids,
        store_dirs,
    } = brokers;
    let mut members = Brokers { process, cluster };
    let JobOutput {
        broker_names,
        samples,
        recorder,
        res,
        interrupted,
        consumer: consumer_figures,
        order: order_cols,
        fault: fault_cols,
    } = out;
    let harness_cpus = ctx.harness_cpus();
    let w = &cell.workload;
    let mut cfg = LoadConfig::new(addr, w).spread(ctx.opts.spread.shard, ctx.job_start);
    // A cluster's routing may point the load (and the admin requests) at its broker 0.
    parts.prepare(&mut members, &mut cfg)?;
    *broker_names = parts.board.broker_names.clone();
    let addr = cfg.addr;
    let mut admin = AdminConn::connect(addr, Duration::from_secs(2)).map_err(JobError::Admin)?;
    if w.create_topic && cfg.cluster.is_none() {
        admin
            .create_topic(&w.topic, w.queues, Duration::from_secs(5))
            .map_err(|source| JobError::CreateTopic {
                topic: w.topic.clone(),
                source,
            })?;
    }
    let info_timeout = Duration::from_millis(300);
    // A cluster: every broker's counters summed; broker 0 answers the other admin requests.
    let baseline = match members.cluster.as_deref() {
        Some(c) => c.runtime_info_sum(Duration::from_secs(2)),
        None => admin.runtime_info(info_timeout).ok(),
    };
    let mut brokers = BrokerSampler::new(broker_pids);
    let namesrv = members.cluster.as_deref().map(|c| c.namesrv);
    let mut second = 0u64;
    {
        let row_cfg = cfg.clone();
        let job = (cell, repetition);
        let mut rows = JobRows::new(ctx, job, &row_cfg, &mut second, Some(&mut brokers));
        parts.before_load(baseline.as_ref(), namesrv, &mut cfg, &mut rows)?;
    }
    let total_secs = cfg.total().as_secs();
    let bar = ctx
        .progress
        .cell_bar(&format!("{} r{repetition}", cell.id), total_secs);
    let load = LoadHandle::start(cfg.clone())?;
    let schedule_start = load.start.saturating_duration_since(ctx.run_start);
    parts.load_started(LoadStarted {
        addr,
        workload: w,
        keys: &load.keys,
        start: load.start,
        cfg: &cfg,
    });
    let mut crashed = None;
    let mut last_cpu = self_cpu_time();
    let mut last_spin = 0u64;
    let mut last_t = Instant::now();
    let mut next = load.start + Duration::from_secs(1);
    // One interval for the whole job, refilled every second: no per-second allocation.
    let mut interval = Interval::default();
    loop {
        let finished = load.is_finished();
        // After the load, seconds go on while a part is busy (a broker still restarting), so
        // the outage has its rows; a run being stopped does not wait.
        let waiting = finished && parts.busy() && !*interrupted;
        if (!finished || waiting) && Instant::now() < next {
            let mut nap = Duration::from_millis(20);
            if let Some(due) = parts.next_due() {
                nap = nap.min(due.saturating_duration_since(Instant::now()));
            }
            std::thread::sleep(nap);
            if ctx.opts.cancel.is_cancelled() && !*interrupted {
                *interrupted = true;
                load.stop();
            }
            if let Err(e) = parts.tick(Instant::now(), &mut members) {
                crashed.get_or_insert(e.into());
                load.stop();
            }
            if let Some(pid) = members.process.as_deref().and_then(|p| p.pid()) {
                brokers.follow(pid);
            }
            let replaced = parts.board.replaced;
            if let (Some(k), Some(c)) = (replaced, members.cluster.as_deref_mut()) {
                if let Some(pid) = c.broker_mut(k).and_then(|p| p.pid()) {
                    brokers.follow_at(k, pid);
                }
            }
            let down = parts.board.down;
            let expected_dead = down.is_some();
            let dead_broker = down.map(|d| d.broker);
            // A member of a pair killed on purpose is not a crash (its pair is read back after).
            let pair_dead = down.is_some_and(|d| d.pair_member);
            if crashed.is_none() && !pair_dead {
                if let Some(st) = members
                    .process
                    .as_mut()
                    .filter(|_| !expected_dead)
                    .and_then(|p| p.exited())
                {
                    let why = format!("broker exited mid-cell ({st}); see broker.log");
                    crashed = Some(JobError::BrokerExited(why));
                    load.stop();
                } else if let Some(why) = members
                    .cluster
                    .as_mut()
                    .and_then(|c| c.crashed(dead_broker))
                {
                    crashed = Some(JobError::BrokerExited(why));
                    load.stop();
                }
            }
            continue;
        }
        next += Duration::from_secs(1);
        second += 1;
        load.take_interval_into(&mut interval);
        let now = Instant::now();
        // One wall-clock reading for the row and the log: `harness merge` matches them.
        let wall_clock = SystemTime::now();
        let cpu = self_cpu_time();
        let spin = load.spin_ns();
        let wall = (now - last_t).as_secs_f64().max(1e-3);
        // Spin-waiting included: the rest of the machine is what neither process used.
        let harness_s = cpu.saturating_sub(last_cpu).as_secs_f64();
        let busy_cpu = (harness_s - (spin - last_spin) as f64 / 1e9).max(0.0);
        let harness_cpu = busy_cpu / wall / harness_cpus * 100.0;
        let interval_start = last_t;
        (last_cpu, last_spin, last_t) = (cpu, spin, now);
        let elapsed = now
            .saturating_duration_since(load.start)
            .saturating_sub(Duration::from_millis(500));
        let segment =
            cfg.phase_at(elapsed)
                .map(|p| p.segment)
                .or(if finished { None } else { Some(0) });
        let broker_second = brokers.sample();
        let mut info = admin.runtime_info(info_timeout).ok();
        if info.is_none() && parts.board.restarting {
            // A kill broke the admin connection; a restarted broker answers a new one.
            if let Ok(a) = AdminConn::connect(addr, Duration::from_millis(200)) {
                admin = a;
                info = admin.runtime_info(info_timeout).ok();
            }
        }
        let p99 = quantile(&interval.latency, 0.99) as f64 / 1000.0;
        let msg = format!(
            "rate {}/s ok {} busy {} tmo {} drop {} p99 {p99:.3} ms lag p99 {} µs",
            interval.written,
            interval.counts.ok,
            interval.counts.busy_total(),
            interval.counts.timeouts,
            interval.counts.dropped,
            quantile(&interval.lag, 0.99)
        );
        match &bar {
            Some(b) => {
                b.set_position(second.min(total_secs));
                b.set_message(msg);
            }
            None => ctx
                .progress
                .line(&format!("  [{} r{repetition} {second}s] {msg}", cell.id)),
        }
        let sample = Sample {
            partial: wall < 0.5,
            drain: finished && interval_start >= load.start + cfg.total(),
            second,
            segment: segment.or(Some(cfg.phases.last().map_or(0, |p| p.segment))),
            broker: broker_second.usage,
            broker_cpu_s: broker_second.cpu_s,
            broker_jit_s: broker_second.jit_s,
            other_cpu: broker_second.other_cpu(harness_s, wall),
            steal_cpu: broker_second.steal_cpu(wall),
            harness_cpu,
            ok_per_s: interval.counts.ok as f64 / wall,
            harness_rss_mb: crate::proc::cpu::self_rss_mb(),
            store_disk_mb: store_dirs.and_then(store_disk_mb),
            end_unix_s: wall_clock
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default()
                .as_secs_f64(),
        };
        // The second goes to disk now and only its few summary figures stay in memory: a
        // one-hour soak must not hold an hour of histograms.
        let mut row = timeseries_row(
            &ctx.profile.name,
            cell,
            repetition,
            &cfg,
            &sample,
            &interval,
            info.as_ref(),
        );
        // The parts' histograms of the second go to the log before the load's own.
        let mut part_hists = Vec::new();
        let measuring = segment.is_some_and(|g| g > 0);
        parts.second(
            info.as_ref(),
            (finished, measuring),
            &mut part_hists,
            &mut row,
        );
        let start = wall_clock
            .duration_since(ctx.run_start_wall)
            .unwrap_or_default()
            .as_secs_f64()
            - 1.0;
        let mut tag_base = crate::report::hlog_totals::job_tag(&cell.id, repetition);
        if let Some(step) = ctx.probe.and_then(|p| p.step()) {
            row.key.step = Some(step);
            tag_base.push_str(&format!("/p{step}"));
        }
        if ctx.records() {
            let mut streams = ctx.streams.lock();
            for (name, h) in &part_hists {
                streams
                    .hlog
                    .push(&format!("{tag_base}/{name}"), start, 1.0, h);
            }
            for (name, h) in [
                ("latency", &interval.latency),
                ("service", &interval.service),
                ("lag", &interval.lag),
                ("busy_latency", &interval.busy_latency),
            ] {
                if !h.is_empty() {
                    streams
                        .hlog
                        .push(&format!("{tag_base}/{name}"), start, 1.0, h);
                }
            }
            streams
                .hlog
                .flush_second()
                .and_then(|()| streams.series.append(&row))
                .map_err(JobError::Series)?;
        }
        samples.push(sample);
        if finished && !waiting {
            break;
        }
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    *recorder = load.join();
    if ctx.records() {
        let phases: Vec<(usize, Duration)> =
            cfg.phases.iter().map(|p| (p.segment, p.duration)).collect();
        crate::report::hlog_totals::push_segment_totals(
            &mut ctx.streams.lock().hlog,
            &cell.id,
            repetition,
            schedule_start,
            &phases,
            &recorder.segments,
        )
        .map_err(JobError::SegmentHistograms)?;
    }
    {
        let mut rows = JobRows::new(ctx, (cell, repetition), &cfg, &mut second, None);
        parts.drain(*interrupted || crashed.is_some(), &mut rows)?;
    }

    // Resources over the measured seconds.
    let measured: Vec<&Sample> = samples
        .iter()
        .filter(|s| s.segment.is_some_and(|g| g > 0) && !s.partial)
        .collect();
    let cpus: Vec<f64> = measured
        .iter()
        .filter_map(|s| s.broker.map(|b| b.0))
        .collect();
    if !cpus.is_empty() {
        res.broker_cpu_avg = Some(cpus.iter().sum::<f64>() / cpus.len() as f64);
        res.broker_cpu_max = cpus.iter().copied().reduce(f64::max);
    }
    res.broker_rss_max_mb = samples
        .iter()
        .filter_map(|s| s.broker.map(|b| b.1))
        .reduce(f64::max);
    res.harness_cpu_max = measured.iter().map(|s| s.harness_cpu).reduce(f64::max);

    // The broker's own busy counters against ours, over the whole job (warm-up included).
    let last = match members.cluster.as_deref() {
        Some(c) => c.runtime_info_sum(Duration::from_secs(2)),
        None => admin.runtime_info(Duration::from_secs(2)).ok(),
    };
    if let (Some(b), Some(l)) = (&baseline, &last) {
        let delta = |k: &str| Some(counter(l, k)?.saturating_sub(counter(b, k).unwrap_or(0)));
        res.broker_flow_control_total = delta("flowControlTotal");
        let mut all = true;
        let mut known = false;
        for class in BusyClass::ALL {
            if class == BusyClass::Other {
                continue;
            }
            let ours: u64 = recorder
                .segments
                .iter()
                .map(|s| s.attempt_busy[class.index()])
                .sum();
            let theirs: Option<u64> = class.broker_counters().iter().map(|k| delta(k)).sum();
            if let Some(t) = theirs {
                known = true;
                all &= t == ours;
            }
        }
        res.broker_counters_match = known.then_some(all);
    }
    let cols = JobColumns {
        res,
        order: order_cols,
        consumer: consumer_figures,
        fault: fault_cols,
    };
    if let Err(e) = parts.finish(cols) {
        crashed.get_or_insert(e.into());
    }
    match crashed {
        Some(c) => Err(c),
        None => Ok(()),
    }
}
