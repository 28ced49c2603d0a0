//! The reconciliation of a cluster: what every broker's queues hold, compared with the final
//! answer of each send and the broker that gave it.
//!
//! The total is the application's view: a send is lost when it was acknowledged and no broker
//! holds it; a retry that was stored on the broker of its failed attempt and again on the broker
//! that acknowledged it is a duplicate. Per broker `b`:
//! * `acked_lost` — `b` gave the final SUCCESS and does not hold the message;
//! * `busy_stored` — `b` gave the final code 2 and holds it;
//! * `phantom` — `b` holds it and did not give it its final answer as SUCCESS or busy (the
//!   answer was lost in a kill, or the send was retried elsewhere after a timeout);
//! * `duplicates` — copies beyond the first on `b` alone.

use crate::fault::{OutcomeLog, SendState};
use crate::reconcile::store::Copies;
use crate::reconcile::tally::{tally, Tally};

/// One broker's share of the reconciliation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BrokerTally {
    pub acked_lost: u64,
    pub phantom: u64,
    pub busy_stored: u64,
    pub duplicates: u64,
    /// Records of this job's sends on this broker.
    pub stored: u64,
}

/// The cluster's total and each broker's figures, brokers in router order. A broker that could
/// not be read (None: a `--namesrv` broker killed and not restarted) has no figures, and then
/// the total is unknown too.
pub fn tally_brokers(
    log: &OutcomeLog,
    brokers: &[Option<Copies>],
) -> (Option<Tally>, Vec<Option<BrokerTally>>) {
    let sends = log.len() as usize;
    let mut sum = vec![0u8; sends];
    let (mut corrupt, mut foreign) = (0, 0);
    let mut per = Vec::with_capacity(brokers.len());
    for (b, c) in brokers.iter().enumerate() {
        let Some(c) = c else {
            per.push(None);
            continue;
        };
        corrupt += c.corrupt;
        foreign += c.foreign;
        let mut t = BrokerTally::default();
        for (seq, total) in sum.iter_mut().enumerate() {
            let n = c.copies.get(seq).copied().unwrap_or(0);
            *total = total.saturating_add(n);
            let n = u64::from(n);
            t.stored += n;
            t.duplicates += n.saturating_sub(1);
            let here = log.broker_of(seq as u64) == Some(b);
            match log.state(seq as u64) {
                SendState::Ok if here && n == 0 => t.acked_lost += 1,
                SendState::Ok if here => {}
                SendState::Busy if here => t.busy_stored += u64::from(n > 0),
                _ if n > 0 => t.phantom += 1,
                _ => {}
            }
        }
        per.push(Some(t));
    }
    let all = per.iter().all(Option::is_some);
    (all.then(|| tally(log, &sum, corrupt, foreign)), per)
}

/// `name=value;name=value` of one per-broker figure, names in router order; an unread broker's
/// value is empty (`broker-1=`).
pub fn per_broker_text(
    names: &[String],
    per: &[Option<BrokerTally>],
    f: impl Fn(&BrokerTally) -> u64,
) -> String {
    names
        .iter()
        .zip(per)
        .map(|(n, t)| {
            format!(
                "{n}={}",
                t.as_ref().map_or(String::new(), |t| f(t).to_string())
            )
        })
        .collect::<Vec<_>>()
        .join(";")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recorder::{BusyClass, Outcome};
    use std::time::Instant;

    fn copies(c: &[u8]) -> Copies {
        Copies {
            copies: c.to_vec(),
            corrupt: 0,
            foreign: 0,
        }
    }

    #[test]
    fn each_broker_answers_for_its_own_sends_and_the_total_for_the_application() {
        let log = OutcomeLog::on_cluster(7, Some(1));
        let t = Instant::now();
        let finals = [
            (Outcome::Ok, 0),                        // 0: on broker 0 only
            (Outcome::Ok, 1),                        // 1: acked by 1, absent: lost on 1
            (Outcome::Ok, 0), // 2: retried on 0 after a timeout on 1, stored on both
            (Outcome::ConnectionError, 1), // 3: the kill took the answer; stored on 1
            (Outcome::Busy(BusyClass::Overload), 0), // 4: busy on 0 and stored there
            (Outcome::Ok, 0), // 5: stored twice on 0
            (Outcome::Ok, 1), // 6: acked by 1, found only on 0 (not lost for the app)
        ];
        for (seq, (o, b)) in finals.into_iter().enumerate() {
            log.record(seq as u64, o, Some(b), t, t);
        }
        let b0 = copies(&[1, 0, 1, 0, 1, 2, 1]);
        let b1 = Copies {
            corrupt: 2,
            foreign: 5,
            ..copies(&[0, 0, 1, 1, 0, 0, 0])
        };
        let (total, per) = tally_brokers(&log, &[Some(b0.clone()), Some(b1)]);
        let total = total.unwrap();
        let per: Vec<BrokerTally> = per.into_iter().map(Option::unwrap).collect();
        assert_eq!(
            per[0],
            BrokerTally {
                acked_lost: 0,
                phantom: 1, // send 6: broker 1 acknowledged it
                busy_stored: 1,
                duplicates: 1,
                stored: 6,
            }
        );
        assert_eq!(
            per[1],
            BrokerTally {
                acked_lost: 2, // sends 1 and 6
                phantom: 2,    // send 2 (retried on 0) and send 3 (answer lost)
                busy_stored: 0,
                duplicates: 0,
                stored: 2,
            }
        );
        assert_eq!(total.acked_lost, 1, "only send 1 is nowhere: {total:?}");
        assert_eq!(total.phantom, 1, "send 3: {total:?}");
        assert_eq!(total.busy_stored, 1);
        assert_eq!(total.duplicates, 2, "send 2 across brokers, send 5 on 0");
        assert_eq!((total.corrupt, total.foreign, total.stored), (2, 5, 8));
        let names = ["broker-0".to_owned(), "broker-1".to_owned()];
        let per: Vec<Option<BrokerTally>> = per.into_iter().map(Some).collect();
        assert_eq!(
            per_broker_text(&names, &per, |t| t.acked_lost),
            "broker-0=0;broker-1=2"
        );
        // Broker 1 dead and unread: its figures and the total are unknown, broker 0's are not.
        let (total, per) = tally_brokers(&log, &[Some(b0), None]);
        assert_eq!(total, None);
        assert_eq!(per[0].unwrap().phantom, 1);
        assert_eq!(
            per_broker_text(&names, &per, |t| t.acked_lost),
            "broker-0=0;broker-1="
        );
    }
}
