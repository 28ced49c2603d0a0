//! A killed broker's port, held until the broker is started again on it.
//!
//! The restarted broker must come back on its old port: the name server, the producers and the
//! consumers know it by that address. A broker started on port 0 got a port from the kernel's
//! ephemeral range, the range every outgoing connection's local port comes from too. While it
//! was dead, any process on the machine could be given that port for a connection (or a
//! listener on port 0), and the restart failed with "broker exited before it was ready": seen
//! in `cluster_fault` with two test binaries running side by side.
//!
//! The hold is a socket bound to the address with SO_REUSEADDR and never listening. It keeps
//! the port from the kernel's choice (neither a connect's local port nor a bind to port 0 takes
//! a port with such a socket on it), connections to it are still refused as to a dead broker,
//! and the broker's own listener (SO_REUSEADDR, as tokio's and Netty's set it) binds beside it,
//! so the hold is dropped only once the broker is up: no gap at either end but the instant
//! between the old process's death and the hold's bind.

use std::net::SocketAddr;

use socket2::{Domain, Socket, Type};

/// The port of `addr`, held while this lives.
#[derive(Debug)]
pub struct PortHold {
    _socket: Socket,
}

impl PortHold {
    /// Binds `addr` (SO_REUSEADDR, not listening); fails if another socket has it already.
    pub fn bind(addr: SocketAddr) -> std::io::Result<PortHold> {
        let socket = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
        socket.set_reuse_address(true)?;
        socket.bind(&addr.into())?;
        Ok(PortHold { _socket: socket })
    }
}

#[cfg(test)]
mod tests {
    use std::io::ErrorKind;
    use std::net::{TcpListener, TcpStream};

    use super::*;

    /// A port whose listener just closed, as a killed broker's.
    fn freed_port() -> SocketAddr {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    }

    #[test]
    fn a_held_port_refuses_connections_and_lets_the_restarted_broker_bind() {
        let addr = freed_port();
        let hold = PortHold::bind(addr).unwrap();
        let err = TcpStream::connect(addr).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::ConnectionRefused, "{err}");
        // std's listener sets SO_REUSEADDR on Unix, as tokio's does: it binds beside the hold.
        let broker = TcpListener::bind(addr).expect("the broker binds its old port");
        drop(hold);
        let c = TcpStream::connect(addr).expect("the broker accepts");
        let (s, _) = broker.accept().unwrap();
        assert_eq!(s.peer_addr().unwrap(), c.local_addr().unwrap());
    }

    #[test]
    fn a_port_in_use_cannot_be_held() {
        let live = TcpListener::bind("127.0.0.1:0").unwrap();
        assert!(PortHold::bind(live.local_addr().unwrap()).is_err());
    }
}
