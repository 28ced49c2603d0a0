//! `AllocateMessageQueueAveragely` (consumer §8.6): the group's client ids and the topic's
//! queues, both sorted; each client takes a contiguous run.

/// The queue ids (from `queues`, sorted) that `me` takes among `ids`; none when `me` is not
/// in the list.
pub fn allocate_averagely(queues: &[i32], ids: &[String], me: &str) -> Vec<i32> {
    let mut qs = queues.to_vec();
    qs.sort_unstable();
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
}
