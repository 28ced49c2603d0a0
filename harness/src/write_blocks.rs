//! When one broker's store refused writes because its disk was full, and when it wrote again.
//!
//! A broker over `diskSpaceWarningLevelRatio` answers every send code 14 ("... the broker's disk
//! is full ...") until a clean round clears DISK_FULL (retention reference A5.2); what a user
//! wants to know is how long that lasts. A *block* starts with a disk-full answer of the broker
//! and ends with its next SUCCESS answer, whoever's send it was: the store is shared, so the
//! first write after the flag cleared ends it for every producer.
//!
//! Each worker (one per connection) keeps its own blocks, merged once at the end as the union of
//! the intervals. A worker sees a block end at its own next send to that broker, so the merged
//! figure is late by at most one worker's send spacing to the broker (0.4 ms at 5,000 sends/s
//! over 2 brokers and 2 connections). The list is bounded: a store that flips more often than
//! [`MAX_BLOCKS`] times keeps the last one open past its end, which only lengthens it.

use std::time::Instant;

pub use harness_results::cols::BlockFigures;

/// Blocks kept per broker and worker.
pub const MAX_BLOCKS: usize = 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Block {
    start: Instant,
    /// The first SUCCESS after `start`; None while the broker still refuses.
    end: Option<Instant>,
}

/// What a broker's answer means for its store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BrokerAnswer {
    /// SUCCESS: the store took the message.
    Wrote,
    /// Code 14 whose remark names the disk.
    DiskFull,
    /// Anything else (busy, another error): neither starts nor ends a block.
    Other,
}

/// One broker's write blocks as one worker (or, merged, the job) saw them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteBlocks {
    /// In start order, not overlapping; only the last may be open.
    blocks: Vec<Block>,
    /// The broker's last answer of any kind: an open block lasted at least until then.
    last_answer: Option<Instant>,
}

impl WriteBlocks {
    /// An answer of the broker at `at`.
    pub fn answer(&mut self, kind: BrokerAnswer, at: Instant) {
        match kind {
            BrokerAnswer::Wrote => self.wrote(at),
            BrokerAnswer::DiskFull => self.refused(at),
            BrokerAnswer::Other => self.seen(at),
        }
    }

    /// The broker refused a send because its disk is full.
    pub fn refused(&mut self, at: Instant) {
        self.seen(at);
        let full = self.blocks.len() >= MAX_BLOCKS;
        match self.blocks.last_mut() {
            Some(b) if b.end.is_none() => {}
            Some(b) if full => b.end = None,
            _ => self.blocks.push(Block {
                start: at,
                end: None,
            }),
        }
    }

    /// The broker stored a send.
    pub fn wrote(&mut self, at: Instant) {
        self.seen(at);
        if let Some(b) = self.blocks.last_mut() {
            if b.end.is_none() {
                b.end = Some(at.max(b.start));
            }
        }
    }

    /// Any other answer of the broker.
    pub fn seen(&mut self, at: Instant) {
        self.last_answer = Some(self.last_answer.map_or(at, |l| l.max(at)));
    }

    /// The union of both workers' blocks.
    pub fn merge(&mut self, o: &WriteBlocks) {
        if let Some(at) = o.last_answer {
            self.seen(at);
        }
        let mut all: Vec<Block> = self
            .blocks
            .drain(..)
            .chain(o.blocks.iter().copied())
            .collect();
        all.sort_by_key(|b| b.start);
        for b in all {
            match self.blocks.last_mut() {
                // Overlapping (an open block absorbs everything after it).
                Some(cur) if cur.end.is_none_or(|e| b.start <= e) => {
                    cur.end = match (cur.end, b.end) {
                        (Some(x), Some(y)) => Some(x.max(y)),
                        _ => None,
                    };
                }
                _ => self.blocks.push(b),
            }
        }
        if self.blocks.len() > MAX_BLOCKS {
            let tail = self.blocks.split_off(MAX_BLOCKS - 1);
            let start = tail[0].start;
            let end = tail.iter().try_fold(start, |m, b| b.end.map(|e| m.max(e)));
            self.blocks.push(Block { start, end });
        }
    }

    /// None when the broker never refused.
    pub fn figures(&self) -> Option<BlockFigures> {
        let mut best: Option<(f64, bool)> = None;
        for b in &self.blocks {
            let (end, open) = match b.end {
                Some(e) => (e, false),
                None => (self.last_answer.unwrap_or(b.start).max(b.start), true),
            };
            let ms = end.duration_since(b.start).as_secs_f64() * 1000.0;
            if best.is_none_or(|(m, _)| ms > m) {
                best = Some((ms, open));
            }
        }
        best.map(|(longest_ms, longest_open)| BlockFigures {
            blocks: self.blocks.len(),
            longest_ms,
            longest_open,
        })
    }
}

/// Broker `i`'s blocks in a list indexed by broker, grown as needed.
pub fn of(list: &mut Vec<WriteBlocks>, i: usize) -> &mut WriteBlocks {
    if list.len() <= i {
        list.resize(i + 1, WriteBlocks::default());
    }
    &mut list[i]
}

/// Merges `o`'s per-broker lists into `list`, broker by broker.
pub fn merge_all(list: &mut Vec<WriteBlocks>, o: &[WriteBlocks]) {
    for (i, b) in o.iter().enumerate() {
        of(list, i).merge(b);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn at(t0: Instant, ms: u64) -> Instant {
        t0 + Duration::from_millis(ms)
    }

    #[test]
    fn a_block_runs_from_the_first_refusal_to_the_next_write() {
        let t0 = Instant::now();
        let mut w = WriteBlocks::default();
        assert_eq!(w.figures(), None);
        w.wrote(at(t0, 10));
        w.refused(at(t0, 100));
        w.refused(at(t0, 200));
        w.seen(at(t0, 300)); // a busy answer neither starts nor ends a block
        w.wrote(at(t0, 1_100));
        w.wrote(at(t0, 1_200));
        let f = w.figures().unwrap();
        assert_eq!(f.blocks, 1);
        assert!((f.longest_ms - 1_000.0).abs() < 1e-6, "{f:?}");
        assert!(!f.longest_open);
        // A second, shorter block, then one still open at the end (its length up to the last
        // answer, a lower bound).
        w.refused(at(t0, 2_000));
        w.wrote(at(t0, 2_500));
        w.refused(at(t0, 3_000));
        w.refused(at(t0, 4_500));
        let f = w.figures().unwrap();
        assert_eq!(f.blocks, 3);
        assert!((f.longest_ms - 1_500.0).abs() < 1e-6, "{f:?}");
        assert!(f.longest_open);
    }

    #[test]
    fn workers_merge_as_the_union_of_their_blocks() {
        let t0 = Instant::now();
        // Worker a sees the block 100..1100, worker b 105..1102 and a later one 5000..5200.
        let mut a = WriteBlocks::default();
        a.refused(at(t0, 100));
        a.wrote(at(t0, 1_100));
        let mut b = WriteBlocks::default();
        b.refused(at(t0, 105));
        b.wrote(at(t0, 1_102));
        b.refused(at(t0, 5_000));
        b.wrote(at(t0, 5_200));
        a.merge(&b);
        let f = a.figures().unwrap();
        assert_eq!(f.blocks, 2, "{a:?}");
        assert!((f.longest_ms - 1_002.0).abs() < 1e-6, "{f:?}");
        // Merging is symmetric and an open block absorbs what starts after it.
        let mut c = WriteBlocks::default();
        c.refused(at(t0, 4_000));
        c.seen(at(t0, 9_000));
        let mut d = b.clone();
        d.merge(&c);
        let f = d.figures().unwrap();
        assert_eq!(f.blocks, 2, "{d:?}");
        assert!(f.longest_open);
        assert!((f.longest_ms - 5_000.0).abs() < 1e-6, "{f:?}");
        let mut e = c.clone();
        e.merge(&b);
        assert_eq!(e, d);
    }

    #[test]
    fn the_list_is_bounded() {
        let t0 = Instant::now();
        let mut w = WriteBlocks::default();
        for i in 0..(MAX_BLOCKS as u64 + 10) {
            w.refused(at(t0, i * 10));
            w.wrote(at(t0, i * 10 + 5));
        }
        assert_eq!(w.blocks.len(), MAX_BLOCKS);
        let mut m = w.clone();
        let mut other = WriteBlocks::default();
        for i in 0..(MAX_BLOCKS as u64) {
            other.refused(at(t0, 100_000 + i * 10));
            other.wrote(at(t0, 100_000 + i * 10 + 5));
        }
        m.merge(&other);
        assert_eq!(m.blocks.len(), MAX_BLOCKS);
        // The folded tail spans from its first start to its last end.
        let last = m.blocks.last().unwrap();
        assert_eq!(
            last.end,
            Some(at(t0, 100_000 + (MAX_BLOCKS as u64 - 1) * 10 + 5))
        );
    }
}
