//! Durations in a profile: seconds as a number, or a string with a unit.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize};

/// A duration written as seconds (`5`, `0.5`) or with a unit (`"500ms"`, `"5s"`, `"2m"`).
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Default)]
pub struct Secs(pub f64);

impl Secs {
    pub fn duration(self) -> Duration {
        Duration::from_secs_f64(self.0.max(0.0))
    }
}

impl fmt::Display for Secs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}s", self.0)
    }
}

impl Serialize for Secs {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(self.0)
    }
}

/// Parses `"500ms"`, `"5s"`, `"2m"`, `"1h"`, `"1.5"` (seconds).
pub fn parse_secs(text: &str) -> Option<f64> {
    let t = text.trim();
    let (num, mult) = if let Some(n) = t.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = t.strip_suffix("us") {
        (n, 0.000_001)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60.0)
    } else if let Some(n) = t.strip_suffix('h') {
        (n, 3600.0)
    } else {
        (t, 1.0)
    };
    let v: f64 = num.trim().parse().ok()?;
    (v.is_finite() && v >= 0.0).then_some(v * mult)
}

impl<'de> Deserialize<'de> for Secs {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Secs;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(
                    "a duration: seconds as a number, or a string like \"500ms\", \"5s\", \"2m\", \"1h\"",
                )
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Secs, E> {
                if v < 0 {
                    return Err(E::custom("a duration cannot be negative"));
                }
                Ok(Secs(v as f64))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Secs, E> {
                Ok(Secs(v as f64))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Secs, E> {
                if !(v.is_finite() && v >= 0.0) {
                    return Err(E::custom(
                        "a duration must be a finite, non-negative number",
                    ));
                }
                Ok(Secs(v))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Secs, E> {
                parse_secs(v).map(Secs).ok_or_else(|| {
                    E::custom(format!(
                        "`{v}` is not a duration; write e.g. \"500ms\", \"5s\", \"2m\", \"1h\" or a number of seconds"
                    ))
                })
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::parse_secs;

    #[test]
    fn units_from_microseconds_to_hours() {
        assert_eq!(parse_secs("250us"), Some(0.000_25));
        assert_eq!(parse_secs("500ms"), Some(0.5));
        assert_eq!(parse_secs(" 5s "), Some(5.0));
        assert_eq!(parse_secs("2m"), Some(120.0));
        // `make soak-hour` passes `workload.duration=1h`.
        assert_eq!(parse_secs("1h"), Some(3600.0));
        assert_eq!(parse_secs("1.5"), Some(1.5));
        assert_eq!(parse_secs("-1s"), None);
        assert_eq!(parse_secs("1d"), None);
        assert_eq!(parse_secs("h"), None);
    }
}
