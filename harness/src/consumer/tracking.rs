//! The producer's half of lost/duplicate accounting: which sends the broker acknowledged,
//! keyed by the sequence number carried in every UNIQ_KEY (`rmq_client::uniq_key::uniq_seq`).

use crate::consumer::seqset::SeqSet;
use rmq_client::uniq_key::KeyPrefix;

impl std::fmt::Debug for SendTracking {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SendTracking")
            .field("prefix", &self.prefix)
            .field("batch", &self.batch)
            .finish_non_exhaustive()
    }
}

/// Acknowledged sends of one producer (the load, or the prefill) of one job.
pub struct SendTracking {
    /// The UNIQ_KEY prefix of this producer's messages.
    pub prefix: String,
    /// The same, as the consumers compare it.
    key_prefix: KeyPrefix,
    /// Messages per send request (a batch acknowledges all of its entries).
    pub batch: u64,
    /// Message index = send seq × batch + entry (see [`SendTracking::index`]).
    pub acked: SeqSet,
}

impl SendTracking {
    /// Tracking for up to `capacity` messages under a fresh random prefix.
    pub fn new(batch: u32, capacity: u64) -> SendTracking {
        let mut rng = fastrand::Rng::new();
        let prefix = format!(
            "7F000001{:04X}{:08X}",
            std::process::id() as u16,
            rng.u32(..)
        );
        let mut key_prefix = KeyPrefix::default();
        key_prefix.copy_from_slice(prefix.as_bytes());
        SendTracking {
            prefix,
            key_prefix,
            batch: u64::from(batch.max(1)),
            acked: SeqSet::new(capacity),
        }
    }

    /// Whether a UNIQ_KEY with `prefix` is this producer's.
    pub fn owns(&self, prefix: &KeyPrefix) -> bool {
        self.key_prefix == *prefix
    }

    /// The message index of a UNIQ_KEY's sequence number: batch entries are keyed
    /// `seq × 1024 + entry` by the send builder.
    pub fn index(&self, key_seq: u64) -> u64 {
        if self.batch > 1 {
            (key_seq / 1024) * self.batch + key_seq % 1024
        } else {
            key_seq
        }
    }

    /// Send `seq` was answered with success: every message it carried is acknowledged.
    pub fn ack(&self, seq: u64) {
        for k in 0..self.batch {
            self.acked.insert(seq * self.batch + k);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use harness_model::profile::Workload;
    use rmq_client::uniq_key::uniq_seq;

    #[test]
    fn a_uniq_key_maps_back_to_its_send_and_batch_entry() {
        let t = SendTracking::new(1, 1000);
        let mut b = crate::send_spec::builder(&Workload::default());
        b.set_uniq_prefix(&t.prefix);
        assert_eq!(b.uniq_prefix(), t.prefix);
        let key = b.uniq_key(0xABCDEF12345);
        assert_eq!(key.len(), 32);
        assert_eq!(uniq_seq(&key), Some((t.prefix.as_str(), 0xABCDEF12345)));
        assert_eq!(uniq_seq("short"), None);
        b.set_uniq_prefix("not hex at all, twenty");
        assert_eq!(b.uniq_prefix(), t.prefix, "a bad prefix is ignored");

        // Batches: entry k of send s is keyed s × 1024 + k, indexed s × batch + k.
        let batch = SendTracking::new(4, 1000);
        assert_eq!(batch.index(7 * 1024 + 3), 31);
        batch.ack(7);
        assert!((28..32).all(|i| batch.acked.contains(i)));
        assert_eq!(batch.acked.len(), 4);
    }
}
