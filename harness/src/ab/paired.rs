//! Paired statistics on the rounds of an A/B run: the Wilcoxon signed-rank test, the
//! Hodges–Lehmann estimate of the shift, and a bootstrap interval of the median difference.
//!
//! Why paired: both sides of a round ran back to back on the same machine, so what the machine
//! did in that minute (another job, a thermal step, the page cache) is in both values and
//! cancels in their difference. The signed-rank test needs no normality (only a difference
//! distribution symmetric under "no change"), which suits per-round figures with heavy tails.
//!
//! Exactness: up to [`EXACT_MAX`] differences the p-value comes from the exact permutation
//! distribution of the signs (each of the 2^n sign patterns equally likely under the null),
//! computed on doubled midranks so that ties stay exact; beyond that, from the normal
//! approximation (statrs) with the variance of the midranks.

use statrs::distribution::{ContinuousCDF, Normal};

/// Largest number of differences for which the exact distribution is computed (its table has
/// n(n+1) + 1 entries; 2^n still fits an f64 exactly enough for a probability).
pub const EXACT_MAX: usize = 60;

/// The signed-rank test of paired differences `d` (zeros dropped).
#[derive(Debug, Clone, PartialEq)]
pub struct SignedRank {
    /// Non-zero differences used.
    pub n: usize,
    /// Sum of the (mid)ranks of |d| over the positive differences.
    pub w_plus: f64,
    /// One-sided p-value for "the differences tend to be positive": P(W+ >= observed).
    pub p_greater: f64,
    /// One-sided p-value for "the differences tend to be negative": P(W+ <= observed).
    pub p_less: f64,
    /// The smallest one-sided p-value `n` differences can give (all of one sign): 2^-n.
    /// A test whose `min_p` is not below alpha cannot decide, whatever the data.
    pub min_p: f64,
    /// Whether the exact distribution was used (else the normal approximation).
    pub exact: bool,
}

/// Midranks (1-based) of `|x|`, ties sharing the mean of their positions.
fn midranks(abs: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..abs.len()).collect();
    order.sort_by(|&a, &b| abs[a].total_cmp(&abs[b]));
    let mut ranks = vec![0.0; abs.len()];
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && abs[order[j + 1]] == abs[order[i]] {
            j += 1;
        }
        let rank = (i + j) as f64 / 2.0 + 1.0;
        for &k in &order[i..=j] {
            ranks[k] = rank;
        }
        i = j + 1;
    }
    ranks
}

/// Counts of each doubled rank sum over the 2^n sign patterns: `counts[s]` patterns give a
/// positive-rank sum of s/2.
fn sign_pattern_counts(doubled: &[usize]) -> Vec<f64> {
    let total: usize = doubled.iter().sum();
    let mut counts = vec![0.0; total + 1];
    counts[0] = 1.0;
    let mut reach = 0;
    for &r in doubled {
        for s in (0..=reach).rev() {
            if counts[s] != 0.0 {
                counts[s + r] += counts[s];
            }
        }
        reach += r;
    }
    counts
}

/// The Wilcoxon signed-rank test; None when every difference is zero (or not finite).
pub fn signed_rank(d: &[f64]) -> Option<SignedRank> {
    let d: Vec<f64> = d
        .iter()
        .copied()
        .filter(|x| x.is_finite() && *x != 0.0)
        .collect();
    let n = d.len();
    if n == 0 {
        return None;
    }
    let abs: Vec<f64> = d.iter().map(|x| x.abs()).collect();
    let ranks = midranks(&abs);
    let w_plus: f64 = d
        .iter()
        .zip(&ranks)
        .filter(|(x, _)| **x > 0.0)
        .map(|(_, r)| r)
        .sum();
    let min_p = 0.5f64.powi(n as i32);
    if n <= EXACT_MAX {
        // Doubled midranks are integers, so the distribution has one entry per half rank.
        let doubled: Vec<usize> = ranks.iter().map(|r| (r * 2.0).round() as usize).collect();
        let counts = sign_pattern_counts(&doubled);
        let all: f64 = counts.iter().sum();
        let w2 = (w_plus * 2.0).round() as usize;
        let p_greater = counts[w2..].iter().sum::<f64>() / all;
        let p_less = counts[..=w2].iter().sum::<f64>() / all;
        return Some(SignedRank {
            n,
            w_plus,
            p_greater: p_greater.min(1.0),
            p_less: p_less.min(1.0),
            min_p,
            exact: true,
        });
    }
    let mean = ranks.iter().sum::<f64>() / 2.0;
    let sd = (ranks.iter().map(|r| r * r).sum::<f64>() / 4.0).sqrt();
    let normal = Normal::new(0.0, 1.0).expect("the standard normal exists");
    // Continuity correction of half a step of W+ (a quarter with tied half ranks).
    let cc = if ranks.iter().any(|r| r.fract() != 0.0) {
        0.25
    } else {
        0.5
    };
    Some(SignedRank {
        n,
        w_plus,
        p_greater: normal.sf((w_plus - mean - cc) / sd),
        p_less: normal.cdf((w_plus - mean + cc) / sd),
        min_p,
        exact: false,
    })
}

/// Median of a sample; None when empty.
pub fn median(x: &[f64]) -> Option<f64> {
    if x.is_empty() {
        return None;
    }
    let mut v = x.to_vec();
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    })
}

/// Hodges–Lehmann estimate of the shift: the median of the Walsh averages (d_i + d_j) / 2,
/// i <= j. The estimate that goes with the signed-rank test: robust to one wild round.
pub fn hodges_lehmann(d: &[f64]) -> Option<f64> {
    let mut walsh = Vec::with_capacity(d.len() * (d.len() + 1) / 2);
    for i in 0..d.len() {
        for j in i..d.len() {
            walsh.push((d[i] + d[j]) / 2.0);
        }
    }
    median(&walsh)
}

/// Percentile bootstrap interval (two-sided, `level` e.g. 0.95) of the median of `d`,
/// resampling whole rounds; reproducible from `seed`. None with fewer than 2 differences.
pub fn bootstrap_median_ci(
    d: &[f64],
    resamples: usize,
    level: f64,
    seed: u64,
) -> Option<(f64, f64)> {
    if d.len() < 2 || resamples == 0 {
        return None;
    }
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut stats = Vec::with_capacity(resamples);
    let mut sample = vec![0.0; d.len()];
    for _ in 0..resamples {
        for s in sample.iter_mut() {
            *s = d[rng.usize(..d.len())];
        }
        stats.push(median(&sample)?);
    }
    stats.sort_by(f64::total_cmp);
    let tail = (1.0 - level) / 2.0;
    let at = |q: f64| stats[((q * (resamples - 1) as f64).round() as usize).min(resamples - 1)];
    Some((at(tail), at(1.0 - tail)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Standard normal draws by inversion (statrs), from a seeded uniform.
    fn normals(rng: &mut fastrand::Rng, n: usize) -> Vec<f64> {
        let z = Normal::new(0.0, 1.0).unwrap();
        (0..n)
            .map(|_| z.inverse_cdf(rng.f64().clamp(1e-12, 1.0 - 1e-12)))
            .collect()
    }

    #[test]
    fn null_distribution_of_four_ranks_is_the_textbook_one() {
        // W+ for n = 4 takes 0..=10 with counts 1,1,1,2,2,2,2,2,1,1,1 (16 sign patterns).
        let counts = sign_pattern_counts(&[2, 4, 6, 8]);
        let at_whole_ranks: Vec<f64> = counts.iter().step_by(2).copied().collect();
        assert_eq!(
            at_whole_ranks,
            [1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 2.0, 2.0, 1.0, 1.0, 1.0]
        );
        assert!(counts.iter().skip(1).step_by(2).all(|c| *c == 0.0));
    }

    #[test]
    fn all_positive_gives_the_smallest_p() {
        let t = signed_rank(&[1.0, 2.0, 3.0, 4.0, 5.0]).unwrap();
        assert_eq!(t.w_plus, 15.0);
        assert_eq!(t.p_greater, 1.0 / 32.0);
        assert_eq!(t.min_p, 1.0 / 32.0);
        assert_eq!(t.p_less, 1.0);
        // Zeros carry no sign and are dropped.
        assert_eq!(signed_rank(&[0.0, 1.0, 2.0]).unwrap().n, 2);
        assert!(signed_rank(&[0.0, 0.0]).is_none());
    }

    #[test]
    fn critical_values_match_the_published_table_for_n_10() {
        // Published one-sided critical values of T = min(W+, W-) for n = 10:
        // alpha 0.05 -> 10, 0.025 -> 8, 0.01 -> 5, 0.005 -> 3 (T at or below is significant).
        let with_w_plus = |w: usize| {
            // Ranks 1..=10 all distinct; choose the positive set greedily to reach W+ = w.
            let mut left = w;
            let mut d: Vec<f64> = (1..=10).map(|r| -(r as f64)).collect();
            for r in (1..=10).rev() {
                if r <= left {
                    d[r - 1] = r as f64;
                    left -= r;
                }
            }
            signed_rank(&d).unwrap().p_less
        };
        for (alpha, t) in [(0.05, 10), (0.025, 8), (0.01, 5), (0.005, 3)] {
            assert!(with_w_plus(t) <= alpha, "T={t} significant at {alpha}");
            assert!(
                with_w_plus(t + 1) > alpha,
                "T={} not significant at {alpha}",
                t + 1
            );
        }
    }

    #[test]
    fn exact_with_ties_agrees_with_enumerating_every_sign_pattern() {
        let d = [0.5, -1.0, 1.0, 2.0, -2.0, 2.0, 3.5, -0.25, 4.0];
        let t = signed_rank(&d).unwrap();
        let ranks = midranks(&d.map(f64::abs));
        let n = d.len();
        let mut ge = 0usize;
        for pattern in 0..(1usize << n) {
            let w: f64 = (0..n)
                .filter(|i| pattern >> i & 1 == 1)
                .map(|i| ranks[i])
                .sum();
            if w >= t.w_plus - 1e-9 {
                ge += 1;
            }
        }
        assert!((t.p_greater - ge as f64 / (1 << n) as f64).abs() < 1e-12);
    }

    #[test]
    fn normal_approximation_is_close_to_exact_for_large_n() {
        let mut rng = fastrand::Rng::with_seed(7);
        let d: Vec<f64> = normals(&mut rng, 70).iter().map(|z| z + 0.2).collect();
        let approx = signed_rank(&d).unwrap();
        assert!(!approx.exact);
        let exact = signed_rank(&d[..EXACT_MAX]).unwrap();
        assert!(exact.exact);
        // Same data, 60 of the 70: the two p-values are of the same size.
        assert!((approx.p_greater.ln() - exact.p_greater.ln()).abs() < 2.0);
        // And the approximation itself, on 60 values, against the exact table.
        let ranks = midranks(&d[..EXACT_MAX].iter().map(|x| x.abs()).collect::<Vec<_>>());
        let mean = ranks.iter().sum::<f64>() / 2.0;
        let sd = (ranks.iter().map(|r| r * r).sum::<f64>() / 4.0).sqrt();
        let z = Normal::new(0.0, 1.0).unwrap();
        let p_norm = z.sf((exact.w_plus - mean - 0.5) / sd);
        assert!(
            (p_norm - exact.p_greater).abs() < 0.01,
            "{p_norm} vs {}",
            exact.p_greater
        );
    }

    #[test]
    fn false_alarm_rate_under_symmetric_nulls_is_at_most_alpha() {
        // Normal and Cauchy (heavy-tailed) differences centred on 0: the test is
        // distribution-free, so the rejection rate stays at or below alpha for both.
        let mut rng = fastrand::Rng::with_seed(11);
        let trials = 2000;
        for heavy in [false, true] {
            let mut rejected = 0;
            for _ in 0..trials {
                let d: Vec<f64> = (0..8)
                    .map(|_| {
                        let u = rng.f64().clamp(1e-9, 1.0 - 1e-9);
                        if heavy {
                            (std::f64::consts::PI * (u - 0.5)).tan()
                        } else {
                            Normal::new(0.0, 1.0).unwrap().inverse_cdf(u)
                        }
                    })
                    .collect();
                if signed_rank(&d).unwrap().p_greater < 0.05 {
                    rejected += 1;
                }
            }
            let rate = rejected as f64 / trials as f64;
            // Exact level for n = 8 at 0.05 is 10/256 = 0.039; allow sampling error.
            assert!(rate < 0.055, "heavy={heavy}: false-alarm rate {rate}");
            assert!(rate > 0.02, "heavy={heavy}: the test is not dead: {rate}");
        }
    }

    #[test]
    fn power_against_a_one_sigma_shift() {
        let mut rng = fastrand::Rng::with_seed(13);
        let trials = 1000;
        let hits = (0..trials)
            .filter(|_| {
                let d: Vec<f64> = normals(&mut rng, 10).iter().map(|z| z + 1.0).collect();
                signed_rank(&d).unwrap().p_greater < 0.05
            })
            .count();
        // The signed-rank test's power for n = 10, shift 1 sd, one-sided 0.05 is about 0.87.
        let power = hits as f64 / trials as f64;
        assert!((0.78..0.95).contains(&power), "power {power}");
    }

    #[test]
    fn hodges_lehmann_and_bootstrap() {
        assert_eq!(hodges_lehmann(&[1.0, 2.0, 3.0]), Some(2.0));
        // One wild round moves the mean a lot and the estimate little.
        let hl = hodges_lehmann(&[0.1, 0.12, 0.09, 0.11, 5.0]).unwrap();
        assert!((0.09..0.2).contains(&hl), "{hl}");
        assert_eq!(median(&[3.0, 1.0, 2.0, 10.0]), Some(2.5));
        let mut rng = fastrand::Rng::with_seed(17);
        let mut covered = 0;
        for i in 0..200 {
            let d: Vec<f64> = normals(&mut rng, 15).iter().map(|z| z + 3.0).collect();
            let (lo, hi) = bootstrap_median_ci(&d, 500, 0.95, i).unwrap();
            assert!(lo <= hi);
            if lo <= 3.0 && 3.0 <= hi {
                covered += 1;
            }
        }
        // The percentile interval of a median at n = 15 covers the truth most of the time.
        assert!(covered >= 170, "covered {covered}/200");
        assert!(bootstrap_median_ci(&[1.0], 100, 0.95, 1).is_none());
    }
}
