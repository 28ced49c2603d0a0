//! Column names in words, with units: what a chart's title and axes say. The raw column name
//! stays one hover away (the figure's tooltip), so a reader can find it in results/README.md.

/// `(column, words with unit)` for every column the report charts; one table for the titles,
/// the axes and the summary table's header tooltips.
const WORDS: &[(&str, &str)] = &[
    ("target_rate", "offered rate (sends/s)"),
    ("achieved_rate", "sent rate (sends/s)"),
    ("ok", "acknowledged sends (/s)"),
    ("ok_rate", "acknowledged sends (/s)"),
    ("busy_rate", "busy answers (share of sends)"),
    ("p50_ms", "send latency p50 (ms)"),
    ("p99_ms", "send latency p99 (ms)"),
    ("p999_ms", "send latency p99.9 (ms)"),
    ("max_ms", "send latency max (ms)"),
    ("broker_cpu_avg", "broker CPU (% of one core)"),
    (
        "knee_rate",
        "knee: highest offered rate meeting the SLO (sends/s)",
    ),
    ("knee_limited_by", "what ended the knee search"),
    ("consumed", "consumed (messages/s)"),
    ("consume_rate", "consume rate (messages/s)"),
    ("consumer_lag", "messages behind"),
    ("consumer_lag_max", "most messages behind"),
    ("consumer_cached", "cached in the consumers (messages)"),
    ("consumer_cached_mib", "cached in the consumers (MiB)"),
    (
        "consumer_fc_count",
        "flow control: cached count over the threshold (pulls delayed/s)",
    ),
    (
        "consumer_fc_size",
        "flow control: cached size over the threshold (pulls delayed/s)",
    ),
    (
        "consumer_fc_span",
        "flow control: offset span over the maximum (pulls delayed/s)",
    ),
    (
        "consumer_fc_not_locked",
        "flow control: queue not locked (pulls delayed/s)",
    ),
    ("e2e_p50_ms", "end-to-end latency p50 (ms)"),
    ("e2e_p99_ms", "end-to-end latency p99 (ms)"),
    (
        "consumer_lost",
        "acknowledged but never consumed (messages)",
    ),
    ("consumer_duplicates", "consumed twice (messages)"),
    (
        "consumer_cached_max",
        "most cached in the consumers (messages)",
    ),
    (
        "consumer_retries",
        "redelivered from the retry topic (messages)",
    ),
    ("consumer_dlq", "sent to the DLQ (messages)"),
    ("retry_delay_p99_ms", "retry delay p99 (ms)"),
    ("acked_lost", "acknowledged but lost (messages)"),
    ("phantom", "stored but never acknowledged (messages)"),
    ("duplicates", "stored twice (messages)"),
    ("recovery_ms", "recovery (ms)"),
];

/// The words for `column`, or the column itself when the table has none.
pub fn words(column: &str) -> &str {
    WORDS.iter().find(|w| w.0 == column).map_or(column, |w| w.1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_column_has_words_with_a_unit_or_is_itself() {
        assert_eq!(words("e2e_p99_ms"), "end-to-end latency p99 (ms)");
        assert_eq!(words("consumer_lag"), "messages behind");
        assert_eq!(words("no_such_column"), "no_such_column");
        for (col, w) in WORDS {
            assert!(!w.contains('_'), "{col}: words, not a column name: {w}");
        }
    }
}
