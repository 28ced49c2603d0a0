//! The disk-full columns of `summary.csv`, per broker of a cluster: code-14 disk-full answers
//! and how long each broker refused writes (the blocks `harness::write_blocks` tracks).
//! Empty with one broker.

use serde::Serialize;

/// What the summary reports of one broker's write blocks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BlockFigures {
    pub blocks: usize,
    /// The longest block in ms; for a block still open at the end, its length up to the
    /// broker's last answer.
    pub longest_ms: f64,
    /// Whether the longest block was still open at the end (its length is a lower bound).
    pub longest_open: bool,
}

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
    /// From the brokers' names, their `[ok, busy, disk full]` answers and their blocks' figures
    /// (None: the broker never refused), all in route order.
    pub fn of(
        names: &[String],
        per_broker: &[[u64; 3]],
        blocks: &[Option<BlockFigures>],
    ) -> DiskColumns {
        let per = |f: &dyn Fn(usize) -> String| {
            names
                .iter()
                .enumerate()
                .map(|(i, n)| format!("{n}={}", f(i)))
                .collect::<Vec<_>>()
                .join(";")
        };
        let figures = |i: usize| blocks.get(i).copied().flatten();
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

    #[test]
    fn per_broker_cells_in_route_order() {
        let b0 = BlockFigures {
            blocks: 2,
            longest_ms: 20_000.0,
            longest_open: true,
        };
        let names = ["broker-0".to_owned(), "broker-1".to_owned()];
        let c = DiskColumns::of(&names, &[[5, 0, 700], [9, 1, 0]], &[Some(b0), None]);
        assert_eq!(c.broker_not_available_disk_full, "broker-0=700;broker-1=0");
        assert_eq!(c.broker_write_blocks, "broker-0=2;broker-1=0");
        assert_eq!(c.broker_write_block_ms, "broker-0=20000.0+;broker-1=");
        assert_eq!(DiskColumns::of(&[], &[], &[]), DiskColumns::default());
    }
}
