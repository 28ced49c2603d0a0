//! The comparison of what the broker answered with what the store holds, send by send.

use crate::fault::{OutcomeLog, SendState};

/// The reconciliation figures of one job (the `summary.csv` columns of the same names).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// Answered SUCCESS, absent from the store.
    pub acked_lost: u64,
    /// In the store, never acknowledged: the answer was lost in the kill (or was an error code
    /// whose message was stored anyway, such as FLUSH_DISK_TIMEOUT). Allowed; counted.
    pub phantom: u64,
    /// Answered code 2 (or code 1 `[PC_SYNCHRONIZED]`), yet in the store. RocketMQ never
    /// stores a busy-answered message: must be 0.
    pub busy_stored: u64,
    /// Copies beyond the first of a key.
    pub duplicates: u64,
    /// Records whose body CRC does not match.
    pub corrupt: u64,
    /// Written, never answered: timed out or their connection failed (the kill).
    pub unacked_in_flight: u64,
    /// Records read back with one of this job's keys.
    pub stored: u64,
    /// Records read back without one of this job's keys (another load, or no UNIQ_KEY).
    pub foreign: u64,
}

/// Compares `log` with `copies` (records found per send number, saturating at 255).
pub fn tally(log: &OutcomeLog, copies: &[u8], corrupt: u64, foreign: u64) -> Tally {
    let mut t = Tally {
        corrupt,
        foreign,
        ..Tally::default()
    };
    for seq in 0..log.len() {
        let n = u64::from(copies.get(seq as usize).copied().unwrap_or(0));
        let present = n > 0;
        t.stored += n;
        t.duplicates += n.saturating_sub(1);
        let state = log.state(seq);
        match state {
            SendState::Ok if !present => t.acked_lost += 1,
            SendState::Ok => {}
            SendState::Busy if present => t.busy_stored += 1,
            SendState::Busy => {}
            _ if present => t.phantom += 1,
            _ => {}
        }
        if matches!(state, SendState::Timeout | SendState::ConnectionError) {
            t.unacked_in_flight += 1;
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recorder::{BusyClass, Outcome};
    use std::time::Instant;

    #[test]
    fn every_rule_counts_its_own_case() {
        let log = OutcomeLog::new(7);
        let t = Instant::now();
        let outcomes = [
            Outcome::Ok,                             // 0: stored once
            Outcome::Ok,                             // 1: lost
            Outcome::Busy(BusyClass::Overload),      // 2: stored: must never happen
            Outcome::Busy(BusyClass::RejectRequest), // 3: absent, as it should be
            Outcome::ConnectionError,                // 4: stored: a phantom
            Outcome::Timeout,                        // 5: absent
            Outcome::Ok,                             // 6: stored twice
        ];
        for (seq, o) in outcomes.into_iter().enumerate() {
            log.record(seq as u64, o, None, t, t);
        }
        let copies = [1, 0, 1, 0, 1, 0, 2];
        let got = tally(&log, &copies, 3, 4);
        assert_eq!(
            got,
            Tally {
                acked_lost: 1,
                phantom: 1,
                busy_stored: 1,
                duplicates: 1,
                corrupt: 3,
                unacked_in_flight: 2,
                stored: 5,
                foreign: 4,
            }
        );
    }
}
