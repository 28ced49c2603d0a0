//! A job's consumers: the runtime they run on, the prefill, instances joining and leaving on
//! schedule, the per-second sample, the drain after the producers stop, and the final figures.
//!
//! Everything runs on one tokio runtime with a single worker thread (`harness-consumer`):
//! processing time is simulated by timers, so the consumers cost the CPU of decoding pulls and
//! nothing else. [`ConsumerRun::finish`] cancels every task and joins the runtime.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::consumer::failure::Failures;
use crate::consumer::figures::{BrokerCounts, ConsumerFigures, ConsumerSecond};
use crate::consumer::instance::run_instance;
use crate::consumer::links::Links;
use crate::consumer::log::EventLog;
use crate::consumer::metrics::Metrics;
use crate::consumer::offsets::max_offset;
use crate::consumer::prefill::prefill_topic;
use crate::consumer::processing::ProcessingModel;
use crate::consumer::route::{refresh_loop, retry_topic, Mq, Route, Sub, Target};
use crate::consumer::send_back::broker_retry_sum;
use crate::consumer::start_error::ConsumerStartError;
use crate::consumer::state::{Instance, Shared};
use crate::consumer::threads::ConsumeThreads;
use crate::consumer::tracking::SendTracking;
use crate::recorder::quantile;
use harness_model::profile::{Consumer, Workload};

/// Messages the load's tracking can hold when the schedule has no fixed count (closed loop).
const OPEN_ENDED_CAPACITY: u64 = 1 << 30;

/// The consumers of one job.
pub struct ConsumerRun {
    rt: Option<tokio::runtime::Runtime>,
    shared: Arc<Shared>,
    instances: Arc<Mutex<Vec<Arc<Instance>>>>,
    load: Arc<SendTracking>,
    last_consumed: u64,
    last_fc: [u64; 4],
    /// failures, retries, DLQ at the end of the last second.
    last_failures: [u64; 3],
    measure_start: Option<(Instant, u64)>,
    measure_end: Option<(Instant, u64)>,
    cached_max: (u64, f64),
    drained: Option<(bool, i64)>,
    /// The broker's retry counters when the job started (`send_back::BROKER_RETRY_KEYS`).
    broker_retry_start: Option<[u64; 4]>,
    restarts_seen: usize,
}

impl ConsumerRun {
    /// Prefills the topic, starts the instances that join at 0 and waits (up to 5 s) until
    /// every queue is assigned. `target` is one broker or a cluster's name server;
    /// `scheduled` is the load's message count, if fixed.
    pub fn start(
        cfg: &Consumer,
        workload: &Workload,
        target: Target,
        scheduled: Option<u64>,
        log_path: Option<&Path>,
    ) -> Result<ConsumerRun, ConsumerStartError> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("harness-consumer")
            .enable_all()
            .build()
            .map_err(ConsumerStartError::Runtime)?;
        let batch = u64::from(workload.batch.max(1));
        let capacity = scheduled.map_or(OPEN_ENDED_CAPACITY, |n| (n + 1024) * batch);
        let load = Arc::new(SendTracking::new(workload.batch, capacity));
        let prefill = Arc::new(SendTracking::new(1, cfg.prefill.max(1)));
        let route = rt.block_on(Route::start(target, &workload.topic, workload.queues))?;
        let shared = Arc::new(Shared {
            cfg: cfg.clone(),
            route,
            topic: workload.topic.clone(),
            retry_topic: retry_topic(&cfg.group),
            committed: Mutex::new(BTreeMap::new()),
            rebalance_wakers: Mutex::new(Vec::new()),
            metrics: Arc::new(
                Metrics::new(vec![load.clone(), prefill.clone()]).with_backlog(prefill.clone()),
            ),
            model: ProcessingModel::new(cfg, Instant::now()),
            started: AtomicU64::new(0),
            log: EventLog::create(log_path).map_err(ConsumerStartError::Log)?,
            cancel: CancellationToken::new(),
            tracker: TaskTracker::new(),
            failures: Failures::new(cfg),
            restart: Default::default(),
            slave_pulls: Default::default(),
        });
        if cfg.prefill > 0 {
            let acked = rt.block_on(prefill_topic(&shared, workload, &prefill))?;
            shared.metrics.backlog.set_target(acked);
            shared.log.line(
                "prefill",
                "INFO",
                &format!("{acked} of {} messages acknowledged", cfg.prefill),
            );
        }
        let broker_retry_start = rt.block_on(broker_retry_sum(&shared.route, &shared.tracker));
        let instances = Arc::new(Mutex::new(Vec::new()));
        let origin = tokio::time::Instant::now();
        rt.block_on(async {
            for i in 0..cfg.instances {
                let (join, leave) = cfg.schedule_of(i);
                let (shared, list) = (shared.clone(), instances.clone());
                shared.clone().tracker.spawn(async move {
                    tokio::select! {
                        _ = shared.cancel.cancelled() => return,
                        _ = tokio::time::sleep_until(origin + join) => {}
                    }
                    let inst = start_instance(&shared, i);
                    list.lock().push(inst.clone());
                    if let Some(leave) = leave {
                        let stop = inst.stop.clone();
                        shared.tracker.spawn(async move {
                            tokio::time::sleep_until(origin + leave).await;
                            stop.cancel();
                        });
                    }
                    run_instance(inst).await;
                });
            }
            shared.tracker.spawn(sample_lag(shared.clone()));
            let s = shared.clone();
            shared.tracker.spawn(async move {
                let log = |level: &str, text: &str| s.log.line("route", level, text);
                let wake = || {
                    for n in s.rebalance_wakers.lock().iter() {
                        n.notify_one();
                    }
                };
                let every = s.cfg.poll_name_server_interval.duration();
                refresh_loop(&s.route, &s.topic, every, &s.cancel, log, wake).await;
            });
        });
        let run = ConsumerRun {
            rt: Some(rt),
            shared,
            instances,
            load,
            last_consumed: 0,
            last_fc: [0; 4],
            last_failures: [0; 3],
            measure_start: None,
            measure_end: None,
            cached_max: (0, 0.0),
            drained: None,
            broker_retry_start,
            restarts_seen: 0,
        };
        let deadline = Instant::now() + Duration::from_secs(5);
        let joining_now = (0..cfg.instances).any(|i| cfg.schedule_of(i).0.is_zero());
        while joining_now
            && Instant::now() < deadline
            && run.assigned_queues() < run.shared.route.queues().len()
        {
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(run)
    }

    /// Hands the job's order accounting to the pulls and consume tasks (`harness::order`).
    pub fn watch_order(&self, ledger: Arc<crate::send_order::ledger::OrderLedger>) {
        let _ = self.shared.metrics.order.set(ledger);
    }

    /// The broker (on a cluster: `broker`, broker K of `[fault] broker = K`) was killed and
    /// restarted: `restarts` holds (kill, ready again) of every restart so far; the ones not
    /// seen yet are noted, with what was consumed per broker until then (consumer.log), so a
    /// reader can tell that the consumers resumed every broker's queues afterwards.
    pub fn follow_restarts(&mut self, restarts: &[(Instant, Instant)], broker: Option<&str>) {
        for &(killed, ready) in restarts.iter().skip(self.restarts_seen) {
            let dups = Metrics::count(&self.shared.metrics.duplicates);
            self.shared.restart.restarted(killed, ready, dups, broker);
            let consumed: Vec<String> = self
                .per_broker_all()
                .iter()
                .map(|(name, c)| format!("{name}={}", c.consumed))
                .collect();
            self.shared.log.line(
                "fault",
                "INFO",
                &format!(
                    "{} was killed and is back after {:?}; consumed so far {}",
                    broker.unwrap_or("the broker"),
                    ready.saturating_duration_since(killed),
                    consumed.join(";")
                ),
            );
        }
        self.restarts_seen = self.restarts_seen.max(restarts.len());
    }

    /// Per broker of the route so far: consumed from its queues, its lag.
    pub fn per_broker(&self) -> Vec<(String, BrokerCounts)> {
        self.shared.metrics.per_broker()
    }

    /// [`ConsumerRun::per_broker`] with every broker of the route, by name (a broker nothing
    /// was consumed from shows 0).
    fn per_broker_all(&self) -> Vec<(String, BrokerCounts)> {
        let mut all = self.per_broker();
        for b in self.shared.route.brokers() {
            if !all.iter().any(|(n, _)| *n == *b.name) {
                all.push((b.name.to_string(), Default::default()));
            }
        }
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }

    /// The load's acknowledgements go here (`LoadConfig::tracking`).
    pub fn tracking(&self) -> Arc<SendTracking> {
        self.load.clone()
    }

    /// The topic's queues the running instances hold now, sorted, each once.
    pub fn assigned(&self) -> Vec<Mq> {
        let mut ids: Vec<Mq> = self
            .owners()
            .into_iter()
            .filter_map(|(_, sub, mq)| (sub == Sub::Topic).then_some(mq))
            .collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    /// Which running instance (by index) holds which queue of either subscription now.
    pub fn owners(&self) -> Vec<(u32, Sub, Mq)> {
        self.instances
            .lock()
            .iter()
            .filter(|i| !i.stop.is_cancelled())
            .flat_map(|i| {
                let keys: Vec<(Sub, Mq)> = i.queues.lock().keys().cloned().collect();
                keys.into_iter().map(|(sub, mq)| (i.index, sub, mq))
            })
            .collect()
    }

    fn assigned_queues(&self) -> usize {
        self.assigned().len()
    }

    /// The measured window starts: histograms record from now on.
    pub fn start_measuring(&mut self) {
        if self.measure_start.is_none() {
            self.shared.metrics.start_measuring();
            self.measure_start = Some((
                Instant::now(),
                Metrics::count(&self.shared.metrics.consumed),
            ));
        }
    }

    /// The figures of the second that just ended.
    pub fn second(&mut self) -> ConsumerSecond {
        let m = &self.shared.metrics;
        let consumed = Metrics::count(&m.consumed);
        let fc: [u64; 4] = std::array::from_fn(|i| Metrics::count(&m.fc[i]));
        let (cached, bytes) = self
            .instances
            .lock()
            .iter()
            .flat_map(|i| i.assigned())
            .map(|q| {
                let v = q.view();
                (v.count, v.size_bytes)
            })
            .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
        let cached_mib = bytes as f64 / (1024.0 * 1024.0);
        if self.measure_start.is_some() {
            self.cached_max.0 = self.cached_max.0.max(cached);
            self.cached_max.1 = self.cached_max.1.max(cached_mib);
        }
        let (e2e, stored) = m.take_second();
        let failures = self.shared.failures.counts();
        let s = ConsumerSecond {
            consumed: consumed - self.last_consumed,
            fc: std::array::from_fn(|i| fc[i] - self.last_fc[i]),
            failures: std::array::from_fn(|i| failures[i] - self.last_failures[i]),
            lag: m.lag.load(Ordering::Relaxed),
            cached,
            cached_mib,
            e2e: (!e2e.is_empty()).then_some(e2e),
            stored_e2e: (!stored.is_empty()).then_some(stored),
        };
        self.last_consumed = consumed;
        self.last_fc = fc;
        self.last_failures = failures;
        s
    }

    /// The producers stopped: waits (up to `drain_timeout`) until every acknowledged message
    /// was consumed and the lag is 0, calling `each_second` once a second meanwhile.
    pub fn drain(&mut self, mut each_second: impl FnMut(&mut Self)) {
        let m = self.shared.metrics.clone();
        self.measure_end = Some((Instant::now(), Metrics::count(&m.consumed)));
        let timeout = self.shared.cfg.drain_timeout.duration();
        let end = Instant::now() + timeout;
        let mut next = Instant::now() + Duration::from_secs(1);
        loop {
            let missing = m.missing();
            let lag = m.lag.load(Ordering::Relaxed);
            // A failed message still waiting for its retry is not consumed yet.
            let caught_up = missing == 0
                && lag <= 0
                && self.second_cached() == 0
                && self.shared.failures.pending() == 0;
            if caught_up || Instant::now() >= end || self.shared.cancel.is_cancelled() {
                self.drained = Some((caught_up, lag));
                if !caught_up {
                    self.shared.log.line("drain", "WARN", &format!(
                        "consumers did not catch up within {timeout:?}: lag {lag}, {missing} acknowledged messages not consumed (first: {:?})",
                        m.first_missing(5)
                    ));
                }
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
            if Instant::now() >= next {
                next += Duration::from_secs(1);
                each_second(self);
            }
        }
    }

    /// With a prefill, before the load starts: waits (up to `drain_timeout`) until every
    /// acknowledged prefill message was consumed, calling `each_second` once a second
    /// meanwhile, so the backlog's seconds are their own phase and not the load's first ones.
    /// Returns whether the backlog drained.
    pub fn drain_backlog(&mut self, mut each_second: impl FnMut(&mut Self)) -> bool {
        if self.shared.cfg.prefill == 0 {
            return false;
        }
        let backlog = &self.shared.metrics.clone();
        let timeout = self.shared.cfg.drain_timeout.duration();
        let end = Instant::now() + timeout;
        let mut next = Instant::now() + Duration::from_secs(1);
        while !backlog.backlog.drained() {
            if Instant::now() >= end || self.shared.cancel.is_cancelled() {
                self.shared.log.line(
                    "backlog",
                    "WARN",
                    &format!("the prefilled backlog was not consumed within {timeout:?}; the load starts on what is left"),
                );
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
            if Instant::now() >= next {
                next += Duration::from_secs(1);
                each_second(self);
            }
        }
        // The backlog's last (partial) second is its own row too.
        each_second(self);
        true
    }

    fn second_cached(&self) -> u64 {
        self.instances
            .lock()
            .iter()
            .flat_map(|i| i.assigned())
            .map(|q| q.view().count)
            .sum()
    }

    /// Ctrl-C or a broken broker: stop at once.
    pub fn cancel(&self) {
        self.shared.cancel.cancel();
    }

    /// Stops every instance (offsets persisted, clients unregistered) and returns the job's
    /// figures.
    pub fn finish(mut self) -> ConsumerFigures {
        let m = self.shared.metrics.clone();
        let mut broker_retry = None;
        if let Some(rt) = self.rt.take() {
            let end = rt.block_on(broker_retry_sum(&self.shared.route, &self.shared.tracker));
            broker_retry = self
                .broker_retry_start
                .zip(end)
                .map(|(a, b)| std::array::from_fn(|i| b[i].saturating_sub(a[i])));
            for inst in self.instances.lock().iter() {
                inst.stop.cancel();
            }
            let tracker = self.shared.tracker.clone();
            let cancel = self.shared.cancel.clone();
            rt.block_on(async {
                // Instances persist and unregister first; then everything else stops.
                let _ = tokio::time::timeout(Duration::from_secs(5), async {
                    loop {
                        let running = self.instances.lock().iter().any(|i| !i.links.is_closed());
                        if !running {
                            break;
                        }
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                })
                .await;
                cancel.cancel();
                tracker.close();
                let _ = tokio::time::timeout(Duration::from_secs(5), tracker.wait()).await;
            });
            rt.shutdown_timeout(Duration::from_secs(2));
        }
        self.shared.log.flush();
        let (e2e, stored) = m.totals();
        let (start, end) = (self.measure_start, self.measure_end);
        let consume_rate = match (start, end) {
            (Some((t0, c0)), Some((t1, c1))) if t1 > t0 => {
                (c1 - c0) as f64 / (t1 - t0).as_secs_f64()
            }
            _ => 0.0,
        };
        let (recovery, restart_duplicates) =
            self.shared.restart.figures(Metrics::count(&m.duplicates));
        let (drained, lag_at_end) = self
            .drained
            .unwrap_or((false, m.lag.load(Ordering::Relaxed)));
        ConsumerFigures {
            consumed: Metrics::count(&m.consumed),
            consume_rate,
            drain_rate: m.backlog.rate(),
            fc: std::array::from_fn(|i| Metrics::count(&m.fc[i])),
            lag_max: m.lag_max.load(Ordering::Relaxed),
            lost: m.tracks_acks().then(|| m.missing()),
            duplicates: Metrics::count(&m.duplicates),
            e2e_us: [
                quantile(&e2e, 0.5),
                quantile(&e2e, 0.99),
                quantile(&e2e, 0.999),
            ],
            stored_e2e_p99_us: quantile(&stored, 0.99),
            cached_max: self.cached_max.0,
            cached_mib_max: self.cached_max.1,
            pulls: std::array::from_fn(|i| Metrics::count(&m.pulls[i])),
            pull_busy: std::array::from_fn(|i| Metrics::count(&m.pull_busy[i])),
            decode_errors: Metrics::count(&m.decode_errors),
            foreign: Metrics::count(&m.foreign),
            drained,
            lag_at_end,
            recovery,
            restart_duplicates,
            retry: crate::consumer::figures::retry_figures(&self.shared.failures, broker_retry),
            per_broker: self.per_broker_all(),
        }
    }
}

impl Drop for ConsumerRun {
    fn drop(&mut self) {
        if let Some(rt) = self.rt.take() {
            self.shared.cancel.cancel();
            rt.shutdown_timeout(Duration::from_secs(2));
        }
    }
}

/// Instance `i` with its own client id; its links connect at their first call, so starting
/// one cannot fail (what fails later, a pull or a heartbeat, is logged by the instance).
fn start_instance(shared: &Arc<Shared>, i: u32) -> Arc<Instance> {
    let notify = Arc::new(Notify::new());
    shared.rebalance_wakers.lock().push(notify.clone());
    let stop = shared.cancel.child_token();
    // The links outlive the instance's stop: shutdown still persists and unregisters on them.
    let links = Links::new(notify.clone(), &shared.tracker, &shared.cancel);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    Arc::new(Instance {
        index: i,
        client_id: format!("127.0.0.1@{}#{i}#{nanos}", std::process::id()),
        shared: shared.clone(),
        links,
        queues: Mutex::new(Default::default()),
        sub_version: AtomicI64::new(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as i64),
        ),
        threads: ConsumeThreads::new(
            shared.cfg.consume_threads as usize,
            tokio::time::Instant::now(),
        ),
        requests: crate::consumer::concurrent::request_queue(),
        rebalance_now: notify,
        stop,
        fc_times: AtomicU64::new(0),
        span_times: AtomicU64::new(0),
        not_locked_times: AtomicU64::new(0),
    })
}

/// Every 500 ms: broker max offset − committed offset, per broker over its queues of the
/// route, and summed over the brokers.
async fn sample_lag(shared: Arc<Shared>) {
    let links = Links::new(Arc::new(Notify::new()), &shared.tracker, &shared.cancel);
    // Per broker, the last lag read: a broker down (killed, restarting) has no lag to read,
    // its last one stands.
    let mut last: BTreeMap<Arc<str>, i64> = BTreeMap::new();
    loop {
        let route = shared.route.brokers();
        let committed = shared.committed.lock().clone();
        for b in &route {
            let link = links.to(&b.name, crate::consumer::route::MASTER_ID, b.addr);
            let mut lag = Some(0i64);
            for q in 0..b.read_queues as i32 {
                let Some(max) = max_offset(&link, &shared.topic, q).await else {
                    lag = None;
                    break;
                };
                let mq = crate::consumer::route::Mq {
                    broker: b.name.clone(),
                    queue_id: q,
                };
                let c = committed.get(&mq).copied().unwrap_or(-1).max(0);
                lag = lag.map(|l| l + (max - c).max(0));
            }
            if let Some(lag) = lag {
                last.insert(b.name.clone(), lag);
                shared.metrics.set_broker_lag(&b.name, lag);
            }
        }
        // A broker that left the route has no queues left to lag.
        last.retain(|name, _| route.iter().any(|b| &b.name == name));
        if !last.is_empty() {
            shared.metrics.set_lag(last.values().sum());
        }
        tokio::select! {
            _ = shared.cancel.cancelled() => break,
            _ = tokio::time::sleep(Duration::from_millis(500)) => {}
        }
    }
    links.close();
}
