//! Which flow-control path produced a busy answer: the classes, their column names and the
//! broker counters behind them. A pure enum, so the result files' `busy_<class>` columns can be
//! named and read without the runner (which classifies answers into it).

use serde::Serialize;

/// Which flow-control path produced a busy answer (reference §4.2, §6, §7.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum BusyClass {
    PcbusyCleanQueue,
    TimeoutCleanQueue,
    RejectRequest,
    Overload,
    PcSynchronized,
    Other,
}

impl BusyClass {
    pub const ALL: [BusyClass; 6] = [
        BusyClass::PcbusyCleanQueue,
        BusyClass::TimeoutCleanQueue,
        BusyClass::RejectRequest,
        BusyClass::Overload,
        BusyClass::PcSynchronized,
        BusyClass::Other,
    ];

    pub fn index(self) -> usize {
        self as usize
    }

    /// Column suffix in the CSV files.
    pub fn column(self) -> &'static str {
        match self {
            BusyClass::PcbusyCleanQueue => "pcbusy_clean_queue",
            BusyClass::TimeoutCleanQueue => "timeout_clean_queue",
            BusyClass::RejectRequest => "rejectrequest",
            BusyClass::Overload => "overload",
            BusyClass::PcSynchronized => "pc_synchronized",
            BusyClass::Other => "other",
        }
    }

    /// The broker-under-test runtime-info counters that count this class for sends.
    pub fn broker_counters(self) -> &'static [&'static str] {
        match self {
            BusyClass::PcbusyCleanQueue => &["flowControlPcBusyCleanQueue"],
            BusyClass::TimeoutCleanQueue => &["flowControlTimeoutCleanQueueSend"],
            BusyClass::RejectRequest => &[
                "flowControlRejectRequestPageCache",
                "flowControlRejectRequestPool",
            ],
            BusyClass::Overload => &["flowControlOverloadSend"],
            BusyClass::PcSynchronized => &["flowControlPcSynchronized"],
            BusyClass::Other => &[],
        }
    }
}
