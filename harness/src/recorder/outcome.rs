//! What a send's answer was: the outcome classes and the queue figures of a fast-failure remark.
//! The busy classes themselves, and their column names, are `harness_results::BusyClass`.

use remoting::ResponseCode;

pub use harness_results::BusyClass;

/// The flow-control path a SYSTEM_BUSY remark names.
fn busy_class_of(remark: &str) -> BusyClass {
    let r = remark.trim_start();
    if r.starts_with("[PCBUSY_CLEAN_QUEUE]") {
        BusyClass::PcbusyCleanQueue
    } else if r.starts_with("[TIMEOUT_CLEAN_QUEUE]") {
        BusyClass::TimeoutCleanQueue
    } else if r.starts_with("[REJECTREQUEST]") {
        BusyClass::RejectRequest
    } else if r.starts_with("[OVERLOAD]") {
        BusyClass::Overload
    } else if r.starts_with("[PC_SYNCHRONIZED]") {
        BusyClass::PcSynchronized
    } else {
        BusyClass::Other
    }
}

/// Code 14 SERVICE_NOT_AVAILABLE by remark: the store refused the put because its disk is
/// over the warning ratio (retention reference A5.3). The 4.8+ remark names the disk for every
/// store refusal (a 4.x slave, a shut-down store say the same), so `DiskFull` means "the
/// remark names the disk", as a client sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum NotAvailableClass {
    DiskFull,
    Other,
}

impl NotAvailableClass {
    pub const ALL: [NotAvailableClass; 2] = [NotAvailableClass::DiskFull, NotAvailableClass::Other];

    pub fn index(self) -> usize {
        self as usize
    }

    /// Column suffix in the CSV files.
    pub fn column(self) -> &'static str {
        match self {
            NotAvailableClass::DiskFull => "disk_full",
            NotAvailableClass::Other => "other",
        }
    }

    fn from_remark(remark: &str) -> NotAvailableClass {
        // 4.8+: "... the broker's disk is full [CL: ...". Up to 4.7: "..., maybe disk full, CL: ...".
        if remark.contains("the broker's disk is full") || remark.contains("maybe disk full") {
            NotAvailableClass::DiskFull
        } else {
            NotAvailableClass::Other
        }
    }
}

/// The final result of one scheduled send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Ok,
    Busy(BusyClass),
    SystemError,
    FlushDiskTimeout,
    MessageIllegal,
    /// Code 14.
    NotAvailable(NotAvailableClass),
    /// Code 12: a SYNC_MASTER stored the message but no slave acknowledged it in time. The Java
    /// client returns it as `SendStatus.FLUSH_SLAVE_TIMEOUT`, a result, not an exception.
    FlushSlaveTimeout,
    /// Code 11: a SYNC_MASTER stored the message with no slave connected (or one too far
    /// behind); `SendStatus.SLAVE_NOT_AVAILABLE`.
    SlaveNotAvailable,
    OtherCode(i32),
    Timeout,
    Dropped,
    ConnectionError,
}

impl Outcome {
    /// Whether the Java client returns a `SendResult` for this answer (SEND_OK or one of the
    /// statuses 10 / 11 / 12, whose message the master stored) rather than throwing.
    pub fn is_send_result(self) -> bool {
        matches!(
            self,
            Outcome::Ok
                | Outcome::FlushDiskTimeout
                | Outcome::FlushSlaveTimeout
                | Outcome::SlaveNotAvailable
        )
    }
}

/// Classifies a response. Code 2 is busy whatever the remark; code 1 is busy only for
/// `[PC_SYNCHRONIZED]` (the page-cache-busy answer before 5.3.0, §7.3).
#[inline]
pub fn classify(code: i32, remark: Option<&str>) -> Outcome {
    const SUCCESS: i32 = ResponseCode::SUCCESS as i32;
    const SYSTEM_ERROR: i32 = ResponseCode::SYSTEM_ERROR as i32;
    const SYSTEM_BUSY: i32 = ResponseCode::SYSTEM_BUSY as i32;
    const FLUSH_DISK_TIMEOUT: i32 = ResponseCode::FLUSH_DISK_TIMEOUT as i32;
    const MESSAGE_ILLEGAL: i32 = ResponseCode::MESSAGE_ILLEGAL as i32;
    const SERVICE_NOT_AVAILABLE: i32 = ResponseCode::SERVICE_NOT_AVAILABLE as i32;
    const FLUSH_SLAVE_TIMEOUT: i32 = ResponseCode::FLUSH_SLAVE_TIMEOUT as i32;
    const SLAVE_NOT_AVAILABLE: i32 = ResponseCode::SLAVE_NOT_AVAILABLE as i32;
    match code {
        SUCCESS => Outcome::Ok,
        SYSTEM_BUSY => Outcome::Busy(busy_class_of(remark.unwrap_or(""))),
        SYSTEM_ERROR if remark.is_some_and(|r| r.trim_start().starts_with("[PC_SYNCHRONIZED]")) => {
            Outcome::Busy(BusyClass::PcSynchronized)
        }
        SYSTEM_ERROR => Outcome::SystemError,
        FLUSH_DISK_TIMEOUT => Outcome::FlushDiskTimeout,
        MESSAGE_ILLEGAL => Outcome::MessageIllegal,
        SERVICE_NOT_AVAILABLE => {
            Outcome::NotAvailable(NotAvailableClass::from_remark(remark.unwrap_or("")))
        }
        FLUSH_SLAVE_TIMEOUT => Outcome::FlushSlaveTimeout,
        SLAVE_NOT_AVAILABLE => Outcome::SlaveNotAvailable,
        other => Outcome::OtherCode(other),
    }
}

/// `period in queue: Xms` and `size of queue: N` from a fast-failure remark (§6).
pub fn parse_queue_stats(remark: &str) -> Option<(u64, u64)> {
    let number_after = |tag: &str| -> Option<u64> {
        let rest = &remark[remark.find(tag)? + tag.len()..];
        let digits: String = rest
            .trim_start()
            .chars()
            .take_while(|c| c.is_ascii_digit())
            .collect();
        digits.parse().ok()
    };
    Some((
        number_after("period in queue:")?,
        number_after("size of queue:")?,
    ))
}
