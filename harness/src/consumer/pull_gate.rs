//! The checks before every pull, in `DefaultMQPushConsumerImpl.pullMessage`'s order
//! (consumer §8.2, send-path reference §12): cached count, cached size, offset span
//! (concurrently only), not locked (orderly only). The first that fires delays the pull; each is
//! a counted event, logged with RocketMQ's text on its 1st and every 1000th occurrence.

use std::time::Duration;

use harness_model::profile::ConsumeMode;

/// A flow-control event of the consumer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlowControl {
    Count,
    Size,
    Span,
    NotLocked,
}

impl FlowControl {
    pub const ALL: [FlowControl; 4] = [
        FlowControl::Count,
        FlowControl::Size,
        FlowControl::Span,
        FlowControl::NotLocked,
    ];

    pub fn index(self) -> usize {
        self as usize
    }
}

/// What the gates look at: one queue's cache.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueView {
    pub count: u64,
    pub size_bytes: u64,
    pub min_offset: i64,
    pub max_offset: i64,
    pub max_span: i64,
    /// Orderly: the broker granted this instance the queue's lock and it has not expired.
    pub locked: bool,
}

/// The thresholds in force for one queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Thresholds {
    pub count: i64,
    pub size_mib: i64,
    pub span: i64,
}

/// The gates' verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate {
    Pull,
    Delay(FlowControl),
}

/// The first gate that holds the pull back, in RocketMQ's order.
pub fn decide(v: &QueueView, t: &Thresholds, mode: ConsumeMode) -> Gate {
    // `cachedMessageSizeInMiB = msgSize / (1024 * 1024)`: whole MiB, as Java divides longs.
    let size_mib = (v.size_bytes / (1024 * 1024)) as i64;
    if v.count as i64 > t.count {
        return Gate::Delay(FlowControl::Count);
    }
    if size_mib > t.size_mib {
        return Gate::Delay(FlowControl::Size);
    }
    match mode {
        ConsumeMode::Concurrently if v.max_span > t.span => Gate::Delay(FlowControl::Span),
        ConsumeMode::Orderly if !v.locked => Gate::Delay(FlowControl::NotLocked),
        _ => Gate::Pull,
    }
}

/// Per-queue thresholds from the per-topic ones (`RebalancePushImpl.messageQueueChanged`):
/// `max(1, topic / assigned queues)` when set, else the per-queue value.
pub fn per_queue(queue: i64, topic: i64, assigned: usize) -> i64 {
    if topic != -1 && assigned > 0 {
        (topic / assigned as i64).max(1)
    } else {
        queue
    }
}

/// RocketMQ's log text for an event (`{}` filled in). `times` is the shared counter value
/// after this event, as Java prints it.
pub fn log_text(
    kind: FlowControl,
    v: &QueueView,
    t: &Thresholds,
    pull_request: &str,
    times: u64,
) -> String {
    let mib = v.size_bytes / (1024 * 1024);
    match kind {
        FlowControl::Count => format!(
            "the cached message count exceeds the threshold {}, so do flow control, minOffset={}, maxOffset={}, count={}, size={} MiB, pullRequest={}, flowControlTimes={}",
            t.count, v.min_offset, v.max_offset, v.count, mib, pull_request, times
        ),
        FlowControl::Size => format!(
            "the cached message size exceeds the threshold {} MiB, so do flow control, minOffset={}, maxOffset={}, count={}, size={} MiB, pullRequest={}, flowControlTimes={}",
            t.size_mib, v.min_offset, v.max_offset, v.count, mib, pull_request, times
        ),
        FlowControl::Span => format!(
            "the queue's messages, span too long, so do flow control, minOffset={}, maxOffset={}, maxSpan={}, pullRequest={}, flowControlTimes={}",
            v.min_offset, v.max_offset, v.max_span, pull_request, times
        ),
        FlowControl::NotLocked => {
            format!("pull message later because not locked in broker, {pull_request}")
        }
    }
}

/// Whether an event whose counter was `before` (pre-increment) is logged: the 1st and every
/// 1000th (`if ((flowControlTimes++ % 1000) == 0)`).
pub fn logged(before: u64) -> bool {
    before.is_multiple_of(1000)
}

/// The delay before the pull is tried again.
pub fn delay_of(kind: FlowControl, flow_control: Duration, exception: Duration) -> Duration {
    match kind {
        FlowControl::NotLocked => exception,
        _ => flow_control,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Thresholds = Thresholds {
        count: 1000,
        size_mib: 100,
        span: 2000,
    };

    fn view(count: u64, mib: u64, span: i64, locked: bool) -> QueueView {
        QueueView {
            count,
            size_bytes: mib * 1024 * 1024,
            min_offset: 0,
            max_offset: span,
            max_span: span,
            locked,
        }
    }

    #[test]
    fn the_order_is_count_size_span_then_lock() {
        let c = ConsumeMode::Concurrently;
        let o = ConsumeMode::Orderly;
        assert_eq!(
            decide(&view(1000, 100, 2000, false), &T, c),
            Gate::Pull,
            "thresholds are exclusive"
        );
        // Everything over: count wins.
        assert_eq!(
            decide(&view(1001, 101, 2001, false), &T, c),
            Gate::Delay(FlowControl::Count)
        );
        assert_eq!(
            decide(&view(1001, 101, 2001, false), &T, o),
            Gate::Delay(FlowControl::Count)
        );
        // Size before span and before the lock.
        assert_eq!(
            decide(&view(5, 101, 2001, false), &T, c),
            Gate::Delay(FlowControl::Size)
        );
        assert_eq!(
            decide(&view(5, 101, 0, false), &T, o),
            Gate::Delay(FlowControl::Size)
        );
        // Span only in concurrently mode; the lock only in orderly mode.
        assert_eq!(
            decide(&view(5, 1, 2001, false), &T, c),
            Gate::Delay(FlowControl::Span)
        );
        assert_eq!(decide(&view(5, 1, 2001, true), &T, o), Gate::Pull);
        assert_eq!(
            decide(&view(5, 1, 2001, false), &T, o),
            Gate::Delay(FlowControl::NotLocked)
        );
        assert_eq!(decide(&view(0, 0, 0, false), &T, c), Gate::Pull);
        // 100.9 MiB is 100 whole MiB: not over.
        let mut v = view(1, 100, 0, true);
        v.size_bytes += 900 * 1024;
        assert_eq!(decide(&v, &T, c), Gate::Pull);
    }

    #[test]
    fn logged_on_the_first_and_every_thousandth() {
        let hits: Vec<u64> = (0..2500).filter(|&b| logged(b)).collect();
        assert_eq!(hits, [0, 1000, 2000]);
        let text = log_text(
            FlowControl::Count,
            &view(1001, 0, 7, true),
            &T,
            "PullRequest [x]",
            1,
        );
        assert!(text.starts_with("the cached message count exceeds the threshold 1000, so do flow control, minOffset=0, maxOffset=7, count=1001, size=0 MiB, pullRequest=PullRequest [x], flowControlTimes=1"), "{text}");
    }

    #[test]
    fn topic_thresholds_split_over_assigned_queues() {
        assert_eq!(per_queue(1000, -1, 4), 1000);
        assert_eq!(per_queue(1000, 400, 4), 100);
        assert_eq!(per_queue(1000, 2, 4), 1);
        assert_eq!(
            delay_of(
                FlowControl::NotLocked,
                Duration::from_millis(50),
                Duration::from_secs(3)
            ),
            Duration::from_secs(3)
        );
    }
}
