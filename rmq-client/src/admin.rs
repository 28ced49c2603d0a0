//! A small synchronous request/response helper for admin calls (topic creation, runtime info,
//! reading the store back): one blocking connection, one request at a time.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use bytes::BytesMut;
use remoting::headers::CreateTopicRequestHeader;
use remoting::{decode_frame, RemotingCommand, RequestCode, MAX_FRAME_LEN};

/// Client-side errors of the admin helper.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("connect to {addr}: {source}")]
    Connect {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
    #[error("no response within {0:?}")]
    Timeout(Duration),
    #[error("malformed frame: {0}")]
    Decode(#[from] remoting::DecodeError),
    #[error("connection closed by the broker")]
    Closed,
    #[error("broker answered code {code}: {remark}")]
    Refused { code: i32, remark: String },
    #[error("bad runtime-info body: {0}")]
    Body(String),
}

/// A blocking connection for admin calls, one request at a time.
pub struct AdminConn {
    stream: TcpStream,
    buf: BytesMut,
    opaque: i32,
}

impl AdminConn {
    pub fn connect(addr: SocketAddr, timeout: Duration) -> Result<AdminConn, ClientError> {
        let stream = TcpStream::connect_timeout(&addr, timeout)
            .map_err(|source| ClientError::Connect { addr, source })?;
        stream.set_nodelay(true)?;
        Ok(AdminConn {
            stream,
            buf: BytesMut::with_capacity(64 * 1024),
            opaque: 1 << 30,
        })
    }

    /// [`AdminConn::call`], with any code but success as [`ClientError::Refused`].
    fn call_ok(
        &mut self,
        cmd: RemotingCommand,
        timeout: Duration,
    ) -> Result<RemotingCommand, ClientError> {
        let resp = self.call(cmd, timeout)?;
        if resp.code != 0 {
            return Err(ClientError::Refused {
                code: resp.code,
                remark: resp.remark.unwrap_or_default(),
            });
        }
        Ok(resp)
    }

    /// Sends `cmd` (its opaque is replaced) and waits for the response with that opaque;
    /// other responses that arrive first are dropped.
    pub fn call(
        &mut self,
        cmd: RemotingCommand,
        timeout: Duration,
    ) -> Result<RemotingCommand, ClientError> {
        let opaque = self.send(cmd, timeout)?;
        let deadline = Instant::now() + timeout;
        loop {
            let resp = self.read_response(deadline, timeout)?;
            if resp.opaque == opaque {
                return Ok(resp);
            }
        }
    }

    /// Writes `cmd` with the next opaque, which it returns; answers are read with
    /// [`AdminConn::read_response`], so several requests can be in flight.
    pub fn send(
        &mut self,
        mut cmd: RemotingCommand,
        timeout: Duration,
    ) -> Result<i32, ClientError> {
        self.opaque = self.opaque.wrapping_add(1);
        cmd.opaque = self.opaque;
        self.stream.set_write_timeout(Some(timeout))?;
        self.stream.write_all(&cmd.to_bytes())?;
        Ok(cmd.opaque)
    }

    /// The next response (broker-initiated requests are skipped), or `Timeout(timeout)` at
    /// `deadline`.
    pub fn read_response(
        &mut self,
        deadline: Instant,
        timeout: Duration,
    ) -> Result<RemotingCommand, ClientError> {
        let mut chunk = [0u8; 16 * 1024];
        loop {
            while let Some(resp) = decode_frame(&mut self.buf, MAX_FRAME_LEN)? {
                if resp.is_response() {
                    return Ok(resp);
                }
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(ClientError::Timeout(timeout));
            }
            self.stream.set_read_timeout(Some(left))?;
            match self.stream.read(&mut chunk) {
                Ok(0) => return Err(ClientError::Closed),
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    return Err(ClientError::Timeout(timeout))
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// UPDATE_AND_CREATE_TOPIC with `queues` read and write queues, perm 6 (read + write).
    pub fn create_topic(
        &mut self,
        topic: &str,
        queues: u32,
        timeout: Duration,
    ) -> Result<(), ClientError> {
        let header = CreateTopicRequestHeader {
            topic: topic.to_owned(),
            default_topic: "TBW102".into(),
            read_queue_nums: queues as i32,
            write_queue_nums: queues as i32,
            perm: 6,
            topic_filter_type: "SINGLE_TAG".into(),
            topic_sys_flag: Some(0),
            order: Some(false),
        };
        self.call_ok(
            RemotingCommand::request(RequestCode::UPDATE_AND_CREATE_TOPIC, 0).with_header(&header),
            timeout,
        )?;
        Ok(())
    }

    /// UPDATE_AND_CREATE_TOPIC_LIST (18, 5.x): `topics` in one request, each with `queues` read
    /// and write queues, perm 6. The body is 5.3.3's `CreateTopicListRequestBody`, a JSON list
    /// of `TopicConfig`s; the broker registers them with the name server in one increment.
    pub fn create_topic_list(
        &mut self,
        topics: &[&str],
        queues: u32,
        timeout: Duration,
    ) -> Result<(), ClientError> {
        let list: Vec<serde_json::Value> = topics
            .iter()
            .map(|t| {
                serde_json::json!({
                    "topicName": t, "readQueueNums": queues, "writeQueueNums": queues, "perm": 6,
                    "topicFilterType": "SINGLE_TAG", "topicSysFlag": 0, "order": false,
                    "attributes": {},
                })
            })
            .collect();
        let body = serde_json::json!({ "topicConfigList": list }).to_string();
        self.call_ok(
            RemotingCommand::request(RequestCode::UPDATE_AND_CREATE_TOPIC_LIST, 0)
                .with_body(body.into_bytes()),
            timeout,
        )?;
        Ok(())
    }

    /// GET_BROKER_RUNTIME_INFO (28): the `table` of the body (§10).
    pub fn runtime_info(
        &mut self,
        timeout: Duration,
    ) -> Result<BTreeMap<String, String>, ClientError> {
        let resp = self.call_ok(
            RemotingCommand::request(RequestCode::GET_BROKER_RUNTIME_INFO, 0),
            timeout,
        )?;
        parse_runtime_info(&resp.body)
    }
    /// GET_BROKER_CONFIG (26): the configuration the broker runs with, every key of every
    /// config object, as it answers it (`key=value` lines; Apache RocketMQ's
    /// `Configuration.getAllConfigsFormatString`).
    pub fn broker_config(
        &mut self,
        timeout: Duration,
    ) -> Result<BTreeMap<String, String>, ClientError> {
        let resp = self.call_ok(
            RemotingCommand::request(RequestCode::GET_BROKER_CONFIG, 0),
            timeout,
        )?;
        Ok(parse_properties(&resp.body))
    }
}

/// `key=value` lines (Java properties as RocketMQ writes them: no escapes, no continuation).
pub fn parse_properties(body: &[u8]) -> BTreeMap<String, String> {
    String::from_utf8_lossy(body)
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_owned(), v.to_owned()))
        .collect()
}

/// Parses `{"table":{k: "v", ...}}`; non-string values are kept in their JSON form.
pub fn parse_runtime_info(body: &[u8]) -> Result<BTreeMap<String, String>, ClientError> {
    let v: serde_json::Value =
        serde_json::from_slice(body).map_err(|e| ClientError::Body(e.to_string()))?;
    let table = v
        .get("table")
        .and_then(|t| t.as_object())
        .ok_or_else(|| ClientError::Body("no `table` object".into()))?;
    Ok(table
        .iter()
        .map(|(k, v)| {
            (
                k.clone(),
                v.as_str().map_or_else(|| v.to_string(), str::to_owned),
            )
        })
        .collect())
}
