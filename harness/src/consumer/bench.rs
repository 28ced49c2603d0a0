//! `harness processing-bench`: does the processing-time model keep its rate? N consume threads
//! at a constant T, fed a backlog as pulls feed them, on a runtime built as the consumers' is
//! (one worker thread); prints the measured consume rate against N/T and the CPU it cost.
//! `--timing sleep` runs the old model (a `sleep(T)` per message) for comparison.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tokio::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

use crate::consumer::processing::ProcessingModel;
use crate::consumer::threads::ConsumeThreads;
use crate::consumer::workers::{Clock, RequestQueue};
use harness_model::profile::{Consumer, Secs};

/// Messages cached and not yet consumed at least, as `pullThresholdForQueue` (1000) bounds
/// one queue's; `--backlog` may ask for more.
const BACKLOG: u64 = 1000;
/// Messages per consume request handed out at once, as a pull of 32 is.
const PULL: usize = 32;

/// How the busy time of a message is waited for.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Timing {
    /// Absolute deadlines per consume thread (the consumers' model).
    Deadline,
    /// `tokio::time::sleep(T)` per message (the model before issue 23).
    Sleep,
}

#[derive(clap::Args, Debug, Clone)]
pub struct ProcessingBenchArgs {
    /// Consume threads.
    #[arg(long, default_value_t = 4)]
    pub threads: u32,
    /// Constant processing times to measure, comma separated.
    #[arg(long, value_delimiter = ',', default_value = "100us,1ms,10ms,100ms,1s")]
    pub times: Vec<humantime::Duration>,
    /// How long each time is measured (the message count is threads × this / T).
    #[arg(long, default_value = "5s")]
    pub duration: humantime::Duration,
    #[arg(long, value_enum, default_value = "deadline")]
    pub timing: Timing,
    /// Work kept waiting for the threads, as time at N/T (at least 1000 messages): what the
    /// pulls keep cached. A runtime descheduled for longer than this on a shared machine
    /// leaves the threads without work.
    #[arg(long, default_value = "200ms")]
    pub backlog: humantime::Duration,
    /// Runs per time: the median is shown, and the trial furthest from N/T (a shared machine
    /// that deschedules the runtime at the very end of a run makes one trial late).
    #[arg(long, default_value_t = 3)]
    pub trials: u32,
}

/// One measured processing time.
#[derive(Debug, Clone, Copy)]
pub struct BenchRow {
    pub time: Duration,
    pub expected: f64,
    pub measured: f64,
    pub cpu_percent: Option<f64>,
}

impl BenchRow {
    pub fn error_percent(&self) -> f64 {
        (self.measured / self.expected - 1.0) * 100.0
    }
}

/// Runs every time of `args` and returns the table.
pub fn run_bench(args: &ProcessingBenchArgs) -> Result<String, String> {
    if args.threads == 0 || args.trials == 0 || args.times.iter().any(|t| t.is_zero()) {
        return Err("--threads, --trials and every --times value must be above 0".into());
    }
    let mut out = format!(
        "{:>8} {:>9} {:>12} {:>12} {:>8} {:>8} {:>8}\n",
        "threads", "T", "N/T per s", "median/s", "error", "worst", "cpu"
    );
    for t in &args.times {
        let mut rows = (0..args.trials)
            .map(|_| measure(args, (*t).into()))
            .collect::<Result<Vec<_>, _>>()?;
        rows.sort_by(|a, b| a.measured.total_cmp(&b.measured));
        let row = rows[rows.len() / 2];
        let worst = rows
            .iter()
            .map(BenchRow::error_percent)
            .max_by(|a, b| a.abs().total_cmp(&b.abs()))
            .unwrap_or(0.0);
        let _ = writeln!(
            out,
            "{:>8} {:>9} {:>12.1} {:>12.1} {:>7.2}% {:>7.2}% {:>8}",
            args.threads,
            humantime::format_duration(row.time).to_string(),
            row.expected,
            row.measured,
            row.error_percent(),
            worst,
            row.cpu_percent
                .map_or_else(|| "-".into(), |c| format!("{c:.1}%"))
        );
    }
    Ok(out)
}

/// `args.threads` consume threads at a constant `time` until `threads × duration / time`
/// messages (at least one per thread) were consumed.
pub fn measure(args: &ProcessingBenchArgs, time: Duration) -> Result<BenchRow, String> {
    let (threads, duration) = (args.threads, Duration::from(args.duration));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("harness-consumer")
        .enable_all()
        .build()
        .map_err(|e| format!("bench runtime: {e}"))?;
    let total = ((duration.as_secs_f64() * f64::from(threads) / time.as_secs_f64()).round() as u64)
        .max(u64::from(threads));
    let cpu = || crate::proc::cpu::process_cpu_seconds(std::process::id());
    let cpu0 = cpu();
    let per_second = f64::from(threads) / time.as_secs_f64();
    let backlog = ((per_second * args.backlog.as_secs_f64()) as u64).max(BACKLOG);
    let elapsed = rt.block_on(feed(threads, time, total, backlog, args.timing));
    let cpu_percent = cpu()
        .zip(cpu0)
        .map(|(b, a)| (b - a) / elapsed.as_secs_f64() * 100.0);
    rt.shutdown_timeout(std::time::Duration::from_secs(2));
    Ok(BenchRow {
        time,
        expected: f64::from(threads) / time.as_secs_f64(),
        measured: total as f64 / elapsed.as_secs_f64(),
        cpu_percent,
    })
}

/// Submits `total` messages in requests of [`PULL`], at most a backlog waiting, and returns
/// the time from the first start to the last message's end.
async fn feed(threads: u32, time: Duration, total: u64, backlog: u64, timing: Timing) -> Duration {
    let cfg = Consumer {
        processing_time: Secs(time.as_secs_f64()),
        ..Consumer::default()
    };
    let model = Arc::new(ProcessingModel::new(&cfg, std::time::Instant::now()));
    let start = Instant::now();
    let end = End {
        total,
        done: AtomicU64::new(0),
        finished: CancellationToken::new(),
    };
    let end = Arc::new(end);
    let cancel = CancellationToken::new();
    let requests = Arc::new(RequestQueue::new(backlog as usize));
    let pool = Arc::new(ConsumeThreads::new(threads as usize, start));
    let waiting = Arc::new(tokio::sync::Semaphore::new(backlog as usize));
    if timing == Timing::Deadline {
        for _ in 0..threads {
            let (requests, model, end, cancel) =
                (requests.clone(), model.clone(), end.clone(), cancel.clone());
            tokio::spawn(async move {
                // The consumers' workers (`concurrent.rs`): take, finish at once or wake one
                // more worker and sleep until the deadline.
                let mut clock = Clock::new(start);
                while let Some(((seq, ready), more)) = requests.next(&cancel).await {
                    let busy = model.service_time(seq, &mut fastrand::Rng::with_seed(seq));
                    let (_, deadline) = clock.period(ready, busy);
                    if !clock.finish_if_past(deadline, Instant::now()) {
                        if more {
                            requests.wake_one();
                        }
                        clock.busy_until(deadline, &cancel).await;
                    }
                    end.one_done();
                }
            });
        }
    }
    let mut sent = 0u64;
    while sent < total {
        let n = (PULL as u64).min(total - sent);
        let ready = Instant::now();
        match timing {
            // One consume request per message (`consumeMessageBatchMaxSize` = 1); the queue's
            // capacity is the backlog.
            Timing::Deadline => {
                requests
                    .submit((sent..sent + n).map(|seq| (seq, ready)))
                    .await
            }
            Timing::Sleep => {
                // At most a backlog waiting: a permit per message until it is done.
                let Ok(mut permits) = waiting.clone().acquire_many_owned(n as u32).await else {
                    break;
                };
                for seq in sent..sent + n {
                    let (pool, model, end) = (pool.clone(), model.clone(), end.clone());
                    let permit = permits.split(1);
                    tokio::spawn(async move {
                        let Some(thread) = pool.acquire().await else {
                            return;
                        };
                        let busy = model.service_time(seq, &mut fastrand::Rng::with_seed(seq));
                        tokio::time::sleep(busy).await;
                        drop((thread, permit));
                        end.one_done();
                    });
                }
            }
        }
        sent += n;
    }
    end.finished.cancelled().await;
    cancel.cancel();
    start.elapsed()
}

/// Counts finished messages; fires when the last one is done.
struct End {
    total: u64,
    done: AtomicU64,
    finished: CancellationToken,
}

impl End {
    fn one_done(&self) {
        if self.done.fetch_add(1, Ordering::AcqRel) + 1 == self.total {
            self.finished.cancel();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_print_the_error_against_n_over_t() {
        let r = BenchRow {
            time: Duration::from_millis(10),
            expected: 100.0,
            measured: 90.0,
            cpu_percent: None,
        };
        assert!((r.error_percent() + 10.0).abs() < 1e-9);
        let args = ProcessingBenchArgs {
            threads: 0,
            times: vec![],
            duration: Duration::from_secs(1).into(),
            timing: Timing::Deadline,
            backlog: Duration::from_millis(50).into(),
            trials: 1,
        };
        assert!(run_bench(&args).is_err());
    }
}
