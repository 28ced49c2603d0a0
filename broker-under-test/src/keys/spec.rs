//! What one key is: its type and allowed values, its default per profile, its documentation.

use super::version::VersionProfile;

/// One broker key.
#[derive(Debug, Clone, Copy)]
pub struct KeySpec {
    /// RocketMQ's key name (or ours, see `ours`).
    pub name: &'static str,
    pub ty: KeyType,
    pub default: DefaultRule,
    /// Our own key, not RocketMQ's.
    pub ours: bool,
    /// One line: what it does, and what the README's notes column says.
    pub doc: &'static str,
}

/// The unit of an integer key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Millis,
    Micros,
    Nanos,
    Seconds,
    Hours,
    Bytes,
    /// Percent of a disk.
    Percent,
    Threads,
    Count,
}

impl Unit {
    /// As `--list-keys` spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Unit::Millis => "ms",
            Unit::Micros => "us",
            Unit::Nanos => "ns",
            Unit::Seconds => "s",
            Unit::Hours => "h",
            Unit::Percent => "%",
            Unit::Bytes => "bytes",
            Unit::Threads => "threads",
            Unit::Count => "count",
        }
    }
}

/// A key's type and the values it accepts.
#[derive(Debug, Clone, Copy)]
pub enum KeyType {
    /// `true` or `false`, any case.
    Bool,
    /// A decimal integer in `min..=max`.
    Int {
        unit: Option<Unit>,
        min: i64,
        max: i64,
    },
    /// One of the listed words, exactly.
    Enum(&'static [&'static str]),
    /// An IPv4 or IPv6 address.
    Ip,
    Path,
    Str,
}

impl KeyType {
    /// As `--list-keys` spells it.
    pub fn name(self) -> &'static str {
        match self {
            KeyType::Bool => "bool",
            KeyType::Int { .. } => "int",
            KeyType::Enum(_) => "enum",
            KeyType::Ip => "ip",
            KeyType::Path => "path",
            KeyType::Str => "string",
        }
    }
}

/// What a default may depend on besides the profile.
#[derive(Debug, Clone, Copy)]
pub struct DefaultEnv {
    pub profile: VersionProfile,
    /// `available_parallelism` of this machine.
    pub cpus: usize,
    /// The effective send thread count, once known (the 4.9.1+ end-transaction default).
    pub send_threads: Option<usize>,
}

/// A key's default value.
#[derive(Debug, Clone, Copy)]
pub enum DefaultRule {
    /// The same for every profile.
    Fixed(&'static str),
    /// One value per profile, in [`VersionProfile::ALL`] order.
    PerProfile([&'static str; 3]),
    /// Depends on the machine (cpus, host name, `$HOME`) or on another key; `formula` is how the
    /// README writes it, per profile.
    Computed {
        value: fn(&DefaultEnv) -> String,
        formula: [&'static str; 3],
    },
}

impl DefaultRule {
    /// The value on this machine.
    pub fn value(&self, env: &DefaultEnv) -> String {
        match self {
            DefaultRule::Fixed(v) => (*v).to_owned(),
            DefaultRule::PerProfile(v) => v[env.profile.index()].to_owned(),
            DefaultRule::Computed { value, .. } => value(env),
        }
    }

    /// How the README writes it for `profile`.
    pub fn formula(&self, profile: VersionProfile) -> &'static str {
        match self {
            DefaultRule::Fixed(v) => v,
            DefaultRule::PerProfile(v) => v[profile.index()],
            DefaultRule::Computed { formula, .. } => formula[profile.index()],
        }
    }
}

impl KeySpec {
    /// Checks `value` against the key's type and range; `Err` is the reason, for
    /// `ConfigError::BadValue`.
    pub fn check(&self, value: &str) -> Result<(), String> {
        match self.ty {
            KeyType::Bool => match value.to_ascii_lowercase().as_str() {
                "true" | "false" => Ok(()),
                _ => Err("expected true or false".into()),
            },
            KeyType::Int { unit, min, max } => {
                let range = match unit {
                    Some(u) => format!("{min}..={max} {}", u.as_str()),
                    None => format!("{min}..={max}"),
                };
                match value.parse::<i64>() {
                    Ok(v) if (min..=max).contains(&v) => Ok(()),
                    Ok(_) => Err(format!("out of range, allowed {range}")),
                    Err(e) => Err(format!("{e}; expected an integer in {range}")),
                }
            }
            KeyType::Enum(values) => {
                if values.contains(&value) {
                    Ok(())
                } else {
                    Err(format!("expected {}", one_of(values)))
                }
            }
            KeyType::Ip => value
                .parse::<std::net::IpAddr>()
                .map(|_| ())
                .map_err(|e| e.to_string()),
            KeyType::Path | KeyType::Str => Ok(()),
        }
    }
}

/// `A, B or C`.
fn one_of(values: &[&str]) -> String {
    match values {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

/// `a` then `b`, in a const (a slice literal cannot be spliced).
pub(super) const fn concat<const N: usize>(a: &[KeySpec], b: &[KeySpec]) -> [KeySpec; N] {
    let mut out = [a[0]; N];
    let mut i = 0;
    while i < a.len() {
        out[i] = a[i];
        i += 1;
    }
    let mut j = 0;
    while j < b.len() {
        out[a.len() + j] = b[j];
        j += 1;
    }
    out
}

/// An integer key in `unit`, bounded to `min..=max`.
pub(super) const fn int(unit: Unit, min: i64, max: i64) -> KeyType {
    KeyType::Int {
        unit: Some(unit),
        min,
        max,
    }
}

/// One of RocketMQ's keys.
pub(super) const fn key(
    name: &'static str,
    ty: KeyType,
    default: DefaultRule,
    doc: &'static str,
) -> KeySpec {
    KeySpec {
        name,
        ty,
        default,
        ours: false,
        doc,
    }
}

/// A key of ours (a test or injection key), never RocketMQ's.
pub(super) const fn ours(
    name: &'static str,
    ty: KeyType,
    default: DefaultRule,
    doc: &'static str,
) -> KeySpec {
    KeySpec {
        name,
        ty,
        default,
        ours: true,
        doc,
    }
}
