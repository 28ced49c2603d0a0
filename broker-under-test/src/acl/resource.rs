//! Which resources a request needs (`PlainAccessValidator.parse` in 4.9.8,
//! `PlainAccessResource.parse` in 5.3.2), and the signed content.
//!
//! | request | 4.9 | 5.3 |
//! |---|---|---|
//! | SEND_MESSAGE / V2 | topic PUB; a `%RETRY%` topic: the group's retry topic SUB | topic PUB; a `%RETRY%` topic: that topic SUB |
//! | SEND_BATCH_MESSAGE | not checked | as SEND_MESSAGE_V2 (`b`) |
//! | CONSUMER_SEND_MSG_BACK | retry topic of `group` SUB | same |
//! | PULL_MESSAGE | topic SUB, retry topic of `consumerGroup` SUB | same |
//! | QUERY_MESSAGE | topic SUB | same |
//! | HEART_BEAT | for each consumer: its retry topic SUB, each subscribed topic SUB | same |
//! | UNREGISTER_CLIENT, GET_CONSUMER_LIST_BY_GROUP | retry topic of `consumerGroup` SUB | same |
//! | UPDATE_CONSUMER_OFFSET | retry topic of `consumerGroup` SUB, topic SUB | same |
//!
//! Every other code needs no resource (QUERY_CONSUMER_OFFSET, GET_MAX_OFFSET, ...) but is still
//! signature-checked. A code in [`admin_codes`] needs an admin account.

use remoting::{acl, RemotingCommand, RequestCode};

use super::file::retry_topic;
use super::perm::{PUB, SUB};
use crate::keys::VersionProfile;

/// `Permission.ADMIN_CODE`.
pub fn admin_codes(profile: VersionProfile) -> &'static [i32] {
    // UPDATE_AND_CREATE_TOPIC, UPDATE_BROKER_CONFIG, DELETE_TOPIC_IN_BROKER,
    // UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, DELETE_SUBSCRIPTIONGROUP; 5.x adds
    // UPDATE_AND_CREATE_STATIC_TOPIC and the ACL-config codes.
    const V4: &[i32] = &[17, 25, 215, 200, 207];
    const V5: &[i32] = &[17, 25, 215, 200, 207, 513, 50, 51, 52];
    if profile.is_4x() {
        V4
    } else {
        V5
    }
}

/// What `parse` makes of a request: who signs it, and what it needs.
#[derive(Debug, Default)]
pub struct Access {
    pub access_key: Option<String>,
    pub signature: Option<String>,
    /// (resource, permission needed), in the order found.
    pub needed: Vec<(String, u8)>,
}

/// The resources `request` needs; `Err` is the message of the AclException `parse` throws
/// (a body or header it cannot read).
pub fn parse(request: &RemotingCommand, profile: VersionProfile) -> Result<Access, String> {
    let f = |k: &str| request.ext(k).map(str::to_owned);
    let mut needed = Vec::new();
    let mut add = |resource: Option<String>, p: u8| {
        // PlainAccessResource.addResourceAndPerm ignores a null resource.
        if let Some(r) = resource {
            needed.push((r, p));
        }
    };
    let retry = |group: Option<String>| group.map(|g| retry_topic(&g));
    let send =
        |topic: Option<String>, group: Option<String>, add: &mut dyn FnMut(Option<String>, u8)| {
            match topic {
                Some(t) if t.starts_with("%RETRY%") => {
                    if profile.is_4x() {
                        add(retry(group), SUB)
                    } else {
                        add(Some(t), SUB)
                    }
                }
                t => add(t, PUB),
            }
        };
    match RequestCode::from_i32(request.code) {
        Some(RequestCode::SEND_MESSAGE) => send(f("topic"), f("producerGroup"), &mut add),
        Some(RequestCode::SEND_MESSAGE_V2) => send(f("b"), f("a"), &mut add),
        // 5.3 reads the batch as a V2 header (`b`); 4.9 does not check batches.
        Some(RequestCode::SEND_BATCH_MESSAGE) if !profile.is_4x() => send(f("b"), f("a"), &mut add),
        Some(RequestCode::CONSUMER_SEND_MSG_BACK) => add(retry(f("group")), SUB),
        Some(RequestCode::PULL_MESSAGE) => {
            add(f("topic"), SUB);
            add(retry(f("consumerGroup")), SUB);
        }
        Some(RequestCode::QUERY_MESSAGE) => add(f("topic"), SUB),
        Some(RequestCode::HEART_BEAT) => {
            let body: serde_json::Value =
                serde_json::from_slice(&request.body).map_err(|e| e.to_string())?;
            for c in body["consumerDataSet"].as_array().into_iter().flatten() {
                add(retry(c["groupName"].as_str().map(str::to_owned)), SUB);
                for s in c["subscriptionDataSet"].as_array().into_iter().flatten() {
                    add(s["topic"].as_str().map(str::to_owned), SUB);
                }
            }
        }
        Some(RequestCode::UNREGISTER_CLIENT) | Some(RequestCode::GET_CONSUMER_LIST_BY_GROUP) => {
            add(retry(f("consumerGroup")), SUB)
        }
        Some(RequestCode::UPDATE_CONSUMER_OFFSET) => {
            add(retry(f("consumerGroup")), SUB);
            add(f("topic"), SUB);
        }
        _ => {}
    }
    Ok(Access {
        access_key: f(acl::ACCESS_KEY),
        signature: f(acl::SIGNATURE),
        needed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn req(code: RequestCode, fields: &[(&str, &str)]) -> RemotingCommand {
        let ext: BTreeMap<String, String> = fields
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        RemotingCommand::request(code, 1).with_ext_fields(ext)
    }

    #[test]
    fn send_to_a_retry_topic_differs_by_release() {
        let r = req(
            RequestCode::SEND_MESSAGE_V2,
            &[("a", "g1"), ("b", "%RETRY%g1")],
        );
        let v4 = parse(&r, VersionProfile::V4_9).unwrap().needed;
        assert_eq!(v4, vec![("%RETRY%g1".to_owned(), SUB)]);
        let r = req(RequestCode::SEND_MESSAGE_V2, &[("a", "g1"), ("b", "T")]);
        assert_eq!(
            parse(&r, VersionProfile::V5_3).unwrap().needed,
            vec![("T".to_owned(), PUB)]
        );
    }

    #[test]
    fn pull_heartbeat_and_offsets_need_topic_and_group() {
        let r = req(
            RequestCode::PULL_MESSAGE,
            &[("topic", "T"), ("consumerGroup", "G")],
        );
        let n = parse(&r, VersionProfile::V5_3).unwrap().needed;
        assert_eq!(n, vec![("T".into(), SUB), ("%RETRY%G".into(), SUB)]);
        let hb = RemotingCommand::request(RequestCode::HEART_BEAT, 1).with_body(
            &br#"{"clientID":"c","consumerDataSet":[{"groupName":"G","subscriptionDataSet":[{"topic":"T"}]}],"producerDataSet":[]}"#[..],
        );
        let n = parse(&hb, VersionProfile::V4_9).unwrap().needed;
        assert_eq!(n, vec![("%RETRY%G".into(), SUB), ("T".into(), SUB)]);
        let bad = RemotingCommand::request(RequestCode::HEART_BEAT, 1).with_body(&b"{"[..]);
        assert!(parse(&bad, VersionProfile::V4_9).is_err());
    }
}
