//! The validity rules: when a measured row says more about the generator than the broker.

use crate::profile::Profile;
use crate::report::SummaryRow;

/// Why `row` cannot be trusted under the profile's `[validity]` limits, if it cannot.
pub fn validity_problem(profile: &Profile, row: &SummaryRow) -> Option<String> {
    let v = &profile.validity;
    let lag_p99 = row.seg.lag_us[1] as f64;
    if lag_p99 > v.max_lag_p99_us {
        return Some(format!(
            "lag p99 {lag_p99:.0} µs > {:.0} µs (generator late or max_in_flight exhausted)",
            v.max_lag_p99_us
        ));
    }
    if let Some(cpu) = row.res.harness_cpu_max {
        if cpu > v.max_harness_cpu {
            return Some(format!("harness CPU {cpu:.0}% > {:.0}%", v.max_harness_cpu));
        }
    }
    if let Some(target) = row.target_rate {
        let explained = row.seg.dropped + row.seg.timeouts + row.seg.connection_errors > 0;
        if row.achieved_rate() < v.min_achieved_ratio * target && !explained {
            return Some(format!(
                "achieved {:.0}/s < {:.0}% of target {target:.0}/s with no errors to explain it",
                row.achieved_rate(),
                v.min_achieved_ratio * 100.0
            ));
        }
    }
    None
}
