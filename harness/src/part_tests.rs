//! The seam's contract with mock parts: hooks run in registration order, what one part
//! publishes on the board reaches the parts after it, every part ticks and finishes even when
//! one fails, and a drain row carries every part's cells but the draining part's own.

use std::cell::RefCell;
use std::net::SocketAddr;
use std::rc::Rc;

use super::*;
use harness_model::profile::Workload;

type Log = Rc<RefCell<Vec<String>>>;

/// A part that logs its hooks under `name`, writes `name` into the rows' `event` cell, and
/// fails its tick and finish when told to.
struct Mock {
    name: &'static str,
    log: Log,
    fail: bool,
    /// Drain rows it made, with their `event` cells.
    drained: Rc<RefCell<Vec<String>>>,
}

impl Mock {
    fn note(&self, hook: &str) {
        self.log.borrow_mut().push(format!("{}.{hook}", self.name));
    }
}

impl JobPart for Mock {
    fn prepare(
        &mut self,
        _brokers: &mut Brokers<'_>,
        _cfg: &mut LoadConfig,
        board: &mut Board,
    ) -> Result<(), PartError> {
        self.note(&format!("prepare(restarting={})", board.restarting));
        board.restarting = true;
        Ok(())
    }

    fn tick(
        &mut self,
        _now: Instant,
        _brokers: &mut Brokers<'_>,
        _board: &mut Board,
    ) -> Result<(), PartError> {
        self.note("tick");
        match self.fail {
            true => Err(PartError::Series(std::io::Error::other(format!(
                "{} failed",
                self.name
            )))),
            false => Ok(()),
        }
    }

    fn second(&mut self, _second: &mut Second<'_>, row: &mut TimeseriesRow) {
        row.event.event.push_str(self.name);
    }

    fn drain(&mut self, _interrupted: bool, rows: &mut dyn Rows) -> Result<(), PartError> {
        self.note("drain");
        let row = rows.drain_row();
        self.drained.borrow_mut().push(row.event.event);
        Ok(())
    }

    fn finish(&mut self, _cols: JobColumns<'_>) -> Result<(), PartError> {
        self.note("finish");
        match self.fail {
            true => Err(PartError::Series(std::io::Error::other(format!(
                "{} incomplete",
                self.name
            )))),
            false => Ok(()),
        }
    }
}

/// Rows whose drain rows start empty.
struct Blank;

impl Rows for Blank {
    fn begin_backlog(&mut self) {}
    fn backlog_row(&mut self) -> TimeseriesRow {
        TimeseriesRow::default()
    }
    fn drain_row(&mut self) -> TimeseriesRow {
        TimeseriesRow::default()
    }
    fn append(&mut self, _row: &TimeseriesRow) -> Result<(), PartError> {
        Ok(())
    }
    fn write_second(
        &mut self,
        _row: &TimeseriesRow,
        _hists: &[(&str, &Histogram<u64>)],
    ) -> Result<(), PartError> {
        Ok(())
    }
    fn cancelled(&self) -> bool {
        false
    }
    fn line(&self, _text: &str) {}
}

fn parts(fail: &[bool]) -> (JobParts, Log, Rc<RefCell<Vec<String>>>) {
    let log = Log::default();
    let drained = Rc::new(RefCell::new(Vec::new()));
    let mut parts = JobParts::default();
    for (name, &fail) in ["a", "b", "c"].into_iter().zip(fail) {
        parts.push(Mock {
            name,
            log: log.clone(),
            fail,
            drained: drained.clone(),
        });
    }
    (parts, log, drained)
}

fn load() -> LoadConfig {
    LoadConfig::new(SocketAddr::from(([127, 0, 0, 1], 0)), &Workload::default())
}

#[test]
fn hooks_run_in_registration_order_and_the_board_carries_what_a_part_published() {
    let (mut parts, log, _) = parts(&[false, false, false]);
    let mut brokers = Brokers {
        process: None,
        cluster: None,
    };
    parts.prepare(&mut brokers, &mut load()).unwrap();
    assert_eq!(
        *log.borrow(),
        [
            "a.prepare(restarting=false)",
            "b.prepare(restarting=true)",
            "c.prepare(restarting=true)"
        ]
    );
    let mut row = TimeseriesRow::default();
    parts.second(None, (false, true), &mut Vec::new(), &mut row);
    assert_eq!(row.event.event, "abc");
}

#[test]
fn every_part_ticks_and_finishes_and_the_first_error_is_the_reason() {
    let (mut parts, log, _) = parts(&[false, true, true]);
    let mut brokers = Brokers {
        process: None,
        cluster: None,
    };
    let e = parts.tick(Instant::now(), &mut brokers).unwrap_err();
    assert_eq!(e.to_string(), "writing the time series: b failed");
    let (mut res, mut order, mut consumer, mut fault) = Default::default();
    let cols = JobColumns {
        res: &mut res,
        order: &mut order,
        consumer: &mut consumer,
        fault: &mut fault,
    };
    let e = parts.finish(cols).unwrap_err();
    assert!(matches!(e, PartError::Series(_)));
    assert_eq!(e.to_string(), "writing the time series: b incomplete");
    assert_eq!(
        *log.borrow(),
        ["a.tick", "b.tick", "c.tick", "a.finish", "b.finish", "c.finish"]
    );
}

#[test]
fn a_drain_row_carries_the_other_parts_cells_not_the_draining_parts() {
    let (mut parts, _, drained) = parts(&[false, false, false]);
    parts.drain(false, &mut Blank).unwrap();
    assert_eq!(*drained.borrow(), ["bc", "ac", "ab"]);
}
