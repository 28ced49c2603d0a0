//! A peer that answers every request at once and does as little as possible in between.
//!
//! Send requests (10, 310, 320) get a success answer with the header a 5.3 broker writes
//! (`msgId`, `queueId`, `queueOffset`, `MSG_REGION`, `TRACE_ON`), built from a fixed template:
//! only `opaque` and the offset change. Oneway sends get nothing, as from a broker. Topic creation
//! (17), heartbeats (34) and runtime info (28, an empty table) are answered from a full decode,
//! since they are rare; any other code gets 3, "request type N not supported".
//!
//! Pulls (11) get a canned FOUND answer of `maxMsgNums` real records at the offset asked for,
//! read from the JSON header without a decode (`consume.rs`), so that a consumer can be
//! measured the way a sender is; the group requests a push consumer needs around its pulls
//! are answered from a full decode.
//!
//! One named thread per connection; every connection thread and the accept thread stop within
//! 100 ms of [`Running::stop`] (or drop) and are joined. A frame longer than
//! [`remoting::MAX_FRAME_LEN`] closes its connection before anything is allocated for it.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use remoting::{
    peek_frame, HeaderPeek, RemotingCommand, RequestCode, ResponseCode, SerializeType, FLAG_ONEWAY,
    MAX_FRAME_LEN,
};

use crate::consume::{Answer, ConsumeSide};

/// How often blocked threads look at the stop flag.
const POLL: Duration = Duration::from_millis(100);
/// Read granularity; large enough that one read usually holds hundreds of pipelined requests.
const READ_CHUNK: usize = 256 * 1024;

/// A bound, not yet serving responder.
pub struct NullResponder {
    listener: TcpListener,
    consume: Arc<ConsumeSide>,
}

/// A serving responder; dropping it stops and joins every thread.
pub struct Running {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    answered: Arc<AtomicU64>,
    accept: Option<JoinHandle<()>>,
}

impl NullResponder {
    pub fn bind(addr: SocketAddr) -> io::Result<NullResponder> {
        let listener = TcpListener::bind(addr)?;
        listener.set_nonblocking(true)?;
        Ok(NullResponder {
            listener,
            consume: Arc::new(ConsumeSide::new(128, None)),
        })
    }

    /// Pull answers carry messages of `message_size` body bytes; with `backlog`, each queue
    /// holds that many and then answers PULL_NOT_FOUND.
    pub fn with_pulls(mut self, message_size: usize, backlog: Option<i64>) -> NullResponder {
        self.consume = Arc::new(ConsumeSide::new(message_size, backlog));
        self
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Starts the accept thread.
    pub fn start(self) -> io::Result<Running> {
        let addr = self.listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let answered = Arc::new(AtomicU64::new(0));
        let (stop2, answered2) = (stop.clone(), answered.clone());
        let accept = thread::Builder::new()
            .name("null-accept".into())
            .spawn(move || accept_loop(self.listener, &stop2, &answered2, &self.consume))?;
        Ok(Running {
            addr,
            stop,
            answered,
            accept: Some(accept),
        })
    }
}

impl Running {
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Responses written so far, over all connections.
    pub fn answered(&self) -> u64 {
        self.answered.load(Ordering::Relaxed)
    }

    /// Stops accepting, closes every connection and joins every thread.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn accept_loop(
    listener: TcpListener,
    stop: &Arc<AtomicBool>,
    answered: &Arc<AtomicU64>,
    consume: &Arc<ConsumeSide>,
) {
    let mut conns: Vec<JoinHandle<()>> = Vec::new();
    let mut next_id = 0u64;
    while !stop.load(Ordering::Acquire) {
        match listener.accept() {
            Ok((stream, _)) => {
                next_id += 1;
                let (stop, answered, consume) = (stop.clone(), answered.clone(), consume.clone());
                let spawned = thread::Builder::new()
                    .name(format!("null-conn-{next_id}"))
                    .spawn(move || {
                        let mut mine = Vec::new();
                        // A connection error ends only that connection.
                        let _ = serve(stream, &stop, &answered, &consume, &mut mine);
                        consume.forget(&mine);
                    });
                if let Ok(h) = spawned {
                    conns.push(h);
                }
                conns.retain(|h| !h.is_finished());
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                thread::sleep(Duration::from_millis(5))
            }
            Err(_) => thread::sleep(POLL),
        }
    }
    for h in conns {
        let _ = h.join();
    }
}

fn serve(
    mut stream: TcpStream,
    stop: &AtomicBool,
    answered: &AtomicU64,
    consume: &ConsumeSide,
    mine: &mut Vec<String>,
) -> io::Result<()> {
    stream.set_nodelay(true)?;
    stream.set_read_timeout(Some(POLL))?;
    let mut inbox: Vec<u8> = Vec::with_capacity(2 * READ_CHUNK);
    let mut out: Vec<u8> = Vec::with_capacity(2 * READ_CHUNK);
    let mut offset: u64 = 0;
    while !stop.load(Ordering::Acquire) {
        let start = inbox.len();
        inbox.resize(start + READ_CHUNK, 0);
        let n = match stream.read(&mut inbox[start..]) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                inbox.truncate(start);
                continue;
            }
            Err(e) => return Err(e),
        };
        inbox.truncate(start + n);
        out.clear();
        let peer = Peer {
            consume,
            mine: &mut *mine,
        };
        let consumed = answer_all(&inbox, &mut out, &mut offset, answered, peer)?;
        inbox.drain(..consumed);
        if !out.is_empty() {
            stream.write_all(&out)?;
        }
    }
    Ok(())
}

/// A connection's view of the consumer side.
struct Peer<'a> {
    consume: &'a ConsumeSide,
    /// Client ids this connection registered.
    mine: &'a mut Vec<String>,
}

/// Answers every complete frame in `inbox` into `out`; returns how many bytes were consumed.
fn answer_all(
    inbox: &[u8],
    out: &mut Vec<u8>,
    offset: &mut u64,
    answered: &AtomicU64,
    peer: Peer<'_>,
) -> io::Result<usize> {
    let mut pos = 0;
    let mut count = 0;
    while inbox.len() - pos >= 8 {
        let len = u32::from_be_bytes(inbox[pos..pos + 4].try_into().expect("4 bytes")) as usize;
        if !(4..=MAX_FRAME_LEN).contains(&len) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("frame length {len} outside 4..={MAX_FRAME_LEN}"),
            ));
        }
        if inbox.len() - pos < 4 + len {
            break;
        }
        let frame = &inbox[pos + 4..pos + 4 + len];
        pos += 4 + len;
        match peek_frame(frame) {
            Some(p) if is_send(p.code) => {
                *offset += 1;
                if p.flag & FLAG_ONEWAY == 0 {
                    write_send_ok(out, p, *offset);
                    count += 1;
                }
            }
            Some(p)
                if p.code == RequestCode::PULL_MESSAGE.as_i32()
                    && peer
                        .consume
                        .answer_pull_fast(json_header(frame), p.opaque, out) =>
            {
                count += 1;
            }
            _ => {
                let cmd = RemotingCommand::decode(Bytes::copy_from_slice(frame))
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
                let resp = match peer.consume.answer(&cmd, peer.mine, out) {
                    Answer::Written => {
                        count += 1;
                        continue;
                    }
                    Answer::Command(resp) => (!cmd.is_oneway()).then_some(resp),
                    Answer::NotMine => answer_other(&cmd),
                };
                if let Some(resp) = resp {
                    let mut buf = BytesMut::new();
                    resp.encode(&mut buf);
                    out.extend_from_slice(&buf);
                    count += 1;
                }
            }
        }
    }
    answered.fetch_add(count, Ordering::Relaxed);
    Ok(pos)
}

/// The header of a JSON-serialized frame (length prefix stripped); empty for any other.
fn json_header(frame: &[u8]) -> &[u8] {
    let Some(mark) = frame.get(..4) else {
        return &[];
    };
    let mark = u32::from_be_bytes(mark.try_into().expect("4 bytes"));
    let json = SerializeType::from_byte((mark >> 24) as u8).is_ok_and(|t| t == SerializeType::Json);
    let len = (mark & 0x00FF_FFFF) as usize;
    match frame.get(4..4 + len) {
        Some(h) if json => h,
        _ => &[],
    }
}

fn is_send(code: i32) -> bool {
    code == RequestCode::SEND_MESSAGE.as_i32()
        || code == RequestCode::SEND_MESSAGE_V2.as_i32()
        || code == RequestCode::SEND_BATCH_MESSAGE.as_i32()
}

/// The success answer to a send, as a 5.3 broker serializes it (JSON, keys in order).
fn write_send_ok(out: &mut Vec<u8>, p: HeaderPeek, offset: u64) {
    use std::io::Write as _;
    let start = out.len();
    out.extend_from_slice(&[0u8; 8]);
    let header_start = out.len();
    // Writing into a Vec cannot fail.
    let _ = write!(
        out,
        "{{\"code\":0,\"extFields\":{{\"MSG_REGION\":\"DefaultRegion\",\"TRACE_ON\":\"true\",\
         \"msgId\":\"7F00000100002A9F{offset:016X}\",\"queueId\":\"0\",\"queueOffset\":\"{offset}\"}},\
         \"flag\":1,\"language\":\"JAVA\",\"opaque\":{},\"serializeTypeCurrentRPC\":\"JSON\",\
         \"version\":479}}",
        p.opaque
    );
    let header_len = (out.len() - header_start) as u32;
    let total = (out.len() - start - 4) as u32;
    out[start..start + 4].copy_from_slice(&total.to_be_bytes());
    out[start + 4..start + 8].copy_from_slice(&header_len.to_be_bytes());
}

fn answer_other(cmd: &RemotingCommand) -> Option<RemotingCommand> {
    if cmd.is_response() {
        return None;
    }
    let ok = ResponseCode::SUCCESS.as_i32();
    let resp = if cmd.code == RequestCode::UPDATE_AND_CREATE_TOPIC.as_i32()
        || cmd.code == RequestCode::HEART_BEAT.as_i32()
    {
        RemotingCommand::response_to(cmd, ok, None)
    } else if cmd.code == RequestCode::GET_BROKER_RUNTIME_INFO.as_i32() {
        RemotingCommand::response_to(cmd, ok, None).with_body(&b"{\"table\":{}}"[..])
    } else {
        RemotingCommand::response_to(
            cmd,
            ResponseCode::REQUEST_CODE_NOT_SUPPORTED.as_i32(),
            Some(format!(" request type {} not supported", cmd.code)),
        )
    };
    (!cmd.is_oneway()).then_some(resp)
}
