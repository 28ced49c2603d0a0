//! `RunningFlags` (retention reference A5.1): the bits that make the store refuse puts. Only
//! DISK_FULL is ever set here; the other bits are listed so the flag value in the log line and
//! in runtime info reads like RocketMQ's.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::keys::VersionProfile;

pub(crate) const NOT_WRITEABLE_BIT: u32 = 1 << 1;
pub(crate) const WRITE_LOGICS_QUEUE_ERROR_BIT: u32 = 1 << 2;
pub(crate) const WRITE_INDEX_FILE_ERROR_BIT: u32 = 1 << 3;
pub(crate) const DISK_FULL_BIT: u32 = 1 << 4;

/// Bits that fail `isWriteable`.
const NOT_WRITEABLE_MASK: u32 =
    NOT_WRITEABLE_BIT | WRITE_LOGICS_QUEUE_ERROR_BIT | WRITE_INDEX_FILE_ERROR_BIT | DISK_FULL_BIT;

/// Rejections between two warn lines, like RocketMQ's `printTimes % 50000`.
const WARN_EVERY: u64 = 50_000;

pub(crate) struct RunningFlags {
    bits: AtomicU32,
    /// Consecutive refused puts (RocketMQ's `printTimes`), reset by a writable check.
    refused: AtomicU64,
    /// Every put refused because the store was not writable (ours, for runtime info).
    refused_total: AtomicU64,
}

impl RunningFlags {
    pub(crate) fn new() -> Self {
        RunningFlags {
            bits: AtomicU32::new(0),
            refused: AtomicU64::new(0),
            refused_total: AtomicU64::new(0),
        }
    }

    pub(crate) fn bits(&self) -> u32 {
        self.bits.load(Ordering::Acquire)
    }

    pub(crate) fn is_writeable(&self) -> bool {
        self.bits() & NOT_WRITEABLE_MASK == 0
    }

    /// `getAndMakeDiskFull`: true when the bit was clear before.
    pub(crate) fn make_disk_full(&self) -> bool {
        self.bits.fetch_or(DISK_FULL_BIT, Ordering::AcqRel) & DISK_FULL_BIT == 0
    }

    /// `getAndMakeDiskOK`: true when the bit was set before.
    pub(crate) fn make_disk_ok(&self) -> bool {
        self.bits.fetch_and(!DISK_FULL_BIT, Ordering::AcqRel) & DISK_FULL_BIT != 0
    }

    pub(crate) fn refused_total(&self) -> u64 {
        self.refused_total.load(Ordering::Relaxed)
    }

    /// The put path's role check on a SLAVE (4.3 `putMessage` / 4.9 `checkStoreStatus` /
    /// 5.3 `HookUtils.checkBeforePutMessage`): every put is refused, with the release's warn line
    /// on the first and then every 50,000th refusal (the same `printTimes` counter).
    pub(crate) fn refuse_on_slave(&self, profile: VersionProfile) {
        if self
            .refused
            .fetch_add(1, Ordering::Relaxed)
            .is_multiple_of(WARN_EVERY)
        {
            eprintln!(
                "{}",
                match profile {
                    VersionProfile::V4_3 =>
                        "message store is slave mode, so putMessage is forbidden ",
                    VersionProfile::V4_9 => "broke role is slave, so putMessage is forbidden",
                    VersionProfile::V5_3 =>
                        "message store is in slave mode, so putMessage is forbidden ",
                }
            );
        }
    }

    /// The put path's store-status check: false refuses the put (SERVICE_NOT_AVAILABLE), with
    /// the release's warn line on the first and then every 50,000th refusal in a row.
    pub(crate) fn check_before_put(&self, profile: VersionProfile) -> bool {
        if self.is_writeable() {
            self.refused.store(0, Ordering::Relaxed);
            return true;
        }
        self.refused_total.fetch_add(1, Ordering::Relaxed);
        if self
            .refused
            .fetch_add(1, Ordering::Relaxed)
            .is_multiple_of(WARN_EVERY)
        {
            if profile == VersionProfile::V4_9 {
                eprintln!(
                    "the message store is not writable. It may be caused by one of the following \
                     reasons: the broker's disk is full, write to logic queue error, write to \
                     index file error, etc"
                );
            } else {
                eprintln!(
                    "message store is not writeable, so putMessage is forbidden {}",
                    self.bits()
                );
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disk_full_refuses_until_cleared() {
        let f = RunningFlags::new();
        assert!(f.check_before_put(VersionProfile::V5_3));
        assert!(f.make_disk_full());
        assert!(!f.make_disk_full(), "already set");
        assert!(!f.check_before_put(VersionProfile::V5_3));
        assert!(!f.check_before_put(VersionProfile::V4_9));
        assert_eq!(f.bits(), DISK_FULL_BIT);
        assert!(f.make_disk_ok());
        assert!(!f.make_disk_ok(), "already clear");
        assert!(f.check_before_put(VersionProfile::V5_3));
        assert_eq!(f.refused_total(), 2);
    }
}
