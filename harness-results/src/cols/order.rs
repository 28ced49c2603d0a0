//! The order columns of `summary.csv` and `timeseries.csv` (filled by `harness::order`); empty cells in
//! a job without order accounting.

use serde::Serialize;

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

/// `timeseries.csv`'s order columns: what was counted in the second.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TimeseriesOrder {
    pub order_inversions: Option<u64>,
    pub consume_order_violations: Option<u64>,
}
