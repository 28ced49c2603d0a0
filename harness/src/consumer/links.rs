//! One instance's connections: a [`Link`] per address of the route (broker name and id),
//! opened at its first call, as `MQClientInstance` keeps a channel per broker address. Every link wakes the same
//! rebalance (NOTIFY_CONSUMER_IDS_CHANGED) and the same reconnect listener.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::consumer::link::Link;

/// A node of the route: broker name and `brokerId`.
type Node = (Arc<str>, i64);

pub struct Links {
    notify: Arc<Notify>,
    /// Woken after any link reconnects.
    pub reconnected: Arc<Notify>,
    tracker: TaskTracker,
    /// Closed for good: every link and any link made later.
    closed: CancellationToken,
    /// By broker name and id (0 the master, > 0 a slave); a broker back at another address
    /// gets a new link.
    map: Mutex<BTreeMap<Node, Arc<Link>>>,
}

impl Links {
    pub fn new(notify: Arc<Notify>, tracker: &TaskTracker, stop: &CancellationToken) -> Links {
        Links {
            notify,
            reconnected: Arc::new(Notify::new()),
            tracker: tracker.clone(),
            closed: stop.child_token(),
            map: Mutex::new(BTreeMap::new()),
        }
    }

    /// The link to `broker`'s node `id` at `addr`, made now if there is none yet.
    pub fn to(&self, broker: &Arc<str>, id: i64, addr: SocketAddr) -> Arc<Link> {
        let mut map = self.map.lock();
        let key = (broker.clone(), id);
        if let Some(l) = map.get(&key).filter(|l| l.addr() == addr) {
            return l.clone();
        }
        let link = Arc::new(Link::new(
            addr,
            self.notify.clone(),
            self.reconnected.clone(),
            &self.tracker,
            &self.closed,
        ));
        if let Some(old) = map.insert(key, link.clone()) {
            // The broker came back at another address (restarted on a new port): its channel
            // is a new one, as after a reconnect (5.3 heartbeats and rebalances at once).
            old.close();
            self.reconnected.notify_one();
        }
        link
    }

    /// The link to `broker`'s master if one was made, else to another of its nodes (a broker
    /// no longer in the route keeps its links, so its queues' last offsets can still be
    /// committed).
    pub fn existing(&self, broker: &str) -> Option<Arc<Link>> {
        self.map
            .lock()
            .iter()
            .find(|((name, _), _)| &**name == broker)
            .map(|(_, l)| l.clone())
    }

    /// Connections opened again after a broker restart, over every link.
    pub fn reconnects(&self) -> u64 {
        self.map.lock().values().map(|l| l.reconnects()).sum()
    }

    pub fn close(&self) {
        self.closed.cancel();
    }

    pub fn is_closed(&self) -> bool {
        self.closed.is_cancelled()
    }
}
