//! The order accounting of one job, a job part (`crate::part`):
//! started before the load (so the consumers count from their first pull of its messages),
//! given the load's UNIQ_KEY prefix once it runs, sampled every second, finished after it.
//!
//! It is on when the job has consumers (their pulls are read anyway) or `ordering` is not
//! `none` (then, without consumers, a store reader reads the queues back). Off with batches
//! (keys are per message) and with `[cluster]` (one broker's queues are not the topic's).

use std::net::SocketAddr;
use std::sync::Arc;

use crate::order::readback::{ReadBackError, StoreReader};
use crate::part::{BeforeLoad, JobColumns, JobPart, LoadStarted, PartError, Second};
use crate::report::{OrderColumns, TimeseriesOrder, TimeseriesRow};
use crate::send_order::key::Streams;
use crate::send_order::ledger::{ConsumeOrder, OrderLedger, Source};
use harness_model::profile::{ConsumeMode, SendOrdering, Workload};
use rmq_client::uniq_key::KeySpace;

/// A job's order accounting.
pub enum JobOrder {
    /// Counted from the consumers' pulls.
    Pulls(Arc<OrderLedger>),
    /// Counted from the store; the ledger and reader start with the load.
    Store {
        streams: Streams,
        running: Option<(Arc<OrderLedger>, StoreReader)>,
        failed: Option<ReadBackError>,
    },
}

impl JobOrder {
    /// Before the load: with consumers (whose acknowledgement tracking writes UNIQ_KEY
    /// prefix `tracking_prefix`), a ledger for the load's messages, to hand to them.
    pub fn before_load(
        w: &Workload,
        clustered: bool,
        consumers: Option<(&str, ConsumeMode)>,
    ) -> Option<JobOrder> {
        if w.batch > 1 || clustered {
            return None;
        }
        let streams = Streams::of(w);
        match consumers {
            Some((prefix, mode)) => {
                let check = match mode {
                    ConsumeMode::Orderly => ConsumeOrder::Checked,
                    ConsumeMode::Concurrently => ConsumeOrder::Unchecked,
                };
                let ledger = Arc::new(OrderLedger::new(prefix, streams, Source::Pull, check));
                Some(JobOrder::Pulls(ledger))
            }
            None if w.ordering != SendOrdering::None => Some(JobOrder::Store {
                streams,
                running: None,
                failed: None,
            }),
            None => None,
        }
    }

    /// The load runs with these keys: without consumers, start reading the store back.
    pub fn load_started(&mut self, addr: SocketAddr, w: &Workload, keys: &KeySpace) {
        if let JobOrder::Store {
            streams,
            running,
            failed,
        } = self
        {
            let ledger = Arc::new(OrderLedger::new(
                keys.prefix(),
                streams.clone(),
                Source::Store,
                ConsumeOrder::Unchecked,
            ));
            match StoreReader::start(addr, &w.topic, w.queues, ledger.clone()) {
                Ok(reader) => *running = Some((ledger, reader)),
                Err(e) => *failed = Some(e),
            }
        }
    }

    fn ledger(&self) -> Option<&Arc<OrderLedger>> {
        match self {
            JobOrder::Pulls(l) => Some(l),
            JobOrder::Store { running, .. } => running.as_ref().map(|(l, _)| l),
        }
    }

    /// This second's cells. `last`: the load has ended, so the store reader first reads
    /// everything stored, and the per-second counts add up to the job's.
    pub fn second(&mut self, last: bool) -> TimeseriesOrder {
        if let JobOrder::Store {
            running: Some((_, reader)),
            failed,
            ..
        } = self
        {
            if last && failed.is_none() {
                if let Err(e) = reader.catch_up() {
                    *failed = Some(e);
                }
            }
        }
        self.ledger()
            .map_or_else(TimeseriesOrder::default, |l| l.take_second().columns())
    }

    /// The job's columns, or why the count is incomplete.
    pub fn finish(self) -> Result<OrderColumns, ReadBackError> {
        match self {
            JobOrder::Pulls(l) => Ok(l.figures().columns()),
            JobOrder::Store {
                running, failed, ..
            } => {
                if let Some(e) = failed {
                    return Err(e);
                }
                let Some((ledger, reader)) = running else {
                    return Ok(OrderColumns::default());
                };
                reader.finish()?;
                Ok(ledger.figures().columns())
            }
        }
    }
}

/// Order accounting as a job part: decided once the consumers (if any) have started.
pub struct OrderPart {
    /// The cell's consumers' mode (None without consumers).
    consumers: Option<ConsumeMode>,
    order: Option<JobOrder>,
}

impl OrderPart {
    /// The part of a job whose cell has consumers of `mode` (or none).
    pub fn new(consumers: Option<ConsumeMode>) -> OrderPart {
        OrderPart {
            consumers,
            order: None,
        }
    }
}

impl JobPart for OrderPart {
    fn before_load(&mut self, b: BeforeLoad<'_>) -> Result<(), PartError> {
        let tracking = b.cfg.tracking.as_ref();
        let consumers = tracking.map(|t| t.prefix.as_str()).zip(self.consumers);
        self.order = JobOrder::before_load(&b.cfg.workload, b.cfg.cluster.is_some(), consumers);
        if let Some(JobOrder::Pulls(ledger)) = &self.order {
            b.board.order_ledger = Some(ledger.clone());
        }
        Ok(())
    }

    fn load_started(&mut self, load: LoadStarted<'_>) {
        if let Some(o) = self.order.as_mut() {
            o.load_started(load.addr, load.workload, load.keys);
        }
    }

    fn second(&mut self, second: &mut Second<'_>, row: &mut TimeseriesRow) {
        if let Some(o) = self.order.as_mut() {
            row.order = o.second(second.last);
        }
    }

    fn finish(&mut self, cols: JobColumns<'_>) -> Result<(), PartError> {
        if let Some(o) = self.order.take() {
            *cols.order = o.finish().map_err(PartError::Order)?;
        }
        Ok(())
    }
}
