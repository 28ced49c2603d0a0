//! The `[ab]` table: how `harness ab` measures two broker builds and when its gate says no.
//!
//! Capacity comes from the profile's closed-loop `[workload]`; the latency pass then runs the
//! same workload open-loop at `latency_fraction` of side A's median capacity, so both sides
//! face the same offered load.

use serde::Deserialize;
use toml::Spanned;

use super::diagnostics::did_you_mean;
use super::secs::Secs;

/// The metrics `harness ab` judges, in display order: closed-loop saturated ok rate, p50 and
/// p99 at a fixed fraction of capacity, and broker CPU-seconds per 1,000 messages.
pub const AB_METRICS: &[&str] = &["capacity", "p50_ms", "p99_ms", "cpu_s_per_1k"];

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAb {
    latency_fraction: Option<Spanned<f64>>,
    latency_duration: Option<Secs>,
    threshold: Option<Spanned<f64>>,
    alpha: Option<Spanned<f64>>,
    metrics: Option<Spanned<Vec<String>>>,
    fail_when: Option<Spanned<String>>,
}

/// When the judged metrics together fail the gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FailWhen {
    /// Any metric that fails its test fails the gate; each is tested at alpha / metrics
    /// (Bonferroni), so that together they keep the false-alarm rate at alpha.
    #[default]
    Any,
    /// Only when every judged metric fails its test, each at alpha (an intersection-union
    /// test, whose false-alarm rate is at most alpha). For metrics that are two views of one
    /// cost, such as capacity and CPU per message at saturation: a slower send path moves
    /// both, a machine that takes CPU from the broker moves only capacity.
    All,
}

impl FailWhen {
    pub const NAMES: &'static [&'static str] = &["any", "all"];

    pub fn as_str(self) -> &'static str {
        match self {
            FailWhen::Any => "any",
            FailWhen::All => "all",
        }
    }
}

/// The validated `[ab]` table (defaults when the profile has none).
#[derive(Debug, Clone, PartialEq)]
pub struct AbSettings {
    /// The latency pass's open-loop rate as a fraction of side A's median capacity.
    pub latency_fraction: f64,
    /// Measured duration of the latency pass; None = the workload's `duration`.
    pub latency_duration: Option<Secs>,
    /// A regression smaller than this (percent) never fails the gate.
    pub threshold_pct: f64,
    /// Family-wise significance level, split evenly over the gated metrics (Bonferroni).
    pub alpha: f64,
    /// The metrics the gate judges, a subset of [`AB_METRICS`].
    pub metrics: Vec<String>,
    /// Whether one failing metric fails the gate, or only all of them together.
    pub fail_when: FailWhen,
}

impl Default for AbSettings {
    fn default() -> Self {
        AbSettings {
            latency_fraction: 0.5,
            latency_duration: None,
            threshold_pct: 5.0,
            alpha: 0.05,
            metrics: AB_METRICS.iter().map(|m| m.to_string()).collect(),
            fail_when: FailWhen::Any,
        }
    }
}

/// A problem in `[ab]`: message, help, and the span of the offending value when known.
pub(super) type AbProblem = (String, Option<String>, Option<std::ops::Range<usize>>);

impl RawAb {
    pub(super) fn validate(self) -> Result<AbSettings, AbProblem> {
        let d = AbSettings::default();
        let fraction = match self.latency_fraction {
            Some(f) if !(*f.get_ref() > 0.0 && *f.get_ref() <= 1.0) => {
                return Err((
                    format!("`latency_fraction` {} must be in (0, 1]", f.get_ref()),
                    Some("0.5 runs the latency pass at half of side A's capacity".into()),
                    Some(f.span()),
                ))
            }
            Some(f) => *f.get_ref(),
            None => d.latency_fraction,
        };
        let threshold_pct = match self.threshold {
            Some(t) if !(t.get_ref().is_finite() && *t.get_ref() >= 0.0) => {
                return Err((
                    format!("`threshold` {} must be a percentage >= 0", t.get_ref()),
                    None,
                    Some(t.span()),
                ))
            }
            Some(t) => *t.get_ref(),
            None => d.threshold_pct,
        };
        let alpha = match self.alpha {
            Some(a) if !(*a.get_ref() > 0.0 && *a.get_ref() < 1.0) => {
                return Err((
                    format!("`alpha` {} must be in (0, 1)", a.get_ref()),
                    None,
                    Some(a.span()),
                ))
            }
            Some(a) => *a.get_ref(),
            None => d.alpha,
        };
        let metrics = match self.metrics {
            Some(m) => {
                let span = m.span();
                let list = m.into_inner();
                if list.is_empty() {
                    return Err((
                        "`metrics` is empty".into(),
                        Some(format!("name at least one of {}", AB_METRICS.join(", "))),
                        Some(span),
                    ));
                }
                if let Some(bad) = list.iter().find(|n| !AB_METRICS.contains(&n.as_str())) {
                    let hint = did_you_mean(bad, AB_METRICS)
                        .map_or(String::new(), |b| format!("did you mean `{b}`? "));
                    return Err((
                        format!("unknown A/B metric `{bad}`"),
                        Some(format!("{hint}valid: {}", AB_METRICS.join(", "))),
                        Some(span),
                    ));
                }
                list
            }
            None => d.metrics,
        };
        let fail_when = match self.fail_when {
            Some(f) => match f.get_ref().as_str() {
                "any" => FailWhen::Any,
                "all" => FailWhen::All,
                other => {
                    let hint = did_you_mean(other, FailWhen::NAMES)
                        .map_or(String::new(), |b| format!("did you mean `{b}`? "));
                    return Err((
                        format!("unknown fail_when `{other}`"),
                        Some(format!(
                            "{hint}\"any\": one failing metric fails the gate; \"all\": only every metric together"
                        )),
                        Some(f.span()),
                    ));
                }
            },
            None => d.fail_when,
        };
        Ok(AbSettings {
            latency_fraction: fraction,
            latency_duration: self.latency_duration,
            threshold_pct,
            alpha,
            metrics,
            fail_when,
        })
    }
}

/// The `[ab]` table of a TOML text (a profile or rules file), validated; defaults without one.
/// For `harness gate --rules`, which reads the file outside the profile loader.
pub fn ab_settings_of(text: &str) -> Result<AbSettings, AbError> {
    #[derive(Deserialize)]
    struct Doc {
        ab: Option<RawAb>,
    }
    let doc: Doc = toml::from_str(text).map_err(|e| AbError::Toml(Box::new(e)))?;
    match doc.ab {
        None => Ok(AbSettings::default()),
        Some(raw) => raw
            .validate()
            .map_err(|(message, help, _)| AbError::Invalid { message, help }),
    }
}

/// Why the `[ab]` table of a rules file is refused (the profile loader points at the line
/// itself; this is for `harness gate --rules`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AbError {
    #[error("[ab]: {}", .0.message().trim())]
    Toml(Box<toml::de::Error>),
    #[error("[ab]: {message}{}", help.as_deref().map(|h| format!(" (help: {h})")).unwrap_or_default())]
    Invalid {
        message: String,
        help: Option<String>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_checks() {
        assert_eq!(ab_settings_of("name = \"x\"\n"), Ok(AbSettings::default()));
        let s = ab_settings_of("[ab]\nthreshold = 3\nmetrics = [\"capacity\"]\n").unwrap();
        assert_eq!(s.threshold_pct, 3.0);
        assert_eq!(s.metrics, ["capacity"]);
        let e = ab_settings_of("[ab]\nmetrics = [\"capacty\"]\n").unwrap_err();
        assert!(e.to_string().contains("did you mean `capacity`"), "{e}");
        assert!(ab_settings_of("[ab]\nlatency_fraction = 1.5\n").is_err());
        assert!(ab_settings_of("[ab]\nalpha = 0\n").is_err());
        assert!(ab_settings_of("[ab]\nrounds = 3\n").is_err(), "unknown key");
        assert_eq!(AbSettings::default().fail_when, FailWhen::Any);
        let s = ab_settings_of("[ab]\nfail_when = \"all\"\n").unwrap();
        assert_eq!(s.fail_when, FailWhen::All);
        let e = ab_settings_of("[ab]\nfail_when = \"al\"\n").unwrap_err();
        assert!(e.to_string().contains("did you mean `all`"), "{e}");
    }
}
