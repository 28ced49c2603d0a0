//! The disk-full columns of `summary.csv`, per broker of a cluster: code-14 disk-full answers
//! and how long each broker refused writes ([`crate::write_blocks`]). Empty with one broker.

use serde::Serialize;

use crate::write_blocks::WriteBlocks;

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct DiskColumns {
    /// Attempts answered code 14 with the disk-full remark, `broker-0=N;broker-1=M`.
    pub broker_not_available_disk_full: String,
    /// Write blocks (first disk-full answer → the broker's next SUCCESS) over the whole job.
    pub broker_write_blocks: String,
    /// The longest block in ms (`+`: still refusing at the end, a lower bound); empty for a
    /// broker that never refused.
    pub broker_write_block_ms: String,
}

impl DiskColumns {
    /// From the brokers' names, their `[ok, busy, disk full]` answers and their blocks, all in
    /// route order.
    pub fn of(names: &[String], per_broker: &[[u64; 3]], blocks: &[WriteBlocks]) -> DiskColumns {
        let per = |f: &dyn Fn(usize) -> String| {
            names
                .iter()
                .enumerate()
                .map(|(i, n)| format!("{n}={}", f(i)))
                .collect::<Vec<_>>()
                .join(";")
        };
        let figures = |i: usize| blocks.get(i).and_then(|b| b.figures());
        DiskColumns {
            broker_not_available_disk_full: per(&|i| {
                per_broker.get(i).map_or(0, |c| c[2]).to_string()
            }),
            broker_write_blocks: per(&|i| figures(i).map_or(0, |f| f.blocks).to_string()),
            broker_write_block_ms: per(&|i| {
                figures(i).map_or(String::new(), |f| {
                    let open = if f.longest_open { "+" } else { "" };
                    format!("{:.1}{open}", f.longest_ms)
                })
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::write_blocks::BrokerAnswer;
    use std::time::{Duration, Instant};

    #[test]
    fn per_broker_cells_in_route_order() {
        let t0 = Instant::now();
        let mut b0 = WriteBlocks::default();
        b0.answer(BrokerAnswer::DiskFull, t0);
        b0.answer(BrokerAnswer::Wrote, t0 + Duration::from_micros(10_012_345));
        b0.answer(BrokerAnswer::DiskFull, t0 + Duration::from_secs(20));
        b0.answer(BrokerAnswer::Other, t0 + Duration::from_secs(40));
        let names = ["broker-0".to_owned(), "broker-1".to_owned()];
        let c = DiskColumns::of(
            &names,
            &[[5, 0, 700], [9, 1, 0]],
            &[b0, WriteBlocks::default()],
        );
        assert_eq!(c.broker_not_available_disk_full, "broker-0=700;broker-1=0");
        assert_eq!(c.broker_write_blocks, "broker-0=2;broker-1=0");
        assert_eq!(c.broker_write_block_ms, "broker-0=20000.0+;broker-1=");
        assert_eq!(DiskColumns::of(&[], &[], &[]), DiskColumns::default());
    }
}
