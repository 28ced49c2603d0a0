//! The two tests behind every verdict.
//!
//! * **Mann–Whitney U** on per-repetition values when both sides have ≥ 3 repetitions.
//!   Exact permutation distribution when there are no ties and n₁+n₂ ≤ 40, otherwise the
//!   normal approximation with tie correction and continuity correction. Two-sided.
//!   A rank test assumes nothing about the shape of the distribution, which matters for
//!   latencies on a noisy machine (one slow repetition must not dominate a mean).
//!   With 3 vs 3 repetitions the smallest attainable two-sided p is 2/20 = 0.1, so at
//!   α = 0.05 such a test can never decide: we then say *inconclusive* rather than
//!   "no change". 4 vs 4 (p ≥ 0.029) is the smallest design that can decide at 0.05.
//! * **Moving-block bootstrap** over per-second intervals when a side has fewer than 3
//!   repetitions. Seconds within a run are autocorrelated (a GC pause or a page-cache
//!   stall spans several), so whole blocks of consecutive seconds are resampled, each side
//!   independently, and the percentile interval of `stat(candidate*) − stat(base*)` at
//!   level 1−α decides: significant when it excludes 0.

/// SplitMix64: tiny, seedable and good enough to drive resampling reproducibly.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (n > 0); the modulo bias is < 2⁻⁴⁰ for our n.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Standard normal (Box–Muller), for synthetic test data.
    pub fn normal(&mut self) -> f64 {
        let u1 = self.unit().max(f64::MIN_POSITIVE);
        let u2 = self.unit();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }
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
            .flat_map(|(r, s)| {
                let b = block.min(s.len()).max(1);
                (0..=s.len().saturating_sub(b)).map(move |st| (r, st))
            })
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
            let (r, st) = self.starts[rng.below(self.starts.len())];
            let s = self.series[r];
            let end = (st + self.block).min(s.len());
            let take = (end - st).min(self.total - out.len());
            out.extend(s[st..st + take].iter());
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

/// Moving-block bootstrap CI at level `1 - alpha` of `stat(cand) - stat(base)`.
/// `None` if the statistic is undefined on the original data.
pub fn block_bootstrap_diff<T>(
    base: &[&[T]],
    cand: &[&[T]],
    stat: &dyn Fn(&[&T]) -> Option<f64>,
    block: usize,
    resamples: usize,
    seed: u64,
    alpha: f64,
) -> Option<BootstrapCi> {
    let flat_base: Vec<&T> = base.iter().flat_map(|x| x.iter()).collect();
    let flat_cand: Vec<&T> = cand.iter().flat_map(|x| x.iter()).collect();
    stat(&flat_base)?;
    stat(&flat_cand)?;
    let mut rng = Rng::new(seed);
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
    Some(BootstrapCi {
        lo: q(alpha / 2.0),
        hi: q(1.0 - alpha / 2.0),
        used: diffs.len(),
    })
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
    fn erfc_matches_known_points() {
        assert!((normal_two_sided(1.959_964) - 0.05).abs() < 1e-6);
        assert!((normal_two_sided(0.0) - 1.0).abs() < 1e-6);
    }

    #[test]
    fn block_resample_keeps_length_and_blocks() {
        let a: Vec<u32> = (0..23).collect();
        let b: Vec<u32> = (100..110).collect();
        let mut rng = Rng::new(7);
        let r = block_resample(&[&a[..], &b[..]], 5, &mut rng);
        assert_eq!(r.len(), 33);
        // Within a block, values are consecutive.
        let consecutive = r.windows(2).filter(|w| *w[1] == *w[0] + 1).count();
        assert!(consecutive >= 33 * 3 / 5, "{consecutive}");
    }
}
