//! Credentials for brokers with ACL on, and keeping them out of result folders.
//!
//! Each of the three values comes from its environment variable when that is set, else from
//! the profile's `[auth]` table: the environment wins, so a CI secret overrides a placeholder
//! in a checked-in profile, and a secret need never be written into a profile at all. Access
//! key and secret key must both end up set, or neither (no signing).
//!
//! Signing is process-wide ([`remoting::acl::install`]): every request the harness writes on
//! any connection (producers, consumers, admin requests, name-server queries) is signed.
//!
//! The profile text is copied into `run.json`; [`redact`] replaces `secret_key` and
//! `security_token` there, so a result folder holds no secret.

use remoting::acl::{self, Credentials, Secret};

use harness_model::profile::Secret as ProfileSecret;

use crate::report::SummaryRow;
use harness_model::profile::AuthSection;

/// The access key (`AccessKey`).
pub const ENV_ACCESS_KEY: &str = "ROCKETMQ_ACCESS_KEY";
/// The secret key.
pub const ENV_SECRET_KEY: &str = "ROCKETMQ_SECRET_KEY";
/// The optional security token (`SecurityToken`).
pub const ENV_SECURITY_TOKEN: &str = "ROCKETMQ_SECURITY_TOKEN";

/// What replaces a secret in the copy of the profile a result folder keeps.
pub const REDACTED: &str = "<redacted>";

/// The credentials of a run: the environment (read through `env`) over `[auth]`. `Err` when
/// only one of access key and secret key is given.
pub fn credentials(
    section: Option<&AuthSection>,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Option<Credentials>, String> {
    let section = section.cloned().unwrap_or_default();
    let env = |k: &str| env(k).filter(|v| !v.is_empty());
    let access_key = env(ENV_ACCESS_KEY).or(section.access_key);
    // The profile's secrets become the wire's here, and nowhere else.
    let wire = |s: ProfileSecret| Secret::new(s.expose());
    let secret_key = env(ENV_SECRET_KEY)
        .map(Secret::new)
        .or(section.secret_key.map(wire));
    let token = env(ENV_SECURITY_TOKEN)
        .map(Secret::new)
        .or(section.security_token.map(wire));
    match (access_key, secret_key) {
        (None, None) if token.is_none() => Ok(None),
        (Some(access_key), Some(secret_key)) => Ok(Some(Credentials {
            access_key,
            secret_key,
            security_token: token,
        })),
        (ak, _) => Err(format!(
            "ACL credentials need both an access key and a secret key (and a security token \
             only with them): {} is missing; set [auth] access_key/secret_key or {ENV_ACCESS_KEY}/{ENV_SECRET_KEY}",
            if ak.is_none() { "the access key" } else { "the secret key" }
        )),
    }
}

/// Resolves the run's credentials and signs every request of this process with them (or
/// stops signing). Returns the access key in use, for the log.
pub fn install_for_run(section: Option<&AuthSection>) -> Result<Option<String>, String> {
    let c = credentials(section, |k| std::env::var(k).ok())?;
    let access_key = c.as_ref().map(|c| c.access_key.clone());
    acl::install(c);
    Ok(access_key)
}

/// Why a run failed when the broker answered every one of its sends with code 1 SYSTEM_ERROR,
/// as a broker with ACL on answers requests it refuses: such a run measured nothing, and the
/// cause is most often missing or wrong credentials.
pub fn all_refused(rows: &[SummaryRow]) -> Option<String> {
    let sent: u64 = rows.iter().map(|r| r.seg.sent).sum();
    let refused: u64 = rows.iter().map(|r| r.seg.counts.system_error).sum();
    (sent > 0 && refused == sent).then(|| {
        format!(
            "the broker answered all {sent} sends with code 1 SYSTEM_ERROR (system_error = sent); \
             a broker with ACL on answers so when a request is unsigned, its key unknown, its \
             signature wrong or a permission missing: give credentials in [auth] or \
             {ENV_ACCESS_KEY}/{ENV_SECRET_KEY}"
        )
    })
}

/// `text` (a profile) with the values of `[auth] secret_key` and `security_token` replaced by
/// [`REDACTED`], wherever TOML lets them be written (a table, dotted keys, an inline table).
/// Text that does not parse is returned with every line mentioning them dropped.
pub fn redact(text: &str) -> String {
    #[derive(serde::Deserialize)]
    struct Doc {
        auth: Option<toml::Spanned<Auth>>,
    }
    #[derive(serde::Deserialize)]
    struct Auth {
        secret_key: Option<toml::Spanned<toml::Value>>,
        security_token: Option<toml::Spanned<toml::Value>>,
    }
    let Ok(doc) = toml::from_str::<Doc>(text) else {
        return text
            .lines()
            .filter(|l| !l.contains("secret_key") && !l.contains("security_token"))
            .map(|l| format!("{l}\n"))
            .collect();
    };
    let Some(auth) = doc.auth.map(toml::Spanned::into_inner) else {
        return text.to_owned();
    };
    let mut spans: Vec<std::ops::Range<usize>> = [auth.secret_key, auth.security_token]
        .into_iter()
        .flatten()
        .map(|v| v.span())
        .collect();
    spans.sort_by_key(|s| std::cmp::Reverse(s.start));
    let mut out = text.to_owned();
    for s in spans {
        out.replace_range(s, &format!("\"{REDACTED}\""));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(ak: &str, sk: &str) -> AuthSection {
        AuthSection {
            access_key: Some(ak.into()),
            secret_key: Some(ProfileSecret::new(sk)),
            security_token: None,
        }
    }

    #[test]
    fn environment_wins_value_by_value() {
        let s = section("profile-ak", "profile-sk");
        let none = |_: &str| None;
        let c = credentials(Some(&s), none).unwrap().unwrap();
        assert_eq!(c.access_key, "profile-ak");
        let env = |k: &str| (k == ENV_SECRET_KEY).then(|| "env-sk".to_owned());
        let c = credentials(Some(&s), env).unwrap().unwrap();
        assert_eq!(
            (c.access_key.as_str(), c.secret_key.expose()),
            ("profile-ak", "env-sk")
        );
        let env = |k: &str| match k {
            ENV_ACCESS_KEY => Some("env-ak".to_owned()),
            ENV_SECRET_KEY => Some("env-sk".to_owned()),
            ENV_SECURITY_TOKEN => Some("env-tok".to_owned()),
            _ => None,
        };
        let c = credentials(None, env).unwrap().unwrap();
        assert_eq!(c.access_key, "env-ak");
        assert_eq!(c.security_token.unwrap().expose(), "env-tok");
        assert_eq!(credentials(None, none), Ok(None));
    }

    #[test]
    fn half_credentials_are_refused() {
        let only_ak = AuthSection {
            access_key: Some("ak".into()),
            ..Default::default()
        };
        let e = credentials(Some(&only_ak), |_| None).unwrap_err();
        assert!(e.contains("the secret key is missing"), "{e}");
        let env = |k: &str| (k == ENV_SECRET_KEY).then(|| "sk".to_owned());
        assert!(credentials(None, env)
            .unwrap_err()
            .contains("the access key"));
    }

    #[test]
    fn the_profile_reads_auth_strictly_and_set_cannot_reach_it() {
        use harness_model::profile::Profile;
        use std::path::Path;
        let text = "name = \"x\"\n[auth]\naccess_key = \"ak1\"\nsecret_key = \"sk1\"\n";
        let p = Profile::parse(text, "p.toml", Path::new("p.toml"), &[]).unwrap();
        let a = p.auth.unwrap();
        assert_eq!(a.access_key.as_deref(), Some("ak1"));
        assert!(!format!("{a:?}").contains("sk1"));
        let typo = "name = \"x\"\n[auth]\nsecret = \"sk1\"\n";
        assert!(Profile::parse(typo, "p.toml", Path::new("p.toml"), &[]).is_err());
        let set = ["auth.secret_key=sk1".to_owned()];
        assert!(Profile::parse("name = \"x\"\n", "p.toml", Path::new("p.toml"), &set).is_err());
    }

    #[test]
    fn redacts_every_spelling() {
        let table = "name = \"x\"\n[auth]\naccess_key = \"ak1\"\nsecret_key = \"s3cret\" # c\nsecurity_token = 'tok'\n";
        let r = redact(table);
        assert!(!r.contains("s3cret") && !r.contains("tok'"), "{r}");
        assert!(
            r.contains("access_key = \"ak1\"") && r.contains("# c"),
            "{r}"
        );
        assert!(r.contains("secret_key = \"<redacted>\""), "{r}");
        let dotted = "name = \"x\"\nauth.secret_key = \"s3cret\"\n";
        assert!(!redact(dotted).contains("s3cret"));
        let inline = "name = \"x\"\nauth = { access_key = \"a\", secret_key = \"s3cret\" }\n";
        assert!(!redact(inline).contains("s3cret"));
        let broken = "name = \nsecret_key = \"s3cret\"\n";
        assert!(!redact(broken).contains("s3cret"));
        let none = "name = \"x\"\n";
        assert_eq!(redact(none), none);
    }
}
