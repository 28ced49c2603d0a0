//! `timeseries.csv`: one row per sampled second of every job, a contract with `harness compare`.
//! Appended as each second ends (header first, one `write` per row), so the file is complete up
//! to the last second at every moment and no row is kept in memory.

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::LazyLock;

use serde::Serialize;

use crate::cells::{busy_columns, field_names, Fixed};
use crate::cols::{TimeseriesConsumer, TimeseriesHa, TimeseriesOrder};

/// `timeseries.csv` columns.
pub static TIMESERIES_COLUMNS: LazyLock<Vec<&'static str>> = LazyLock::new(|| {
    let mut cols = field_names::<TimeseriesKey>();
    cols.extend(busy_columns());
    cols.extend(field_names::<TimeseriesTail>());
    cols.extend(field_names::<TimeseriesConsumer>());
    cols.extend(field_names::<TimeseriesOrder>());
    cols.extend(field_names::<TimeseriesHa>());
    cols.extend(field_names::<TimeseriesEvent>());
    cols
});

/// One `timeseries.csv` row: the second's key and counts, busy answers per class, the rest.
#[derive(Debug, Clone, Default, Serialize)]
pub struct TimeseriesRow {
    pub key: TimeseriesKey,
    pub busy: [u64; 6],
    pub tail: TimeseriesTail,
    /// Empty cells without consumers.
    pub consumer: TimeseriesConsumer,
    /// Empty cells without order accounting.
    pub order: TimeseriesOrder,
    /// Empty cells without a replicating master (filled by `harness::ha`).
    pub ha: TimeseriesHa,
    /// Empty but in the seconds a fault happened.
    pub event: TimeseriesEvent,
}

/// What the fault injector did in the second, so the report needs no side channel.
#[derive(Debug, Clone, Default, Serialize)]
pub struct TimeseriesEvent {
    /// The injector's actions in the second, in order, space-separated: `kill`, `restart`,
    /// `pause`, `resume` (e.g. `kill restart`); empty in every other second.
    pub event: String,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct TimeseriesKey {
    pub profile: String,
    pub cell_id: String,
    pub repetition: u32,
    /// The stair, in steps mode.
    pub step: Option<usize>,
    pub second: u64,
    /// `warmup`, `measure` or `drain`.
    pub phase: &'static str,
    /// None in the closed loop.
    pub target_rate: Option<Fixed<1>>,
    /// Sends put on the wire in this second.
    pub achieved_rate: u64,
    pub ok: u64,
    pub busy: u64,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct TimeseriesTail {
    pub errors: u64,
    pub timeouts: u64,
    pub dropped: u64,
    /// None when nothing completed in the second.
    pub p50_ms: Option<Fixed<3>>,
    pub p99_ms: Option<Fixed<3>>,
    pub max_ms: Option<Fixed<3>>,
    pub broker_cpu: Option<Fixed<1>>,
    /// Milliseconds the broker's JIT compiled in the second, summed over its compiler threads
    /// (HotSpot's perf data); empty for a broker that is no JVM.
    pub broker_jit_ms: Option<Fixed<1>>,
    pub broker_rss_mb: Option<Fixed<1>>,
    pub harness_cpu: Fixed<1>,
    /// What the rest of the machine used in the second, % of one core: its busy CPU time
    /// (`/proc/stat`, steal left out) less the brokers' and the harness's; empty without the
    /// brokers' CPU.
    pub other_cpu: Option<Fixed<1>>,
    /// What the hypervisor took from the machine's CPUs in the second (`/proc/stat`'s steal),
    /// % of one core: on a virtual machine, time the broker or the harness was ready to run
    /// and did not; empty where it cannot be read.
    pub steal_cpu: Option<Fixed<1>>,
    /// The broker's runtime-info values, as it wrote them.
    pub send_queue_size: String,
    pub send_queue_head_wait_ms: String,
    /// The longest put-lock hold in the second (`storePutLockMaxHoldMillis`) when the broker
    /// reports it, else `pageCacheLockTimeMills` at the instant of the sample (Apache's brokers).
    pub page_cache_lock_ms: String,
    /// The harness's own resident memory: flat over a long run, or the run is leaking.
    pub harness_rss_mb: Option<Fixed<1>>,
    /// `remainTransientStoreBufferNumbs` as the broker wrote it (2147483647 without the pool).
    pub pool_buffers_free: String,
    /// `commitLogUncommittedBytes`: acknowledged bytes still in a pool buffer, not yet in the
    /// page cache (empty when the broker does not report it, e.g. a real RocketMQ).
    pub commit_lag_bytes: String,
    /// `dispatchBehindBytes`: bytes readers may see that the broker's ReputMessageService has not
    /// yet dispatched to the consume queues (consumers cannot see them yet).
    pub dispatch_behind_bytes: String,
    /// Code 14 answers whose remark names the disk, and the other code-14 answers.
    pub not_available_disk_full: u64,
    pub not_available_other: u64,
    /// Codes 12 FLUSH_SLAVE_TIMEOUT and 11 SLAVE_NOT_AVAILABLE answered in the second.
    pub flush_slave_timeout: u64,
    pub slave_not_available: u64,
    /// The store folder's allocated size, sampled from outside (`du`); empty for a broker the
    /// harness did not start.
    pub store_disk_mb: Option<Fixed<1>>,
    /// When the second ended, Unix seconds on this host's wall clock: `harness merge` lines
    /// up the shards' rows by it.
    pub end_unix_s: Fixed<3>,
}

/// Renders `timeseries.csv`.
pub fn timeseries_csv(rows: &[TimeseriesRow]) -> std::io::Result<Vec<u8>> {
    let mut w = csv::WriterBuilder::new()
        .has_headers(false)
        .from_writer(Vec::new());
    w.write_record(TIMESERIES_COLUMNS.iter())
        .map_err(std::io::Error::other)?;
    for r in rows {
        w.serialize(r).map_err(std::io::Error::other)?;
    }
    w.into_inner()
        .map_err(|e| std::io::Error::other(e.to_string()))
}

/// `timeseries.csv` of one run, open for appending.
pub struct TimeseriesWriter {
    file: File,
    line: Vec<u8>,
}

impl TimeseriesWriter {
    /// Creates `path` (truncating it) with the header line.
    pub fn create(path: &Path) -> std::io::Result<TimeseriesWriter> {
        let mut file = File::create(path)?;
        file.write_all(&timeseries_csv(&[])?)?;
        Ok(TimeseriesWriter {
            file,
            line: Vec::new(),
        })
    }

    /// Appends one row in one `write`.
    pub fn append(&mut self, row: &TimeseriesRow) -> std::io::Result<()> {
        self.line.clear();
        {
            let mut w = csv::WriterBuilder::new()
                .has_headers(false)
                .from_writer(&mut self.line);
            w.serialize(row).map_err(std::io::Error::other)?;
            w.flush()?;
        }
        self.file.write_all(&self.line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The exact text of one row (see the summary's pinned row).
    #[test]
    fn one_row_is_pinned() {
        let row = TimeseriesRow {
            key: TimeseriesKey {
                profile: "smoke".into(),
                cell_id: "ab12cd34".into(),
                repetition: 0,
                step: None,
                second: 7,
                phase: "measure",
                target_rate: Some(Fixed(1000.0)),
                achieved_rate: 1001,
                ok: 990,
                busy: 6,
            },
            busy: [1, 0, 2, 0, 3, 0],
            tail: TimeseriesTail {
                errors: 4,
                timeouts: 1,
                dropped: 0,
                p50_ms: Some(Fixed(1.234)),
                p99_ms: Some(Fixed(12.5)),
                max_ms: None,
                broker_cpu: Some(Fixed(55.56)),
                broker_jit_ms: Some(Fixed(250.0)),
                broker_rss_mb: Some(Fixed(120.04)),
                harness_cpu: Fixed(3.0),
                other_cpu: Some(Fixed(7.0)),
                steal_cpu: Some(Fixed(2.0)),
                send_queue_size: "5".into(),
                send_queue_head_wait_ms: "12".into(),
                page_cache_lock_ms: String::new(),
                harness_rss_mb: Some(Fixed(14.25)),
                pool_buffers_free: "3".into(),
                commit_lag_bytes: "40960".into(),
                dispatch_behind_bytes: "1024".into(),
                not_available_disk_full: 2,
                not_available_other: 0,
                flush_slave_timeout: 0,
                slave_not_available: 0,
                store_disk_mb: Some(Fixed(512.5)),
                end_unix_s: Fixed(1_796_040_000.25),
            },
            consumer: TimeseriesConsumer::default(),
            order: TimeseriesOrder {
                order_inversions: Some(3),
                consume_order_violations: None,
            },
            ha: TimeseriesHa {
                repl_lag_bytes: Some(8_192),
                slave_wait_avg_us: Some(Fixed(350.25)),
                slave_wait_p99_us: Some(1_000),
            },
            event: TimeseriesEvent {
                event: "kill restart".into(),
            },
        };
        let text = String::from_utf8(timeseries_csv(std::slice::from_ref(&row)).unwrap()).unwrap();
        let mut lines = text.lines();
        assert_eq!(lines.next().unwrap(), TIMESERIES_COLUMNS.join(","));
        assert_eq!(
            lines.next().unwrap(),
            "smoke,ab12cd34,0,,7,measure,1000.0,1001,990,6,1,0,2,0,3,0,4,1,0,1.234,12.500,,55.6,250.0,120.0,3.0,7.0,2.0,5,12,,14.2,3,40960,1024,2,0,0,0,512.5,1796040000.250,,,,,,,,,,,,,,3,,8192,350.2,1000,kill restart"
        );

        // The streaming writer produces the same file, row by row.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("timeseries.csv");
        let mut w = TimeseriesWriter::create(&path).unwrap();
        w.append(&row).unwrap();
        w.append(&row).unwrap();
        let streamed = std::fs::read_to_string(&path).unwrap();
        let mut once = text.clone();
        once.push_str(text.lines().nth(1).unwrap());
        once.push('\n');
        assert_eq!(streamed, once);
    }
}
