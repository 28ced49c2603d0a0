//! A fake broker for tests and for measuring the generator alone: answers sends instantly
//! (or with scripted codes), with an optional stall, plus topic creation and runtime info.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use bytes::BytesMut;
use parking_lot::Mutex;
use remoting::{decode_frame, RemotingCommand, RequestCode, MAX_FRAME_LEN};

/// Chooses the answer to send number `n` (0-based): `(code, remark)`.
pub type Script = Arc<dyn Fn(u64) -> (i32, Option<String>) + Send + Sync>;

/// Configuration of the fake.
#[derive(Clone)]
pub struct FakeConfig {
    /// Stop answering `stall_after` after the first send, for `stall_for`.
    pub stall_after: Option<Duration>,
    pub stall_for: Duration,
    pub script: Option<Script>,
    /// Runtime-info counters to report.
    pub counters: Arc<Mutex<BTreeMap<String, String>>>,
}

impl Default for FakeConfig {
    fn default() -> Self {
        FakeConfig {
            stall_after: None,
            stall_for: Duration::ZERO,
            script: None,
            counters: Arc::default(),
        }
    }
}

/// A running fake; stops and joins its threads on drop.
pub struct FakeBroker {
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
    pub sends: Arc<AtomicU64>,
}

struct State {
    cfg: FakeConfig,
    first: Mutex<Option<Instant>>,
    sends: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl FakeBroker {
    pub fn start(cfg: FakeConfig) -> std::io::Result<FakeBroker> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let sends = Arc::new(AtomicU64::new(0));
        let state = Arc::new(State {
            cfg,
            first: Mutex::new(None),
            sends: sends.clone(),
            stop: stop.clone(),
        });
        let accept = thread::Builder::new()
            .name("fake-accept".into())
            .spawn(move || {
                let mut conns: Vec<JoinHandle<()>> = Vec::new();
                while !state.stop.load(Ordering::Acquire) {
                    match listener.accept() {
                        Ok((s, _)) => {
                            let st = state.clone();
                            if let Ok(h) = thread::Builder::new()
                                .name("fake-conn".into())
                                .spawn(move || serve(s, &st))
                            {
                                conns.push(h);
                            }
                        }
                        Err(_) => thread::sleep(Duration::from_millis(2)),
                    }
                }
                for h in conns {
                    let _ = h.join();
                }
            })?;
        Ok(FakeBroker {
            addr,
            stop,
            accept: Some(accept),
            sends,
        })
    }
}

impl Drop for FakeBroker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
    }
}

fn serve(mut s: TcpStream, st: &State) {
    let _ = s.set_nodelay(true);
    let _ = s.set_read_timeout(Some(Duration::from_millis(20)));
    let mut buf = BytesMut::with_capacity(64 * 1024);
    let mut chunk = vec![0u8; 64 * 1024];
    let mut out = BytesMut::with_capacity(64 * 1024);
    while !st.stop.load(Ordering::Acquire) {
        match s.read(&mut chunk) {
            Ok(0) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                continue
            }
            Err(_) => return,
        }
        out.clear();
        while let Ok(Some(req)) = decode_frame(&mut buf, MAX_FRAME_LEN) {
            if let Some(resp) = answer(&req, st) {
                resp.encode(&mut out);
            }
        }
        if !out.is_empty() && s.write_all(&out).is_err() {
            return;
        }
    }
}

const SEND_MESSAGE: i32 = RequestCode::SEND_MESSAGE as i32;
const SEND_MESSAGE_V2: i32 = RequestCode::SEND_MESSAGE_V2 as i32;
const SEND_BATCH_MESSAGE: i32 = RequestCode::SEND_BATCH_MESSAGE as i32;
const UPDATE_AND_CREATE_TOPIC: i32 = RequestCode::UPDATE_AND_CREATE_TOPIC as i32;
const GET_BROKER_RUNTIME_INFO: i32 = RequestCode::GET_BROKER_RUNTIME_INFO as i32;

fn answer(req: &RemotingCommand, st: &State) -> Option<RemotingCommand> {
    match req.code {
        SEND_MESSAGE | SEND_MESSAGE_V2 | SEND_BATCH_MESSAGE => {
            let now = Instant::now();
            let first = *st.first.lock().get_or_insert(now);
            if let Some(after) = st.cfg.stall_after {
                let (a, b) = (first + after, first + after + st.cfg.stall_for);
                if now >= a && now < b {
                    thread::sleep(b - now);
                }
            }
            let n = st.sends.fetch_add(1, Ordering::AcqRel);
            let (code, remark) = st.cfg.script.as_ref().map_or((0, None), |f| f(n));
            if req.is_oneway() && code == 0 {
                return None;
            }
            let mut resp = RemotingCommand::response_to(req, code, remark);
            if code == 0 {
                resp.ext_fields.insert("msgId".into(), format!("{n:032X}"));
                resp.ext_fields.insert("queueId".into(), "0".into());
                resp.ext_fields.insert("queueOffset".into(), n.to_string());
            }
            Some(resp)
        }
        UPDATE_AND_CREATE_TOPIC => Some(RemotingCommand::response_to(req, 0, None)),
        GET_BROKER_RUNTIME_INFO => {
            let table = st.cfg.counters.lock().clone();
            let body = serde_json::json!({ "table": table }).to_string();
            Some(RemotingCommand::response_to(req, 0, None).with_body(body.into_bytes()))
        }
        _ if req.is_oneway() => None,
        _ => Some(RemotingCommand::response_to(
            req,
            3,
            Some(format!(" request type {} not supported", req.code)),
        )),
    }
}
