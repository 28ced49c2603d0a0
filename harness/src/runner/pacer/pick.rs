//! Which connection a send goes to: the round robin over connections with a free slot, a
//! key's one connection with `ordering`, and the router's broker in a cluster.

use std::net::Shutdown;
use std::time::{Duration, Instant};

use super::{Pacer, Pick};
use crate::runner::conn::{connect, RECONNECT_EVERY};

impl Pacer {
    /// The connection and queue of send `seq`'s first attempt: with `ordering`, its key's
    /// queue and that queue's connection; in a cluster, the router's queue choice, then a
    /// connection to that broker; otherwise any connection and the builder's round robin.
    pub(super) fn pick_first(&mut self, seq: u64) -> (Pick, Option<i32>) {
        if let Some(streams) = &self.order {
            let queue = streams.queue(seq);
            let conn = queue as usize % self.conns.len();
            return (self.pick_in(None, Some(conn)), Some(queue));
        }
        self.pick_routed(None, false)
    }

    /// The same for a retry, which avoids the broker of the failed attempt.
    pub(super) fn pick_retry(&mut self, last: Option<usize>) -> (Pick, Option<i32>) {
        self.pick_routed(last, true)
    }

    #[inline]
    pub(super) fn pick_routed(&mut self, last: Option<usize>, retry: bool) -> (Pick, Option<i32>) {
        let Some(router) = self.common.cluster.clone() else {
            if let Some(c) = self.next_in_turn() {
                return (Pick::Conn(c), None);
            }
            return (self.pick(None), None);
        };
        let last = if retry { last } else { None };
        let now = Instant::now();
        let Some(q) = router.select(last, now) else {
            return (Pick::Down, None);
        };
        match self.pick(Some(q.broker)) {
            // No connection to that broker: the Java client's connect failure, a transport
            // error, is isolated and the send moves to another broker, as its retry would.
            // Without retries (retryTimesWhenSendFailed = 0) the application gets the error.
            Pick::Down => {
                router.record(q.broker, Duration::ZERO, true, false, now);
                if self.common.policy == harness_model::profile::RetryPolicy::None {
                    return (Pick::Down, None);
                }
                match router.select(Some(q.broker), now) {
                    Some(other) if other.broker != q.broker => {
                        (self.pick(Some(other.broker)), Some(other.queue_id))
                    }
                    _ => (Pick::Down, None),
                }
            }
            pick => (pick, Some(q.queue_id)),
        }
    }

    /// Round robin over healthy connections (of `broker`, in a cluster) with a free slot;
    /// reconnects broken ones.
    pub(super) fn pick(&mut self, broker: Option<usize>) -> Pick {
        self.pick_in(broker, None)
    }

    /// The connection whose turn it is, when it is up, not backed up and has a free slot: what
    /// [`Pacer::pick_in`] finds first in the common case, without its loop (a call with its
    /// loop cost about 75 instructions a send).
    #[inline]
    pub(super) fn next_in_turn(&mut self) -> Option<usize> {
        let i = if self.rr < self.conns.len() {
            self.rr
        } else {
            0
        };
        let c = self.conns.get(i)?;
        let ready = !c.is_broken()
            && c.has_room(self.common.oneway, self.cfg.workload.max_in_flight as usize);
        ready.then(|| {
            self.rr = i + 1;
            i
        })
    }

    /// [`Pacer::pick`] among the connections of `broker`, or connection `only`.
    pub(super) fn pick_in(&mut self, broker: Option<usize>, only: Option<usize>) -> Pick {
        let n = self.conns.len();
        let max = self.cfg.workload.max_in_flight as usize;
        let mut any_up = false;
        for k in 0..n {
            let i = (self.rr + k) % n;
            if broker.is_some() && self.conns[i].broker != broker {
                continue;
            }
            if only.is_some_and(|o| o != i) {
                continue;
            }
            if self.conns[i].is_broken() {
                let due = self.conns[i]
                    .last_attempt
                    .is_none_or(|t| t.elapsed() >= RECONNECT_EVERY);
                if !due || self.stop.is_cancelled() {
                    continue;
                }
                if let Some(s) = self.conns[i].stream.take() {
                    let _ = s.shutdown(Shutdown::Both);
                }
                if connect(&mut self.conns[i], &self.common, i).is_err() {
                    continue;
                }
            }
            any_up = true;
            if self.conns[i].has_room(self.common.oneway, max) {
                self.rr = i + 1;
                return Pick::Conn(i);
            }
        }
        if any_up {
            Pick::Full
        } else {
            Pick::Down
        }
    }
}
