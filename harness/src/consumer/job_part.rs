//! The consumers as a job part: started before the load (after any prefill, whose backlog
//! they eat first, one `backlog` row per second), sampled with every second, told of the
//! broker's restarts, drained after the producers stop (one `drain` row per second), then
//! stopped. The job knows them only through `crate::part`.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::consumer::{ConsumerFigures, ConsumerRun, Target};
use crate::part::{BeforeLoad, Board, Brokers, JobColumns, JobPart, PartError, Rows, Second};
use crate::report::{TimeseriesConsumer, TimeseriesRow};
use harness_model::profile::{Consumer, Workload};
use harness_results::{Invalid, InvalidKind};

/// A job's consumers.
pub struct ConsumerPart {
    spec: Consumer,
    workload: Workload,
    /// The job's consumer.log.
    log: PathBuf,
    run: Option<ConsumerRun>,
    figures: Option<ConsumerFigures>,
}

impl ConsumerPart {
    /// The consumers of a cell with `[consumer]`, logging to `log`.
    pub fn new(spec: &Consumer, workload: &Workload, log: PathBuf) -> ConsumerPart {
        ConsumerPart {
            spec: spec.clone(),
            workload: workload.clone(),
            log,
            run: None,
            figures: None,
        }
    }
}

impl JobPart for ConsumerPart {
    /// Starts the consumers and points the load's acknowledgements at them. With `namesrv` (a
    /// cluster) they follow the topic's route over every broker; else they read the load's
    /// broker. With a prefill, one `backlog` row per second until the consumers have eaten
    /// the prefilled backlog (or `drain_timeout` passed), so that `drain_rate`'s seconds are
    /// not folded into the load's first one; the rows carry the broker's and the harness's
    /// CPU: which one limits the drain.
    fn before_load(&mut self, b: BeforeLoad<'_>) -> Result<(), PartError> {
        let target = b
            .namesrv
            .map_or(Target::Broker(b.cfg.addr), Target::NameServer);
        let scheduled = b.cfg.scheduled_sends();
        let run = ConsumerRun::start(
            &self.spec,
            &self.workload,
            target,
            scheduled,
            Some(&self.log),
        )
        .map_err(PartError::Consumers)?;
        b.cfg.tracking = Some(run.tracking());
        let run = self.run.insert(run);
        let rows = b.rows;
        let mut failed = None;
        rows.begin_backlog();
        run.drain_backlog(|run| {
            let mut row = rows.backlog_row();
            row.key.phase = "backlog";
            row.consumer = TimeseriesConsumer::of(Some(&run.second()));
            if let Err(e) = rows.append(&row) {
                failed.get_or_insert(e);
            }
            if rows.cancelled() {
                run.cancel();
            }
        });
        failed.map_or(Ok(()), Err)
    }

    /// The order accounting's ledger, if there is one, counts from the first pull.
    fn ready(&mut self, board: &mut Board) {
        if let (Some(run), Some(ledger)) = (&self.run, board.order_ledger.take()) {
            run.watch_order(ledger);
        }
    }

    fn tick(
        &mut self,
        _now: Instant,
        _brokers: &mut Brokers<'_>,
        board: &mut Board,
    ) -> Result<(), PartError> {
        if let Some(run) = self.run.as_mut() {
            // On a cluster the consumers' recovery is the restarted broker's queues'.
            let name = board.restarted_name.as_str();
            run.follow_restarts(&board.restarts, Some(name).filter(|n| !n.is_empty()));
        }
        Ok(())
    }

    /// The consumer cells of this second's row, and its two histograms (`e2e`, `stored_e2e`)
    /// for the interval log.
    fn second(&mut self, second: &mut Second<'_>, row: &mut TimeseriesRow) {
        let Some(run) = self.run.as_mut() else { return };
        if second.measuring {
            run.start_measuring();
        }
        let s = run.second();
        row.consumer = TimeseriesConsumer::of(Some(&s));
        if let Some(h) = s.e2e {
            second.hists.push(("e2e", h));
        }
        if let Some(h) = s.stored_e2e {
            second.hists.push(("stored_e2e", h));
        }
    }

    /// Waits for the consumers to catch up (one `drain` row per second), stops them and keeps
    /// their figures.
    fn drain(&mut self, interrupted: bool, rows: &mut dyn Rows) -> Result<(), PartError> {
        let Some(mut run) = self.run.take() else {
            return Ok(());
        };
        if interrupted {
            run.cancel();
            self.figures = Some(run.finish());
            return Ok(());
        }
        let mut failed = None;
        run.drain(|run| {
            let mut row = rows.drain_row();
            let s = run.second();
            row.consumer = TimeseriesConsumer::of(Some(&s));
            let hists: Vec<(&str, &hdrhistogram::Histogram<u64>)> =
                [("e2e", &s.e2e), ("stored_e2e", &s.stored_e2e)]
                    .into_iter()
                    .filter_map(|(n, h)| Some((n, h.as_ref()?)))
                    .collect();
            if let Err(e) = rows.write_second(&row, &hists) {
                failed.get_or_insert(e);
            }
            if rows.cancelled() {
                run.cancel();
            }
        });
        let t = Instant::now();
        let figures = run.finish();
        let stop_took = t.elapsed();
        if stop_took > Duration::from_secs(8) {
            rows.line(&format!("  consumers took {stop_took:?} to stop"));
        }
        match failed {
            Some(e) => Err(e),
            None => {
                self.figures = Some(figures);
                Ok(())
            }
        }
    }

    fn finish(&mut self, cols: JobColumns<'_>) -> Result<(), PartError> {
        *cols.consumer = self.figures.clone();
        Ok(())
    }

    fn invalid_reason(&self) -> Option<Invalid> {
        not_drained(self.figures.as_ref()?, self.spec.drain_timeout.duration())
    }

    fn progress_line(&self) -> Option<String> {
        self.figures.as_ref().map(progress_line)
    }
}

/// Why a job whose consumers did not catch up is not scored.
pub fn not_drained(f: &ConsumerFigures, drain_timeout: Duration) -> Option<Invalid> {
    (!f.drained).then(|| {
        Invalid::new(
            InvalidKind::ConsumersBehind,
            format!(
                "consumers did not catch up within drain_timeout {drain_timeout:?}: lag {} at the end, {} acknowledged messages not consumed",
                f.lag_at_end,
                f.lost.map_or_else(|| "?".into(), |l| l.to_string())
            ),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consumers_behind_carry_their_kind() {
        let behind = ConsumerFigures {
            drained: false,
            ..Default::default()
        };
        let why = not_drained(&behind, Duration::from_secs(5)).unwrap();
        assert_eq!(why.kind, Some(InvalidKind::ConsumersBehind));
        assert!(
            why.reason
                .starts_with("consumers did not catch up within drain_timeout 5s"),
            "{}",
            why.reason
        );
        let drained = ConsumerFigures {
            drained: true,
            ..Default::default()
        };
        assert_eq!(not_drained(&drained, Duration::from_secs(5)), None);
    }
}
