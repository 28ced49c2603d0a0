//! The sampling loop of one job: the load runs while this thread takes one interval per second
//! (our counts and histograms, broker CPU/RSS, harness CPU, the broker's runtime info), then
//! compares the broker's own busy counters with ours.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::cluster::job::JobCluster;
use crate::consumer::ConsumerFigures;
use crate::fault::Injector;
use crate::kind::Member;
use crate::order::hook::JobOrder;
use crate::part::{JobColumns, JobPart, LoadStarted, Second};
use crate::proc::cpu::self_cpu_time;
use crate::recorder::{quantile, BusyClass, Interval, Recorder};
use crate::report::{OrderColumns, Resources};
use crate::runner::broker_sampler::BrokerSampler;
use crate::runner::consumer_hook;
use crate::runner::context::Ctx;
use crate::runner::load::LoadHandle;
use crate::runner::plan::LoadConfig;
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
        }
    }
}

/// Topic, baseline counters, the load with per-second sampling, final counters.
pub fn drive(
    ctx: &Ctx,
    cell: &Cell,
    repetition: u32,
    brokers: JobBrokers<'_>,
    mut fault: Option<&mut Injector>,
    out: &mut JobOutput,
) -> Result<(), String> {
    let JobBrokers {
        addr,
        mut process,
        mut cluster,
        pids: broker_pids,
        store_dirs,
    } = brokers;
    let JobOutput {
        broker_names,
        samples,
        recorder,
        res,
        interrupted,
        consumer: consumer_figures,
        order: order_cols,
    } = out;
    let harness_cpus = ctx.harness_cpus();
    let w = &cell.workload;
    // A cluster: topic on every broker, routes from the name server; broker 0 answers the
    // admin requests, every broker's process is sampled.
    let router = match cluster.as_mut() {
        Some(c) => Some(c.prepare(w)?),
        None => None,
    };
    let addr = router.as_ref().map_or(addr, |r| r.brokers[0].addr);
    if let Some(c) = &cluster {
        *broker_names = c.broker_names();
        if let Some(f) = fault.as_deref_mut() {
            crate::fault::cluster::resolve(f, c, &ctx.opts.broker_pids)?;
        }
    }
    let mut admin = AdminConn::connect(addr, Duration::from_secs(2))
        .map_err(|e| format!("admin connection: {e}"))?;
    if w.create_topic && router.is_none() {
        admin
            .create_topic(&w.topic, w.queues, Duration::from_secs(5))
            .map_err(|e| format!("creating topic {}: {e}", w.topic))?;
    }
    let info_timeout = Duration::from_millis(300);
    let baseline = match &cluster {
        Some(c) => c.runtime_info_sum(Duration::from_secs(2)),
        None => admin.runtime_info(info_timeout).ok(),
    };
    let mut ha = crate::ha::HaSampler::default();
    ha.baseline(baseline.as_ref());
    // The job's parts, in column order: each fills its own columns (see crate::part).
    let mut parts: Vec<Box<dyn JobPart>> = vec![Box::new(ha)];
    let mut brokers = BrokerSampler::new(broker_pids);
    let mut cfg = LoadConfig::new(addr, w).spread(ctx.opts.spread.shard, ctx.job_start);
    cfg.cluster = router;
    if let Some(f) = &fault {
        cfg.outcomes = Some(f.log.clone());
    }
    let namesrv = cluster.as_ref().map(|c| c.namesrv);
    let mut consumers = consumer_hook::start(ctx, cell, repetition, addr, namesrv, &mut cfg)?;
    let mut second = 0u64;
    let hooked = (consumers.as_mut(), &mut brokers);
    consumer_hook::backlog(ctx, cell, repetition, &cfg, hooked, &mut second)?;
    let consumer_mode = cell.consumer.as_ref().map(|c| c.mode);
    if let Some(order) = JobOrder::before_load(
        w,
        cfg.cluster.is_some(),
        consumers.as_ref().zip(consumer_mode),
    ) {
        parts.push(Box::new(order));
    }
    let total_secs = cfg.total().as_secs();
    let bar = ctx
        .progress
        .cell_bar(&format!("{} r{repetition}", cell.id), total_secs);
    let load = LoadHandle::start(cfg.clone()).map_err(|e| e.to_string())?;
    let schedule_start = load.start.saturating_duration_since(ctx.run_start);
    for p in &mut parts {
        p.load_started(LoadStarted {
            addr,
            workload: w,
            keys: &load.keys,
        });
    }
    if let Some(f) = fault.as_deref_mut() {
        let warmup = cfg.phases.first().map_or(Duration::ZERO, |p| p.duration);
        f.arm(load.start + warmup, load.start + cfg.total());
        f.keys = Some(load.keys.clone());
    }
    let mut crashed = None;
    let mut last_cpu = self_cpu_time();
    let mut last_spin = 0u64;
    let mut last_t = Instant::now();
    let mut next = load.start + Duration::from_secs(1);
    // One interval for the whole job, refilled every second: no per-second allocation.
    let mut interval = Interval::default();
    loop {
        let finished = load.is_finished();
        if !finished && Instant::now() < next {
            let mut nap = Duration::from_millis(20);
            if let Some(due) = fault.as_deref().and_then(Injector::next_due) {
                nap = nap.min(due.saturating_duration_since(Instant::now()));
            }
            std::thread::sleep(nap);
            if ctx.opts.cancel.is_cancelled() && !*interrupted {
                *interrupted = true;
                load.stop();
            }
            if let Some(f) = fault.as_deref_mut() {
                // `fault.role`: the member of broker 0's pair (never another broker: no pair,
                // no target, an error); else the job's one broker, or broker K of the cell (None
                // with --namesrv, signalled by pid).
                let k = f.broker_index();
                let target = match (f.role(), process.as_deref_mut()) {
                    (Some(role), _) => cluster.as_deref_mut().and_then(|c| c.pair_member(role)),
                    (None, Some(p)) => Some(p),
                    (None, None) => cluster.as_deref_mut().and_then(|c| c.broker_mut(k)),
                };
                if let Err(e) = f.tick(Instant::now(), target) {
                    crashed.get_or_insert(e);
                    load.stop();
                }
                if let Some(c) = consumers.as_mut() {
                    // On a cluster the consumers' recovery is broker K's queues'.
                    let name = f.faulted_name(broker_names);
                    c.follow_restarts(f.restarts(), Some(name.as_str()).filter(|n| !n.is_empty()));
                }
            }
            if let Some(pid) = process.as_deref().and_then(|p| p.pid()) {
                brokers.follow(pid);
            }
            if let (Some(f), Some(c)) = (fault.as_deref(), cluster.as_deref_mut()) {
                let k = f.broker_index();
                if let Some(pid) = c.broker_mut(k).and_then(|p| p.pid()) {
                    brokers.follow_at(k, pid);
                }
            }
            let expected_dead = fault.as_deref().is_some_and(Injector::broker_dead);
            let dead_broker = expected_dead
                .then(|| fault.as_deref().map(Injector::broker_index))
                .flatten();
            // A member of a pair killed on purpose is not a crash (its pair is read back after).
            let pair_dead = expected_dead && fault.as_deref().and_then(Injector::role).is_some();
            if crashed.is_none() && !pair_dead {
                if let Some(st) = process
                    .as_mut()
                    .filter(|_| !expected_dead)
                    .and_then(|p| p.exited())
                {
                    crashed = Some(format!("broker exited mid-cell ({st}); see broker.log"));
                    load.stop();
                } else if let Some(why) = cluster.as_mut().and_then(|c| c.crashed(dead_broker)) {
                    crashed = Some(why);
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
        let busy_cpu =
            (cpu.saturating_sub(last_cpu).as_secs_f64() - (spin - last_spin) as f64 / 1e9).max(0.0);
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
        let (broker_sample, broker_cpu_s) = brokers.sample();
        let mut info = admin.runtime_info(info_timeout).ok();
        if info.is_none() && fault.is_some() {
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
            broker: broker_sample,
            broker_cpu_s,
            harness_cpu,
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
        row.event = crate::fault::event_of(fault.as_deref_mut());
        let this = Second {
            info: info.as_ref(),
            last: finished,
        };
        for p in &mut parts {
            p.second(this, &mut row);
        }
        let start = wall_clock
            .duration_since(ctx.run_start_wall)
            .unwrap_or_default()
            .as_secs_f64()
            - 1.0;
        let mut tag_base = crate::report::hlog_totals::job_tag(&cell.id, repetition);
        if let Some(p) = &ctx.probe {
            row.key.step = Some(p.index);
            tag_base.push_str(&format!("/p{}", p.index));
        }
        {
            let mut streams = ctx.streams.lock();
            consumer_hook::second(
                consumers.as_mut(),
                segment.is_some_and(|g| g > 0),
                &mut row,
                |name, h| {
                    streams
                        .hlog
                        .push(&format!("{tag_base}/{name}"), start, 1.0, h)
                },
            );
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
                .map_err(|e| format!("writing the time series: {e}"))?;
        }
        samples.push(sample);
        if finished {
            break;
        }
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    *recorder = load.join();
    {
        let phases: Vec<(usize, Duration)> =
            cfg.phases.iter().map(|p| (p.segment, p.duration)).collect();
        crate::report::hlog_totals::push_segment_totals(
            &mut ctx.streams.lock().hlog,
            &cell.id,
            repetition,
            schedule_start,
            &phases,
            recorder,
        )
        .map_err(|e| format!("writing the segment histograms: {e}"))?;
    }
    let empty = Interval::default();
    *consumer_figures = consumer_hook::drain(
        ctx,
        consumers,
        *interrupted || crashed.is_some(),
        || {
            second += 1;
            let sample = Sample {
                partial: false,
                drain: true,
                second,
                segment: cfg.phases.last().map(|p| p.segment),
                broker: None,
                broker_cpu_s: None,
                harness_cpu: 0.0,
                harness_rss_mb: crate::proc::cpu::self_rss_mb(),
                store_disk_mb: None,
                end_unix_s: SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .unwrap_or_default()
                    .as_secs_f64(),
            };
            let name = &ctx.profile.name;
            let mut row = timeseries_row(name, cell, repetition, &cfg, &sample, &empty, None);
            let drained = Second {
                info: None,
                last: false,
            };
            for p in &mut parts {
                p.second(drained, &mut row);
            }
            row
        },
        |row, e2e, stored| {
            let start = SystemTime::now()
                .duration_since(ctx.run_start_wall)
                .unwrap_or_default()
                .as_secs_f64()
                - 1.0;
            let tag_base = crate::report::hlog_totals::job_tag(&cell.id, repetition);
            let mut streams = ctx.streams.lock();
            for (name, h) in [("e2e", e2e), ("stored_e2e", stored)] {
                if let Some(h) = h {
                    streams
                        .hlog
                        .push(&format!("{tag_base}/{name}"), start, 1.0, h);
                }
            }
            streams
                .hlog
                .flush_second()
                .and_then(|()| streams.series.append(row))
                .map_err(|e| format!("writing the time series: {e}"))
        },
    )?;

    for p in parts {
        let cols = JobColumns {
            res: &mut *res,
            order: &mut *order_cols,
        };
        if let Err(e) = p.finish(cols) {
            crashed.get_or_insert(e);
        }
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
    let last = match &cluster {
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
    if fault.as_deref().is_some_and(Injector::killed) {
        // The broker's counters started again at zero with the restarted process.
        res.broker_flow_control_total = None;
        res.broker_counters_match = None;
    }
    match crashed {
        Some(c) => Err(c),
        None => Ok(()),
    }
}
