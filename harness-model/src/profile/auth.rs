//! The `[auth]` table: credentials a run signs its requests with (RocketMQ ACL 1.0).
//!
//! Every value may instead come from the environment, which wins over the profile (see
//! the harness's `auth`): so a checked-in profile needs no secret at all.

use std::fmt;

use serde::Deserialize;

/// A secret written in a profile or the environment. `Debug` never shows it, so a logged
/// profile cannot leak it; the client turns it into the wire's credentials.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The secret itself: for the signing key and for nothing that is written out.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

/// Every key `[auth]` takes.
pub const AUTH_KEYS: &[&str] = &["access_key", "secret_key", "security_token"];

/// `[auth]` as written. Each value is optional here: the environment may supply it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawAuth {
    access_key: Option<String>,
    secret_key: Option<String>,
    security_token: Option<String>,
}

/// `[auth]`, with the secrets wrapped so that `Debug` of a profile never shows them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuthSection {
    /// `access_key`: the account (`AccessKey`). Default: none.
    pub access_key: Option<String>,
    /// `secret_key`: the HMAC key; never sent, never written to a result. Default: none.
    pub secret_key: Option<Secret>,
    /// `security_token`: sent as `SecurityToken` when set. Default: none.
    pub security_token: Option<Secret>,
}

impl From<RawAuth> for AuthSection {
    fn from(r: RawAuth) -> Self {
        AuthSection {
            access_key: r.access_key,
            secret_key: r.secret_key.map(Secret::new),
            security_token: r.security_token.map(Secret::new),
        }
    }
}
