//! `summary.csv`: one row per measured segment of a job, a contract with `harness compare`.
//! Between the leading key columns and the metrics come the `param_<axis>` columns, which
//! depend on the profile, so the header is built here rather than inferred by csv.

use std::sync::LazyLock;

use hdrhistogram::Histogram;
use serde::Serialize;

use crate::cells::{busy_columns, field_names, ms, Fixed};
use crate::cols::{
    BlockFigures, DiskColumns, HaColumns, KneeColumns, OrderColumns, RetentionColumns,
    SummaryConsumer,
};
use crate::consumer::ConsumerFigures;
use crate::invalid::{Invalid, InvalidKind};
use crate::segment::{quantile, Counts, Segment};

/// `summary.csv` columns before the `param_<key>` columns.
pub static SUMMARY_LEADING: LazyLock<Vec<&'static str>> = LazyLock::new(field_names::<SummaryKey>);

/// `summary.csv` columns after the `param_<key>` columns.
pub static SUMMARY_METRICS: LazyLock<Vec<&'static str>> = LazyLock::new(|| {
    let mut cols = field_names::<SummaryRates>();
    cols.extend(busy_columns());
    cols.extend(field_names::<SummaryTail>());
    cols.extend(field_names::<SummaryConsumer>());
    cols.extend(field_names::<FaultColumns>());
    cols.extend(field_names::<KneeColumns>());
    cols.extend(field_names::<OrderColumns>());
    cols.extend(field_names::<HaColumns>());
    cols.extend(field_names::<DiskColumns>());
    cols.extend(field_names::<RetentionColumns>());
    cols
});

/// The full `summary.csv` header for these axis keys.
pub fn summary_header(axis_keys: &[String]) -> Vec<String> {
    SUMMARY_LEADING
        .iter()
        .map(|s| s.to_string())
        .chain(axis_keys.iter().map(|k| format!("param_{k}")))
        .chain(SUMMARY_METRICS.iter().map(|s| s.to_string()))
        .collect()
}

/// The cells of one `summary.csv` row, in column order.
#[derive(Debug, Serialize)]
pub struct SummaryRecord<'a> {
    key: SummaryKey,
    params: &'a [String],
    rates: SummaryRates,
    busy: [u64; 6],
    tail: SummaryTail,
    consumer: SummaryConsumer,
    fault: FaultColumns,
    knee: &'a KneeColumns,
    order: &'a OrderColumns,
    ha: &'a HaColumns,
    disk: DiskColumns,
    retention: &'a RetentionColumns,
}

#[derive(Debug, Default, Serialize)]
struct SummaryKey {
    profile: String,
    cell_id: String,
    repetition: u32,
    step: Option<usize>,
}

#[derive(Debug, Default, Serialize)]
struct SummaryRates {
    target_rate: Option<Fixed<1>>,
    achieved_rate: Fixed<1>,
    ok_rate: Fixed<1>,
    duration_s: Fixed<3>,
    sent: u64,
    ok: u64,
    busy: u64,
    busy_rate: Fixed<6>,
}

#[derive(Debug, Default, Serialize)]
struct SummaryTail {
    system_error: u64,
    flush_disk_timeout: u64,
    message_illegal: u64,
    other_codes: u64,
    /// Code 14 whose remark names the disk (the not-available class).
    not_available_disk_full: u64,
    not_available_other: u64,
    /// Codes 12 FLUSH_SLAVE_TIMEOUT and 11 SLAVE_NOT_AVAILABLE (SYNC_MASTER).
    flush_slave_timeout: u64,
    slave_not_available: u64,
    timeouts: u64,
    dropped: u64,
    connection_errors: u64,
    attempts: u64,
    p50_ms: Fixed<3>,
    p90_ms: Fixed<3>,
    p99_ms: Fixed<3>,
    p999_ms: Fixed<3>,
    max_ms: Fixed<3>,
    service_p50_ms: Fixed<3>,
    service_p99_ms: Fixed<3>,
    service_max_ms: Fixed<3>,
    lag_p50_us: u64,
    lag_p99_us: u64,
    lag_max_us: u64,
    busy_p99_ms: Fixed<3>,
    period_in_queue_p50_ms: u64,
    period_in_queue_max_ms: u64,
    size_of_queue_max: u64,
    broker_cpu_avg: Option<Fixed<1>>,
    broker_cpu_max: Option<Fixed<1>>,
    broker_cpu_s: Option<Fixed<3>>,
    broker_jit_pct: Option<Fixed<1>>,
    jit_warmup_s: Option<Fixed<1>>,
    broker_rss_max_mb: Option<Fixed<1>>,
    harness_cpu_max: Option<Fixed<1>>,
    other_cpu_max: Option<Fixed<1>>,
    steal_cpu_max: Option<Fixed<1>>,
    broker_flow_control_total: Option<u64>,
    broker_counters_match: Option<bool>,
    valid: bool,
    invalid_reason: String,
    /// The reason's kinds by name (`InvalidKind::cell`): what the advice and `harness merge`
    /// read, never the reason's text.
    invalid_kinds: String,
    first_ok: u64,
    first_busy: u64,
    final_ok: u64,
    final_busy: u64,
    broker_ok: String,
    broker_busy: String,
}

/// A fault experiment's figures (`[fault]`): the reconciliation of answers with the store
/// (over the whole job, warm-up included) and the recovery time. Empty without `[fault]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct FaultColumns {
    pub acked_lost: Option<u64>,
    pub phantom: Option<u64>,
    pub busy_stored: Option<u64>,
    pub duplicates: Option<u64>,
    pub corrupt: Option<u64>,
    pub unacked_in_flight: Option<u64>,
    /// Kill to the first SUCCESS from the faulted broker of a send written after it.
    pub recovery_ms: Option<Fixed<1>>,
    /// Kill to the first final SUCCESS of any broker (a retry on another broker counts): the
    /// application's recovery. On one broker the same as `recovery_ms`.
    pub app_recovery_ms: Option<Fixed<1>>,
    /// The broker the faults hit (its brokerName); empty with one broker.
    pub fault_broker: String,
    /// Per-broker reconciliation, `name=count;…` in route order (`reconcile::brokers`);
    /// empty with one broker.
    pub broker_acked_lost: String,
    pub broker_phantom: String,
    pub broker_duplicates: String,
}

/// Resource figures of a run, from the sampler.
#[derive(Debug, Clone, Default)]
pub struct Resources {
    pub broker_cpu_avg: Option<f64>,
    pub broker_cpu_max: Option<f64>,
    /// Broker CPU-seconds over the measured window (from /proc, to the clock tick).
    pub broker_cpu_s: Option<f64>,
    /// The broker's JIT compile time per second of the measured window, % (HotSpot's perf
    /// data, summed over the compiler threads); None for a broker that is no JVM.
    pub broker_jit_pct: Option<f64>,
    /// Seconds of `[workload] jit_warmup` before the job on its broker (until the JIT went
    /// quiet, or the limit); None without one, or for a broker without a JIT.
    pub jit_warmup_s: Option<f64>,
    pub broker_rss_max_mb: Option<f64>,
    pub harness_cpu_max: Option<f64>,
    /// The most the rest of the machine (other processes, the kernel's threads) used in one
    /// measured second, % of one core; None without the brokers' CPU.
    pub other_cpu_max: Option<f64>,
    /// The most the hypervisor took from the machine's CPUs in one measured second, % of one
    /// core (`/proc/stat`'s steal); None where it cannot be read.
    pub steal_cpu_max: Option<f64>,
    /// The ok rate of each full second of the segment, in order: not a column; the knee
    /// warm-up's steadiness test reads how much a window's seconds spread.
    pub ok_per_second: Vec<f64>,
    pub broker_flow_control_total: Option<u64>,
    pub broker_counters_match: Option<bool>,
    /// Replication figures (filled by `harness::ha`), empty without a replicating master.
    pub ha: HaColumns,
    /// Retention figures (filled by `harness::runner::retention`), empty for a broker without the
    /// keys.
    pub retention: RetentionColumns,
}

/// One `summary.csv` row.
#[derive(Debug, Clone, Default)]
pub struct SummaryRow {
    pub profile: String,
    pub cell_id: String,
    pub label: String,
    pub repetition: u32,
    pub step: Option<usize>,
    pub params: Vec<String>,
    /// None in the closed loop.
    pub target_rate: Option<f64>,
    pub duration_s: f64,
    pub seg: SegmentFigures,
    pub res: Resources,
    pub valid: bool,
    pub invalid_reason: String,
    /// The kinds of `invalid_reason` whose cause and fix are known, each once (a merged row's
    /// are its failed shards'); empty for a valid row or a reason of no kind.
    pub invalid_kinds: Vec<InvalidKind>,
    /// The job's consumers (the same figures on every row of a job); None without them.
    pub consumer: Option<ConsumerFigures>,
    pub fault: FaultColumns,
    /// Knee-search columns (empty unless `model = "knee"`).
    pub knee: KneeColumns,
    /// Order accounting (`harness::order`), the same on every row of a job.
    pub order: OrderColumns,
}

/// The figures of one segment that go into a row.
#[derive(Debug, Clone, Default)]
pub struct SegmentFigures {
    pub sent: u64,
    /// Final outcomes, as the recorder counted them.
    pub counts: Counts,
    pub attempts: u64,
    /// Latency percentiles in µs: p50, p90, p99, p99.9, max.
    pub latency_us: [u64; 5],
    pub service_us: [u64; 3],
    pub lag_us: [u64; 3],
    pub busy_p99_us: u64,
    pub period_in_queue_ms: [u64; 2],
    pub size_of_queue_max: u64,
    /// First attempts answered ok / busy (before any retry).
    pub first_ok: u64,
    pub first_busy: u64,
    /// Attempts answered `[ok, busy, code 14 disk full]` per cluster broker, and the brokers'
    /// names.
    pub per_broker: Vec<[u64; 3]>,
    pub broker_names: Vec<String>,
    /// Each broker's disk-full write blocks over the whole job (the job's recorder), in route
    /// order; None for a broker that never refused.
    pub write_blocks: Vec<Option<BlockFigures>>,
}

fn q(h: &Histogram<u64>, p: f64) -> u64 {
    quantile(h, p)
}

fn max(h: &Histogram<u64>) -> u64 {
    quantile(h, 1.0)
}

impl SegmentFigures {
    pub fn from_segment(s: &Segment) -> SegmentFigures {
        SegmentFigures {
            sent: s.sent,
            counts: s.counts.clone(),
            attempts: s.attempts,
            latency_us: [
                q(&s.latency, 0.5),
                q(&s.latency, 0.9),
                q(&s.latency, 0.99),
                q(&s.latency, 0.999),
                max(&s.latency),
            ],
            service_us: [q(&s.service, 0.5), q(&s.service, 0.99), max(&s.service)],
            lag_us: [q(&s.lag, 0.5), q(&s.lag, 0.99), max(&s.lag)],
            busy_p99_us: q(&s.busy_latency, 0.99),
            period_in_queue_ms: [q(&s.period_in_queue, 0.5), max(&s.period_in_queue)],
            size_of_queue_max: max(&s.size_of_queue),
            first_ok: s.first_ok,
            first_busy: s.first_busy,
            per_broker: s.per_broker.clone(),
            broker_names: Vec::new(),
            write_blocks: Vec::new(),
        }
    }

    /// `name=count;name=count` of one per-broker figure (0 = ok, 1 = busy); empty with one
    /// broker.
    pub fn per_broker_column(&self, which: usize) -> String {
        self.broker_names
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let v = self.per_broker.get(i).map_or(0, |c| c[which]);
                format!("{n}={v}")
            })
            .collect::<Vec<_>>()
            .join(";")
    }

    pub fn busy_total(&self) -> u64 {
        self.counts.busy_total()
    }
}

impl SummaryRow {
    /// Marks the row invalid for this reason alone (a reason before it is replaced).
    pub fn invalidate(&mut self, why: Invalid) {
        self.valid = false;
        self.invalid_reason = why.reason;
        self.invalid_kinds = why.kind.into_iter().collect();
    }

    pub fn achieved_rate(&self) -> f64 {
        if self.duration_s > 0.0 {
            (self.seg.sent - self.seg.counts.dropped) as f64 / self.duration_s
        } else {
            0.0
        }
    }

    pub fn ok_rate(&self) -> f64 {
        if self.duration_s > 0.0 {
            self.seg.counts.ok as f64 / self.duration_s
        } else {
            0.0
        }
    }

    pub fn busy_rate(&self) -> f64 {
        let on_wire = self.seg.sent - self.seg.counts.dropped;
        if on_wire == 0 {
            0.0
        } else {
            self.seg.busy_total() as f64 / on_wire as f64
        }
    }

    /// The value of a `key_metric` column.
    pub fn metric(&self, name: &str) -> f64 {
        let s = &self.seg;
        match name {
            "ok_rate" => self.ok_rate(),
            "achieved_rate" => self.achieved_rate(),
            "busy_rate" => self.busy_rate(),
            "busy" => s.busy_total() as f64,
            "p50_ms" => s.latency_us[0] as f64 / 1000.0,
            "p90_ms" => s.latency_us[1] as f64 / 1000.0,
            "p99_ms" => s.latency_us[2] as f64 / 1000.0,
            "p999_ms" => s.latency_us[3] as f64 / 1000.0,
            "max_ms" => s.latency_us[4] as f64 / 1000.0,
            "service_p99_ms" => s.service_us[1] as f64 / 1000.0,
            "broker_cpu_avg" => self.res.broker_cpu_avg.unwrap_or(0.0),
            "timeouts" => s.counts.timeouts as f64,
            _ => 0.0,
        }
    }

    /// The typed cells of this row.
    pub fn record(&self) -> SummaryRecord<'_> {
        let s = &self.seg;
        let [p50, p90, p99, p999, max] = s.latency_us.map(ms);
        let [service_p50, service_p99, service_max] = s.service_us.map(ms);
        let one = |v: Option<f64>| v.map(Fixed);
        SummaryRecord {
            key: SummaryKey {
                profile: self.profile.clone(),
                cell_id: self.cell_id.clone(),
                repetition: self.repetition,
                step: self.step,
            },
            params: &self.params,
            rates: SummaryRates {
                target_rate: one(self.target_rate),
                achieved_rate: Fixed(self.achieved_rate()),
                ok_rate: Fixed(self.ok_rate()),
                duration_s: Fixed(self.duration_s),
                sent: s.sent,
                ok: s.counts.ok,
                busy: s.busy_total(),
                busy_rate: Fixed(self.busy_rate()),
            },
            busy: s.counts.busy,
            tail: SummaryTail {
                system_error: s.counts.system_error,
                flush_disk_timeout: s.counts.flush_disk_timeout,
                message_illegal: s.counts.message_illegal,
                other_codes: s.counts.other_codes,
                not_available_disk_full: s.counts.not_available[0],
                not_available_other: s.counts.not_available[1],
                flush_slave_timeout: s.counts.flush_slave_timeout,
                slave_not_available: s.counts.slave_not_available,
                timeouts: s.counts.timeouts,
                dropped: s.counts.dropped,
                connection_errors: s.counts.connection_errors,
                attempts: s.attempts,
                p50_ms: p50,
                p90_ms: p90,
                p99_ms: p99,
                p999_ms: p999,
                max_ms: max,
                service_p50_ms: service_p50,
                service_p99_ms: service_p99,
                service_max_ms: service_max,
                lag_p50_us: s.lag_us[0],
                lag_p99_us: s.lag_us[1],
                lag_max_us: s.lag_us[2],
                busy_p99_ms: ms(s.busy_p99_us),
                period_in_queue_p50_ms: s.period_in_queue_ms[0],
                period_in_queue_max_ms: s.period_in_queue_ms[1],
                size_of_queue_max: s.size_of_queue_max,
                broker_cpu_avg: one(self.res.broker_cpu_avg),
                broker_cpu_max: one(self.res.broker_cpu_max),
                broker_cpu_s: self.res.broker_cpu_s.map(Fixed),
                broker_jit_pct: one(self.res.broker_jit_pct),
                jit_warmup_s: one(self.res.jit_warmup_s),
                broker_rss_max_mb: one(self.res.broker_rss_max_mb),
                harness_cpu_max: one(self.res.harness_cpu_max),
                other_cpu_max: one(self.res.other_cpu_max),
                steal_cpu_max: one(self.res.steal_cpu_max),
                broker_flow_control_total: self.res.broker_flow_control_total,
                broker_counters_match: self.res.broker_counters_match,
                valid: self.valid,
                invalid_reason: self.invalid_reason.clone(),
                invalid_kinds: InvalidKind::cell(&self.invalid_kinds),
                first_ok: s.first_ok,
                first_busy: s.first_busy,
                final_ok: s.counts.ok,
                final_busy: s.busy_total(),
                broker_ok: s.per_broker_column(0),
                broker_busy: s.per_broker_column(1),
            },
            consumer: SummaryConsumer::of(self.consumer.as_ref()),
            fault: self.fault.clone(),
            knee: &self.knee,
            order: &self.order,
            ha: &self.res.ha,
            disk: DiskColumns::of(&s.broker_names, &s.per_broker, &s.write_blocks),
            retention: &self.res.retention,
        }
    }
}

/// Renders `summary.csv` for these axis keys.
pub fn summary_csv(axis_keys: &[String], rows: &[SummaryRow]) -> std::io::Result<Vec<u8>> {
    let mut w = csv::WriterBuilder::new()
        .has_headers(false)
        .from_writer(Vec::new());
    w.write_record(summary_header(axis_keys))
        .map_err(std::io::Error::other)?;
    for r in rows {
        w.serialize(r.record()).map_err(std::io::Error::other)?;
    }
    w.into_inner()
        .map_err(|e| std::io::Error::other(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The exact text of one row: the committed baselines and `compare` read these cells, so
    /// decimals, empty cells and quoting must never drift.
    #[test]
    fn one_row_is_pinned() {
        let row = SummaryRow {
            profile: "smoke".into(),
            cell_id: "ab12cd34".into(),
            label: "x".into(),
            repetition: 1,
            step: Some(2),
            params: vec!["4".into(), "a,b".into()],
            target_rate: Some(1000.0),
            duration_s: 10.0,
            seg: SegmentFigures {
                sent: 10_000,
                counts: Counts {
                    ok: 9_000,
                    busy: [1, 2, 3, 4, 5, 6],
                    system_error: 7,
                    flush_disk_timeout: 8,
                    message_illegal: 9,
                    other_codes: 10,
                    not_available: [14, 15],
                    flush_slave_timeout: 16,
                    slave_not_available: 17,
                    timeouts: 11,
                    dropped: 12,
                    connection_errors: 13,
                },
                attempts: 10_100,
                latency_us: [1_234, 2_500, 10_000, 123_456, 2_000_000],
                service_us: [800, 9_000, 1_999_999],
                lag_us: [5, 50, 5_000],
                busy_p99_us: 4_321,
                period_in_queue_ms: [200, 250],
                size_of_queue_max: 17,
                first_ok: 8_900,
                first_busy: 30,
                per_broker: vec![[5_000, 10, 3], [4_000, 11, 0]],
                broker_names: vec!["broker-0".into(), "broker-1".into()],
                write_blocks: Vec::new(),
            },
            res: Resources {
                broker_cpu_avg: Some(87.26),
                broker_cpu_max: Some(99.94),
                broker_cpu_s: Some(8.7271),
                broker_jit_pct: Some(12.34),
                jit_warmup_s: Some(31.94),
                broker_rss_max_mb: None,
                harness_cpu_max: Some(12.0),
                other_cpu_max: Some(4.56),
                steal_cpu_max: Some(2.34),
                ok_per_second: Vec::new(),
                broker_flow_control_total: Some(21),
                broker_counters_match: Some(true),
                ha: HaColumns {
                    repl_lag_max_bytes: Some(65_536),
                    slave_waits: Some(9_000),
                    slave_wait_avg_us: Some(Fixed(412.5)),
                    slave_wait_p50_us: Some(500),
                    slave_wait_p99_us: Some(2_000),
                    slave_wait_max_us: Some(3_000_100),
                    acked_lost_master: Some(0),
                    acked_lost_slave: Some(12),
                },
                retention: RetentionColumns {
                    retention_rounds: Some(2),
                    commitlog_deleted_mb: Some(Fixed(24.0)),
                    disk_ratio_max: Some(Fixed(0.56)),
                },
            },
            valid: false,
            invalid_reason: "lag p99 5000 µs > 1000 µs".into(),
            invalid_kinds: vec![InvalidKind::LagP99],
            consumer: None,
            fault: FaultColumns {
                acked_lost: Some(3),
                phantom: Some(2),
                busy_stored: Some(0),
                duplicates: Some(0),
                corrupt: Some(0),
                unacked_in_flight: Some(4),
                recovery_ms: Some(Fixed(123.45)),
                ..FaultColumns::default()
            },
            knee: KneeColumns::default(),
            order: OrderColumns {
                order_inversions: Some(7),
                order_source: Some("store"),
                order_read: Some(1000),
                ..OrderColumns::default()
            },
        };
        let text =
            String::from_utf8(summary_csv(&["a".into(), "b".into()], &[row]).unwrap()).unwrap();
        let line = text.lines().nth(1).unwrap();
        assert_eq!(
            line,
            "smoke,ab12cd34,1,2,4,\"a,b\",1000.0,998.8,900.0,10.000,10000,9000,21,0.002103,\
1,2,3,4,5,6,7,8,9,10,14,15,16,17,11,12,13,10100,1.234,2.500,10.000,123.456,2000.000,0.800,9.000,1999.999,\
5,50,5000,4.321,200,250,17,87.3,99.9,8.727,12.3,31.9,,12.0,4.6,2.3,21,true,false,lag p99 5000 µs > 1000 µs,lag_p99,\
8900,30,9000,21,broker-0=5000;broker-1=4000,broker-0=10;broker-1=11,\
,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,3,2,0,0,0,4,123.5,,,,,,,,,,,7,store,1000,,,65536,9000,412.5,500,2000,3000100,0,12,\
broker-0=3;broker-1=0,broker-0=0;broker-1=0,broker-0=;broker-1=,2,24.0,0.56"
        );
        assert_eq!(
            line.split(',').count(),
            summary_header(&["a".into(), "b".into()]).len() + 1,
            "one cell per column (+1 for the quoted comma)"
        );
    }

    #[test]
    fn closed_loop_row_leaves_rate_and_step_empty() {
        let row = SummaryRow {
            profile: "p".into(),
            cell_id: "c".into(),
            label: "l".into(),
            repetition: 0,
            step: None,
            params: Vec::new(),
            target_rate: None,
            duration_s: 0.0,
            seg: SegmentFigures::default(),
            res: Resources::default(),
            valid: true,
            invalid_reason: String::new(),
            invalid_kinds: Vec::new(),
            consumer: None,
            fault: FaultColumns::default(),
            knee: KneeColumns::default(),
            order: OrderColumns::default(),
        };
        let text = String::from_utf8(summary_csv(&[], &[row]).unwrap()).unwrap();
        assert_eq!(
            text.lines().nth(1).unwrap(),
            "p,c,0,,,0.0,0.0,0.000,0,0,0,0.000000,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,\
0.000,0.000,0.000,0.000,0.000,0.000,0.000,0.000,0,0,0,0.000,0,0,0,,,,,,,,,,,,true,,,0,0,0,0,,\
,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,"
        );
    }
}
