//! `CleanCommitLogService` (retention reference A4): each round deletes expired CommitLog files
//! when it is time (`deleteWhen`) or the disk is over `diskMaxUsedSpaceRatio`, ignores age above
//! the force ratio, sets and clears DISK_FULL, and retries a hanged first file.

use std::sync::atomic::Ordering;

use super::destroy::{destroy, last_modified_millis};
use super::disk::DiskRatios;
use super::state::{Retention, RoundState};
use crate::clock::epoch_millis;
use crate::keys::VersionProfile;
use crate::store::commitlog::CommitLog;

/// Arcs of a file that are not readers during a round: the file queue's and the round's own.
const OWNERS: usize = 2;

pub(crate) fn run_round(r: &Retention, log: &CommitLog) {
    let mut round = r.round.lock();
    delete_expired_files(r, log, &mut round);
    redelete_hanged_file(r, log, &mut round);
}

fn delete_expired_files(r: &Retention, log: &CommitLog, round: &mut RoundState) {
    let c = &r.config;
    let time_up = is_time_to_delete(&c.delete_when);
    // Evaluated every round, even when it is time: it also sets and clears DISK_FULL.
    let space_full = is_space_to_delete(r, round, &r.disk_ratios());
    if !(time_up || space_full) {
        return;
    }
    let clean_at_once = c.clean_file_forcibly_enable && round.clean_immediately;
    let hours = c.file_reserved.as_secs_f64() / 3600.0;
    if c.profile == VersionProfile::V5_3 {
        eprintln!(
            "begin to delete before {hours} hours file. isTimeUp: {time_up} \
             isUsageExceedsThreshold: {space_full} manualDeleteFileSeveralTimes: 0 \
             cleanAtOnce: {clean_at_once} deleteFileBatchMax: {}",
            c.delete_file_batch_max
        );
    } else {
        eprintln!(
            "begin to delete before {hours} hours file. timeup: {time_up} spacefull: \
             {space_full} manualDeleteFileSeveralTimes: 0 cleanAtOnce: {clean_at_once}"
        );
    }
    let deleted = delete_expired_file_by_time(r, log, clean_at_once);
    if deleted == 0 && space_full {
        eprintln!("disk space will be full soon, but delete file failed.");
    }
}

/// `MappedFileQueue.deleteExpiredFileByTime`: from the oldest, every file but the last that is
/// older than the reserved time (or any, with `clean_at_once`) until the first keeper, a file
/// still held, or the batch maximum.
fn delete_expired_file_by_time(r: &Retention, log: &CommitLog, clean_at_once: bool) -> usize {
    let c = &r.config;
    let mut candidates = log.files();
    // The file being written is never deleted by this path.
    if candidates.pop().is_none() {
        return 0;
    }
    let total = candidates.len();
    let reserved = c.file_reserved.as_millis() as i64;
    let mut destroyed = 0;
    // Owned one by one, so a deleted file's last `Arc` here goes with it and the file is
    // unmapped now, not at the end of the round.
    for (i, f) in candidates.into_iter().enumerate() {
        // Ours: never a file the flush (and so the commit) has not finished; RocketMQ relies on
        // a 1 GiB file taking long enough to fill. Our forced deletion of small files would
        // otherwise pull a file from under the flush or commit thread.
        if f.file_from_offset() + f.size() as i64 > log.flushed_where() {
            break;
        }
        let expired = clean_at_once || epoch_millis() >= last_modified_millis(&f) + reserved;
        if !expired || !destroy(&f, OWNERS, c.destroy_mapped_file_interval_forcibly) {
            break;
        }
        // Drop it from the queue at once, so readers stop finding it while the round goes on.
        log.remove_front_files(std::slice::from_ref(&f));
        drop(f);
        destroyed += 1;
        r.deleted_commit_log_files.fetch_add(1, Ordering::Relaxed);
        if destroyed >= c.delete_file_batch_max || r.waiter.is_stopped() {
            break;
        }
        if i + 1 < total {
            r.waiter.wait(c.delete_commit_log_files_interval, false);
        }
    }
    destroyed
}

/// `isTimeToDelete`: the local hour of day is one of `deleteWhen`'s.
fn is_time_to_delete(hours: &[u32]) -> bool {
    let now = epoch_millis() / 1000;
    // SAFETY: `tm` is plain old data and localtime_r only writes it.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    let t: libc::time_t = now as libc::time_t;
    // SAFETY: both pointers are valid for the call.
    if unsafe { libc::localtime_r(&t, &mut tm) }.is_null() {
        return false;
    }
    let hour = tm.tm_hour as u32;
    let hit = hours.contains(&hour);
    if hit {
        eprintln!("it's time to reclaim disk space, {hour:02}");
    }
    hit
}

/// `isSpaceToDelete` (A4.2): true when the disk asks for deletion; sets `clean_immediately`
/// and the DISK_FULL bit as the release does.
fn is_space_to_delete(r: &Retention, round: &mut RoundState, ratios: &DiskRatios) -> bool {
    let c = &r.config;
    let (w, f, m) = (
        c.disk_space_warning_level_ratio,
        c.disk_space_clean_forcibly_ratio,
        c.disk_max_used_space_ratio,
    );
    round.clean_immediately = false;
    let blocks = [
        ("physic", "commitLog", ratios.commit_log),
        ("logics", "consumeQueue", ratios.consume_queue),
    ];
    if c.profile == VersionProfile::V5_3 {
        for (words, _, ratio) in blocks {
            if ratio > w {
                if r.flags.make_disk_full() {
                    eprintln!("{words} disk maybe full soon {ratio}, so mark disk full");
                }
                round.clean_immediately = true;
                return true;
            } else if ratio > f {
                round.clean_immediately = true;
                return true;
            } else if r.flags.make_disk_ok() {
                eprintln!("{words} disk space OK {ratio}, so mark disk ok");
            }
        }
        for (_, name, ratio) in blocks {
            if !(0.0..=m).contains(&ratio) {
                eprintln!("{name} disk maybe full soon, so reclaim space, {ratio}");
                return true;
            }
        }
        return false;
    }
    for (words, _, ratio) in blocks {
        if ratio > w {
            if r.flags.make_disk_full() {
                let path = if c.profile == VersionProfile::V4_9 && words == "physic" {
                    format!(", storePathPhysic={}", r.root.join("commitlog").display())
                } else {
                    String::new()
                };
                eprintln!("{words} disk maybe full soon {ratio}, so mark disk full{path}");
            }
            round.clean_immediately = true;
        } else if ratio > f {
            round.clean_immediately = true;
        } else if r.flags.make_disk_ok() {
            eprintln!("{words} disk space OK {ratio}, so mark disk ok");
        }
        if !(0.0..=m).contains(&ratio) {
            eprintln!("{words} disk maybe full soon, so reclaim space, {ratio}");
            return true;
        }
    }
    false
}

/// `redeleteHangedFile` (A6.3): a first file destroyed once but still held is destroyed again
/// every `redeleteHangedFileInterval`.
fn redelete_hanged_file(r: &Retention, log: &CommitLog, round: &mut RoundState) {
    let c = &r.config;
    let now = epoch_millis();
    if now - round.last_redelete_millis <= c.redelete_hanged_file_interval.as_millis() as i64 {
        return;
    }
    round.last_redelete_millis = now;
    let files = log.files();
    let Some(first) = files.first() else { return };
    if first.is_available() {
        return;
    }
    let name = first.path().display();
    eprintln!("the mappedFile was destroyed once, but still alive, {name}");
    if destroy(first, OWNERS, c.destroy_mapped_file_interval_forcibly) {
        log.remove_front_files(std::slice::from_ref(first));
        r.deleted_commit_log_files.fetch_add(1, Ordering::Relaxed);
        eprintln!("the mappedFile re delete OK, {name}");
    } else {
        eprintln!("the mappedFile re delete failed, {name}");
    }
}

/// 4.7.1 – 4.9.x `DiskCheckScheduledThread` (A5.2): every 10 s, the CommitLog disk alone sets
/// DISK_FULL above the warning ratio and clears it at or below, with no hysteresis.
pub(crate) fn check_disk_4_9(r: &Retention) {
    let c = &r.config;
    let ratio = r.disk_ratios().commit_log;
    if ratio > c.disk_max_used_space_ratio {
        eprintln!("physic disk of commitLog used: {ratio}");
    }
    if ratio > c.disk_space_warning_level_ratio {
        if r.flags.make_disk_full() {
            eprintln!("physic disk of commitLog maybe full soon, used {ratio}, so mark disk full");
        }
    } else if r.flags.make_disk_ok() {
        eprintln!("physic disk space of commitLog OK {ratio}, so mark disk ok");
    }
}
