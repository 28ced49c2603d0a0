//! The whole-segment histograms of a job in `latency.hlog`, and the names of its tags.
//!
//! Why they are in the log: the per-second intervals are cut by the second in which an answer
//! arrived, while a `summary.csv` row covers the sends *intended* in a segment (warm-up
//! answers arrive in the first measured second). Summing seconds would therefore not give the
//! row's percentiles. With the segment's own histograms in the log, `harness merge` adds the
//! shards' histograms bucket by bucket, and the merged percentiles are exactly those of the
//! union of every shard's samples.
//!
//! Tags: `<cell_id>/r<repetition>/<name>` for a second, and
//! `<cell_id>/r<repetition>/segment<k>/<name>` for measured segment `k` (1 = the measured
//! window, or the first stair of a steps run). One module names both, for writer and reader.

use std::time::Duration;

use hdrhistogram::Histogram;

use crate::hlog::HlogWriter;
use crate::segment::Segment;

/// The per-segment histograms written, in order; `period_in_queue` is in ms and
/// `size_of_queue` in entries, every other one in µs.
pub const SEGMENT_HISTOGRAMS: [&str; 6] = [
    "latency",
    "service",
    "lag",
    "busy_latency",
    "period_in_queue",
    "size_of_queue",
];

/// The per-second histograms written (in µs), in order.
pub const SECOND_HISTOGRAMS: [&str; 4] = ["latency", "service", "lag", "busy_latency"];

/// `<cell_id>/r<repetition>`: the job part of every tag.
pub fn job_tag(cell_id: &str, repetition: u32) -> String {
    format!("{cell_id}/r{repetition}")
}

/// The tag of segment `segment`'s histogram `name`.
pub fn segment_tag(cell_id: &str, repetition: u32, segment: usize, name: &str) -> String {
    format!("{}/segment{segment}/{name}", job_tag(cell_id, repetition))
}

/// What a tag names.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum TagKind {
    /// A second of job `job` (`<cell_id>/r<repetition>`).
    Second { job: String, name: String },
    /// A whole measured segment.
    Segment {
        job: String,
        segment: usize,
        name: String,
    },
}

/// Reads a tag written by this module; None for anything else.
pub fn parse_tag(tag: &str) -> Option<TagKind> {
    let parts: Vec<&str> = tag.split('/').collect();
    match parts.as_slice() {
        [cell, rep, name] if rep.starts_with('r') => Some(TagKind::Second {
            job: format!("{cell}/{rep}"),
            name: (*name).to_owned(),
        }),
        [cell, rep, seg, name] if rep.starts_with('r') => Some(TagKind::Segment {
            job: format!("{cell}/{rep}"),
            segment: seg.strip_prefix("segment")?.parse().ok()?,
            name: (*name).to_owned(),
        }),
        _ => None,
    }
}

/// The histogram `name` of a segment (one of [`SEGMENT_HISTOGRAMS`]).
pub fn segment_histogram<'a>(s: &'a Segment, name: &str) -> Option<&'a Histogram<u64>> {
    Some(match name {
        "latency" => &s.latency,
        "service" => &s.service,
        "lag" => &s.lag,
        "busy_latency" => &s.busy_latency,
        "period_in_queue" => &s.period_in_queue,
        "size_of_queue" => &s.size_of_queue,
        _ => return None,
    })
}

/// Writes every measured segment's histograms of a finished job. `schedule_start` is the
/// job's first intended send, as an offset from the log's base time; `phases` are the
/// schedule's (segment, duration) in order, and each segment's interval is its stretch;
/// `segments` are the job's, indexed by segment (the recorder's).
pub fn push_segment_totals(
    hlog: &mut HlogWriter,
    cell_id: &str,
    repetition: u32,
    schedule_start: Duration,
    phases: &[(usize, Duration)],
    segments: &[Segment],
) -> std::io::Result<()> {
    let mut start = schedule_start;
    for &(segment, duration) in phases {
        let Some(seg) = segments.get(segment) else {
            continue;
        };
        if segment > 0 {
            for name in SEGMENT_HISTOGRAMS {
                if let Some(h) = segment_histogram(seg, name) {
                    hlog.push(
                        &segment_tag(cell_id, repetition, segment, name),
                        start.as_secs_f64(),
                        duration.as_secs_f64(),
                        h,
                    );
                }
            }
        }
        start += duration;
    }
    hlog.flush_second()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_round_trip() {
        assert_eq!(
            parse_tag(&segment_tag("ab12cd34", 2, 3, "lag")),
            Some(TagKind::Segment {
                job: "ab12cd34/r2".into(),
                segment: 3,
                name: "lag".into()
            })
        );
        assert_eq!(
            parse_tag(&format!("{}/latency", job_tag("ab12cd34", 1))),
            Some(TagKind::Second {
                job: "ab12cd34/r1".into(),
                name: "latency".into()
            })
        );
        assert_eq!(parse_tag("something/else"), None);
        assert_eq!(parse_tag("a/r1/seg/x"), None);
    }
}
