//! What the HA threads share with the rest of the broker: the master's view of its slaves
//! (connections, each one's acknowledged offset, `push2SlaveMaxOffset`), the slave's view of
//! its master (address, connection), the figures of the put wait, and the wake-ups between
//! them. A leaf: the master, the slave, the transfer service and the processors read it.

use std::{
    collections::BTreeMap,
    net::SocketAddr,
    sync::{
        atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering},
        Arc, OnceLock,
    },
    time::Duration,
};

use parking_lot::Mutex;
use tokio::sync::Notify;

/// Replication state of one broker.
#[derive(Default)]
pub struct HaState {
    /// The bound HA address, once bound.
    pub bound: OnceLock<SocketAddr>,
    /// Master: the open connections by id. An entry exists from accept on, as RocketMQ counts
    /// a connection at accept.
    connections: Mutex<BTreeMap<u64, Connection>>,
    next_connection: AtomicU64,
    /// Master: `push2SlaveMaxOffset`, the largest offset any slave ever reported; never lowered,
    /// not reset when slaves go (HA reference §2.7).
    push2slave_max: AtomicI64,
    /// Master: the first report of the latest connection (`slaveRequestOffset`).
    last_request_offset: AtomicI64,
    /// Called by every report: wakes GroupTransferService (an OS thread).
    ack_listener: OnceLock<Box<dyn Fn() + Send + Sync>>,
    /// Master: woken by SYNC_MASTER puts, so writers send at once instead of at their poll.
    pub data: Notify,
    /// Slave: the master's HA address (haMasterAddress, or the name server's answer).
    master_address: Mutex<Option<String>>,
    /// Slave: the master's broker address from the latest registration answer (`masterAddr`),
    /// where SlaveSynchronize asks (`slave_sync.rs`).
    master_broker_address: Mutex<Option<String>>,
    /// Slave: connected to its master now.
    pub client_connected: AtomicBool,
    /// Slave: the offset of the last report written.
    pub client_reported: AtomicI64,
    /// Slave: epoch ms of the last read from and the last write to the master.
    pub client_last_read: AtomicI64,
    pub client_last_write: AtomicI64,
    /// Put-wait figures (SYNC_MASTER).
    pub waits: WaitStats,
}

/// One slave connection as the master sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Connection {
    pub peer: SocketAddr,
    /// `slaveAckOffset`: the last report (-1 before the first).
    pub ack: i64,
    /// `transferFromWhere`: the next offset the writer sends (-1 before the first report).
    pub transfer_from: i64,
}

/// Upper bounds (µs) of the wait histogram's buckets; a last bucket takes the rest.
pub const WAIT_BUCKETS_MICROS: [u64; 15] = [
    100, 200, 500, 1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000, 200_000, 500_000,
    1_000_000, 2_000_000, 5_000_000,
];

/// How puts fared waiting for the slave.
#[derive(Default)]
pub struct WaitStats {
    /// Waits per bucket of [`WAIT_BUCKETS_MICROS`], plus one for longer ones.
    pub buckets: [AtomicU64; WAIT_BUCKETS_MICROS.len() + 1],
    /// Puts that waited (whatever the outcome).
    pub times: AtomicU64,
    /// Their total and longest wait, in microseconds.
    pub total_micros: AtomicU64,
    pub max_micros: AtomicU64,
    /// Answers SLAVE_NOT_AVAILABLE (11) and FLUSH_SLAVE_TIMEOUT (12).
    pub slave_not_available: AtomicU64,
    pub flush_slave_timeout: AtomicU64,
}

impl WaitStats {
    pub fn record(&self, waited: Duration) {
        let us = waited.as_micros() as u64;
        self.times.fetch_add(1, Ordering::Relaxed);
        self.total_micros.fetch_add(us, Ordering::Relaxed);
        self.max_micros.fetch_max(us, Ordering::Relaxed);
        let i = WAIT_BUCKETS_MICROS.partition_point(|&b| b < us);
        self.buckets[i].fetch_add(1, Ordering::Relaxed);
    }

    /// `<=100us:3 <=200us:0 … >5000000us:0`: counts since start, per bucket, so a reader
    /// can take differences between two samples and read percentiles off them.
    pub fn distribution(&self) -> String {
        let mut out = Vec::with_capacity(self.buckets.len());
        for (i, b) in self.buckets.iter().enumerate() {
            let n = b.load(Ordering::Relaxed);
            match WAIT_BUCKETS_MICROS.get(i) {
                Some(bound) => out.push(format!("<={bound}us:{n}")),
                None => out.push(format!(">{}us:{n}", WAIT_BUCKETS_MICROS[i - 1])),
            }
        }
        out.join(" ")
    }
}

impl HaState {
    pub fn new(master_address: Option<String>) -> Arc<Self> {
        let s = HaState {
            push2slave_max: AtomicI64::new(0),
            last_request_offset: AtomicI64::new(-1),
            client_reported: AtomicI64::new(-1),
            ..Default::default()
        };
        *s.master_address.lock() = master_address;
        Arc::new(s)
    }

    /// A connection was accepted; returns its id.
    pub fn open_connection(&self, peer: SocketAddr) -> u64 {
        let id = self.next_connection.fetch_add(1, Ordering::Relaxed);
        // haSlaveRequestOffset is the latest connection's first report: none yet. Stored before
        // the connection is listed, so that whoever sees the new connection never reads the
        // previous one's report as this one's (a restarted slave was read as resuming at 0).
        self.last_request_offset.store(-1, Ordering::Release);
        self.connections.lock().insert(
            id,
            Connection {
                peer,
                ack: -1,
                transfer_from: -1,
            },
        );
        id
    }

    /// The writer of connection `id` will send from `offset` next.
    pub fn transferring(&self, id: u64, offset: i64) {
        if let Some(c) = self.connections.lock().get_mut(&id) {
            c.transfer_from = offset;
        }
    }

    /// The open connections, by id.
    pub fn connections(&self) -> Vec<Connection> {
        self.connections.lock().values().copied().collect()
    }

    pub fn close_connection(&self, id: u64) {
        self.connections.lock().remove(&id);
        self.notify_ack();
    }

    /// A report arrived on connection `id`.
    pub fn report(&self, id: u64, offset: i64, first: bool) {
        if let Some(c) = self.connections.lock().get_mut(&id) {
            c.ack = offset;
        }
        if first {
            self.last_request_offset.store(offset, Ordering::Release);
        }
        self.push2slave_max.fetch_max(offset, Ordering::AcqRel);
        self.notify_ack();
    }

    fn notify_ack(&self) {
        if let Some(f) = self.ack_listener.get() {
            f();
        }
    }

    /// Installs the transfer service's wake-up (once).
    pub fn set_ack_listener(&self, f: Box<dyn Fn() + Send + Sync>) {
        let _ = self.ack_listener.set(f);
    }

    pub fn connection_count(&self) -> usize {
        self.connections.lock().len()
    }

    /// `push2SlaveMaxOffset`.
    pub fn push2slave_max(&self) -> i64 {
        self.push2slave_max.load(Ordering::Acquire)
    }

    /// The first report of the latest connection (-1: none yet).
    pub fn last_request_offset(&self) -> i64 {
        self.last_request_offset.load(Ordering::Acquire)
    }

    /// 4.x `isSlaveOK(masterPutWhere)`: a connection, and the fastest slave less than
    /// `fallbehind_max` behind.
    pub fn is_slave_ok(&self, master_put_where: i64, fallbehind_max: i64) -> bool {
        self.connection_count() > 0 && master_put_where - self.push2slave_max() < fallbehind_max
    }

    /// Whether `acks` acknowledgements (the master's own included) cover `next_offset`: 4.x
    /// checks the master-wide maximum (`acks` = 2), 5.3 counts connections one by one.
    pub fn acked_by(&self, next_offset: i64, acks: u32, per_connection: bool) -> bool {
        if !per_connection {
            return self.push2slave_max() >= next_offset;
        }
        let slaves = self
            .connections
            .lock()
            .values()
            .filter(|c| c.ack >= next_offset)
            .count() as u32;
        1 + slaves >= acks
    }

    /// Slave: where to connect.
    pub fn master_address(&self) -> Option<String> {
        self.master_address.lock().clone()
    }

    /// Slave: the master's broker address SlaveSynchronize asks, if a registration answered one.
    pub fn master_broker_address(&self) -> Option<String> {
        self.master_broker_address.lock().clone()
    }

    /// Slave: a registration answer's `masterAddr`, taken at every answer, with or without
    /// haMasterAddress (4.9.8 BrokerController.doRegisterBrokerAll l.968, 4.3.2 l.905, 5.3.3 l.2038:
    /// `slaveSynchronize.setMasterAddr`).
    pub fn learn_master_broker(&self, addr: Option<String>) {
        *self.master_broker_address.lock() = addr.filter(|a| !a.is_empty());
    }

    /// Slave: the registration answer's HA address (taken only without haMasterAddress; takes
    /// effect at the next connect, as in RocketMQ).
    pub fn learn_master(&self, ha_addr: Option<String>) {
        if let Some(a) = ha_addr.filter(|a| !a.is_empty()) {
            let mut cur = self.master_address.lock();
            if cur.as_deref() != Some(a.as_str()) {
                eprintln!("Update master ha address, OLD: {cur:?} NEW: {a}");
                *cur = Some(a);
            }
        }
    }
}

impl HaState {
    /// The replication keys of GET_BROKER_RUNTIME_INFO (ours: RocketMQ's code 28 has none; the
    /// names follow 5.x's GET_BROKER_HA_STATUS fields where one exists). `master_max` is the
    /// CommitLog's readable end.
    pub fn runtime_info(&self, master_max: i64) -> Vec<(String, String)> {
        let w = &self.waits;
        let ack = self.push2slave_max();
        let behind = if self.last_request_offset() >= 0 {
            (master_max - ack).max(0)
        } else {
            0
        };
        let n = |a: &AtomicU64| a.load(Ordering::Relaxed).to_string();
        vec![
            (
                "haSlaveConnections".into(),
                self.connection_count().to_string(),
            ),
            ("haSlaveAckOffset".into(), ack.to_string()),
            ("haSlaveFallBehindBytes".into(), behind.to_string()),
            (
                "haSlaveRequestOffset".into(),
                self.last_request_offset().to_string(),
            ),
            ("haWaitSlaveTimes".into(), n(&w.times)),
            ("haWaitSlaveTotalMicros".into(), n(&w.total_micros)),
            ("haWaitSlaveMaxMicros".into(), n(&w.max_micros)),
            ("haWaitSlaveDistribution".into(), w.distribution()),
            ("haSlaveNotAvailableTimes".into(), n(&w.slave_not_available)),
            ("haFlushSlaveTimeoutTimes".into(), n(&w.flush_slave_timeout)),
            (
                "haMasterAddress".into(),
                self.master_address().unwrap_or_default(),
            ),
            (
                "haClientConnected".into(),
                self.client_connected.load(Ordering::Acquire).to_string(),
            ),
            (
                "haClientReportedOffset".into(),
                self.client_reported.load(Ordering::Acquire).to_string(),
            ),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PEER: SocketAddr =
        SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 1);

    #[test]
    fn waits_land_in_their_bucket() {
        let w = WaitStats::default();
        w.record(Duration::from_micros(100));
        w.record(Duration::from_micros(101));
        w.record(Duration::from_secs(9));
        let d = w.distribution();
        assert!(d.starts_with("<=100us:1 <=200us:1 <=500us:0"), "{d}");
        assert!(d.ends_with("<=5000000us:0 >5000000us:1"), "{d}");
        assert_eq!(w.times.load(Ordering::Relaxed), 3);
        assert_eq!(w.max_micros.load(Ordering::Relaxed), 9_000_000);
    }

    #[test]
    fn acks_count_the_fastest_slave_in_4x_and_each_connection_in_5x() {
        let s = HaState::new(None);
        assert!(!s.is_slave_ok(10, 100), "no connection");
        let a = s.open_connection(PEER);
        assert!(s.is_slave_ok(10, 100), "counted from accept");
        assert!(!s.is_slave_ok(100, 100), "256 MiB rule");
        s.report(a, 50, true);
        assert_eq!(s.last_request_offset(), 50);
        assert!(s.acked_by(50, 2, false));
        assert!(!s.acked_by(51, 2, false));
        let b = s.open_connection(PEER);
        assert_eq!(s.last_request_offset(), -1, "b has not reported yet");
        assert!(!s.acked_by(50, 3, true));
        s.report(b, 60, true);
        assert_eq!(s.last_request_offset(), 60);
        assert!(s.acked_by(50, 3, true));
        s.close_connection(a);
        assert!(!s.acked_by(50, 3, true));
        assert_eq!(s.push2slave_max(), 60, "never lowered");
    }
}
