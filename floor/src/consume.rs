//! What the null responder needs to serve consumers: the canned pull answers, a backlog per
//! queue, and the few group requests a push consumer sends before and while it pulls
//! (heartbeat, consumer list, offsets, unregister), answered as a broker would and without
//! bookkeeping beyond the group's client ids.
//!
//! The client ids are what rebalance allocates by: a consumer that is not in the list it gets
//! back pulls nothing. Each connection drops the ids it registered when it closes, so a
//! responder kept up across several runs never hands queues to a consumer that is gone.

use std::collections::BTreeSet;

use parking_lot::Mutex;
use remoting::{RemotingCommand, RequestCode, ResponseCode};

use crate::canned::{scan_field, write_pull_answer, CannedBatch};

/// Pull answers when the request holds no `maxMsgNums`.
const DEFAULT_BATCH: usize = 32;
/// The most records one canned answer holds (`maxTransferCountOnMessageInMemory` is 32 by
/// default; 1024 leaves room for larger `pullBatchSize` experiments).
pub const CANNED_RECORDS: usize = 1024;

/// What [`ConsumeSide::answer`] did with a request.
pub enum Answer {
    /// The answer frame is already in `out` (a pull).
    Written,
    /// This answer is to be encoded and sent.
    Command(RemotingCommand),
    /// Not a consumer request.
    NotMine,
}

/// Shared by every connection of one responder.
pub struct ConsumeSide {
    batch: CannedBatch,
    /// Messages per queue; pulls at or past it get PULL_NOT_FOUND. `None`: endless.
    backlog: Option<i64>,
    clients: Mutex<BTreeSet<String>>,
}

impl ConsumeSide {
    pub fn new(message_size: usize, backlog: Option<i64>) -> ConsumeSide {
        let stored_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        ConsumeSide {
            batch: CannedBatch::new(CANNED_RECORDS, message_size, "BenchmarkTopic", stored_ms),
            backlog,
            clients: Mutex::new(BTreeSet::new()),
        }
    }

    /// Answers a PULL_MESSAGE from its JSON header alone; false if the header lacks the
    /// fields (the caller then decodes the frame and uses [`ConsumeSide::answer`]).
    pub fn answer_pull_fast(&self, header: &[u8], opaque: i32, out: &mut Vec<u8>) -> bool {
        let (Some(queue_id), Some(offset)) = (
            scan_field(header, "queueId"),
            scan_field(header, "queueOffset"),
        ) else {
            return false;
        };
        let mut want =
            scan_field(header, "maxMsgNums").map_or(DEFAULT_BATCH, |n| n.max(0) as usize);
        // A push consumer also pulls its group's retry topic: nothing ever fails here, so it
        // is empty, as on a broker.
        if find(header, br#""topic":"%RETRY%"#) {
            want = 0;
        }
        self.write_pull(out, opaque, queue_id as i32, offset, want);
        true
    }

    fn write_pull(&self, out: &mut Vec<u8>, opaque: i32, queue_id: i32, offset: i64, want: usize) {
        let offset = offset.max(0);
        let (n, max) = match self.backlog {
            Some(max) => ((max - offset).clamp(0, want as i64) as usize, max),
            None => (want, offset + want as i64),
        };
        write_pull_answer(out, opaque, &self.batch, queue_id, offset, n, max);
    }

    /// The answer to a decoded consumer request; `mine` collects the client ids this
    /// connection registered.
    pub fn answer(
        &self,
        cmd: &RemotingCommand,
        mine: &mut Vec<String>,
        out: &mut Vec<u8>,
    ) -> Answer {
        let ok = ResponseCode::SUCCESS.as_i32();
        let code = cmd.code;
        let is = |c: RequestCode| code == c.as_i32();
        let resp = if is(RequestCode::PULL_MESSAGE) {
            let field = |k: &str| cmd.ext(k).and_then(|v| v.parse::<i64>().ok());
            let retry = cmd.ext("topic").is_some_and(|t| t.starts_with("%RETRY%"));
            let want = match field("maxMsgNums") {
                _ if retry => 0,
                Some(n) => n.max(0) as usize,
                None => DEFAULT_BATCH,
            };
            let (q, o) = (
                field("queueId").unwrap_or(0),
                field("queueOffset").unwrap_or(0),
            );
            self.write_pull(out, cmd.opaque, q as i32, o, want);
            return Answer::Written;
        } else if is(RequestCode::HEART_BEAT) {
            let id = serde_json::from_slice::<serde_json::Value>(&cmd.body)
                .ok()
                .and_then(|v| v["clientID"].as_str().map(str::to_owned));
            if let Some(id) = id {
                if self.clients.lock().insert(id.clone()) {
                    mine.push(id);
                }
            }
            RemotingCommand::response_to(cmd, ok, None)
        } else if is(RequestCode::UNREGISTER_CLIENT) {
            if let Some(id) = cmd.ext("clientID") {
                self.clients.lock().remove(id);
            }
            RemotingCommand::response_to(cmd, ok, None)
        } else if is(RequestCode::GET_CONSUMER_LIST_BY_GROUP) {
            let ids: Vec<String> = self.clients.lock().iter().cloned().collect();
            let body = serde_json::json!({ "consumerIdList": ids }).to_string();
            RemotingCommand::response_to(cmd, ok, None).with_body(body.into_bytes())
        } else if is(RequestCode::QUERY_CONSUMER_OFFSET) || is(RequestCode::GET_MIN_OFFSET) {
            with_offset(cmd, 0)
        } else if is(RequestCode::GET_MAX_OFFSET) {
            with_offset(cmd, self.backlog.unwrap_or(0))
        } else if is(RequestCode::UPDATE_CONSUMER_OFFSET) {
            RemotingCommand::response_to(cmd, ok, None)
        } else {
            return Answer::NotMine;
        };
        Answer::Command(resp)
    }

    /// A connection closed: the consumers it registered are gone.
    pub fn forget(&self, mine: &[String]) {
        let mut clients = self.clients.lock();
        for id in mine {
            clients.remove(id);
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

fn with_offset(cmd: &RemotingCommand, offset: i64) -> RemotingCommand {
    let mut fields = std::collections::BTreeMap::new();
    fields.insert("offset".to_owned(), offset.to_string());
    RemotingCommand::response_to(cmd, ResponseCode::SUCCESS.as_i32(), None).with_ext_fields(fields)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use remoting::headers::{PullMessageRequestHeader, PullMessageResponseHeader};
    use remoting::message::decode_records;

    fn pull(queue_id: i32, offset: i64, max: i32) -> RemotingCommand {
        RemotingCommand::request(RequestCode::PULL_MESSAGE, 9).with_header(
            &PullMessageRequestHeader {
                consumer_group: "g".into(),
                topic: "BenchmarkTopic".into(),
                queue_id,
                queue_offset: offset,
                max_msg_nums: max,
                sys_flag: 0,
                commit_offset: 0,
                suspend_timeout_millis: 0,
                subscription: None,
                sub_version: 0,
                expression_type: Some("TAG".into()),
                max_msg_bytes: None,
            },
        )
    }

    fn header_of(cmd: &RemotingCommand) -> Vec<u8> {
        let mut buf = bytes::BytesMut::new();
        cmd.encode(&mut buf);
        let header_len = u32::from_be_bytes(buf[4..8].try_into().unwrap()) & 0x00FF_FFFF;
        buf[8..8 + header_len as usize].to_vec()
    }

    fn command(a: Answer) -> RemotingCommand {
        match a {
            Answer::Command(c) => c,
            _ => panic!("expected an answer to encode"),
        }
    }

    fn decode(out: &[u8]) -> RemotingCommand {
        RemotingCommand::decode(Bytes::copy_from_slice(&out[4..])).unwrap()
    }

    #[test]
    fn a_finite_backlog_ends_in_pull_not_found() {
        let side = ConsumeSide::new(64, Some(40));
        let mut out = Vec::new();
        assert!(side.answer_pull_fast(&header_of(&pull(2, 0, 32)), 9, &mut out));
        let r = decode(&out);
        assert_eq!(decode_records(&r.body).unwrap().len(), 32);
        let next = r
            .header::<PullMessageResponseHeader>()
            .unwrap()
            .next_begin_offset;
        assert_eq!(next, 32);
        out.clear();
        assert!(side.answer_pull_fast(&header_of(&pull(2, next, 32)), 9, &mut out));
        let r = decode(&out);
        let msgs = decode_records(&r.body).unwrap();
        assert_eq!(
            (msgs.len(), msgs[0].queue_offset, msgs[0].queue_id),
            (8, 32, 2)
        );
        out.clear();
        side.answer_pull_fast(&header_of(&pull(2, 40, 32)), 9, &mut out);
        assert_eq!(decode(&out).code, crate::canned::PULL_NOT_FOUND);

        // The retry topic is empty.
        let mut retry = pull(0, 0, 32);
        retry.ext_fields.insert("topic".into(), "%RETRY%g".into());
        out.clear();
        side.answer_pull_fast(&header_of(&retry), 9, &mut out);
        assert_eq!(decode(&out).code, crate::canned::PULL_NOT_FOUND);
        out.clear();
        assert!(matches!(
            side.answer(&retry, &mut Vec::new(), &mut out),
            Answer::Written
        ));
        assert_eq!(decode(&out).code, crate::canned::PULL_NOT_FOUND);
    }

    #[test]
    fn the_group_lists_the_consumers_that_are_connected() {
        let side = ConsumeSide::new(16, None);
        let (mut a, mut b, mut out) = (Vec::new(), Vec::new(), Vec::new());
        for (id, mine) in [("c1", &mut a), ("c2", &mut b)] {
            let hb = RemotingCommand::request(RequestCode::HEART_BEAT, 1)
                .with_body(format!("{{\"clientID\":\"{id}\"}}").into_bytes());
            let r = command(side.answer(&hb, mine, &mut out));
            assert_eq!(r.code, 0);
        }
        let list = RemotingCommand::request(RequestCode::GET_CONSUMER_LIST_BY_GROUP, 2);
        let r = command(side.answer(&list, &mut a, &mut out));
        assert_eq!(r.body.as_ref(), br#"{"consumerIdList":["c1","c2"]}"#);
        side.forget(&a);
        let r = command(side.answer(&list, &mut b, &mut out));
        assert_eq!(r.body.as_ref(), br#"{"consumerIdList":["c2"]}"#);
        let q = RemotingCommand::request(RequestCode::QUERY_CONSUMER_OFFSET, 3);
        let r = command(side.answer(&q, &mut b, &mut out));
        assert_eq!(r.ext("offset"), Some("0"));
        let other = RemotingCommand::request(RequestCode::SEND_MESSAGE, 4);
        assert!(matches!(
            side.answer(&other, &mut b, &mut out),
            Answer::NotMine
        ));
        assert!(out.is_empty(), "only pulls write frames directly");
    }
}
