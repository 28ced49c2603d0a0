//! `CleanConsumeQueueService` (retention reference A7.2): once the CommitLog min offset moved,
//! every consume queue drops the files that point only below it and corrects its min offset.

use std::sync::atomic::Ordering;

use super::state::Retention;
use crate::keys::VersionProfile;
use crate::store::commitlog::CommitLog;

pub(crate) fn run_round(r: &Retention, log: &CommitLog) {
    let min = log.min_offset();
    {
        let mut round = r.round.lock();
        if min <= round.last_physical_min_offset {
            return;
        }
        round.last_physical_min_offset = min;
    }
    // 5.3 sets the min of a queue holding only deleted records to its max; 4.x leaves it.
    let all_stale_to_max = r.config.profile == VersionProfile::V5_3;
    for q in log.consume_queues.all() {
        let deleted = q.delete_expired_files(min);
        q.correct_min_offset(min, all_stale_to_max);
        if deleted > 0 {
            r.deleted_consume_queue_files
                .fetch_add(deleted as u64, Ordering::Relaxed);
            r.waiter
                .wait(r.config.delete_consume_queue_files_interval, false);
        }
        if r.waiter.is_stopped() {
            return;
        }
    }
}
