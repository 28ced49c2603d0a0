//! Before a broker that is still running is read back: the moment everything it acknowledged
//! is readable. A put is answered once its bytes are in the CommitLog (ASYNC_FLUSH), but a
//! reader sees them only after two more steps: with the transient store pool, the bytes wait in
//! the write buffer for CommitRealTimeService's next commit, and every record waits for
//! ReputMessageService to dispatch it into its consume queue. So the broker is read once its
//! `commitLogMaxOffset` (the committed end, GET_BROKER_RUNTIME_INFO) has not moved for longer
//! than a commit round takes and its `dispatchBehindBytes` is 0.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use rmq_client::admin::AdminConn;

use crate::reconcile::error::ReconcileError;

/// RocketMQ's default of `commitIntervalCommitLog` and `commitCommitLogThoroughInterval` (ms).
const COMMIT_ROUND_DEFAULT_MS: u64 = 200;

/// How long `commitLogMaxOffset` must stay put under `conf`: three commit rounds. The commit
/// thread waits at most `commitIntervalCommitLog` between rounds, and a round commits whatever
/// is left once `commitCommitLogThoroughInterval` has passed since the last one that did, so
/// bytes still in the write buffer move the offset within two rounds.
pub fn quiet_for(conf: &BTreeMap<String, String>) -> Duration {
    let ms = |key: &str| {
        conf.get(key)
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(COMMIT_ROUND_DEFAULT_MS)
    };
    let round = ms("commitIntervalCommitLog").max(ms("commitCommitLogThoroughInterval"));
    Duration::from_millis(3 * round.max(COMMIT_ROUND_DEFAULT_MS))
}

/// The readings so far: settled once the offset held still for `quiet` with nothing behind.
#[derive(Debug)]
pub struct Settle {
    quiet: Duration,
    last: Option<(i64, Instant)>,
}

impl Settle {
    pub fn new(quiet: Duration) -> Settle {
        Settle { quiet, last: None }
    }

    /// One reading of `commitLogMaxOffset` and `dispatchBehindBytes` at `now`; true once settled.
    pub fn observe(&mut self, max_offset: i64, behind: i64, now: Instant) -> bool {
        match self.last {
            Some((offset, since)) if offset == max_offset => {
                behind <= 0 && now.duration_since(since) >= self.quiet
            }
            _ => {
                self.last = Some((max_offset, now));
                false
            }
        }
    }
}

/// Polls the broker at `addr` until it is settled ([`Settle`]), at most `within`.
pub fn wait_settled(
    addr: SocketAddr,
    quiet: Duration,
    within: Duration,
) -> Result<(), ReconcileError> {
    let timeout = Duration::from_secs(2);
    let end = Instant::now() + within;
    let not_settled = |last: String| ReconcileError::NotSettled { addr, within, last };
    let mut conn = AdminConn::connect(addr, timeout).map_err(|e| ReconcileError::Connect {
        addr,
        source: Box::new(e),
    })?;
    let mut settle = Settle::new(quiet);
    loop {
        let info = conn
            .runtime_info(timeout)
            .map_err(|e| not_settled(e.to_string()))?;
        let figure = |key: &str| info.get(key).and_then(|v| v.trim().parse::<i64>().ok());
        let (Some(offset), Some(behind)) =
            (figure("commitLogMaxOffset"), figure("dispatchBehindBytes"))
        else {
            return Err(not_settled(
                "no commitLogMaxOffset or dispatchBehindBytes in GET_BROKER_RUNTIME_INFO".into(),
            ));
        };
        let now = Instant::now();
        if settle.observe(offset, behind, now) {
            return Ok(());
        }
        if now >= end {
            return Err(not_settled(format!(
                "commitLogMaxOffset {offset}, dispatchBehindBytes {behind}"
            )));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn settled_only_after_the_offset_held_still_for_the_quiet_time_with_nothing_behind() {
        let t0 = Instant::now();
        let mut s = Settle::new(600 * MS);
        assert!(!s.observe(100, 0, t0));
        assert!(!s.observe(100, 0, t0 + 599 * MS));
        // A commit moved the end: the quiet time starts again from this reading.
        assert!(!s.observe(164, 0, t0 + 700 * MS));
        assert!(!s.observe(164, 64, t0 + 1400 * MS), "dispatch behind");
        assert!(s.observe(164, 0, t0 + 1400 * MS));
    }

    #[test]
    fn the_quiet_time_is_three_of_the_longest_commit_round() {
        let mut conf = BTreeMap::new();
        assert_eq!(quiet_for(&conf), 600 * MS);
        conf.insert("commitIntervalCommitLog".into(), "1000".into());
        assert_eq!(quiet_for(&conf), 3000 * MS);
        conf.insert("commitCommitLogThoroughInterval".into(), "1500".into());
        assert_eq!(quiet_for(&conf), 4500 * MS);
        // Shorter rounds than RocketMQ's default do not shorten the wait below 600 ms.
        let short = BTreeMap::from([("commitIntervalCommitLog".to_owned(), "10".to_owned())]);
        assert_eq!(quiet_for(&short), 600 * MS);
    }
}
