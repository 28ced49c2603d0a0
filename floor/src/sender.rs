//! The minimal pipelined sender: the most one thread can push through one connection.
//!
//! It writes the same pre-encoded frame again and again, refills the window as responses come
//! back, and counts response frames by their length prefix alone. Nothing is parsed, timed per
//! request or recorded: what is left is the cost of the socket calls, which is the floor any
//! generator pays.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use remoting::{SerializeType, MAX_FRAME_LEN};
use thiserror::Error;

use crate::request::send_frame;

/// What the sender does; bounded in time and in count so that it always stops by itself.
#[derive(Debug, Clone)]
pub struct SenderConfig {
    pub target: SocketAddr,
    /// Requests outstanding at once.
    pub in_flight: usize,
    /// Not counted: lets the connection and both peers' caches settle.
    pub warmup: Duration,
    pub duration: Duration,
    pub message_size: usize,
    pub serialize: SerializeType,
    /// Hard stop on the total number of requests, whatever the duration.
    pub max_requests: u64,
}

/// What was measured in the counted window.
#[derive(Debug, Clone, Copy)]
pub struct SenderReport {
    pub responses: u64,
    pub elapsed: Duration,
    /// Responses over the whole run, warm-up included: what the process's CPU time paid for.
    pub total: u64,
}

impl SenderReport {
    pub fn rate(&self) -> f64 {
        self.responses as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

#[derive(Debug, Error)]
pub enum SenderError {
    #[error("connect to {addr}: {source}")]
    Connect { addr: SocketAddr, source: io::Error },
    #[error("connection: {0}")]
    Io(#[from] io::Error),
    #[error("the peer sent a frame of {0} bytes, over the {MAX_FRAME_LEN}-byte limit")]
    FrameTooLong(usize),
    #[error("the peer closed the connection")]
    Closed,
    #[error("no response within {0:?}")]
    Stalled(Duration),
    #[error("in_flight must be at least 1")]
    NoWindow,
}

/// A read that waits longer than this means the peer is not answering.
const STALL: Duration = Duration::from_secs(5);

pub fn run(cfg: &SenderConfig) -> Result<SenderReport, SenderError> {
    if cfg.in_flight == 0 {
        return Err(SenderError::NoWindow);
    }
    let mut stream =
        TcpStream::connect_timeout(&cfg.target, STALL).map_err(|source| SenderError::Connect {
            addr: cfg.target,
            source,
        })?;
    stream.set_nodelay(true)?;
    stream.set_read_timeout(Some(STALL))?;
    let frame = send_frame(cfg.message_size, cfg.serialize, 1);
    // The whole window as one buffer, so refilling k slots is one write of k frames.
    let window: Vec<u8> = frame
        .iter()
        .copied()
        .cycle()
        .take(frame.len() * cfg.in_flight)
        .collect();

    let start = Instant::now();
    let measure_from = start + cfg.warmup;
    let end = measure_from + cfg.duration;
    let mut sent: u64 = 0;
    let mut outstanding: usize = 0;
    let mut counted: u64 = 0;
    let mut total: u64 = 0;
    let mut inbox = vec![0u8; 256 * 1024];
    let mut filled = 0usize;
    loop {
        let now = Instant::now();
        let sending = now < end && sent < cfg.max_requests;
        if sending && outstanding < cfg.in_flight {
            let k = (cfg.in_flight - outstanding).min((cfg.max_requests - sent) as usize);
            stream.write_all(&window[..k * frame.len()])?;
            sent += k as u64;
            outstanding += k;
        }
        if outstanding == 0 {
            break;
        }
        if filled == inbox.len() {
            inbox.resize(inbox.len() * 2, 0);
        }
        let n = match stream.read(&mut inbox[filled..]) {
            Ok(0) => return Err(SenderError::Closed),
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Err(SenderError::Stalled(STALL))
            }
            Err(e) => return Err(e.into()),
        };
        filled += n;
        let (frames, used) = count_frames(&inbox[..filled])?;
        inbox.copy_within(used..filled, 0);
        filled -= used;
        outstanding -= frames.min(outstanding);
        total += frames as u64;
        let at = Instant::now();
        if at >= measure_from && at < end {
            counted += frames as u64;
        }
    }
    Ok(SenderReport {
        responses: counted,
        elapsed: cfg.duration,
        total,
    })
}

/// Complete frames at the start of `buf` and the bytes they take.
fn count_frames(buf: &[u8]) -> Result<(usize, usize), SenderError> {
    let (mut pos, mut frames) = (0, 0);
    while buf.len() - pos >= 4 {
        let len = u32::from_be_bytes(buf[pos..pos + 4].try_into().expect("4 bytes")) as usize;
        if len > MAX_FRAME_LEN {
            return Err(SenderError::FrameTooLong(len));
        }
        if buf.len() - pos < 4 + len {
            break;
        }
        pos += 4 + len;
        frames += 1;
    }
    Ok((frames, pos))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_whole_frames_only() {
        let mut buf = Vec::new();
        for body in [&b"abcd"[..], b"xy"] {
            buf.extend_from_slice(&(body.len() as u32).to_be_bytes());
            buf.extend_from_slice(body);
        }
        buf.extend_from_slice(&[0, 0, 0, 9, 1]);
        assert_eq!(count_frames(&buf).unwrap(), (2, 14));
        let over = ((MAX_FRAME_LEN + 1) as u32).to_be_bytes();
        assert!(matches!(
            count_frames(&over),
            Err(SenderError::FrameTooLong(_))
        ));
    }
}
