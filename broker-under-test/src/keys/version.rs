//! The RocketMQ release the broker imitates. A leaf: the key table, the configuration and the
//! dispatcher all read it.

use std::{fmt, str::FromStr};

/// Which RocketMQ release the broker imitates where behaviour or defaults differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum VersionProfile {
    /// rocketmq-all-4.3.0: spin lock and one send thread by default, synchronous send path.
    V4_3,
    /// rocketmq-all-4.9.8: the last 4.x release.
    V4_9,
    /// rocketmq-all-5.3.3.
    V5_3,
}

impl VersionProfile {
    /// Every profile, oldest first: the column order of the key table.
    pub const ALL: [VersionProfile; 3] = [
        VersionProfile::V4_3,
        VersionProfile::V4_9,
        VersionProfile::V5_3,
    ];

    /// Position in [`VersionProfile::ALL`].
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The `MQVersion.Version` ordinal the broker puts in every response's `version` field.
    pub fn ordinal(self) -> i32 {
        match self {
            VersionProfile::V4_3 => 273,
            VersionProfile::V4_9 => 409,
            VersionProfile::V5_3 => 479,
        }
    }

    /// `brokerVersionDesc` in GET_BROKER_RUNTIME_INFO.
    pub fn desc(self) -> &'static str {
        match self {
            VersionProfile::V4_3 => "V4_3_0",
            VersionProfile::V4_9 => "V4_9_8",
            VersionProfile::V5_3 => "V5_3_3",
        }
    }

    pub fn is_4x(self) -> bool {
        self != VersionProfile::V5_3
    }

    /// How the profile is spelled in `brokerVersionProfile`.
    pub fn as_str(self) -> &'static str {
        match self {
            VersionProfile::V4_3 => "4.3",
            VersionProfile::V4_9 => "4.9",
            VersionProfile::V5_3 => "5.3",
        }
    }
}

impl FromStr for VersionProfile {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        VersionProfile::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| "expected 4.3, 4.9 or 5.3".into())
    }
}

impl fmt::Display for VersionProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
