//! Which resources a request needs (rocketmq-all-4.9.8 `PlainAccessValidator.parse`, l.74-130),
//! and the signed content.
//!
//! | request | needs |
//! |---|---|
//! | SEND_MESSAGE / V2 | topic PUB; a `%RETRY%` topic: the retry topic of the producer group SUB |
//! | SEND_BATCH_MESSAGE | nothing (4.9.8 has no case for it) |
//! | CONSUMER_SEND_MSG_BACK | retry topic of `group` SUB |
//! | PULL_MESSAGE | topic SUB, retry topic of `consumerGroup` SUB |
//! | QUERY_MESSAGE | topic SUB |
//! | HEART_BEAT | for each consumer: its retry topic SUB, each subscribed topic SUB |
//! | UNREGISTER_CLIENT, GET_CONSUMER_LIST_BY_GROUP | retry topic of `consumerGroup` SUB |
//! | UPDATE_CONSUMER_OFFSET | retry topic of `consumerGroup` SUB, topic SUB |
//!
//! Every other code needs no resource (QUERY_CONSUMER_OFFSET, GET_MAX_OFFSET, ...) but is still
//! signature-checked. A code in [`ADMIN_CODES`] needs an admin account.

use remoting::{acl, RemotingCommand, RequestCode};

use super::file::retry_topic;
use super::perm::{PUB, SUB};

/// 4.9.8 `Permission.ADMIN_CODE`: UPDATE_AND_CREATE_TOPIC, UPDATE_BROKER_CONFIG,
/// DELETE_TOPIC_IN_BROKER, UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, DELETE_SUBSCRIPTIONGROUP.
pub const ADMIN_CODES: &[i32] = &[17, 25, 215, 200, 207];

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
pub fn parse(request: &RemotingCommand) -> Result<Access, String> {
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
                Some(t) if t.starts_with("%RETRY%") => add(retry(group), SUB),
                t => add(t, PUB),
            }
        };
    match RequestCode::from_i32(request.code) {
        Some(RequestCode::SEND_MESSAGE) => send(f("topic"), f("producerGroup"), &mut add),
        Some(RequestCode::SEND_MESSAGE_V2) => send(f("b"), f("a"), &mut add),
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
    fn a_send_to_a_retry_topic_needs_the_groups_retry_topic() {
        let r = req(
            RequestCode::SEND_MESSAGE_V2,
            &[("a", "g1"), ("b", "%RETRY%other")],
        );
        assert_eq!(
            parse(&r).unwrap().needed,
            vec![("%RETRY%g1".to_owned(), SUB)]
        );
        let r = req(RequestCode::SEND_MESSAGE_V2, &[("a", "g1"), ("b", "T")]);
        assert_eq!(parse(&r).unwrap().needed, vec![("T".to_owned(), PUB)]);
        let batch = req(RequestCode::SEND_BATCH_MESSAGE, &[("a", "g1"), ("b", "T")]);
        assert!(parse(&batch).unwrap().needed.is_empty());
    }

    #[test]
    fn pull_heartbeat_and_offsets_need_topic_and_group() {
        let r = req(
            RequestCode::PULL_MESSAGE,
            &[("topic", "T"), ("consumerGroup", "G")],
        );
        let n = parse(&r).unwrap().needed;
        assert_eq!(n, vec![("T".into(), SUB), ("%RETRY%G".into(), SUB)]);
        let hb = RemotingCommand::request(RequestCode::HEART_BEAT, 1).with_body(
            &br#"{"clientID":"c","consumerDataSet":[{"groupName":"G","subscriptionDataSet":[{"topic":"T"}]}],"producerDataSet":[]}"#[..],
        );
        let n = parse(&hb).unwrap().needed;
        assert_eq!(n, vec![("%RETRY%G".into(), SUB), ("T".into(), SUB)]);
        let bad = RemotingCommand::request(RequestCode::HEART_BEAT, 1).with_body(&b"{"[..]);
        assert!(parse(&bad).is_err());
    }
}
