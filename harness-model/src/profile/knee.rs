//! The `[knee]` section: how `model = "knee"` searches for the highest rate that meets `[slo]`.
//! The search itself is `runner::knee`.

use serde::Deserialize;

use super::secs::Secs;

/// The `[knee]` table. Every key is optional.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Knee {
    /// First probe's rate (sends/s). Default: `[workload] rate`.
    pub start_rate: Option<f64>,
    /// Ramp factor until the first failure (and downwards while the start rate fails). Default: 2.
    pub growth: f64,
    /// Bisection stops when the failing rate is within this fraction above the passing one. Default: 0.05.
    pub precision: f64,
    /// Measured length of each probe. Default: 5s.
    pub probe_duration: Secs,
    /// Unmeasured load at the probe's rate before it is measured. Default: 1s.
    pub settle: Secs,
    /// The same before a search's first probe on its broker, when that needs longer (a JVM's
    /// JIT: a cold broker fails a rate it takes a few seconds later). Default: `settle`.
    pub first_settle: Option<Secs>,
    /// The ramp stops here; a knee at `max_rate` means "not found below it". Default: 1000000.
    pub max_rate: f64,
    /// Below this the downward ramp gives up: no rate meets the SLO. Default: 10.
    pub min_rate: f64,
    /// Upper bound on counted probes per cell and repetition (the search reports what it has);
    /// an invalid probe's one rerun comes on top. Default: 24.
    pub max_probes: u32,
    /// A fresh broker (and store) for every probe, instead of one per cell. Default: false.
    pub fresh_broker_per_probe: bool,
    /// At most this long of unmeasured closed-loop load on the search's broker before its first
    /// probe, in windows of [`WARM_UP_WINDOW`], ending early at the first window whose rate is
    /// within [`WARM_UP_STEADY`] of the one before it, or within its seconds' noise
    /// ([`WARM_UP_NOISE_Z`]). A JVM broker takes tens of seconds of
    /// load to reach its steady rate (Apache 5.3.3 here: 0.7k/s in its first second, 20k/s at
    /// 20 s, 32k/s from about 45 s, `docs/src/apache.md`), so a search on a cold one finds its
    /// JIT, not its capacity. Default: none (no warm-up).
    pub warm_up: Option<Secs>,
    /// Sends in flight during the warm-up. Default: 64.
    pub warm_up_concurrency: u32,
    /// The first probe's rate as this fraction of the warm-up's last window (its closed-loop
    /// rate), in place of `start_rate`: the ramp then starts near the knee of whatever broker it
    /// met instead of at one rate for all (the model's knees near 50k/s took 5 ramp probes from
    /// 4,000/s). Needs `warm_up`; a warm-up that measured nothing starts at `start_rate`.
    /// Default: none.
    pub start_from_warm_up: Option<f64>,
}

/// Each warm-up window: 0.25 s to let the window's fresh connections fill their sends in
/// flight, then 4 s counted. A closed loop is full after one round trip (a window's p99 was
/// 2-20 ms in the whole runs of 7 December); the settle was 1 s until then, 51 of row 1's
/// 256 warm-up seconds in the run of 07:06 spent on nothing counted.
pub const WARM_UP_WINDOW: Secs = Secs(4.25);
/// The warm-up ends at the first window whose rate is within this fraction of the window
/// before it (5%: the last ten seconds of Apache's climb above grew 3-6% a window)...
pub const WARM_UP_STEADY: f64 = 0.05;
/// ... or, when the two windows' seconds spread more than that, within this many standard
/// errors of the difference of their means (from each window's per-second ok rates): the
/// model's closed loop swings 10-30% from one 4-s window to the next with the page cache's
/// writeback (51.9k, 35.0k, 30.8k, 43.5k/s in one cell of 7 December 13:45; a put-lock hold
/// of 40-140 ms in most seconds), so two windows within 5% were a draw of luck and its
/// warm-ups ran 5 to 12 windows. A difference inside its own noise is no climb and no fall.
pub const WARM_UP_NOISE_Z: f64 = 2.0;
/// ... and, for a JVM broker, whose JIT compiled for less than this share of the window
/// (`java.ci.totalTime` from its perf data): a steady rate alone ended Apache's warm-ups on a
/// plateau of its climb (11-13k/s at 15-20 s, before a step to 17-24k/s at 35-45 s; whole run
/// of 7 December 00:49), and those cells' knees came out at half the others'.
pub const WARM_UP_JIT_QUIET: f64 = 0.1;

impl Default for Knee {
    fn default() -> Self {
        Knee {
            start_rate: None,
            growth: 2.0,
            precision: 0.05,
            probe_duration: Secs(5.0),
            settle: Secs(1.0),
            first_settle: None,
            max_rate: 1_000_000.0,
            min_rate: 10.0,
            max_probes: 24,
            fresh_broker_per_probe: false,
            warm_up: None,
            warm_up_concurrency: 64,
            start_from_warm_up: None,
        }
    }
}

impl Knee {
    /// Domain checks; (key, message) of the first problem.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        let pos = |k: &'static str, v: f64| {
            (v.is_finite() && v > 0.0)
                .then_some(())
                .ok_or((k, format!("`{k}` must be > 0 (got {v})")))
        };
        if let Some(s) = self.start_rate {
            pos("start_rate", s)?;
        }
        if !(self.growth.is_finite() && self.growth > 1.0) {
            return Err((
                "growth",
                format!("`growth` must be > 1 (got {})", self.growth),
            ));
        }
        if !(self.precision > 0.0 && self.precision < 1.0) {
            return Err((
                "precision",
                format!(
                    "`precision` must be between 0 and 1, e.g. 0.05 (got {})",
                    self.precision
                ),
            ));
        }
        pos("probe_duration", self.probe_duration.0)?;
        if self.settle.0.is_nan() || self.settle.0 < 0.0 {
            return Err(("settle", "`settle` must be >= 0".into()));
        }
        if let Some(f) = self.first_settle {
            if f.0.is_nan() || f.0 < 0.0 {
                return Err(("first_settle", "`first_settle` must be >= 0".into()));
            }
        }
        if let Some(w) = self.warm_up {
            if !(w.0.is_finite() && w.0 >= 2.0 * WARM_UP_WINDOW.0) {
                return Err((
                    "warm_up",
                    format!(
                        "`warm_up` must be at least {}s: two windows of {}s, the least that can show a steady rate (got {}s)",
                        2.0 * WARM_UP_WINDOW.0,
                        WARM_UP_WINDOW.0,
                        w.0
                    ),
                ));
            }
            if self.fresh_broker_per_probe {
                return Err((
                    "warm_up",
                    "`warm_up` warms the one broker a search keeps; with `fresh_broker_per_probe = true` every probe starts a cold one: drop one of the two".into(),
                ));
            }
        }
        if self.warm_up_concurrency == 0 {
            return Err((
                "warm_up_concurrency",
                "`warm_up_concurrency` must be at least 1".into(),
            ));
        }
        if let Some(f) = self.start_from_warm_up {
            pos("start_from_warm_up", f)?;
            if self.warm_up.is_none() {
                return Err((
                    "start_from_warm_up",
                    "`start_from_warm_up` is a fraction of the warm-up's rate: set `warm_up` too, or use `start_rate`".into(),
                ));
            }
        }
        pos("max_rate", self.max_rate)?;
        pos("min_rate", self.min_rate)?;
        if self.min_rate >= self.max_rate {
            return Err(("min_rate", "`min_rate` must be below `max_rate`".into()));
        }
        if self.max_probes < 3 {
            return Err((
                "max_probes",
                "`max_probes` must be at least 3 (a ramp, a bisection and a confirmation)".into(),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::profile::Profile;
    use std::path::Path;

    fn parse(text: &str) -> Result<Profile, String> {
        Profile::parse(text, "p.toml", Path::new("p.toml"), &[]).map_err(|e| e.to_string())
    }

    #[test]
    fn knee_needs_an_slo_and_sane_settings() {
        let base = "name = \"k\"\n[workload]\nmodel = \"knee\"\nrate = 100\n";
        let err = parse(base).unwrap_err();
        assert!(err.starts_with("p.toml:3:1: model = \"knee\""), "{err}");
        assert!(err.contains("add [slo]"), "{err}");

        let ok = parse(&format!(
            "{base}[knee]\nprecision = 0.1\n[slo]\nterms = [\"p99_ms <= 5\"]\n"
        ))
        .unwrap();
        assert_eq!(ok.knee.precision, 0.1);
        assert_eq!(ok.slo.unwrap().terms[0].text, "p99_ms <= 5");

        let err = parse(&format!(
            "{base}[knee]\ngrowth = 1\n[slo]\nterms = [\"p99_ms <= 5\"]\n"
        ))
        .unwrap_err();
        assert!(err.starts_with("p.toml:6:1: `growth` must be > 1"), "{err}");
        let err = parse(&format!(
            "{base}[slo]\nterms = [\"p99_ms <= 5\", \"p99_ms: regression <= 5%\"]\n"
        ))
        .unwrap_err();
        assert!(err.starts_with("p.toml:6:"), "{err}");
        assert!(err.contains("absolute"), "{err}");
        let err = parse(&format!(
            "{base}[knee]\nwarm_up = \"8s\"\n[slo]\nterms = [\"p99_ms <= 5\"]\n"
        ))
        .unwrap_err();
        assert!(
            err.starts_with("p.toml:6:1: `warm_up` must be at least 8.5s"),
            "{err}"
        );
        let err = parse(&format!(
            "{base}[knee]\nwarm_up = \"60s\"\nfresh_broker_per_probe = true\n[slo]\nterms = [\"p99_ms <= 5\"]\n"
        ))
        .unwrap_err();
        assert!(err.contains("drop one of the two"), "{err}");
        let ok = parse(&format!(
            "{base}[knee]\nwarm_up = \"60s\"\n[slo]\nterms = [\"p99_ms <= 5\"]\n"
        ))
        .unwrap();
        assert_eq!(ok.knee.warm_up, Some(super::Secs(60.0)));
        assert_eq!(ok.knee.warm_up_concurrency, 64);
        let err = parse(&format!(
            "{base}[knee]\nstart_from_warm_up = 0.5\n[slo]\nterms = [\"p99_ms <= 5\"]\n"
        ))
        .unwrap_err();
        assert!(err.contains("set `warm_up` too"), "{err}");
        let err = parse(&format!(
            "{base}[knee]\nwarm_up = \"60s\"\nstart_from_warm_up = 0\n[slo]\nterms = [\"p99_ms <= 5\"]\n"
        ))
        .unwrap_err();
        assert!(err.contains("`start_from_warm_up` must be > 0"), "{err}");
        let err = parse(&format!("{base}[slo]\nterms = []\n")).unwrap_err();
        assert!(
            err.starts_with("p.toml:6:1: [slo] needs at least one term"),
            "{err}"
        );
    }
}
