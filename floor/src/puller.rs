//! The minimal puller: the most messages one thread can take off one connection with the
//! broker's real pull protocol.
//!
//! One PULL_MESSAGE in flight per queue, long polling off (no suspend flag, so an empty queue
//! answers at once), `batch` messages a pull, the subscription carried in the request (no
//! heartbeat needed). Each answer is read only as far as a consumer must: the code, the
//! `nextBeginOffset` of the next pull, and the records' length fields to count them. No
//! record is decoded or CRC-checked, no histogram is kept, nothing is committed: what is left
//! is the protocol's own cost, the floor any consumer pays.
//!
//! Against a broker with a prepared backlog, a queue that answers PULL_NOT_FOUND (19) or
//! PULL_RETRY_IMMEDIATELY (20) is drained; the run ends when every queue is, or at the
//! duration, whichever comes first.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use bytes::BytesMut;
use remoting::headers::PullMessageRequestHeader;
use remoting::{RemotingCommand, RequestCode, MAX_FRAME_LEN};
use thiserror::Error;

use crate::canned::scan_field;

/// PullSysFlag: the subscription is in the request (`PullSysFlag.FLAG_SUBSCRIPTION`).
const FLAG_SUBSCRIPTION: i32 = 0x4;
/// A read that waits longer than this means the peer is not answering.
const STALL: Duration = Duration::from_secs(5);

/// What the puller does; bounded in time and count so that it always stops by itself.
#[derive(Debug, Clone)]
pub struct PullerConfig {
    pub target: SocketAddr,
    pub topic: String,
    pub group: String,
    /// Queues 0..queues, one pull in flight on each.
    pub queues: u32,
    /// `maxMsgNums` of every pull.
    pub batch: u32,
    /// Not counted: lets the connection and both peers' caches settle.
    pub warmup: Duration,
    pub duration: Duration,
    /// Hard stop on the messages taken, whatever the duration.
    pub max_messages: u64,
}

/// What was measured in the counted window.
#[derive(Debug, Clone, Copy)]
pub struct PullerReport {
    pub messages: u64,
    pub pulls: u64,
    pub elapsed: Duration,
    /// Whether every queue answered "no new message" (a prepared backlog was drained).
    pub drained: bool,
    /// Messages over the whole run, warm-up included: what the process's CPU time paid for.
    pub total: u64,
}

impl PullerReport {
    pub fn rate(&self) -> f64 {
        self.messages as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

#[derive(Debug, Error)]
pub enum PullerError {
    #[error("connect to {addr}: {source}")]
    Connect { addr: SocketAddr, source: io::Error },
    #[error("connection: {0}")]
    Io(#[from] io::Error),
    #[error("the peer sent a frame of {0} bytes, over the {MAX_FRAME_LEN}-byte limit")]
    FrameTooLong(usize),
    #[error("an answer without a readable code, opaque or header")]
    Malformed,
    #[error("pull of queue {queue} answered code {code}")]
    Refused { queue: i32, code: i64 },
    #[error("the peer closed the connection")]
    Closed,
    #[error("no answer within {0:?}")]
    Stalled(Duration),
    #[error("queues and batch must be at least 1")]
    Empty,
}

/// One answer, as far as the puller reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PullAnswer {
    pub code: i64,
    /// The request's opaque: the queue it was for.
    pub opaque: i64,
    pub next_begin: Option<i64>,
    /// Whole records in the body.
    pub records: u64,
}

/// Reads the answer in one frame (its 4-byte length prefix stripped).
pub fn read_answer(frame: &[u8]) -> Option<PullAnswer> {
    let mark = u32::from_be_bytes(frame.get(..4)?.try_into().ok()?);
    let header_len = (mark & 0x00FF_FFFF) as usize;
    let header = frame.get(4..4 + header_len)?;
    Some(PullAnswer {
        code: scan_field(header, "code")?,
        opaque: scan_field(header, "opaque")?,
        next_begin: scan_field(header, "nextBeginOffset"),
        records: count_records(&frame[4 + header_len..]),
    })
}

/// Whole records at the start of a pull body, by their TOTALSIZE fields.
pub fn count_records(body: &[u8]) -> u64 {
    let (mut pos, mut n) = (0usize, 0u64);
    while body.len() - pos >= 4 {
        let len = i32::from_be_bytes(body[pos..pos + 4].try_into().expect("4 bytes"));
        if len <= 0 || body.len() - pos < len as usize {
            break;
        }
        pos += len as usize;
        n += 1;
    }
    n
}

fn pull_frame(cfg: &PullerConfig, queue: i32, offset: i64, buf: &mut BytesMut) {
    let cmd = RemotingCommand::request(RequestCode::PULL_MESSAGE, queue).with_header(
        &PullMessageRequestHeader {
            consumer_group: cfg.group.clone(),
            topic: cfg.topic.clone(),
            queue_id: queue,
            queue_offset: offset,
            max_msg_nums: cfg.batch as i32,
            sys_flag: FLAG_SUBSCRIPTION,
            commit_offset: 0,
            suspend_timeout_millis: 0,
            subscription: Some("*".into()),
            sub_version: 0,
            expression_type: Some("TAG".into()),
            max_msg_bytes: None,
        },
    );
    cmd.encode(buf);
}

pub fn run(cfg: &PullerConfig) -> Result<PullerReport, PullerError> {
    if cfg.queues == 0 || cfg.batch == 0 {
        return Err(PullerError::Empty);
    }
    let mut stream =
        TcpStream::connect_timeout(&cfg.target, STALL).map_err(|source| PullerError::Connect {
            addr: cfg.target,
            source,
        })?;
    stream.set_nodelay(true)?;
    stream.set_read_timeout(Some(STALL))?;
    let start = Instant::now();
    let measure_from = start + cfg.warmup;
    let end = measure_from + cfg.duration;
    let mut out = BytesMut::new();
    for q in 0..cfg.queues as i32 {
        pull_frame(cfg, q, 0, &mut out);
    }
    stream.write_all(&out)?;
    out.clear();
    let mut outstanding = cfg.queues as usize;
    let mut drained = vec![false; cfg.queues as usize];
    let (mut messages, mut pulls, mut taken) = (0u64, 0u64, 0u64);
    let mut last_answer = start;
    let mut inbox = vec![0u8; 1 << 20];
    let mut filled = 0usize;
    while outstanding > 0 {
        if filled == inbox.len() {
            inbox.resize(inbox.len() * 2, 0);
        }
        let n = match stream.read(&mut inbox[filled..]) {
            Ok(0) => return Err(PullerError::Closed),
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Err(PullerError::Stalled(STALL))
            }
            Err(e) => return Err(e.into()),
        };
        filled += n;
        let now = Instant::now();
        let counting = now >= measure_from && now < end;
        let sending = now < end && taken < cfg.max_messages;
        let mut pos = 0;
        while filled - pos >= 4 {
            let len = u32::from_be_bytes(inbox[pos..pos + 4].try_into().expect("4 bytes")) as usize;
            if len > MAX_FRAME_LEN {
                return Err(PullerError::FrameTooLong(len));
            }
            if filled - pos < 4 + len {
                break;
            }
            let a = read_answer(&inbox[pos + 4..pos + 4 + len]).ok_or(PullerError::Malformed)?;
            pos += 4 + len;
            outstanding -= 1;
            let queue = a.opaque as i32;
            let slot = drained
                .get_mut(queue as usize)
                .ok_or(PullerError::Malformed)?;
            match a.code {
                0 => {
                    taken += a.records;
                    if counting {
                        messages += a.records;
                        pulls += 1;
                        last_answer = now;
                    }
                }
                19 | 20 => *slot = true,
                code => return Err(PullerError::Refused { queue, code }),
            }
            if sending && !*slot {
                pull_frame(
                    cfg,
                    queue,
                    a.next_begin.ok_or(PullerError::Malformed)?,
                    &mut out,
                );
                outstanding += 1;
            }
        }
        inbox.copy_within(pos..filled, 0);
        filled -= pos;
        if !out.is_empty() {
            stream.write_all(&out)?;
            out.clear();
        }
    }
    let drained = drained.iter().all(|d| *d);
    // A drained backlog ends the window at its last answer; otherwise the window is whole.
    let elapsed = if drained && last_answer < end {
        last_answer.saturating_duration_since(measure_from)
    } else {
        cfg.duration
    };
    Ok(PullerReport {
        messages,
        pulls,
        elapsed,
        drained,
        total: taken,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::canned::{write_pull_answer, CannedBatch};

    #[test]
    fn an_answer_is_read_as_far_as_a_consumer_must() {
        let batch = CannedBatch::new(40, 100, "T", 0);
        let mut out = Vec::new();
        write_pull_answer(&mut out, 3, &batch, 3, 64, 32, 1000);
        let a = read_answer(&out[4..]).unwrap();
        assert_eq!(
            a,
            PullAnswer {
                code: 0,
                opaque: 3,
                next_begin: Some(96),
                records: 32
            }
        );
        out.clear();
        write_pull_answer(&mut out, 1, &batch, 1, 7, 0, 7);
        let a = read_answer(&out[4..]).unwrap();
        assert_eq!((a.code, a.records, a.next_begin), (19, 0, Some(7)));
        assert_eq!(read_answer(&[0, 0]), None);
    }

    #[test]
    fn records_are_counted_whole() {
        let mut body = Vec::new();
        for len in [12u32, 8] {
            body.extend_from_slice(&len.to_be_bytes());
            body.resize(body.len() + len as usize - 4, 0);
        }
        assert_eq!(count_records(&body), 2);
        body.extend_from_slice(&[0, 0, 0, 50, 1, 2]);
        assert_eq!(count_records(&body), 2, "a cut record is not counted");
        assert_eq!(
            count_records(&[0, 0, 0, 0, 9, 9, 9, 9]),
            0,
            "a zero length ends"
        );
        assert_eq!(count_records(&[]), 0);
    }

    #[test]
    fn it_pulls_the_responders_backlog_to_the_end() {
        let responder = crate::responder::NullResponder::bind("127.0.0.1:0".parse().unwrap())
            .unwrap()
            .with_pulls(64, Some(1000));
        let running = responder.start().unwrap();
        let report = run(&PullerConfig {
            target: running.addr(),
            topic: "BenchmarkTopic".into(),
            group: "floor".into(),
            queues: 4,
            batch: 32,
            warmup: Duration::ZERO,
            duration: Duration::from_secs(20),
            max_messages: 1_000_000,
        })
        .unwrap();
        assert!(report.drained);
        assert_eq!(report.messages, 4000, "every queue's 1000 messages, once");
        assert_eq!(
            report.pulls,
            4 * 32,
            "31 pulls of 32 and one of 8 per queue"
        );
        running.stop();
    }
}
