//! The prefill: `cfg.prefill` messages sent round robin over every queue of every broker of
//! the route before any consumer starts, so a job can measure how fast a backlog drains.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use crate::consumer::start_error::PrefillError;
use crate::consumer::state::Shared;
use crate::consumer::tracking::SendTracking;
use crate::consumer::wire::Wire;
use harness_model::profile::Workload;

/// Sends of the prefill in flight at once.
const PREFILL_WINDOW: usize = 256;

/// Sends `cfg.prefill` messages before any consumer starts; returns how many were
/// acknowledged.
pub async fn prefill_topic(
    shared: &Arc<Shared>,
    workload: &Workload,
    tracking: &Arc<SendTracking>,
) -> Result<u64, PrefillError> {
    // One connection per broker of the route.
    let mut wires = Vec::new();
    for b in shared.route.brokers() {
        let w = Wire::connect(
            b.addr,
            Arc::new(Notify::new()),
            &shared.tracker,
            shared.cancel.child_token(),
        )
        .await
        .map_err(|source| PrefillError::Connect {
            broker: b.name.to_string(),
            source,
        })?;
        wires.push(Arc::new(w));
    }
    if wires.is_empty() {
        return Err(PrefillError::NoBroker);
    }
    let mut builder = crate::send_spec::builder(workload);
    builder.set_uniq_prefix(&tracking.prefix);
    let mut set = tokio::task::JoinSet::new();
    let mut buf = bytes::BytesMut::new();
    let acked = Arc::new(AtomicU64::new(0));
    for seq in 0..shared.cfg.prefill {
        while set.len() >= PREFILL_WINDOW {
            set.join_next().await;
        }
        // Round robin over every queue of every broker, as the producer spreads its sends.
        let queues = u64::from(workload.queues.max(1));
        let slot = seq % (queues * wires.len() as u64);
        let wire = &wires[(slot / queues) as usize];
        let (opaque, queue) = (wire.reserve_opaque(), Some((slot % queues) as i32));
        buf.clear();
        builder.encode_into_queue(seq, queue, opaque, Instant::now(), &mut buf);
        let frame = buf.split().freeze();
        let (wire, tracking, acked) = (wire.clone(), tracking.clone(), acked.clone());
        set.spawn(async move {
            if let Ok(r) = wire
                .call_encoded(opaque, frame, Duration::from_secs(10))
                .await
            {
                if r.code == 0 {
                    tracking.ack(seq);
                    acked.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
    }
    while set.join_next().await.is_some() {}
    for w in &wires {
        w.close();
    }
    Ok(acked.load(Ordering::Relaxed))
}
