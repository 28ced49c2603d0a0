//! The broker's one wall clock. RocketMQ stamps requests, lock holds and store times with
//! `System.currentTimeMillis()`; every such stamp here comes from [`epoch_millis`], so the
//! fast-failure thread, the put lock and the statistics compare like with like.

use std::time::{SystemTime, UNIX_EPOCH};

/// Wall-clock epoch milliseconds (`System.currentTimeMillis()`); 0 if the clock is before 1970.
pub fn epoch_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epoch_millis_is_after_2020_and_monotone_enough() {
        let a = epoch_millis();
        let b = epoch_millis();
        assert!(a > 1_577_836_800_000, "{a}");
        assert!(b >= a);
    }
}
