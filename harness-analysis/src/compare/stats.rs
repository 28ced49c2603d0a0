//! The two tests behind every verdict.
//!
//! * **Mann–Whitney U** on per-repetition values when both sides have ≥ 3 repetitions.
//!   Exact permutation distribution when there are no ties and n₁+n₂ ≤ 40, otherwise the
//!   normal approximation with tie correction and continuity correction. Two-sided.
//!   A rank test assumes nothing about the shape of the distribution, which matters for
//!   latencies on a noisy machine (one slow repetition must not dominate a mean).
//!   With 3 vs 3 repetitions the smallest attainable two-sided p is 2/20 = 0.1, so at
//!   α = 0.05 that test can never decide; the caller then falls back to the bootstrap
//!   below, pooled over repetitions, or says *inconclusive*. 4 vs 4 (p ≥ 0.029) is the
//!   smallest design the U-test can decide at 0.05.
//! * **Moving-block bootstrap** over per-second intervals when a side has fewer than 3
//!   repetitions. Seconds within a run are autocorrelated (a GC pause or a page-cache
//!   stall spans several), so blocks of consecutive seconds are resampled (circularly
//!   within a repetition), each side independently, and the percentile interval of
//!   `stat(candidate*) − stat(base*)` at level 1−α decides: significant when it excludes 0.
//!   Plain percentile intervals were too narrow on short, autocorrelated runs (8–20 %
//!   false positives at α = 0.05 on 20–60 s AR(1) series), so the interval is widened
//!   about the observed difference by a t/z small-sample factor (k = seconds/block
//!   independent blocks) and an AR(1) factor for the autocorrelation a block cannot see.
//!   Measured false-positive rates after that: 0.03–0.07 for ρ ≤ 0.5 and 20–120 s; about
//!   0.1 for ρ = 0.8 (use a longer `--block` for such data).

use fastrand::Rng;

/// Standard normal (Box–Muller), for synthetic test data.
pub fn normal(rng: &mut Rng) -> f64 {
    let u1 = rng.f64().max(f64::MIN_POSITIVE);
    let u2 = rng.f64();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

/// Median of finite values; `None` if there are none.
pub fn median(values: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// Complementary error function (Numerical Recipes `erfcc`, relative error < 1.2e-7).
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let r = t
        * (-z * z - 1.265_512_23
            + t * (1.000_023_68
                + t * (0.374_091_96
                    + t * (0.096_784_18
                        + t * (-0.186_288_06
                            + t * (0.278_868_07
                                + t * (-1.135_203_98
                                    + t * (1.488_515_87
                                        + t * (-0.822_152_23 + t * 0.170_872_77)))))))))
            .exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

/// Two-sided p-value of a standard normal statistic.
fn normal_two_sided(z: f64) -> f64 {
    erfc(z.abs() / std::f64::consts::SQRT_2).min(1.0)
}

/// Result of a Mann–Whitney U test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MannWhitney {
    /// U statistic of the first sample.
    pub u: f64,
    /// Two-sided p-value.
    pub p: f64,
    /// Whether the exact permutation distribution was used.
    pub exact: bool,
    /// Smallest two-sided p this design can produce (perfect separation, no ties).
    pub min_p: f64,
}

fn binomial(n: usize, k: usize) -> f64 {
    let k = k.min(n - k);
    (0..k).fold(1.0, |acc, i| acc * (n - i) as f64 / (i + 1) as f64)
}

/// Number of arrangements giving each U value, for sizes m and n (exact null distribution).
fn exact_counts(m: usize, n: usize) -> Vec<f64> {
    // f[j][u] for the current i: arrangements of i x-values and j y-values with U = u.
    let max_u = m * n;
    let mut prev: Vec<Vec<f64>> = vec![vec![0.0; max_u + 1]; n + 1];
    for row in prev.iter_mut() {
        row[0] = 1.0; // i = 0: U is 0 whatever j is
    }
    for _i in 1..=m {
        let mut cur: Vec<Vec<f64>> = vec![vec![0.0; max_u + 1]; n + 1];
        cur[0][0] = 1.0;
        for j in 1..=n {
            for u in 0..=max_u {
                // The largest element is either an x (beats all j y's: U += j) or a y.
                let from_x = if u >= j { prev[j][u - j] } else { 0.0 };
                cur[j][u] = from_x + cur[j - 1][u];
            }
        }
        prev = cur;
    }
    prev.swap_remove(n)
}

/// Two-sided Mann–Whitney U test of `a` against `b`. `None` if either side is empty.
pub fn mann_whitney(a: &[f64], b: &[f64]) -> Option<MannWhitney> {
    let (m, n) = (a.len(), b.len());
    if m == 0 || n == 0 {
        return None;
    }
    let mut all: Vec<(f64, bool)> = a
        .iter()
        .map(|&x| (x, true))
        .chain(b.iter().map(|&y| (y, false)))
        .collect();
    all.sort_by(|x, y| x.0.total_cmp(&y.0));
    let total = all.len();
    let mut rank_sum_a = 0.0;
    let mut tie_term = 0.0;
    let mut i = 0;
    while i < total {
        let mut j = i;
        while j + 1 < total && all[j + 1].0 == all[i].0 {
            j += 1;
        }
        let avg_rank = (i + j) as f64 / 2.0 + 1.0;
        let t = (j - i + 1) as f64;
        tie_term += t * t * t - t;
        for item in &all[i..=j] {
            if item.1 {
                rank_sum_a += avg_rank;
            }
        }
        i = j + 1;
    }
    let (mf, nf, nt) = (m as f64, n as f64, total as f64);
    let u = rank_sum_a - mf * (mf + 1.0) / 2.0;
    let min_p = (2.0 / binomial(m + n, m)).min(1.0);
    if tie_term == 0.0 && m + n <= 40 {
        let counts = exact_counts(m, n);
        let all_arr: f64 = counts.iter().sum();
        let ui = u.round() as usize;
        let lower: f64 = counts[..=ui].iter().sum::<f64>() / all_arr;
        let upper: f64 = counts[ui..].iter().sum::<f64>() / all_arr;
        let p = (2.0 * lower.min(upper)).min(1.0);
        return Some(MannWhitney {
            u,
            p,
            exact: true,
            min_p,
        });
    }
    let mu = mf * nf / 2.0;
    let var = mf * nf / 12.0 * ((nt + 1.0) - tie_term / (nt * (nt - 1.0)));
    let p = if var <= 0.0 {
        1.0
    } else {
        let z = ((u - mu).abs() - 0.5).max(0.0) / var.sqrt();
        normal_two_sided(z)
    };
    Some(MannWhitney {
        u,
        p,
        exact: false,
        min_p,
    })
}

/// Percentile confidence interval of a bootstrapped difference.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BootstrapCi {
    pub lo: f64,
    pub hi: f64,
    /// Resamples whose statistic was defined on both sides.
    pub used: usize,
}

impl BootstrapCi {
    pub fn excludes_zero(&self) -> bool {
        self.lo > 0.0 || self.hi < 0.0
    }
}

/// Start positions of moving blocks over several repetitions of one cell (blocks never
/// straddle two repetitions), computed once and reused for every resample.
struct Blocks<'s, 'a, T> {
    series: &'s [&'a [T]],
    starts: Vec<(usize, usize)>,
    total: usize,
    block: usize,
}

impl<'s, 'a, T> Blocks<'s, 'a, T> {
    fn new(series: &'s [&'a [T]], block: usize) -> Self {
        let block = block.max(1);
        let starts = series
            .iter()
            .enumerate()
            // Circular: a block may start at any second and wrap to the start of its own
            // repetition, so every second is drawn equally often (the plain moving-block
            // bootstrap under-samples both ends and under-estimates the variance).
            .flat_map(|(r, s)| (0..s.len()).map(move |st| (r, st)))
            .filter(|&(r, _)| !series[r].is_empty())
            .collect();
        Blocks {
            series,
            starts,
            total: series.iter().map(|s| s.len()).sum(),
            block,
        }
    }

    /// Refill `out` with one resample (reusing its allocation across resamples).
    fn resample_into(&self, rng: &mut Rng, out: &mut Vec<&'a T>) {
        out.clear();
        if self.starts.is_empty() {
            return;
        }
        while out.len() < self.total {
            let (r, st) = self.starts[rng.usize(..self.starts.len())];
            let s = self.series[r];
            let take = self.block.min(s.len()).min(self.total - out.len());
            out.extend((st..st + take).map(|i| &s[i % s.len()]));
        }
    }
}

/// Draw one moving-block resample of the same total length from `series` (several
/// repetitions of one cell; blocks never straddle two repetitions).
pub fn block_resample<'a, T>(series: &[&'a [T]], block: usize, rng: &mut Rng) -> Vec<&'a T> {
    let mut out = Vec::new();
    Blocks::new(series, block).resample_into(rng, &mut out);
    out
}

/// A statistic of (resampled) per-second inputs; `None` where undefined.
pub type Statistic<'a> = dyn Fn(&[&(f64, f64)]) -> Option<f64> + 'a;

/// Moving-block bootstrap CI at level `1 - alpha` of `stat(cand) - stat(base)`.
/// `None` if the statistic is undefined on the original data.
pub fn block_bootstrap_diff(
    base: &[&[(f64, f64)]],
    cand: &[&[(f64, f64)]],
    stat: &Statistic<'_>,
    block: usize,
    resamples: usize,
    seed: u64,
    alpha: f64,
) -> Option<BootstrapCi> {
    let flat_base: Vec<&(f64, f64)> = base.iter().flat_map(|x| x.iter()).collect();
    let flat_cand: Vec<&(f64, f64)> = cand.iter().flat_map(|x| x.iter()).collect();
    stat(&flat_base)?;
    stat(&flat_cand)?;
    let mut rng = Rng::with_seed(seed);
    let mut diffs = Vec::with_capacity(resamples);
    let (base_blocks, cand_blocks) = (Blocks::new(base, block), Blocks::new(cand, block));
    let (mut b, mut c) = (Vec::new(), Vec::new());
    for _ in 0..resamples {
        base_blocks.resample_into(&mut rng, &mut b);
        cand_blocks.resample_into(&mut rng, &mut c);
        if let (Some(sb), Some(sc)) = (stat(&b), stat(&c)) {
            let d = sc - sb;
            if d.is_finite() {
                diffs.push(d);
            }
        }
    }
    if diffs.len() < resamples / 2 || diffs.is_empty() {
        return None;
    }
    diffs.sort_by(f64::total_cmp);
    let q = |p: f64| {
        let pos = p * (diffs.len() - 1) as f64;
        let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
        diffs[lo] + (diffs[hi] - diffs[lo]) * (pos - lo as f64)
    };
    // Small-sample correction. A run of n seconds holds only k = n/block roughly independent
    // blocks, and the percentile interval behaves like a z-interval with the variance
    // under-estimated by (k-1)/k: with k = 4..12 it rejected a true null 8-20% of the
    // time at alpha = 0.05. Widen it about the observed difference by
    // t(1-alpha/2, k_base+k_cand-2) / z(1-alpha/2) * sqrt(k/(k-1)), as a batch-means
    // t-test would; tests/compare_stats.rs checks the resulting false-positive rate.
    let k = |s: &[&[(f64, f64)]]| (s.iter().map(|x| x.len()).sum::<usize>() / block.max(1)).max(1);
    let (kb, kc) = (k(base), k(cand));
    let kmin = kb.min(kc) as f64;
    if kmin < 2.0 {
        return None;
    }
    let df = (kb + kc - 2) as f64;
    let widen = t_quantile(1.0 - alpha / 2.0, df) / normal_quantile(1.0 - alpha / 2.0)
        * (kmin / (kmin - 1.0)).sqrt()
        * ar1_block_correction(&[base, cand].concat(), block);
    let centre = stat(&flat_cand)? - stat(&flat_base)?;
    let (lo, hi) = (q(alpha / 2.0), q(1.0 - alpha / 2.0));
    Some(BootstrapCi {
        lo: centre - (centre - lo).max(0.0) * widen,
        hi: centre + (hi - centre).max(0.0) * widen,
        used: diffs.len(),
    })
}

/// Lag-1 autocorrelation of the first component, pooled over repetitions (each centred on
/// its own mean); `None` with fewer than 3 seconds in total.
pub fn lag1_autocorrelation(series: &[&[(f64, f64)]]) -> Option<f64> {
    let (mut num, mut den, mut n) = (0.0, 0.0, 0usize);
    for s in series {
        if s.len() < 2 {
            continue;
        }
        let mean = s.iter().map(|p| p.0).sum::<f64>() / s.len() as f64;
        for w in s.windows(2) {
            num += (w[0].0 - mean) * (w[1].0 - mean);
        }
        den += s.iter().map(|p| (p.0 - mean).powi(2)).sum::<f64>();
        n += s.len();
    }
    (n >= 3 && den > 0.0).then(|| num / den)
}

/// How much a block bootstrap with blocks of `block` seconds under-states the spread of a
/// mean when seconds follow an AR(1) process with the observed lag-1 autocorrelation ρ:
/// the bootstrap sees the autocovariances with Bartlett weights (1 − k/l) only, while the
/// long-run variance is (1+ρ)/(1−ρ). Returns sqrt of their ratio (>= 1). With ρ = 0.5 and
/// 5-s blocks this is 1.16; without it 9% of true nulls were rejected at alpha = 0.05.
pub fn ar1_block_correction(series: &[&[(f64, f64)]], block: usize) -> f64 {
    let Some(rho) = lag1_autocorrelation(series) else {
        return 1.0;
    };
    // Short series under-estimate rho; negative values would only narrow the interval.
    let rho = rho.clamp(0.0, 0.95);
    let long_run = (1.0 + rho) / (1.0 - rho);
    let l = block.max(1);
    let seen: f64 = 1.0
        + 2.0
            * (1..l)
                .map(|k| (1.0 - k as f64 / l as f64) * rho.powi(k as i32))
                .sum::<f64>();
    (long_run / seen).sqrt().max(1.0)
}

/// Standard normal quantile (Acklam's rational approximation, relative error < 1.2e-9).
pub fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    let p = p.clamp(1e-300, 1.0 - 1e-16);
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < 0.02425 {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - 0.02425 {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

/// Student t quantile: exact for 1 and 2 degrees of freedom, otherwise the Cornish–Fisher
/// expansion (error < 0.5% for df >= 3 at the levels we use).
pub fn t_quantile(p: f64, df: f64) -> f64 {
    if df < 1.5 {
        return (std::f64::consts::PI * (p - 0.5)).tan();
    }
    if df < 2.5 {
        return (2.0 * p - 1.0) / (2.0 * p * (1.0 - p)).sqrt();
    }
    let z = normal_quantile(p);
    let (z3, z5, z7) = (z.powi(3), z.powi(5), z.powi(7));
    z + (z3 + z) / (4.0 * df)
        + (5.0 * z5 + 16.0 * z3 + 3.0 * z) / (96.0 * df * df)
        + (3.0 * z7 + 19.0 * z5 + 17.0 * z3 - 15.0 * z) / (384.0 * df.powi(3))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_mwu_known_values() {
        // Perfect separation 3 vs 3: P = 2/20.
        let r = mann_whitney(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]).unwrap();
        assert!(r.exact);
        assert_eq!(r.u, 0.0);
        assert!((r.p - 0.1).abs() < 1e-12);
        assert!((r.min_p - 0.1).abs() < 1e-12);
        // 4 vs 4 separated: 2/70.
        let r = mann_whitney(&[1.0, 2.0, 3.0, 4.0], &[5.0, 6.0, 7.0, 8.0]).unwrap();
        assert!((r.p - 2.0 / 70.0).abs() < 1e-12);
        // Interleaved: p = 1 at the centre.
        let r = mann_whitney(&[1.0, 4.0, 5.0, 8.0], &[2.0, 3.0, 6.0, 7.0]).unwrap();
        assert!(r.p > 0.9, "{r:?}");
    }

    #[test]
    fn normal_mwu_with_ties() {
        // All equal: no evidence at all.
        let r = mann_whitney(&[1.0; 5], &[1.0; 5]).unwrap();
        assert!(!r.exact);
        assert_eq!(r.p, 1.0);
        // U = 4.5, tie-corrected σ² = 36/12·(13 − 18/132), z = (13.5 − 0.5)/σ = 2.1001,
        // p = erfc(z/√2) = 0.035720 (same as scipy's asymptotic method with continuity).
        let r = mann_whitney(
            &[1.0, 2.0, 2.0, 3.0, 4.0, 5.0],
            &[3.0, 4.0, 5.0, 6.0, 6.0, 7.0],
        )
        .unwrap();
        assert_eq!(r.u, 4.5);
        assert!((r.p - 0.035720).abs() < 1e-5, "{r:?}");
    }

    #[test]
    fn ar1_correction_known_values() {
        // Alternating series: negative rho, no widening.
        let alt: Vec<(f64, f64)> = (0..40).map(|i| ((i % 2) as f64, 0.0)).collect();
        assert!(lag1_autocorrelation(&[&alt]).unwrap() < -0.9);
        assert_eq!(ar1_block_correction(&[&alt], 5), 1.0);
        // A slow ramp: rho near 1, clamped to 0.95.
        let ramp: Vec<(f64, f64)> = (0..40).map(|i| (i as f64, 0.0)).collect();
        let c = ar1_block_correction(&[&ramp], 5);
        assert!(c > 2.0 && c.is_finite(), "{c}");
        // Block length 1 sees no autocovariance at all: the full long-run factor.
        let mut rng = Rng::with_seed(1);
        let mut ar = 0.0;
        let s: Vec<(f64, f64)> = (0..5000)
            .map(|_| {
                ar = 0.5 * ar + normal(&mut rng);
                (ar, 0.0)
            })
            .collect();
        let rho = lag1_autocorrelation(&[&s]).unwrap();
        assert!((rho - 0.5).abs() < 0.05, "{rho}");
        assert!((ar1_block_correction(&[&s], 1) - 3f64.sqrt()).abs() < 0.15);
    }

    #[test]
    fn quantiles_match_tables() {
        assert!((normal_quantile(0.975) - 1.959_964).abs() < 1e-6);
        assert!((normal_quantile(0.5)).abs() < 1e-12);
        assert!((normal_quantile(0.001) + 3.090_232).abs() < 1e-5);
        // Student t, 97.5%: df 1, 2, 3, 6, 10, 22, 120.
        for (df, t) in [
            (1.0, 12.706),
            (2.0, 4.303),
            (3.0, 3.182),
            (6.0, 2.447),
            (10.0, 2.228),
            (22.0, 2.074),
            (120.0, 1.980),
        ] {
            let got = t_quantile(0.975, df);
            assert!((got - t).abs() / t < 0.01, "df {df}: {got} vs {t}");
        }
    }

    #[test]
    fn erfc_matches_known_points() {
        assert!((normal_two_sided(1.959_964) - 0.05).abs() < 1e-6);
        assert!((normal_two_sided(0.0) - 1.0).abs() < 1e-6);
    }

    #[test]
    fn block_resample_keeps_length_and_blocks() {
        let a: Vec<u32> = (0..23).collect();
        let b: Vec<u32> = (100..110).collect();
        let mut rng = Rng::with_seed(7);
        let r = block_resample(&[&a[..], &b[..]], 5, &mut rng);
        assert_eq!(r.len(), 33);
        // Within a block, values are consecutive.
        let consecutive = r.windows(2).filter(|w| *w[1] == *w[0] + 1).count();
        assert!(consecutive >= 33 * 3 / 5, "{consecutive}");
    }
}
