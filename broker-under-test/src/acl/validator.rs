//! `PlainPermissionManager.validate` and the refusal it turns into.

use std::net::IpAddr;
use std::path::Path;

use remoting::{acl, RemotingCommand};

use super::file::{Account, AclFile, AclFileError};
use super::perm;
use super::resource::{parse, ADMIN_CODES};

/// `TopicValidator.RMQ_SYS_TRACE_TOPIC`: publishing traces skips the permission check.
const TRACE_TOPIC: &str = "RMQ_SYS_TRACE_TOPIC";

/// Where RocketMQ throws each refusal: the first stack frame of the AclException, which the
/// remoting layer appends to the remark (`exceptionSimpleDesc`). Lines of rocketmq-all-4.9.8
/// (`acl/.../plain/PlainPermissionManager.java`, `PlainAccessValidator.java`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Site {
    Parse,
    NoAccessKey,
    NoAccount,
    Signature,
    Admin,
    DefaultPerm,
    Perm,
}

impl Site {
    fn frame(self) -> &'static str {
        use Site::*;
        match self {
            Parse => "org.apache.rocketmq.acl.plain.PlainAccessValidator.parse(PlainAccessValidator.java:134)",
            NoAccessKey => "org.apache.rocketmq.acl.plain.PlainPermissionManager.validate(PlainPermissionManager.java:664)",
            NoAccount => "org.apache.rocketmq.acl.plain.PlainPermissionManager.validate(PlainPermissionManager.java:668)",
            Signature => "org.apache.rocketmq.acl.plain.PlainPermissionManager.validate(PlainPermissionManager.java:684)",
            Admin => "org.apache.rocketmq.acl.plain.PlainPermissionManager.checkPerm(PlainPermissionManager.java:581)",
            DefaultPerm => "org.apache.rocketmq.acl.plain.PlainPermissionManager.checkPerm(PlainPermissionManager.java:606)",
            Perm => "org.apache.rocketmq.acl.plain.PlainPermissionManager.checkPerm(PlainPermissionManager.java:611)",
        }
    }
}

/// A refused request: the AclException's message and where it was thrown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denied {
    message: String,
    site: Site,
}

impl Denied {
    fn new(site: Site, message: impl Into<String>) -> Self {
        Denied {
            message: message.into(),
            site,
        }
    }

    /// The AclException's message, e.g. `No accessKey is configured`.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The remark of the SYSTEM_ERROR answer: `exceptionSimpleDesc(e)`, the exception's
    /// `toString()` and its first stack frame.
    pub fn remark(&self) -> String {
        format!(
            "org.apache.rocketmq.acl.common.AclException: {}, {}",
            self.message,
            self.site.frame()
        )
    }
}

/// `printStr`: a retry topic is shown as its group.
fn print_str(resource: &str) -> String {
    match resource.strip_prefix("%RETRY%") {
        Some(group) => format!("group:{group}"),
        None => format!("topic:{resource}"),
    }
}

/// The accounts and white lists of one `plain_acl.yml`, checked as rocketmq-all-4.9.8 checks
/// them (the only release modelled with ACL 1.0: [`super::acl_refusal`]).
#[derive(Debug, Clone)]
pub struct PlainAccessValidator {
    file: AclFile,
}

impl PlainAccessValidator {
    pub fn load(path: &Path) -> Result<Self, AclFileError> {
        Ok(PlainAccessValidator {
            file: AclFile::load(path)?,
        })
    }

    /// From the text of a `plain_acl.yml` (tests).
    pub fn parse(text: &str) -> Result<Self, String> {
        Ok(PlainAccessValidator {
            file: AclFile::parse(text)?,
        })
    }

    /// How many accounts the file defines (start-up log).
    pub fn accounts(&self) -> usize {
        self.file.accounts.len()
    }

    /// `validator.validate(validator.parse(request, remoteAddr))`.
    pub fn check(&self, request: &RemotingCommand, peer: IpAddr) -> Result<(), Denied> {
        // Without extFields RocketMQ's parse stops early: no key, no resource, no body read.
        let access = if request.ext_fields.is_empty() {
            Default::default()
        } else {
            parse(request).map_err(|m| Denied::new(Site::Parse, m))?
        };
        if self.file.global_white.iter().any(|r| r.matches(peer)) {
            return Ok(());
        }
        let Some(access_key) = access.access_key.as_deref() else {
            return Err(Denied::new(Site::NoAccessKey, "No accessKey is configured"));
        };
        let Some(account) = self.file.accounts.get(access_key) else {
            return Err(Denied::new(
                Site::NoAccount,
                format!("No acl config for {access_key}"),
            ));
        };
        if account.white.matches(peer) {
            return Ok(());
        }
        let expected = acl::signature(
            &account.secret_key,
            &acl::content(&request.ext_fields, &request.body),
        );
        if access.signature.as_deref() != Some(expected.as_str()) {
            return Err(Denied::new(
                Site::Signature,
                format!("Check signature failed for accessKey={access_key}"),
            ));
        }
        if access
            .needed
            .iter()
            .any(|(r, p)| r == TRACE_TOPIC && *p == perm::PUB)
        {
            return Ok(());
        }
        self.check_perm(request.code, &access.needed, account)
    }

    /// `PlainPermissionManager.checkPerm`.
    fn check_perm(
        &self,
        code: i32,
        needed: &[(String, u8)],
        owned: &Account,
    ) -> Result<(), Denied> {
        if ADMIN_CODES.contains(&code) && !owned.admin {
            return Err(Denied::new(
                Site::Admin,
                format!(
                    "Need admin permission for request code={code}, but accessKey={} is not",
                    owned.access_key
                ),
            ));
        }
        // An admin without any topicPerms/groupPerms may do everything; one with them is
        // checked like anyone else.
        if owned.admin && owned.resources.is_empty() {
            return Ok(());
        }
        for (resource, need) in needed {
            let is_group = resource.starts_with("%RETRY%");
            // 4.9.8 words both refusals alike ("No default permission"), from two lines.
            let (site, owned_perm) = match owned.resources.get(resource) {
                None if is_group => (Site::DefaultPerm, owned.default_group_perm),
                None => (Site::DefaultPerm, owned.default_topic_perm),
                Some(p) => (Site::Perm, *p),
            };
            if !perm::permits(*need, owned_perm) {
                return Err(Denied::new(
                    site,
                    format!("No default permission for {}", print_str(resource)),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use remoting::acl::Credentials;
    use remoting::RequestCode;
    use std::collections::BTreeMap;

    const FILE: &str = "
globalWhiteRemoteAddresses:
  - 10.0.0.*
accounts:
  - accessKey: producer1
    secretKey: secret-one
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - TopicA=PUB
      - TopicB=SUB
  - accessKey: trusted1
    secretKey: secret-two
    whiteRemoteAddress: 127.0.0.2
";

    fn v() -> PlainAccessValidator {
        PlainAccessValidator::parse(FILE).unwrap()
    }

    fn send(topic: &str) -> RemotingCommand {
        let ext: BTreeMap<String, String> = [("a", "pg"), ("b", topic), ("e", "0")]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        RemotingCommand::request(RequestCode::SEND_MESSAGE_V2, 1)
            .with_ext_fields(ext)
            .with_body(&b"x"[..])
    }

    fn signed(mut r: RemotingCommand, ak: &str, sk: &str) -> RemotingCommand {
        Credentials::new(ak, sk).sign(&mut r.ext_fields, &r.body);
        r
    }

    const LOCAL: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);

    #[test]
    fn signed_and_permitted_passes() {
        let r = signed(send("TopicA"), "producer1", "secret-one");
        assert_eq!(v().check(&r, LOCAL), Ok(()));
    }

    #[test]
    fn refusals_carry_rocketmqs_messages_and_frames() {
        let v = v();
        let e = v.check(&send("TopicA"), LOCAL).unwrap_err();
        assert_eq!(e.message(), "No accessKey is configured");
        assert_eq!(
            e.remark(),
            "org.apache.rocketmq.acl.common.AclException: No accessKey is configured, \
             org.apache.rocketmq.acl.plain.PlainPermissionManager.validate(PlainPermissionManager.java:664)"
        );
        let e = v
            .check(&signed(send("TopicA"), "nobody1", "x"), LOCAL)
            .unwrap_err();
        assert_eq!(e.message(), "No acl config for nobody1");
        let e = v
            .check(&signed(send("TopicA"), "producer1", "wrong"), LOCAL)
            .unwrap_err();
        assert_eq!(
            e.message(),
            "Check signature failed for accessKey=producer1"
        );
        // An entry that lacks the bit and a default that lacks it read alike in 4.9.8; only
        // the frame tells them apart.
        let e = v
            .check(&signed(send("TopicB"), "producer1", "secret-one"), LOCAL)
            .unwrap_err();
        assert_eq!(e.message(), "No default permission for topic:TopicB");
        assert!(e.remark().ends_with("(PlainPermissionManager.java:611)"));
        let e = v
            .check(&signed(send("Other"), "producer1", "secret-one"), LOCAL)
            .unwrap_err();
        assert_eq!(e.message(), "No default permission for topic:Other");
        assert!(e.remark().ends_with("(PlainPermissionManager.java:606)"));
    }

    #[test]
    fn white_addresses_skip_signature_and_permissions() {
        let v = v();
        assert_eq!(v.check(&send("Other"), "10.0.0.7".parse().unwrap()), Ok(()));
        let r = signed(send("Other"), "trusted1", "not-the-secret");
        assert_eq!(v.check(&r, "127.0.0.2".parse().unwrap()), Ok(()));
        assert!(v.check(&r, LOCAL).is_err());
    }

    #[test]
    fn admin_codes_need_an_admin() {
        let r = signed(
            RemotingCommand::request(RequestCode::UPDATE_AND_CREATE_TOPIC, 1)
                .with_ext_fields(BTreeMap::from([("topic".into(), "T".into())])),
            "producer1",
            "secret-one",
        );
        let e = v().check(&r, LOCAL).unwrap_err();
        assert_eq!(
            e.message(),
            "Need admin permission for request code=17, but accessKey=producer1 is not"
        );
    }
}
