//! The consumers inside a job: started before the load (after any prefill), sampled with
//! every second, drained after the producers stop, then stopped. The sampling loop
//! (`sampler.rs`) calls these three hooks and nothing else of the consumers.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::consumer::{ConsumerFigures, ConsumerRun, Target};
use crate::report::{TimeseriesConsumer, TimeseriesRow};
use crate::runner::broker_sampler::BrokerSampler;
use crate::runner::context::Ctx;
use crate::runner::plan::LoadConfig;
use harness_model::matrix::Cell;

/// Starts the cell's consumers, if it has any, and points the load's acknowledgements at them.
/// With `namesrv` (a cluster) they follow the topic's route over every broker; else they read
/// the broker at `addr`.
pub fn start(
    ctx: &Ctx,
    cell: &Cell,
    repetition: u32,
    addr: SocketAddr,
    namesrv: Option<SocketAddr>,
    cfg: &mut LoadConfig,
) -> Result<Option<ConsumerRun>, String> {
    let Some(c) = &cell.consumer else {
        return Ok(None);
    };
    let log = ctx
        .out_dir
        .join(format!("{}-r{repetition}", cell.id))
        .join("consumer.log");
    let target = namesrv.map_or(Target::Broker(addr), Target::NameServer);
    let run = ConsumerRun::start(c, &cell.workload, target, cfg.scheduled_sends(), Some(&log))?;
    cfg.tracking = Some(run.tracking());
    Ok(Some(run))
}

/// With a prefill, before the load: one `backlog` row per second until the consumers have
/// eaten the prefilled backlog (or `drain_timeout` passed), numbered from `second` on, so that
/// `drain_rate`'s seconds are not folded into the load's first one.
/// The rows carry the broker's and the harness's CPU: which one limits the drain.
pub fn backlog(
    ctx: &Ctx,
    cell: &Cell,
    repetition: u32,
    cfg: &LoadConfig,
    (run, brokers): (Option<&mut ConsumerRun>, &mut BrokerSampler),
    second: &mut u64,
) -> Result<(), String> {
    let Some(run) = run else { return Ok(()) };
    let mut failed = None;
    let empty = crate::recorder::Interval::default();
    brokers.sample();
    let (mut last_cpu, mut last_t) = (crate::proc::cpu::self_cpu_time(), Instant::now());
    let cores = std::thread::available_parallelism().map_or(1.0, |n| n.get() as f64);
    run.drain_backlog(|run| {
        *second += 1;
        let (cpu, now) = (crate::proc::cpu::self_cpu_time(), Instant::now());
        let harness_cpu = cpu.saturating_sub(last_cpu).as_secs_f64()
            / (now - last_t).as_secs_f64().max(1e-3)
            / cores
            * 100.0;
        (last_cpu, last_t) = (cpu, now);
        let (broker, broker_cpu_s) = brokers.sample();
        let sample = crate::runner::sample::Sample {
            partial: false,
            drain: false,
            second: *second,
            segment: None,
            broker,
            broker_cpu_s,
            harness_cpu,
            harness_rss_mb: crate::proc::cpu::self_rss_mb(),
            store_disk_mb: None,
            end_unix_s: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
                .as_secs_f64(),
        };
        let name = &ctx.profile.name;
        let mut row = crate::runner::sample::timeseries_row(
            name, cell, repetition, cfg, &sample, &empty, None,
        );
        row.key.phase = "backlog";
        row.consumer = TimeseriesConsumer::of(Some(&run.second()));
        if let Err(e) = ctx.streams.lock().series.append(&row) {
            failed.get_or_insert(format!("writing the time series: {e}"));
        }
        if ctx.opts.cancel.is_cancelled() {
            run.cancel();
        }
    });
    failed.map_or(Ok(()), Err)
}

/// The consumer cells of this second's row, and its two histograms (`e2e`, `stored_e2e`) for
/// the interval log.
pub fn second(
    run: Option<&mut ConsumerRun>,
    measuring: bool,
    row: &mut TimeseriesRow,
    mut hlog: impl FnMut(&str, &hdrhistogram::Histogram<u64>),
) {
    let Some(run) = run else { return };
    if measuring {
        run.start_measuring();
    }
    let s = run.second();
    row.consumer = TimeseriesConsumer::of(Some(&s));
    if let Some(h) = &s.e2e {
        hlog("e2e", h);
    }
    if let Some(h) = &s.stored_e2e {
        hlog("stored_e2e", h);
    }
}

/// After the load: waits for the consumers to catch up (one `drain` row per second, built by
/// `drain_row` from the second's number and written through `write`), stops them and returns
/// their figures.
pub fn drain(
    ctx: &Ctx,
    run: Option<ConsumerRun>,
    interrupted: bool,
    mut drain_row: impl FnMut() -> TimeseriesRow,
    mut write: impl FnMut(
        &TimeseriesRow,
        Option<&hdrhistogram::Histogram<u64>>,
        Option<&hdrhistogram::Histogram<u64>>,
    ) -> Result<(), String>,
) -> Result<Option<ConsumerFigures>, String> {
    let Some(mut run) = run else {
        return Ok(None);
    };
    if interrupted {
        run.cancel();
        return Ok(Some(run.finish()));
    }
    let mut failed = None;
    run.drain(|run| {
        let mut row = drain_row();
        let s = run.second();
        row.consumer = TimeseriesConsumer::of(Some(&s));
        if let Err(e) = write(&row, s.e2e.as_ref(), s.stored_e2e.as_ref()) {
            failed.get_or_insert(e);
        }
        if ctx.opts.cancel.is_cancelled() {
            run.cancel();
        }
    });
    let t = Instant::now();
    let figures = run.finish();
    let stop_took = t.elapsed();
    if stop_took > Duration::from_secs(8) {
        ctx.progress
            .line(&format!("  consumers took {stop_took:?} to stop"));
    }
    match failed {
        Some(e) => Err(e),
        None => Ok(Some(figures)),
    }
}

/// Why a job whose consumers did not catch up is not scored.
pub fn not_drained(f: &ConsumerFigures, drain_timeout: Duration) -> Option<String> {
    (!f.drained).then(|| {
        format!(
            "consumers did not catch up within drain_timeout {drain_timeout:?}: lag {} at the end, {} acknowledged messages not consumed",
            f.lag_at_end,
            f.lost.map_or_else(|| "?".into(), |l| l.to_string())
        )
    })
}

/// The consumers' line under a job's `done:` line.
pub fn progress_line(f: &ConsumerFigures) -> String {
    format!(
        "  consumers: consumed {} ({:.0}/s{}) flow control count/size/span/not-locked {}/{}/{}/{} lag max {} e2e p50/p99 {:.1}/{:.1} ms lost {} dup {}{}",
        f.consumed,
        f.consume_rate,
        f.drain_rate.map_or_else(String::new, |r| format!(", backlog drained at {r:.0}/s")),
        f.fc[0],
        f.fc[1],
        f.fc[2],
        f.fc[3],
        f.lag_max,
        f.e2e_us[0] as f64 / 1000.0,
        f.e2e_us[1] as f64 / 1000.0,
        f.lost.map_or_else(|| "-".into(), |l| l.to_string()),
        f.duplicates,
        if f.decode_errors > 0 { format!(" decode errors {}", f.decode_errors) } else { String::new() }
    )
}
