//! Statistics behind `harness compare`/`gate` on synthetic data with known answers.

use fastrand::Rng;
use harness::compare::load::Second;
use harness::compare::model::{decide, metric_named, Method, StatOptions, Verdict};
use harness::compare::stats::{mann_whitney, normal};

const ALPHA: f64 = 0.05;

/// Options with the noise threshold off, so the tests see the raw test's behaviour.
fn raw() -> StatOptions {
    StatOptions {
        threshold_pct: 0.0,
        resamples: 1000,
        ..StatOptions::default()
    }
}

fn sample(rng: &mut Rng, n: usize, mean: f64, sd: f64) -> Vec<f64> {
    (0..n).map(|_| mean + sd * normal(rng)).collect()
}

/// Per-second p99 around `level` with AR(1) noise (seconds are autocorrelated in real runs).
fn series(rng: &mut Rng, n: usize, level: f64, cv: f64) -> Vec<Second> {
    let mut ar = 0.0;
    (0..n)
        .map(|s| {
            ar = 0.5 * ar + normal(rng);
            let mut sec = Second::default();
            sec.values.insert("second".into(), Some(s as f64));
            sec.values
                .insert("p99_ms".into(), Some(level * (1.0 + cv * ar)));
            sec.values.insert(
                "achieved_rate".into(),
                Some(1000.0 * (1.0 + 0.02 * normal(rng))),
            );
            sec
        })
        .collect()
}

#[test]
fn mann_whitney_false_positive_rate_is_near_alpha() {
    let mut positives = 0;
    let seeds = 200;
    for seed in 0..seeds {
        let mut rng = Rng::with_seed(seed);
        let a = sample(&mut rng, 8, 10.0, 1.0);
        let b = sample(&mut rng, 8, 10.0, 1.0);
        if mann_whitney(&a, &b).unwrap().p < ALPHA {
            positives += 1;
        }
    }
    let rate = positives as f64 / seeds as f64;
    eprintln!("Mann-Whitney 8v8 false positive rate: {rate}");
    assert!(rate <= 2.0 * ALPHA, "false positive rate {rate}");
    // A test that never fires would pass the line above too: it must be near alpha.
    assert!(rate >= 0.01, "suspiciously conservative: {rate}");
}

#[test]
fn identical_distributions_give_no_change_with_repetitions() {
    let metric = metric_named("p99_ms");
    let mut flagged = 0;
    for seed in 0..200 {
        let mut rng = Rng::with_seed(1000 + seed);
        let a = sample(&mut rng, 5, 12.0, 1.2);
        let b = sample(&mut rng, 5, 12.0, 1.2);
        let d = decide(&metric, &a, &b, &[], &[], &raw(), seed);
        assert_eq!(d.method, Method::MannWhitney);
        if matches!(d.verdict, Verdict::Better | Verdict::Worse) {
            flagged += 1;
        }
    }
    assert!(
        flagged as f64 / 200.0 <= 2.0 * ALPHA,
        "{flagged}/200 flagged"
    );
}

/// Rate of Better/Worse verdicts on identical distributions, one repetition per side.
fn bootstrap_false_positives(metric: &str, seconds: usize, seed0: u64) -> f64 {
    let metric = metric_named(metric);
    let mut flagged = 0;
    for seed in 0..200u64 {
        let mut rng = Rng::with_seed(seed0 + seed);
        let a = series(&mut rng, seconds, 12.0, 0.08);
        let b = series(&mut rng, seconds, 12.0, 0.08);
        let d = decide(&metric, &[12.0], &[12.0 * 1.01], &[&a], &[&b], &raw(), seed);
        assert_eq!(d.method, Method::BlockBootstrap, "{d:?}");
        if matches!(d.verdict, Verdict::Better | Verdict::Worse) {
            flagged += 1;
        }
    }
    flagged as f64 / 200.0
}

#[test]
fn block_bootstrap_false_positive_rate_is_near_alpha() {
    // Median of autocorrelated per-second p99 (AR(1), rho 0.5) over a 60-s cell, and the
    // mean of independent per-second rates over a short 20-s cell.
    let p99 = bootstrap_false_positives("p99_ms", 60, 5000);
    let rate = bootstrap_false_positives("achieved_rate", 20, 7000);
    eprintln!("block bootstrap false positive rate: p99 60 s {p99}, rate 20 s {rate}");
    assert!(p99 <= 2.0 * ALPHA, "p99: false positive rate {p99}");
    assert!(rate <= 2.0 * ALPHA, "rate: false positive rate {rate}");
    // Two in 200 at least: a bootstrap that never fires would pass the bounds above.
    assert!(p99 >= 0.01, "p99: suspiciously conservative: {p99}");
    assert!(rate >= 0.01, "rate: suspiciously conservative: {rate}");
}

#[test]
fn twenty_percent_shift_in_noisy_sample_is_worse() {
    let p99 = metric_named("p99_ms");
    let rate = metric_named("achieved_rate");
    let opts = StatOptions::default();
    let (mut worse, mut better) = (0, 0);
    let seeds = 50;
    for seed in 0..seeds {
        let mut rng = Rng::with_seed(seed);
        // 10 repetitions per side, 8% noise: the U-test should catch nearly every one.
        let a = sample(&mut rng, 10, 10.0, 0.8);
        let b = sample(&mut rng, 10, 12.0, 0.96);
        match decide(&p99, &a, &b, &[], &[], &opts, seed).verdict {
            Verdict::Worse => worse += 1,
            Verdict::Better => better += 1,
            _ => {}
        }
        // Higher is better: a 20% drop in rate is worse, a 20% rise better.
        let r1 = sample(&mut rng, 10, 1000.0, 50.0);
        let r2 = sample(&mut rng, 10, 800.0, 40.0);
        assert_eq!(
            decide(&rate, &r1, &r2, &[], &[], &opts, seed).verdict,
            Verdict::Worse
        );
        assert_eq!(
            decide(&rate, &r2, &r1, &[], &[], &opts, seed).verdict,
            Verdict::Better
        );
    }
    assert_eq!(better, 0);
    assert!(worse >= seeds * 9 / 10, "only {worse}/{seeds} detected");

    // One repetition each: the per-second series decides.
    for seed in 0..10 {
        let mut rng = Rng::with_seed(100 + seed);
        let sa = series(&mut rng, 60, 10.0, 0.08);
        let sb = series(&mut rng, 60, 12.0, 0.08);
        let d = decide(&p99, &[10.0], &[12.0], &[&sa], &[&sb], &opts, seed);
        assert_eq!(
            (d.method, d.verdict),
            (Method::BlockBootstrap, Verdict::Worse),
            "{d:?}"
        );
        let (lo, hi) = d.ci.unwrap();
        // The interval excludes 0 and has a sane width; it need not cover the true 2.0 in
        // every seed (a 95% interval misses 1 time in 20).
        assert!(lo > 0.0 && hi < 4.5 && hi - lo < 3.0, "CI [{lo}, {hi}]");
    }
}

#[test]
fn too_few_samples_are_inconclusive() {
    let p99 = metric_named("p99_ms");
    let opts = StatOptions::default();
    // 3 vs 3, perfectly separated, no per-second data: the U-test cannot reach 0.05.
    let d = decide(
        &p99,
        &[10.0, 10.1, 10.2],
        &[13.0, 13.1, 13.2],
        &[],
        &[],
        &opts,
        1,
    );
    assert_eq!(d.verdict, Verdict::Inconclusive, "{d:?}");
    assert!(d.note.contains("cannot reach"), "{}", d.note);
    // One repetition without timeseries.
    let d = decide(&p99, &[10.0], &[13.0], &[], &[], &opts, 1);
    assert_eq!(d.verdict, Verdict::Inconclusive);
    assert!(d.note.contains("timeseries"), "{}", d.note);
    // One repetition with 5 seconds: fewer than two 3-s blocks.
    let mut rng = Rng::with_seed(3);
    let a = series(&mut rng, 5, 10.0, 0.05);
    let b = series(&mut rng, 5, 13.0, 0.05);
    let d = decide(&p99, &[10.0], &[13.0], &[&a], &[&b], &opts, 1);
    assert_eq!(d.verdict, Verdict::Inconclusive);
    assert!(d.note.contains("too few measured seconds"), "{}", d.note);
    // p99.9 has no per-second statistic.
    let d = decide(
        &metric_named("p999_ms"),
        &[10.0],
        &[13.0],
        &[&a],
        &[&b],
        &opts,
        1,
    );
    assert_eq!(d.verdict, Verdict::Inconclusive);
    // 4 vs 4 separated can decide.
    let d = decide(
        &p99,
        &[10.0, 10.1, 10.2, 10.3],
        &[13.0, 13.1, 13.2, 13.3],
        &[],
        &[],
        &opts,
        1,
    );
    assert_eq!(d.verdict, Verdict::Worse);
}

#[test]
fn changes_inside_the_noise_threshold_are_never_significant() {
    let p99 = metric_named("p99_ms");
    // A perfectly consistent 4% rise over 10 repetitions: significant, but below 5%.
    let a: Vec<f64> = (0..10).map(|i| 10.0 + 0.001 * i as f64).collect();
    let b: Vec<f64> = a.iter().map(|x| x * 1.04).collect();
    let d = decide(&p99, &a, &b, &[], &[], &StatOptions::default(), 1);
    assert_eq!(
        (d.method, d.verdict),
        (Method::Threshold, Verdict::NoChange)
    );
    let tight = StatOptions {
        threshold_pct: 2.0,
        ..StatOptions::default()
    };
    assert_eq!(
        decide(&p99, &a, &b, &[], &[], &tight, 1).verdict,
        Verdict::Worse
    );
}

#[test]
fn zero_base_and_missing_values() {
    let busy = metric_named("busy_rate");
    let d = decide(
        &busy,
        &[0.0; 5],
        &[0.0; 5],
        &[],
        &[],
        &StatOptions::default(),
        1,
    );
    assert_eq!(d.verdict, Verdict::NoChange);
    assert_eq!(d.change_pct, Some(0.0));
    let d = decide(
        &busy,
        &[0.0; 5],
        &[0.01, 0.02, 0.01, 0.015, 0.012],
        &[],
        &[],
        &StatOptions::default(),
        1,
    );
    assert!(d.new_from_zero);
    assert_eq!(d.verdict, Verdict::Worse);
    let d = decide(&busy, &[], &[0.01], &[], &[], &StatOptions::default(), 1);
    assert_eq!(d.verdict, Verdict::Unknown);
}

#[test]
fn bootstrap_is_reproducible_for_a_seed() {
    let p99 = metric_named("p99_ms");
    let mut rng = Rng::with_seed(9);
    let a = series(&mut rng, 40, 10.0, 0.1);
    let b = series(&mut rng, 40, 10.8, 0.1);
    let one = decide(
        &p99,
        &[10.0],
        &[10.8],
        &[&a],
        &[&b],
        &StatOptions::default(),
        42,
    );
    let two = decide(
        &p99,
        &[10.0],
        &[10.8],
        &[&a],
        &[&b],
        &StatOptions::default(),
        42,
    );
    assert_eq!(one.ci, two.ci);
    assert_eq!(one.verdict, two.verdict);
    assert!(one.ci.is_some());
    // The seed does drive the resampling.
    let other = decide(
        &p99,
        &[10.0],
        &[10.8],
        &[&a],
        &[&b],
        &StatOptions::default(),
        43,
    );
    assert_ne!(one.ci, other.ci);
}

#[test]
fn per_second_statistics() {
    use harness::compare::model::SeriesStat;
    let pts = [(4.0, 10.0), (1.0, 10.0), (3.0, 20.0), (2.0, 0.0)];
    let refs: Vec<&(f64, f64)> = pts.iter().collect();
    assert_eq!(SeriesStat::Median("x").reduce(&refs), Some(2.5));
    assert_eq!(SeriesStat::Median("x").reduce(&refs[..3]), Some(3.0));
    assert_eq!(SeriesStat::Mean("x").reduce(&refs), Some(2.5));
    assert_eq!(SeriesStat::ShareOfAttempts("x").reduce(&refs), Some(0.25));
    assert_eq!(SeriesStat::Mean("x").reduce(&[]), None);
}

#[test]
fn three_repetitions_fall_back_to_pooled_per_second_bootstrap() {
    let p99 = metric_named("p99_ms");
    let mut rng = Rng::with_seed(77);
    let base: Vec<Vec<Second>> = (0..3).map(|_| series(&mut rng, 20, 10.0, 0.05)).collect();
    let cand: Vec<Vec<Second>> = (0..3).map(|_| series(&mut rng, 20, 13.0, 0.05)).collect();
    let b: Vec<&[Second]> = base.iter().map(Vec::as_slice).collect();
    let c: Vec<&[Second]> = cand.iter().map(Vec::as_slice).collect();
    let d = decide(
        &p99,
        &[10.0, 10.1, 9.9],
        &[13.0, 13.2, 12.9],
        &b,
        &c,
        &StatOptions::default(),
        5,
    );
    assert_eq!(
        (d.method, d.verdict),
        (Method::BlockBootstrap, Verdict::Worse),
        "{d:?}"
    );
    assert!(d.note.contains("pooled over repetitions"), "{}", d.note);
    assert!((d.p_value.unwrap() - 0.1).abs() < 1e-12);
}

#[test]
fn short_cells_get_shorter_blocks() {
    let p99 = metric_named("p99_ms");
    let mut rng = Rng::with_seed(11);
    let a = series(&mut rng, 8, 10.0, 0.05);
    let b = series(&mut rng, 8, 15.0, 0.05);
    let d = decide(
        &p99,
        &[10.0],
        &[15.0],
        &[&a],
        &[&b],
        &StatOptions::default(),
        1,
    );
    assert_eq!(
        (d.method, d.verdict),
        (Method::BlockBootstrap, Verdict::Worse),
        "{d:?}"
    );
    assert_eq!(d.note, "3-s blocks (8 s measured)");
}

/// Bootstrap seeds make verdicts reproducible across releases: values computed by the
/// original hand-written FNV-1a, pinned.
#[test]
fn bootstrap_seeds_are_pinned() {
    use harness::compare::load::CellKey;
    use harness::compare::model::seed_for;
    let key = CellKey {
        params: [
            (
                "broker.waitTimeMillsInSendQueue".to_string(),
                "200".to_string(),
            ),
            ("workload.rate".to_string(), "1000".to_string()),
        ]
        .into(),
        step: "2".to_string(),
    };
    assert_eq!(seed_for(0x5eed, &key, "p99_ms"), 3_895_841_483_038_807_315);
    let empty = CellKey {
        params: Default::default(),
        step: String::new(),
    };
    assert_eq!(seed_for(0, &empty, ""), 7_121_252_660_383_476_407);
}

/// A whole comparison is reproducible: same seed, same numbers; another seed moves the
/// bootstrap intervals a little but not these clear verdicts.
#[test]
fn comparison_is_reproducible_for_a_seed() {
    use clap::Parser;
    use harness::{compare::build_comparison, Cli, Command};
    let run = |seed: &str| {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/compare");
        let (base, cand) = (format!("{dir}/smoke-base"), format!("{dir}/smoke-slower"));
        let cli = Cli::try_parse_from(["harness", "compare", &base, &cand, "--seed", seed]);
        let Command::Compare(args) = cli.unwrap().command else {
            panic!("not compare")
        };
        let c = build_comparison(&args).unwrap();
        let verdicts: Vec<(String, Verdict)> = c
            .rows
            .iter()
            .map(|r| (r.metric.clone(), r.verdict))
            .collect();
        (serde_json::to_string(&c).unwrap(), verdicts)
    };
    let one = run("7");
    assert_eq!(one, run("7"));
    let other = run("8");
    assert_ne!(one.0, other.0);
    assert_eq!(one.1, other.1);
    assert!(one.1.contains(&("p99_ms".to_string(), Verdict::Worse)));
}
