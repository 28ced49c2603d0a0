//! The closed loop's reading: the pacer itself waits for answers between refills, on every
//! connection at once, instead of a reader thread per connection waking it.
//!
//! In the closed loop a send is due when a slot frees, so reading cannot make one late. With a
//! reader thread, every round trip cost a futex wake-up and two context switches on the core
//! the pacer and the reader share (14% of the generator's CPU per send in `make floor`'s
//! profile); a minimal sender is one loop that writes and reads, and so is this.

use std::thread;
use std::time::Instant;

use crate::runner::common::Common;
use crate::runner::conn::Conn;
use crate::runner::reader::Wait;
use crate::runner::wait::READ_WAIT;

/// Waits up to [`READ_WAIT`] for answers and handles every one that came; writes what the
/// sockets did not take earlier; times out sends past their budget.
pub fn wait_and_read(conns: &mut [Conn], common: &Common, fds: &mut Vec<libc::pollfd>) {
    let live = |c: &Conn| c.stream.is_some() && c.inline.as_ref().is_some_and(|r| !r.failed());
    let mut alive = conns.iter().filter(|c| live(c));
    match (alive.next(), alive.next()) {
        (None, _) => thread::sleep(READ_WAIT),
        // One connection with nothing left to write: one blocking read (up to the socket's
        // read timeout) is one system call per round trip, as in a minimal sender.
        (Some(c), None) if c.out.is_empty() => {
            if let Some(conn) = conns.iter_mut().find(|c| live(c)) {
                if let Some(r) = conn.inline.as_mut() {
                    r.read_once(Wait::Blocking);
                }
            }
        }
        _ => poll_all(conns, common, fds, &live),
    }
    let now = Instant::now();
    for c in conns.iter_mut() {
        c.write_rest(common.send_timeout);
        if let Some(r) = c.inline.as_mut() {
            r.sweep_due(now);
        }
    }
}

/// `poll(2)` over every live connection (readable, or writable where bytes wait), then one
/// read on each that is readable.
fn poll_all(
    conns: &mut [Conn],
    common: &Common,
    fds: &mut Vec<libc::pollfd>,
    live: &dyn Fn(&Conn) -> bool,
) {
    fds.clear();
    let mut which = Vec::with_capacity(conns.len());
    for (i, c) in conns.iter().enumerate() {
        if !live(c) {
            continue;
        }
        let Some(r) = c.inline.as_ref() else {
            continue;
        };
        let mut events = libc::POLLIN;
        if !c.out.is_empty() {
            events |= libc::POLLOUT;
        }
        fds.push(libc::pollfd {
            fd: r.fd(),
            events,
            revents: 0,
        });
        which.push(i);
    }
    let ms = READ_WAIT.as_millis().max(1) as libc::c_int;
    // SAFETY: `fds` is a valid array of `fds.len()` pollfd structs for the whole call; every
    // descriptor belongs to a connection borrowed for the duration of this function.
    let ready = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
    if ready <= 0 {
        return;
    }
    for (fd, &i) in fds.iter().zip(&which) {
        let conn = &mut conns[i];
        if fd.revents & libc::POLLOUT != 0 {
            conn.write_rest(common.send_timeout);
        }
        if fd.revents & (libc::POLLIN | libc::POLLERR | libc::POLLHUP) != 0 {
            if let Some(r) = conn.inline.as_mut() {
                r.read_once(Wait::DontWait);
            }
        }
    }
}
