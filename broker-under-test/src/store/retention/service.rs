//! The retention thread, `StoreScheduledThread`: the first clean round after 60 s
//! (`injectCleanFirstDelayMillis`), then one every `cleanResourceInterval` at a fixed rate, each
//! CleanCommitLogService then CleanConsumeQueueService (4.x runs both on this one thread; 5.x
//! gives the consume-queue cleaner a thread of its own at the same period, which changes
//! nothing observable here). The 4.9 profile also runs the 10 s disk check (A5.2).

use std::time::{Duration, Instant};

use super::state::Retention;
use super::{clean_commit_log, clean_consume_queue};
use crate::keys::VersionProfile;
use crate::store::commitlog::CommitLog;

/// `DiskCheckScheduledThread`: first after 1 s, then every 10 s (4.7.1 – 4.9.x).
const DISK_CHECK_FIRST: Duration = Duration::from_secs(1);
const DISK_CHECK_PERIOD: Duration = Duration::from_secs(10);

/// Runs until the retention waiter is stopped.
pub(crate) fn run(r: &Retention, log: &CommitLog) {
    let start = Instant::now();
    let mut next_clean = start + r.config.first_delay;
    let disk_check = r.config.profile == VersionProfile::V4_9;
    let mut next_disk_check = start + DISK_CHECK_FIRST;
    while !r.waiter.is_stopped() {
        let now = Instant::now();
        if now >= next_clean {
            clean_commit_log::run_round(r, log);
            clean_consume_queue::run_round(r, log);
            // Fixed rate: a round longer than the period is followed at once by the next.
            next_clean += r.config.clean_resource_interval;
        }
        if disk_check && now >= next_disk_check {
            clean_commit_log::check_disk_4_9(r);
            next_disk_check += DISK_CHECK_PERIOD;
        }
        let wake = if disk_check {
            next_clean.min(next_disk_check)
        } else {
            next_clean
        };
        r.waiter
            .wait(wake.saturating_duration_since(Instant::now()), false);
    }
}
