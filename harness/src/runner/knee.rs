//! The knee search of `model = "knee"`: the highest offered rate that meets the SLO, found
//! with as few probes as a noisy, slow measurement allows. Pure: it proposes rates and is told
//! whether each probe met the SLO (`runner::knee_job` runs the probes).
//!
//! 1. Ramp: `start`, `start·g`, `start·g²`, … until the first failure (or `max_rate`). If
//!    `start` itself fails, the ramp goes down (`start/g`, …) until a pass (or `min_rate`).
//! 2. Bisect the last pass `lo` and the first failure `hi` at their geometric mean until
//!    `hi ≤ lo·(1 + precision)`. Each step halves `ln(hi/lo)`, so this takes
//!    [`bisection_steps`] probes. The true capacity `C` stays in `[lo, hi)`, hence
//!    `(C − lo)/C < precision`.
//! 3. Confirm: probe `lo` once more. A pass ends the search with `knee = lo`. A failure says
//!    the earlier pass was luck: `lo` becomes the new `hi` and the search bisects again below
//!    it (or ramps down), within `max_probes`.
//!
//! Against a broker with a sharp capacity `C ≥ start` the search costs
//! `⌊log_g(C/start)⌋ + 2` ramp probes, [`bisection_steps`] and one confirmation.

/// What the search needs to know.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SearchParams {
    pub start: f64,
    pub growth: f64,
    pub precision: f64,
    pub min_rate: f64,
    pub max_rate: f64,
    pub max_probes: u32,
}

impl SearchParams {
    pub fn from_profile(k: &harness_model::profile::Knee, workload_rate: f64) -> SearchParams {
        SearchParams {
            start: k.start_rate.unwrap_or(workload_rate),
            growth: k.growth,
            precision: k.precision,
            min_rate: k.min_rate,
            max_rate: k.max_rate,
            max_probes: k.max_probes,
        }
    }
}

/// Bisection probes needed to shrink a ratio of `growth` to `1 + precision`.
pub fn bisection_steps(growth: f64, precision: f64) -> u32 {
    let halvings = (growth.ln() / precision.ln_1p()).log2().ceil();
    halvings.max(0.0) as u32
}

/// How a search ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum KneeOutcome {
    /// `rate` met the SLO (twice when `confirmed`); the next failing probe was within
    /// `precision` above it.
    Knee { rate: f64, confirmed: bool },
    /// Even `max_rate` met the SLO: the knee is above it.
    AboveMax { rate: f64 },
    /// Nothing down to `min_rate` met the SLO.
    BelowMin,
}

impl KneeOutcome {
    /// The `knee_rate` column: the highest rate shown to meet the SLO.
    pub fn rate(&self) -> Option<f64> {
        match *self {
            KneeOutcome::Knee { rate, .. } | KneeOutcome::AboveMax { rate } => Some(rate),
            KneeOutcome::BelowMin => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Stage {
    Up,
    Down,
    Bisect,
    Confirm,
    Done(KneeOutcome),
}

/// The search state: propose with [`KneeSearch::next_rate`], answer with [`KneeSearch::record`].
#[derive(Debug, Clone)]
pub struct KneeSearch {
    p: SearchParams,
    stage: Stage,
    next: f64,
    lo: Option<f64>,
    hi: Option<f64>,
    /// Every probe so far: (rate, met the SLO).
    pub probes: Vec<(f64, bool)>,
}

impl KneeSearch {
    pub fn new(p: SearchParams) -> KneeSearch {
        KneeSearch {
            p,
            stage: Stage::Up,
            next: p.start.clamp(p.min_rate, p.max_rate),
            lo: None,
            hi: None,
            probes: Vec::new(),
        }
    }

    /// The rate of the next probe, or None once the search is over.
    pub fn next_rate(&self) -> Option<f64> {
        (!matches!(self.stage, Stage::Done(_))).then_some(self.next)
    }

    /// The result, once [`KneeSearch::next_rate`] is None.
    pub fn outcome(&self) -> Option<KneeOutcome> {
        match self.stage {
            Stage::Done(o) => Some(o),
            _ => None,
        }
    }

    /// The lowest failing rate above the knee: the probe whose failing term is reported.
    pub fn first_failure_above(&self, knee: f64) -> Option<usize> {
        self.probes
            .iter()
            .enumerate()
            .filter(|(_, &(r, met))| !met && r > knee)
            .min_by(|a, b| a.1 .0.total_cmp(&b.1 .0))
            .map(|(i, _)| i)
    }

    /// Records whether the probe at [`KneeSearch::next_rate`] met the SLO.
    pub fn record(&mut self, met: bool) {
        let Some(r) = self.next_rate() else { return };
        self.probes.push((r, met));
        self.stage = match (self.stage, met) {
            (Stage::Up, true) => {
                self.lo = Some(r);
                if r >= self.p.max_rate {
                    Stage::Done(KneeOutcome::AboveMax { rate: r })
                } else {
                    self.next = (r * self.p.growth).min(self.p.max_rate);
                    Stage::Up
                }
            }
            (Stage::Up | Stage::Down, false) if self.lo.is_none() => {
                self.hi = Some(r);
                self.down_from(r)
            }
            (Stage::Up, false) => {
                self.hi = Some(r);
                self.narrow()
            }
            (Stage::Down, true) => {
                self.lo = Some(r);
                self.narrow()
            }
            (Stage::Bisect, m) => {
                if m {
                    self.lo = Some(r);
                } else {
                    self.hi = Some(r);
                }
                self.narrow()
            }
            (Stage::Confirm, true) => Stage::Done(KneeOutcome::Knee {
                rate: r,
                confirmed: true,
            }),
            (Stage::Confirm, false) => {
                // The earlier pass at r was luck: search again below it.
                self.hi = Some(r);
                self.lo = self
                    .probes
                    .iter()
                    .filter(|&&(x, met)| met && x < r)
                    .map(|&(x, _)| x)
                    .reduce(f64::max);
                match self.lo {
                    Some(_) => self.narrow(),
                    None => self.down_from(r),
                }
            }
            (Stage::Down, false) | (Stage::Done(_), _) => unreachable!("handled above"),
        };
        if self.next_rate().is_some() && self.probes.len() as u32 >= self.p.max_probes {
            self.stage = Stage::Done(match self.lo {
                Some(rate) => KneeOutcome::Knee {
                    rate,
                    confirmed: false,
                },
                None => KneeOutcome::BelowMin,
            });
        }
    }

    fn down_from(&mut self, failed: f64) -> Stage {
        if failed <= self.p.min_rate {
            return Stage::Done(KneeOutcome::BelowMin);
        }
        self.next = (failed / self.p.growth).max(self.p.min_rate);
        Stage::Down
    }

    /// Bisect while `hi/lo > 1 + precision`, then confirm `lo`.
    fn narrow(&mut self) -> Stage {
        let (lo, hi) = (
            self.lo.unwrap_or(self.p.min_rate),
            self.hi.unwrap_or(self.p.max_rate),
        );
        if hi <= lo * (1.0 + self.p.precision) {
            self.next = lo;
            Stage::Confirm
        } else {
            self.next = (lo * hi).sqrt();
            Stage::Bisect
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(start: f64) -> SearchParams {
        SearchParams {
            start,
            growth: 2.0,
            precision: 0.05,
            min_rate: 10.0,
            max_rate: 1_000_000.0,
            max_probes: 40,
        }
    }

    /// Runs the search against a fake broker; `met(rate, probe index)`.
    fn search(p: SearchParams, mut met: impl FnMut(f64, usize) -> bool) -> KneeSearch {
        let mut s = KneeSearch::new(p);
        while let Some(r) = s.next_rate() {
            let i = s.probes.len();
            s.record(met(r, i));
            assert!(s.probes.len() <= 100, "the search must end");
        }
        s
    }

    #[test]
    fn a_sharp_capacity_is_found_within_precision_in_the_promised_probes() {
        let p = params(1000.0);
        let bisect = bisection_steps(p.growth, p.precision);
        assert_eq!(bisect, 4, "ln 2 / ln 1.05 = 14.2 → 4 halvings");
        for capacity in [
            1000.0, 1234.5, 1999.0, 2000.0, 2001.0, 5555.0, 7000.0, 63_999.0, 100_000.0,
        ] {
            let s = search(p, |r, _| r <= capacity);
            let Some(KneeOutcome::Knee { rate, confirmed }) = s.outcome() else {
                panic!("capacity {capacity}: {:?}", s.outcome())
            };
            assert!(confirmed);
            assert!(
                rate <= capacity,
                "never above the capacity: {rate} > {capacity}"
            );
            assert!(
                (capacity - rate) / capacity < p.precision,
                "capacity {capacity}: knee {rate} not within 5%"
            );
            let ramp = (capacity / p.start).log(p.growth).floor() as usize + 2;
            let promised = ramp + bisect as usize + 1;
            assert!(
                s.probes.len() <= promised,
                "capacity {capacity}: {} probes > promised {promised}: {:?}",
                s.probes.len(),
                s.probes
            );
            // The probe reported as "failed first above the knee" really is above it.
            let above = s.first_failure_above(rate).unwrap();
            assert!(s.probes[above].0 > rate && !s.probes[above].1);
        }
    }

    #[test]
    fn a_failing_start_ramps_down() {
        let s = search(params(8000.0), |r, _| r <= 700.0);
        let rate = s.outcome().unwrap().rate().unwrap();
        assert!(rate <= 700.0 && (700.0 - rate) / 700.0 < 0.05, "{rate}");
        assert_eq!(
            s.probes[..5].iter().map(|p| p.0).collect::<Vec<_>>(),
            [8000.0, 4000.0, 2000.0, 1000.0, 500.0]
        );
    }

    #[test]
    fn ceilings_floors_and_the_probe_budget() {
        let mut p = params(1000.0);
        p.max_rate = 3000.0;
        let s = search(p, |_, _| true);
        assert_eq!(s.outcome(), Some(KneeOutcome::AboveMax { rate: 3000.0 }));
        assert_eq!(s.probes.len(), 3, "1000, 2000, 3000");

        let s = search(params(1000.0), |_, _| false);
        assert_eq!(s.outcome(), Some(KneeOutcome::BelowMin));
        assert_eq!(s.probes.last().unwrap().0, 10.0);

        let mut p = params(1000.0);
        p.max_probes = 5;
        let s = search(p, |r, _| r <= 5000.0);
        assert_eq!(s.probes.len(), 5);
        assert_eq!(
            s.outcome(),
            Some(KneeOutcome::Knee {
                rate: 4000.0,
                confirmed: false
            })
        );
    }

    #[test]
    fn a_lucky_pass_is_caught_by_the_confirmation() {
        // Capacity 3000, but the probe at ≈3363 passes once by luck.
        let mut lucky = true;
        let s = search(params(1000.0), |r, _| {
            if r > 3300.0 && r < 3400.0 && lucky {
                lucky = false;
                return true;
            }
            r <= 3000.0
        });
        let rate = s.outcome().unwrap().rate().unwrap();
        assert!(
            rate <= 3000.0 && (3000.0 - rate) / 3000.0 < 0.05,
            "{rate}: {:?}",
            s.probes
        );
        assert!(matches!(
            s.outcome(),
            Some(KneeOutcome::Knee {
                confirmed: true,
                ..
            })
        ));
    }
}
