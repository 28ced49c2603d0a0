//! `AllocateMessageQueueAveragely` (consumer §8.6): the group's client ids and the topic's
//! queues, both sorted; each client takes a contiguous run. On a cluster the queues are
//! `(brokerName, queueId)`, sorted as Java's `MessageQueue.compareTo` (`route.rs`'s `Mq`).

/// The queues (from `queues`, sorted) that `me` takes among `ids`; none when `me` is not in
/// the list.
pub fn allocate_averagely<Q: Ord + Clone>(queues: &[Q], ids: &[String], me: &str) -> Vec<Q> {
    let mut qs = queues.to_vec();
    qs.sort();
    let mut cids: Vec<&str> = ids.iter().map(String::as_str).collect();
    cids.sort_unstable();
    cids.dedup();
    let Some(index) = cids.iter().position(|c| *c == me) else {
        return Vec::new();
    };
    let (n, c) = (qs.len(), cids.len());
    if n == 0 {
        return Vec::new();
    }
    let m = n % c;
    let size = if n <= c {
        1
    } else if m > 0 && index < m {
        n / c + 1
    } else {
        n / c
    };
    let start = if m > 0 && index < m {
        index * size
    } else {
        index * size + m
    };
    let take = size.min(n.saturating_sub(start));
    qs.into_iter().skip(start).take(take).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::consumer::route::Mq;

    fn ids(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("c{i}")).collect()
    }

    #[test]
    fn the_reference_examples() {
        let q4 = [3, 1, 0, 2];
        let three = ids(3);
        assert_eq!(allocate_averagely(&q4, &three, "c0"), [0, 1]);
        assert_eq!(allocate_averagely(&q4, &three, "c1"), [2]);
        assert_eq!(allocate_averagely(&q4, &three, "c2"), [3]);
        let q8: Vec<i32> = (0..8).collect();
        assert_eq!(allocate_averagely(&q8, &three, "c0"), [0, 1, 2]);
        assert_eq!(allocate_averagely(&q8, &three, "c1"), [3, 4, 5]);
        assert_eq!(allocate_averagely(&q8, &three, "c2"), [6, 7]);
        assert_eq!(allocate_averagely(&[0], &three, "c0"), [0]);
        assert!(allocate_averagely(&[0], &three, "c1").is_empty());
        assert!(allocate_averagely(&q4, &three, "stranger").is_empty());
        // Every queue goes to exactly one client.
        for c in 1..=9 {
            let all: Vec<i32> = ids(c)
                .iter()
                .flat_map(|me| allocate_averagely(&q8, &ids(c), me))
                .collect();
            assert_eq!(all, (0..8).collect::<Vec<_>>(), "{c} clients");
        }
    }

    /// Two brokers of 3 queues each, 4 clients, worked out by hand from Java's
    /// AllocateMessageQueueAveragely over the sorted mqAll
    /// [a0 a1 a2 b0 b1 b2] (a = broker-a): mod = 6 % 4 = 2, so c0 and c1 take 2 queues from
    /// index*2, c2 and c3 take 1 from index + 2.
    #[test]
    fn two_brokers_sorted_by_broker_name_then_queue_id() {
        let mq = |b: &str, q| Mq::new(b, q);
        // Given in a scrambled order, as a route lists them.
        let all = [
            mq("broker-b", 2),
            mq("broker-a", 1),
            mq("broker-b", 0),
            mq("broker-a", 0),
            mq("broker-b", 1),
            mq("broker-a", 2),
        ];
        let four = ids(4);
        assert_eq!(
            allocate_averagely(&all, &four, "c0"),
            [mq("broker-a", 0), mq("broker-a", 1)]
        );
        assert_eq!(
            allocate_averagely(&all, &four, "c1"),
            [mq("broker-a", 2), mq("broker-b", 0)]
        );
        assert_eq!(allocate_averagely(&all, &four, "c2"), [mq("broker-b", 1)]);
        assert_eq!(allocate_averagely(&all, &four, "c3"), [mq("broker-b", 2)]);
        // 2 × 4 queues, 2 clients: 8 % 2 = 0, each takes 4 from index*4, one broker each.
        let eight: Vec<Mq> = ["broker-1", "broker-0"]
            .iter()
            .flat_map(|b| (0..4).map(move |q| mq(b, q)))
            .collect();
        let two = ids(2);
        let c0 = allocate_averagely(&eight, &two, "c0");
        assert_eq!(c0, (0..4).map(|q| mq("broker-0", q)).collect::<Vec<_>>());
        let c1 = allocate_averagely(&eight, &two, "c1");
        assert_eq!(c1, (0..4).map(|q| mq("broker-1", q)).collect::<Vec<_>>());
    }
}
