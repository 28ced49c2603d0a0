//! Which releases have ACL 1.0 (`aclEnable` + `plain_acl.yml`), and what `aclEnable=true` on
//! the others is refused with.
//!
//! ACL 1.0 came with RocketMQ 4.4.0 and went with 5.3.3 (RIP-77, commit ade18bb076 between
//! rocketmq-all-5.3.2 and rocketmq-all-5.3.3 deletes the `acl` module, `initialAcl` and the
//! getter `isAclEnable`). Both ends leave a real broker that *accepts* the key and checks
//! nothing: 4.3.2's BrokerConfig has no such field and 5.3.3's keeps only the field and its
//! setter (`common/.../BrokerConfig.java:303`, `:1292`), which `MixAll.properties2Object` calls
//! and nothing reads. The model refuses instead of imitating that: a run labelled
//! `aclEnable=true` whose figures are those of a broker without ACL would read as "ACL costs
//! nothing", and a `broker.aclEnable` matrix axis would give identical cells, exit 0. The
//! refusal names the fix; 4.9 (4.9.8's PlainAccessValidator) is the one profile with ACL 1.0.

use crate::keys::VersionProfile;

/// Why `aclEnable=true` is refused on `profile`, or `None` where ACL 1.0 is modelled (4.9).
pub fn acl_refusal(profile: VersionProfile) -> Option<String> {
    match profile {
        VersionProfile::V4_9 => None,
        VersionProfile::V4_3 => Some(
            "aclEnable=true with brokerVersionProfile=4.3: ACL came with RocketMQ 4.4.0 (4.3's \
             BrokerConfig has no aclEnable, so a 4.3 broker checks nothing); set \
             brokerVersionProfile=4.9 to measure ACL 1.0"
                .into(),
        ),
        VersionProfile::V5_3 => Some(
            "aclEnable=true with brokerVersionProfile=5.3: RocketMQ 5.3.3 removed ACL 1.0 \
             (RIP-77); its BrokerConfig keeps aclEnable as a field nothing reads, so a real \
             5.3.3 broker with aclEnable=true checks no signature and refuses nothing. Set \
             brokerVersionProfile=4.9 to measure ACL 1.0 (plain_acl.yml, 4.9.8's checks), or \
             drop aclEnable to imitate 5.3.3 (where it has no effect); 5.3.3's ACL 2.0 \
             (authenticationEnabled / authorizationEnabled) is not modelled: measure it on \
             Apache's broker (--broker apache-5.3.3)"
                .into(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_4_9_has_acl_1_0() {
        assert_eq!(acl_refusal(VersionProfile::V4_9), None);
        let v43 = acl_refusal(VersionProfile::V4_3).unwrap();
        assert!(
            v43.contains("4.4.0") && v43.contains("brokerVersionProfile=4.9"),
            "{v43}"
        );
        let v53 = acl_refusal(VersionProfile::V5_3).unwrap();
        for part in [
            "aclEnable",
            "5.3.3",
            "brokerVersionProfile=4.9",
            "authenticationEnabled",
        ] {
            assert!(v53.contains(part), "{part}: {v53}");
        }
    }
}
