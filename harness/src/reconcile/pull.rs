//! The sequential reader: one queue at a time, PULL_MESSAGE from offset 0 until the broker has
//! nothing more, every record CRC-checked.

use std::time::Duration;

use remoting::headers::PullMessageRequestHeader;
use remoting::message::{decode_record, property, MessageDecodeError, RecordAt};
use remoting::{RemotingCommand, RequestCode, ResponseCode};

use rmq_client::admin::{AdminConn, ClientError};

/// The consumer group of the reader; never committed (no COMMIT_OFFSET flag).
const GROUP: &str = "harness_reconcile";
/// Messages asked per pull (RocketMQ serves at most 32 from memory per pull anyway).
const BATCH: i32 = 32;
/// Pulls per queue before the reader gives up: 10 million messages at 32 a pull.
const MAX_PULLS: u32 = 320_000;

/// What one stored record yields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stored {
    /// A whole record; its UNIQ_KEY, if any.
    Key(Option<String>),
    /// A record whose body CRC does not match.
    Corrupt,
}

/// Reads queue `queue_id` of `topic` from offset 0 to its end and calls `visit` per record.
/// Returns the number of records read.
pub fn read_queue(
    conn: &mut AdminConn,
    topic: &str,
    queue_id: i32,
    timeout: Duration,
    visit: impl FnMut(Stored),
) -> Result<u64, ClientError> {
    read_queue_from(conn, topic, queue_id, 0, timeout, visit).map(|(read, _)| read)
}

/// [`read_queue`] from offset `from`; returns the records read and the offset after the last
/// one (where the next read starts).
pub fn read_queue_from(
    conn: &mut AdminConn,
    topic: &str,
    queue_id: i32,
    from: i64,
    timeout: Duration,
    mut visit: impl FnMut(Stored),
) -> Result<(u64, i64), ClientError> {
    let mut offset = from;
    let mut read = 0u64;
    for _ in 0..MAX_PULLS {
        let resp = conn.call(pull_request(topic, queue_id, offset), timeout)?;
        let (n, next) = pull_answer(resp, offset, &mut visit)?;
        read += n;
        match next {
            Some(n) => offset = n,
            None => return Ok((read, offset)),
        }
    }
    Ok((read, offset))
}

/// The PULL_MESSAGE of the reader: up to [`BATCH`] records of `queue_id` from `offset`, never
/// held by the broker, never committing an offset.
pub fn pull_request(topic: &str, queue_id: i32, offset: i64) -> RemotingCommand {
    let h = PullMessageRequestHeader {
        consumer_group: GROUP.into(),
        topic: topic.to_owned(),
        queue_id,
        queue_offset: offset,
        max_msg_nums: BATCH,
        // SUBSCRIPTION: the expression travels with the pull, no heartbeat needed.
        sys_flag: 4,
        commit_offset: 0,
        suspend_timeout_millis: 0,
        subscription: Some("*".into()),
        sub_version: 0,
        expression_type: Some("TAG".into()),
        max_msg_bytes: None,
    };
    RemotingCommand::request(RequestCode::PULL_MESSAGE, 0).with_header(&h)
}

/// The answer to a [`pull_request`] at `offset`: its records go to `visit`; returns how many,
/// and the offset to pull next, or None at the end of the queue.
pub fn pull_answer(
    resp: RemotingCommand,
    offset: i64,
    visit: &mut impl FnMut(Stored),
) -> Result<(u64, Option<i64>), ClientError> {
    let next: Option<i64> = resp.ext("nextBeginOffset").and_then(|v| v.parse().ok());
    let read = match resp.code {
        c if c == ResponseCode::SUCCESS as i32 => visit_records(&resp.body, visit),
        // Nothing at this offset (the end of the queue), or nothing matched.
        c if c == ResponseCode::PULL_NOT_FOUND as i32 => return Ok((0, None)),
        c if c == ResponseCode::PULL_RETRY_IMMEDIATELY as i32
            || c == ResponseCode::PULL_OFFSET_MOVED as i32 =>
        {
            0
        }
        code => {
            return Err(ClientError::Refused {
                code,
                remark: resp.remark.unwrap_or_default(),
            })
        }
    };
    Ok((read, next.filter(|&n| n > offset)))
}

/// Decodes a PULL body record by record, so one corrupt record does not hide the others.
fn visit_records(mut buf: &[u8], visit: &mut impl FnMut(Stored)) -> u64 {
    let mut n = 0;
    while buf.len() >= 8 {
        let total = i32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
        match decode_record(buf, true) {
            Ok(RecordAt::Message { record, len }) => {
                visit(Stored::Key(
                    property(&record.properties, "UNIQ_KEY").map(str::to_owned),
                ));
                buf = &buf[len..];
            }
            Err(MessageDecodeError::CrcMismatch { .. })
                if total > 0 && total as usize <= buf.len() =>
            {
                visit(Stored::Corrupt);
                buf = &buf[total as usize..];
            }
            // A record that cannot be framed: count it and stop reading this body.
            Err(_) => {
                visit(Stored::Corrupt);
                n += 1;
                break;
            }
            Ok(RecordAt::EndOfFile { .. }) | Ok(RecordAt::Empty) => break,
        }
        n += 1;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BytesMut;
    use remoting::message::{encode_properties, MessageRecord};

    fn record(key: &str, body: &[u8]) -> BytesMut {
        let r = MessageRecord {
            queue_id: 0,
            flag: 0,
            queue_offset: 0,
            physical_offset: 0,
            sys_flag: 0,
            born_timestamp: 0,
            born_host: "127.0.0.1:1".parse().unwrap(),
            store_timestamp: 0,
            store_host: "127.0.0.1:2".parse().unwrap(),
            reconsume_times: 0,
            prepared_transaction_offset: 0,
            body: body.to_vec(),
            topic: "T".into(),
            properties: encode_properties([("UNIQ_KEY", key)]),
        };
        let mut b = BytesMut::new();
        r.encode(&mut b);
        b
    }

    #[test]
    fn a_corrupt_record_is_counted_and_the_next_one_still_read() {
        let mut body = record("A", b"hello");
        let bad_at = body.len();
        body.extend_from_slice(&record("B", b"world"));
        body.extend_from_slice(&record("C", b"!"));
        // Flip a byte of B's body: its CRC no longer matches.
        let body_pos = bad_at
            + body[bad_at..]
                .windows(5)
                .position(|w| w == b"world")
                .unwrap();
        body[body_pos] ^= 0xFF;
        let mut seen = Vec::new();
        let n = visit_records(&body, &mut |s| seen.push(s));
        assert_eq!(n, 3);
        assert_eq!(
            seen,
            vec![
                Stored::Key(Some("A".into())),
                Stored::Corrupt,
                Stored::Key(Some("C".into()))
            ]
        );
    }
}
