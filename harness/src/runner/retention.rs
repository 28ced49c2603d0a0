//! Retention as the broker reports it: a job part reading `commitLogMinOffset` and
//! `commitLogDiskRatio` from each second's runtime info (retention reference A7.1: the minimum
//! moves at a file's first destroy attempt) into the retention columns of `summary.csv`.

use std::collections::BTreeMap;

use crate::part::{JobColumns, JobPart, PartError, Second};
use crate::report::{RetentionColumns, TimeseriesRow};
use harness_results::cells::Fixed;

const MIN_OFFSET_KEY: &str = "commitLogMinOffset";
const DISK_RATIO_KEY: &str = "commitLogDiskRatio";

/// The retention figures of one job, one reading a second.
#[derive(Debug, Default)]
pub struct RetentionPart {
    first: Option<i64>,
    last: Option<i64>,
    rounds: u64,
    /// The previous reading rose: a round still deleting.
    rising: bool,
    ratio_max: Option<f64>,
}

impl RetentionPart {
    /// One second's runtime info.
    pub fn read(&mut self, info: &BTreeMap<String, String>) {
        if let Some(min) = info
            .get(MIN_OFFSET_KEY)
            .and_then(|v| v.trim().parse::<i64>().ok())
        {
            // −1: no CommitLog file yet; the first file starts at 0.
            let min = min.max(0);
            let rose = self.last.is_some_and(|l| min > l);
            if rose && !self.rising {
                self.rounds += 1;
            }
            self.rising = rose;
            self.first.get_or_insert(min);
            self.last = Some(min);
        }
        if let Some(r) = info
            .get(DISK_RATIO_KEY)
            .and_then(|v| v.trim().parse::<f64>().ok())
        {
            self.ratio_max = Some(self.ratio_max.map_or(r, |m| m.max(r)));
        }
    }

    pub fn columns(&self) -> RetentionColumns {
        let moved = self.first.zip(self.last).map(|(f, l)| (l - f).max(0));
        RetentionColumns {
            retention_rounds: moved.map(|_| self.rounds),
            commitlog_deleted_mb: moved.map(|b| Fixed(b as f64 / (1024.0 * 1024.0))),
            disk_ratio_max: self.ratio_max.filter(|r| *r >= 0.0).map(Fixed),
        }
    }
}

impl JobPart for RetentionPart {
    fn second(&mut self, second: &mut Second<'_>, _row: &mut TimeseriesRow) {
        if let Some(info) = second.info {
            self.read(info);
        }
    }

    fn finish(&mut self, cols: JobColumns<'_>) -> Result<(), PartError> {
        cols.res.retention = self.columns();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(min: &str, ratio: &str) -> BTreeMap<String, String> {
        [(MIN_OFFSET_KEY, min), (DISK_RATIO_KEY, ratio)]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect()
    }

    #[test]
    fn a_round_is_a_run_of_rising_minimums() {
        let mut p = RetentionPart::default();
        let mib = 1 << 20;
        // No file yet, then file 0; a round deleting two 8 MiB files over two samples; a
        // quiet second; a later round deleting one more.
        for (min, ratio) in [
            (-1, "0.01"),
            (0, "0.3"),
            (0, "0.56"),
            (8 * mib, "0.56"),
            (16 * mib, "0.2"),
            (16 * mib, "0.21"),
            (24 * mib, "0.22"),
        ] {
            p.read(&info(&min.to_string(), ratio));
        }
        let c = p.columns();
        assert_eq!(c.retention_rounds, Some(2));
        assert_eq!(c.commitlog_deleted_mb, Some(Fixed(24.0)));
        assert_eq!(c.disk_ratio_max, Some(Fixed(0.56)));
    }

    #[test]
    fn a_broker_without_the_keys_leaves_the_columns_empty() {
        let mut p = RetentionPart::default();
        p.read(&BTreeMap::new());
        assert_eq!(p.columns(), RetentionColumns::default());
        p.read(&info("0", "-1.0"));
        let c = p.columns();
        assert_eq!(c.retention_rounds, Some(0));
        assert_eq!(c.disk_ratio_max, None, "−1: the broker could not measure");
    }
}
