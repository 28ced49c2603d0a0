//! One name server's connection, kept open between calls: the name server removes a broker
//! whose channel closes (BrokerHousekeepingService), so a connection per call would unregister
//! the broker after every registration.

use std::{
    io::{Read, Write},
    net::TcpStream,
    time::Duration,
};

use bytes::Bytes;
use remoting::{RemotingCommand, MAX_FRAME_LEN};

use super::settings::resolve;

/// A blocking request/response client for one name server.
pub struct NamesrvClient {
    pub addr: String,
    stream: Option<TcpStream>,
    opaque: i32,
}

impl NamesrvClient {
    pub fn new(addr: String) -> Self {
        NamesrvClient {
            addr,
            stream: None,
            opaque: 0,
        }
    }

    /// Sends `cmd` and waits up to `timeout` for its answer; reconnects once per call when the
    /// old connection is gone. Any failure drops the connection.
    pub fn call(
        &mut self,
        mut cmd: RemotingCommand,
        timeout: Duration,
    ) -> std::io::Result<RemotingCommand> {
        let result = self.try_call(&mut cmd, timeout);
        if result.is_err() {
            self.stream = None;
        }
        result
    }

    /// Writes `cmd` (flagged oneway) without waiting for an answer: the name server sends none.
    /// Any failure drops the connection.
    pub fn send_oneway(
        &mut self,
        mut cmd: RemotingCommand,
        timeout: Duration,
    ) -> std::io::Result<()> {
        self.opaque = self.opaque.wrapping_add(1);
        cmd.opaque = self.opaque;
        let result = self
            .connected(timeout)
            .and_then(|s| s.write_all(&cmd.to_bytes()));
        if result.is_err() {
            self.stream = None;
        }
        result
    }

    /// The open connection, opened now if there is none; `timeout` bounds connect and writes.
    fn connected(&mut self, timeout: Duration) -> std::io::Result<&mut TcpStream> {
        if self.stream.is_none() {
            let s = TcpStream::connect_timeout(&resolve(&self.addr)?, timeout)?;
            s.set_nodelay(true)?;
            self.stream = Some(s);
        }
        let s = self.stream.as_mut().expect("connected above");
        s.set_write_timeout(Some(timeout))?;
        Ok(s)
    }

    fn try_call(
        &mut self,
        cmd: &mut RemotingCommand,
        timeout: Duration,
    ) -> std::io::Result<RemotingCommand> {
        self.connected(timeout)?.set_read_timeout(Some(timeout))?;
        self.opaque = self.opaque.wrapping_add(1);
        cmd.opaque = self.opaque;
        let s = self.stream.as_mut().expect("connected above");
        s.write_all(&cmd.to_bytes())?;
        loop {
            let mut len = [0u8; 4];
            s.read_exact(&mut len)?;
            let n = u32::from_be_bytes(len) as usize;
            if !(4..=MAX_FRAME_LEN).contains(&n) {
                return Err(std::io::Error::other(format!(
                    "frame length {n} out of range"
                )));
            }
            let mut frame = vec![0u8; n];
            s.read_exact(&mut frame)?;
            let answer = RemotingCommand::decode(Bytes::from(frame))
                .map_err(|e| std::io::Error::other(e.to_string()))?;
            // Name-server requests to the broker (5.x NOTIFY_MIN_BROKER_ID_CHANGE) are ignored.
            if answer.is_response() && answer.opaque == self.opaque {
                return Ok(answer);
            }
        }
    }
}
