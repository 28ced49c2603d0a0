//! Queue selection as the Java producer does it (name-server reference §9–§11): the writeable
//! queues of every broker, sorted by broker name, walked round robin by one index; a retry
//! avoids the broker of the previous attempt; with latency fault tolerance, brokers in their
//! fault duration are skipped.
//!
//! The pacer selects (one thread, like one producer thread's `ThreadLocalIndex`); the
//! connection readers report every attempt's latency and outcome for the fault table.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use remoting::route::TopicRouteData;

use super::latency_fault::{update, FaultItem, FaultVersion};

/// One broker of the cluster, as the routes named it when the load started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerRoute {
    pub name: String,
    pub addr: SocketAddr,
    /// `writeQueueNums` of the topic on this broker; 0 when not writeable.
    pub write_queues: u32,
}

/// A message queue: a broker (index into [`Router::brokers`]) and a queue id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Queue {
    pub broker: usize,
    pub queue_id: i32,
}

/// How a selection avoids brokers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Selection {
    /// `sendLatencyFaultEnable=false`: round robin; a retry skips the last broker.
    RoundRobin,
    /// `sendLatencyFaultEnable=true` with the given client's algorithm and tables.
    LatencyFault(FaultVersion),
}

struct State {
    queues: Vec<Queue>,
    /// `sendWhichQueue` of the one pacing thread.
    index: u32,
    /// `whichItemWorst` of `pickOneAtLeast` (4.x).
    worst_index: u32,
    faults: Vec<Option<FaultItem>>,
    rng: fastrand::Rng,
}

impl State {
    fn next(&mut self) -> u32 {
        self.index = self.index.wrapping_add(1) & 0x7FFF_FFFF;
        self.index
    }

    fn pick(&mut self) -> Queue {
        let n = self.queues.len() as u32;
        let i = self.next() % n;
        self.queues[i as usize]
    }

    fn available(&self, broker: usize, now: Instant) -> bool {
        self.faults[broker].is_none_or(|f| f.available(now))
    }

    fn reachable(&self, broker: usize) -> bool {
        self.faults[broker].is_none_or(|f| f.reachable)
    }
}

/// The cluster's brokers, its queues and the fault table.
pub struct Router {
    pub brokers: Vec<BrokerRoute>,
    selection: Selection,
    // Taken by the pacer per selection and by readers per answer: short, no I/O inside.
    state: Mutex<State>,
}

impl std::fmt::Debug for Router {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Router")
            .field("brokers", &self.brokers)
            .field("selection", &self.selection)
            .finish_non_exhaustive()
    }
}

impl Router {
    /// A router over `brokers` (sorted by name here, as `topicRouteData2TopicPublishInfo`
    /// sorts QueueData); the index starts at a random value like `ThreadLocalIndex`.
    pub fn new(mut brokers: Vec<BrokerRoute>, selection: Selection, seed: u64) -> Router {
        brokers.sort_by(|a, b| a.name.cmp(&b.name));
        let mut rng = fastrand::Rng::with_seed(seed);
        let state = State {
            queues: queues_of(&brokers),
            index: rng.u32(0..0x7FFF_FFFF),
            worst_index: rng.u32(0..0x7FFF_FFFF),
            faults: vec![None; brokers.len()],
            rng,
        };
        Router {
            brokers,
            selection,
            state: Mutex::new(state),
        }
    }

    /// Re-reads a refreshed route: the writeable queues of the brokers known at start
    /// (brokers that appeared later have no connections and are left out).
    pub fn refresh(&self, route: &TopicRouteData) {
        let mut updated = self.brokers.clone();
        for b in &mut updated {
            b.write_queues = route
                .queue_datas
                .iter()
                .find(|q| q.broker_name == b.name)
                .filter(|q| q.writeable())
                .map_or(0, |q| q.write_queue_nums.max(0) as u32);
        }
        let queues = queues_of(&updated);
        if !queues.is_empty() {
            self.state.lock().queues = queues;
        }
    }

    /// The queue for an attempt; `last` is the broker of the previous attempt of this send.
    /// `None` when no broker has a writeable queue.
    pub fn select(&self, last: Option<usize>, now: Instant) -> Option<Queue> {
        let mut s = self.state.lock();
        let n = s.queues.len();
        if n == 0 {
            return None;
        }
        match self.selection {
            Selection::RoundRobin => {
                if let Some(last) = last {
                    for _ in 0..n {
                        let q = s.pick();
                        if q.broker != last {
                            return Some(q);
                        }
                    }
                }
                Some(s.pick())
            }
            Selection::LatencyFault(FaultVersion::V4) => {
                Some(select_v4(&mut s, &self.brokers, now))
            }
            Selection::LatencyFault(FaultVersion::V5) => {
                if last.is_some() {
                    s.index = s.rng.u32(0..0x7FFF_FFFF);
                }
                for _ in 0..n {
                    let q = s.pick();
                    if s.available(q.broker, now) && Some(q.broker) != last {
                        return Some(q);
                    }
                }
                for _ in 0..n {
                    let q = s.pick();
                    if s.reachable(q.broker) && Some(q.broker) != last {
                        return Some(q);
                    }
                }
                Some(s.pick())
            }
        }
    }

    /// `updateFaultItem` after an attempt: `latency` from its write to its end; `isolation`
    /// for any failure; `answered` tells a broker's error answer (5.x: not reachable) from a
    /// transport failure. Nothing happens without latency fault tolerance.
    pub fn record(
        &self,
        broker: usize,
        latency: Duration,
        isolation: bool,
        answered: bool,
        now: Instant,
    ) {
        let Selection::LatencyFault(version) = self.selection else {
            return;
        };
        let mut s = self.state.lock();
        if let Some(slot) = s.faults.get_mut(broker) {
            let reachable = !(isolation && answered);
            update(
                version,
                slot,
                latency.as_millis() as u64,
                isolation,
                reachable,
                now,
            );
        }
    }

    /// Whether `broker` is outside its fault duration at `now` (tests, the README's figures).
    pub fn is_available(&self, broker: usize, now: Instant) -> bool {
        self.state.lock().available(broker, now)
    }
}

/// 4.8–4.9 `MQFaultStrategy.selectOneMessageQueue`: the first available broker from one index,
/// else `pickOneAtLeast`, else plain round robin. It does not avoid the last broker.
fn select_v4(s: &mut State, brokers: &[BrokerRoute], now: Instant) -> Queue {
    let n = s.queues.len();
    let idx = s.next() as usize;
    for i in 0..n {
        let q = s.queues[(idx + i) % n];
        if s.available(q.broker, now) {
            return q;
        }
    }
    // pickOneAtLeast: available first, then lower latency, then earlier start; one of the
    // better half.
    let mut items: Vec<(usize, FaultItem)> = s
        .faults
        .iter()
        .enumerate()
        .filter_map(|(b, f)| f.map(|f| (b, f)))
        .collect();
    items.sort_by_key(|(_, f)| (!f.available(now), f.current_latency_ms, f.start));
    let half = items.len() / 2;
    let chosen = if half == 0 {
        items.first().map(|(b, _)| *b)
    } else {
        s.worst_index = s.worst_index.wrapping_add(1) & 0x7FFF_FFFF;
        Some(items[s.worst_index as usize % half].0)
    };
    if let Some(b) = chosen {
        let w = brokers[b].write_queues;
        if w > 0 {
            s.next();
            let q = s.next() % w;
            return Queue {
                broker: b,
                queue_id: q as i32,
            };
        }
        s.faults[b] = None;
    }
    s.pick()
}

fn queues_of(brokers: &[BrokerRoute]) -> Vec<Queue> {
    brokers
        .iter()
        .enumerate()
        .flat_map(|(b, r)| {
            (0..r.write_queues as i32).map(move |q| Queue {
                broker: b,
                queue_id: q,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brokers() -> Vec<BrokerRoute> {
        (0..2)
            .map(|i| BrokerRoute {
                name: format!("broker-{i}"),
                addr: SocketAddr::from(([127, 0, 0, 1], 10911 + i as u16)),
                write_queues: 4,
            })
            .collect()
    }

    fn share_of(r: &Router, broker: usize, now: Instant, n: usize) -> f64 {
        let hits = (0..n)
            .filter(|_| r.select(None, now).unwrap().broker == broker)
            .count();
        hits as f64 / n as f64
    }

    #[test]
    fn round_robin_covers_every_queue_of_every_broker_and_retries_elsewhere() {
        let r = Router::new(brokers(), Selection::RoundRobin, 7);
        let now = Instant::now();
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..8 {
            let q = r.select(None, now).unwrap();
            seen.insert((q.broker, q.queue_id));
        }
        assert_eq!(seen.len(), 8, "8 sends visit all 8 queues");
        for _ in 0..50 {
            assert_eq!(r.select(Some(1), now).unwrap().broker, 0);
            assert_eq!(r.select(Some(0), now).unwrap().broker, 1);
        }
    }

    /// A slow answer (800 ms ≥ 550 ms) makes 5.x avoid the broker for 2 s, then it is used
    /// again; 4.x avoids it for 30 s.
    #[test]
    fn latency_fault_avoids_a_slow_broker_for_its_duration_then_comes_back() {
        let t0 = Instant::now();
        let r = Router::new(brokers(), Selection::LatencyFault(FaultVersion::V5), 3);
        assert!((share_of(&r, 1, t0, 1000) - 0.5).abs() < 0.01);
        r.record(1, Duration::from_millis(800), false, true, t0);
        assert_eq!(share_of(&r, 1, t0 + Duration::from_millis(1900), 1000), 0.0);
        assert!((share_of(&r, 1, t0 + Duration::from_millis(2001), 1000) - 0.5).abs() < 0.01);

        let r4 = Router::new(brokers(), Selection::LatencyFault(FaultVersion::V4), 3);
        r4.record(1, Duration::from_millis(800), false, true, t0);
        assert_eq!(share_of(&r4, 1, t0 + Duration::from_secs(29), 1000), 0.0);
        assert!(share_of(&r4, 1, t0 + Duration::from_secs(30), 1000) > 0.4);
        // A busy answer isolates: 10 s in 5.x.
        r.record(0, Duration::from_millis(1), true, true, t0);
        assert!(!r.is_available(0, t0 + Duration::from_millis(9_999)));
        assert!(r.is_available(0, t0 + Duration::from_millis(10_000)));
        // Fast successes change nothing.
        let r = Router::new(brokers(), Selection::LatencyFault(FaultVersion::V5), 3);
        r.record(1, Duration::from_millis(20), false, true, t0);
        assert!((share_of(&r, 1, t0, 1000) - 0.5).abs() < 0.01);
    }

    #[test]
    fn all_brokers_in_fault_still_get_sends() {
        let t0 = Instant::now();
        for v in [FaultVersion::V4, FaultVersion::V5] {
            let r = Router::new(brokers(), Selection::LatencyFault(v), 1);
            r.record(0, Duration::from_millis(1), true, true, t0);
            r.record(1, Duration::from_millis(1), true, true, t0);
            assert!(r.select(None, t0).is_some());
            assert!(r.select(Some(0), t0).is_some());
        }
    }

    #[test]
    fn refresh_drops_unwriteable_brokers() {
        let r = Router::new(brokers(), Selection::RoundRobin, 1);
        let text = r#"{"brokerDatas":[],"filterServerTable":{},"queueDatas":[
            {"brokerName":"broker-0","perm":4,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4},
            {"brokerName":"broker-1","perm":6,"readQueueNums":2,"topicSysFlag":0,"writeQueueNums":2}]}"#;
        r.refresh(&TopicRouteData::decode(text.as_bytes()).unwrap());
        let now = Instant::now();
        for _ in 0..20 {
            let q = r.select(None, now).unwrap();
            assert_eq!(q.broker, 1);
            assert!(q.queue_id < 2);
        }
    }
}
