//! The order columns of `summary.csv` and `timeseries.csv` (`harness::order`); empty cells in
//! a job without order accounting.

use serde::Serialize;

use crate::order::ledger::{OrderFigures, OrderSecond};

/// `summary.csv`'s order columns: over the whole job (warm-up included), like the fault
/// columns, because the stored order of the warm-up's messages is part of what the queue holds.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct OrderColumns {
    pub order_inversions: Option<u64>,
    /// `pull` (the consumers' pulls) or `store` (the store read-back).
    pub order_source: Option<&'static str>,
    /// The load's messages the count looked at.
    pub order_read: Option<u64>,
    pub consume_order_violations: Option<u64>,
    pub consume_order_redelivered: Option<u64>,
}

impl OrderColumns {
    pub fn of(f: &OrderFigures) -> OrderColumns {
        OrderColumns {
            order_inversions: Some(f.inversions),
            order_source: Some(f.source.name()),
            order_read: Some(f.read),
            consume_order_violations: f.consume_violations,
            consume_order_redelivered: f.consume_redelivered,
        }
    }
}

/// `timeseries.csv`'s order columns: what was counted in the second.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TimeseriesOrder {
    pub order_inversions: Option<u64>,
    pub consume_order_violations: Option<u64>,
}

impl TimeseriesOrder {
    pub fn of(s: &OrderSecond) -> TimeseriesOrder {
        TimeseriesOrder {
            order_inversions: Some(s.inversions),
            consume_order_violations: s.consume_violations,
        }
    }
}
