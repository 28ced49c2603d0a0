//! RocketMQ's ACL 1.0 request signature (`acl/common`: `AclClientRPCHook`, `AclUtils`,
//! `AclSigner`, `SessionCredentials`), the same in 4.9.x and 5.3.x.
//!
//! A signed request carries three more `extFields`: `AccessKey`, `SecurityToken` (only when the
//! credentials have one) and `Signature`. The signature is
//! `Base64(HmacSHA1(secretKey, content))`, where `content` is every `extFields` value in key
//! order (a Java `TreeMap`: for ASCII keys the byte order of a `BTreeMap`), `AccessKey` and
//! `SecurityToken` included, `Signature` and `_UNIQUE_KEY_QUERY` left out (the broker's
//! `PlainAccessValidator.parse` leaves both out), UTF-8, followed by the body.
//!
//! Signing is process-wide, like an `RPCHook` registered on a Java client instance: after
//! [`install`], every request [`RemotingCommand::encode`](crate::RemotingCommand::encode) and
//! [`FrameTemplate`](crate::FrameTemplate) write is signed, so no connection of a tool can send
//! unsigned by forgetting to call a signer. Responses are never signed.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

use base64::Engine;
use hmac::{Hmac, KeyInit, Mac};
use sha1::Sha1;

/// `SessionCredentials.ACCESS_KEY`: the ext field naming the account.
pub const ACCESS_KEY: &str = "AccessKey";
/// `SessionCredentials.SIGNATURE`.
pub const SIGNATURE: &str = "Signature";
/// `SessionCredentials.SECURITY_TOKEN`.
pub const SECURITY_TOKEN: &str = "SecurityToken";
/// `MixAll.UNIQUE_MSG_QUERY_FLAG`: an ext field the broker leaves out of the signed content.
pub const UNIQUE_MSG_QUERY_FLAG: &str = "_UNIQUE_KEY_QUERY";

/// A secret string. `Debug` never shows it, so a logged configuration cannot leak it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The secret itself: for the HMAC key and for nothing that is written out.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

/// `SessionCredentials`: an access key, its secret key, and an optional security token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Credentials {
    pub access_key: String,
    pub secret_key: Secret,
    pub security_token: Option<Secret>,
}

impl Credentials {
    pub fn new(access_key: impl Into<String>, secret_key: impl Into<String>) -> Self {
        Credentials {
            access_key: access_key.into(),
            secret_key: Secret::new(secret_key),
            security_token: None,
        }
    }

    pub fn with_security_token(mut self, token: impl Into<String>) -> Self {
        self.security_token = Some(Secret::new(token));
        self
    }

    /// `AclClientRPCHook.doBeforeRequest`: adds `AccessKey`, `SecurityToken` and `Signature`
    /// to `fields` for a request whose body is `body`.
    pub fn sign(&self, fields: &mut BTreeMap<String, String>, body: &[u8]) {
        fields.insert(ACCESS_KEY.to_owned(), self.access_key.clone());
        if let Some(token) = &self.security_token {
            fields.insert(SECURITY_TOKEN.to_owned(), token.expose().to_owned());
        }
        let signature = signature(self.secret_key.expose(), &content(fields, body));
        fields.insert(SIGNATURE.to_owned(), signature);
    }
}

/// Whether `key`'s value is part of the signed content.
pub fn is_signed_field(key: &str) -> bool {
    key != SIGNATURE && key != UNIQUE_MSG_QUERY_FLAG
}

/// `AclUtils.combineRequestContent`: the signed values in key order, then the body.
pub fn content(fields: &BTreeMap<String, String>, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + 16 * fields.len());
    for (k, v) in fields {
        if is_signed_field(k) {
            out.extend_from_slice(v.as_bytes());
        }
    }
    out.extend_from_slice(body);
    out
}

/// `AclSigner.calSignature(content, secretKey)`: HmacSHA1, standard Base64 with padding.
pub fn signature(secret_key: &str, content: &[u8]) -> String {
    let mut s = Signer::new(secret_key);
    s.update(content);
    s.finish()
}

/// An incremental [`signature`]: the frame template feeds it value by value. Cloning a keyed
/// signer skips the key set-up (two SHA-1 blocks), so a template keys one and clones it per frame.
#[derive(Clone)]
pub struct Signer(Hmac<Sha1>);

impl Signer {
    pub fn new(secret_key: &str) -> Self {
        // HMAC takes a key of any length (longer ones are hashed first), so this cannot fail.
        Signer(Hmac::<Sha1>::new_from_slice(secret_key.as_bytes()).expect("HMAC takes any key"))
    }

    pub fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    pub fn finish(self) -> String {
        base64::engine::general_purpose::STANDARD.encode(self.0.finalize().into_bytes())
    }
}

/// Fast path: requests are encoded without a lock while nothing is installed.
static SIGNING: AtomicBool = AtomicBool::new(false);
static INSTALLED: RwLock<Option<Arc<Credentials>>> = RwLock::new(None);

/// Signs every request this process encodes from now on with `credentials`; `None` stops
/// signing. A tool calls it once, before it opens its first connection.
pub fn install(credentials: Option<Credentials>) {
    let mut slot = INSTALLED.write().unwrap_or_else(|p| p.into_inner());
    SIGNING.store(credentials.is_some(), Ordering::Release);
    *slot = credentials.map(Arc::new);
}

/// The credentials requests are signed with, if any.
pub fn installed() -> Option<Arc<Credentials>> {
    if !SIGNING.load(Ordering::Acquire) {
        return None;
    }
    INSTALLED.read().unwrap_or_else(|p| p.into_inner()).clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_do_not_print() {
        let c = Credentials::new("RocketMQ", "12345678").with_security_token("tok-xyz");
        let shown = format!("{c:?}");
        assert!(shown.contains("RocketMQ"));
        assert!(
            !shown.contains("12345678") && !shown.contains("tok-xyz"),
            "{shown}"
        );
    }

    #[test]
    fn signature_and_unique_query_flag_are_not_signed() {
        let mut f = BTreeMap::new();
        f.insert("a".to_owned(), "1".to_owned());
        f.insert(SIGNATURE.to_owned(), "old".to_owned());
        f.insert(UNIQUE_MSG_QUERY_FLAG.to_owned(), "true".to_owned());
        assert_eq!(content(&f, b"B"), b"1B");
    }

    #[test]
    fn sign_adds_the_fields_and_a_verifiable_signature() {
        let c = Credentials::new("ak", "sk").with_security_token("tok");
        let mut f = BTreeMap::new();
        f.insert("topic".to_owned(), "T".to_owned());
        c.sign(&mut f, b"body");
        assert_eq!(f.get(ACCESS_KEY).map(String::as_str), Some("ak"));
        assert_eq!(f.get(SECURITY_TOKEN).map(String::as_str), Some("tok"));
        // Keys sorted: AccessKey, SecurityToken, topic.
        let want = signature("sk", b"aktokTbody");
        assert_eq!(f.get(SIGNATURE), Some(&want));
    }
}
