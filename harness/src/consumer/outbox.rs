//! A connection's outgoing bytes, written in rounds as a minimal puller writes them.
//!
//! A consumer that takes several pull answers in one read owes the broker that many next
//! pulls. Writing each next pull as its task queues it costs a system call and a wake-up of
//! the broker's reader per pull: on loopback the sender pays the peer's receive path too, and
//! that was 29% of the consumers' CPU in `make floor` (1.25 writes a pull, where the minimal
//! puller writes once a round of 4). So the reader hands each pull answer out with an
//! [`Owed`] token, and a next pull queued while tokens are out waits for the last one: the
//! round's pulls go out in one write.
//!
//! Until 3 December 2026 the first next pull of a round went out at once while the broker
//! held no other pull of the connection, so that the broker would work while the consumer
//! handled the rest. That cost a second write per round (a third of the consumers' CPU was
//! the kernel's), and once the consumers had become cheaper it no longer showed in what it
//! was for: draining 600,000 messages from broker-under-test ran at 738k–770k messages/s with
//! it and 722k–763k without (6 alternating pairs, 32 a pull), 1,149k–1,223k and 1,178k–1,236k
//! at 256 a pull (5 pairs). Without it the consumers pay 14% less CPU per message.
//!
//! A round never waits on anything but its own pull tasks, each a few microseconds from its
//! next pull: a task that is to wait (a flow-control pause, an exception delay, a full
//! consume queue) lets its token go first, and every other frame (heartbeats, offsets,
//! send-backs, locks) is written at once, with whatever is queued before it. When the broker
//! is the slower side each read holds one answer, the round is one pull, and it goes out as
//! soon as its task has handled the answer.

use bytes::BytesMut;
use parking_lot::Mutex;
use std::sync::Arc;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// Bytes queued before a sender waits for the writer (a frame larger than this still goes,
/// alone).
pub const CAPACITY: usize = 256 * 1024;

#[derive(Default)]
struct State {
    buf: BytesMut,
    /// Tokens out: answers handed out whose next pull is not queued yet.
    owed: usize,
}

/// Whether a queued frame may wait for the round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Send {
    /// Written now, with whatever is queued.
    Now,
    /// A next pull: written with its round, when no token is out.
    WithRound,
}

pub struct Outbox {
    state: Mutex<State>,
    /// The writer waits here.
    wake: Notify,
    /// Senders wait here while the outbox is full.
    room: Notify,
}

impl Default for Outbox {
    fn default() -> Self {
        Outbox {
            state: Mutex::new(State::default()),
            wake: Notify::new(),
            room: Notify::new(),
        }
    }
}

/// A pull answer's claim on its round: the round is written when the last one is dropped.
/// Dropped when its task has queued the next pull, or before the task waits on anything else.
pub struct Owed(Arc<Outbox>);

impl Drop for Owed {
    fn drop(&mut self) {
        let mut s = self.0.state.lock();
        s.owed -= 1;
        let flush = s.owed == 0 && !s.buf.is_empty();
        drop(s);
        if flush {
            self.0.wake.notify_one();
        }
    }
}

impl Outbox {
    /// A token for an answer handed out now.
    pub fn owe(self: &Arc<Self>) -> Owed {
        self.state.lock().owed += 1;
        Owed(self.clone())
    }

    /// Appends `frame`, waiting while the outbox is full; false when `closed` fired first.
    pub async fn push(&self, frame: &[u8], send: Send, closed: &CancellationToken) -> bool {
        loop {
            let room = self.room.notified();
            tokio::pin!(room);
            room.as_mut().enable();
            {
                let mut s = self.state.lock();
                if s.buf.is_empty() || s.buf.len() + frame.len() <= CAPACITY {
                    s.buf.extend_from_slice(frame);
                    let wake = match send {
                        Send::Now => true,
                        Send::WithRound => s.owed == 0,
                    };
                    drop(s);
                    if wake {
                        self.wake.notify_one();
                    }
                    return true;
                }
            }
            tokio::select! {
                _ = closed.cancelled() => return false,
                _ = room => {}
            }
        }
    }

    /// Waits until a write is due, then swaps the queued bytes into `out` (cleared first);
    /// false when `closed` fired first.
    pub async fn take(&self, out: &mut BytesMut, closed: &CancellationToken) -> bool {
        loop {
            tokio::select! {
                _ = closed.cancelled() => return false,
                _ = self.wake.notified() => {}
            }
            out.clear();
            {
                let mut s = self.state.lock();
                if s.buf.is_empty() {
                    continue;
                }
                std::mem::swap(&mut s.buf, out);
            }
            self.room.notify_waiters();
            return true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    async fn taken(o: &Outbox, c: &CancellationToken) -> Option<Vec<u8>> {
        let mut out = BytesMut::new();
        match tokio::time::timeout(Duration::from_millis(50), o.take(&mut out, c)).await {
            Ok(true) => Some(out.to_vec()),
            _ => None,
        }
    }

    /// Three pulls written, and the tokens of the answers to two of them.
    async fn two_answered_of_three(o: &Arc<Outbox>, c: &CancellationToken) -> (Owed, Owed) {
        for p in [b"1", b"2", b"3"] {
            assert!(o.push(p, Send::WithRound, c).await);
        }
        assert_eq!(taken(o, c).await.as_deref(), Some(&b"123"[..]));
        (o.owe(), o.owe())
    }

    #[tokio::test(start_paused = true)]
    async fn a_round_is_written_once_its_last_token_is_dropped() {
        let o = Arc::new(Outbox::default());
        let c = CancellationToken::new();
        let (a, b) = two_answered_of_three(&o, &c).await;
        assert!(o.push(b"A", Send::WithRound, &c).await);
        drop(a);
        assert_eq!(taken(&o, &c).await, None, "b's pull is still owed");
        assert!(o.push(b"B", Send::WithRound, &c).await);
        drop(b);
        assert_eq!(taken(&o, &c).await.as_deref(), Some(&b"AB"[..]));
    }

    #[tokio::test(start_paused = true)]
    async fn a_round_waits_for_every_answer_of_its_read() {
        let o = Arc::new(Outbox::default());
        let c = CancellationToken::new();
        let (a, b) = two_answered_of_three(&o, &c).await;
        let last = o.owe();
        assert!(o.push(b"A", Send::WithRound, &c).await);
        drop(a);
        assert!(o.push(b"B", Send::WithRound, &c).await);
        drop(b);
        assert_eq!(taken(&o, &c).await, None, "C's pull is still owed");
        assert!(o.push(b"C", Send::WithRound, &c).await);
        drop(last);
        assert_eq!(taken(&o, &c).await.as_deref(), Some(&b"ABC"[..]));
    }

    #[tokio::test(start_paused = true)]
    async fn a_frame_sent_now_takes_the_waiting_round_with_it() {
        let o = Arc::new(Outbox::default());
        let c = CancellationToken::new();
        let owed = o.owe();
        assert!(o.push(b"pull", Send::WithRound, &c).await);
        assert!(o.push(b"+hb", Send::Now, &c).await);
        assert_eq!(taken(&o, &c).await.as_deref(), Some(&b"pull+hb"[..]));
        drop(owed);
        assert_eq!(taken(&o, &c).await, None, "nothing left to write");
    }

    #[tokio::test(start_paused = true)]
    async fn with_no_token_out_a_pull_is_written_at_once() {
        let o = Arc::new(Outbox::default());
        let c = CancellationToken::new();
        assert!(o.push(b"P", Send::WithRound, &c).await);
        assert_eq!(taken(&o, &c).await.as_deref(), Some(&b"P"[..]));
    }

    #[tokio::test(start_paused = true)]
    async fn a_full_outbox_holds_its_sender_until_the_writer_takes_or_it_closes() {
        let o = Arc::new(Outbox::default());
        let c = CancellationToken::new();
        let big = vec![7u8; CAPACITY];
        assert!(o.push(&big, Send::Now, &c).await, "a lone large frame goes");
        let mut waiting = {
            let (o, c) = (o.clone(), c.clone());
            tokio::spawn(async move { o.push(b"x", Send::Now, &c).await })
        };
        let held = tokio::time::timeout(Duration::from_millis(50), &mut waiting).await;
        assert!(held.is_err(), "no room for one more byte");
        assert_eq!(taken(&o, &c).await.map(|v| v.len()), Some(CAPACITY));
        assert!(waiting.await.unwrap(), "room after the take");
        assert_eq!(taken(&o, &c).await.as_deref(), Some(&b"x"[..]));

        assert!(o.push(&big, Send::Now, &c).await);
        let waiting = {
            let (o, c) = (o.clone(), c.clone());
            tokio::spawn(async move { o.push(b"y", Send::Now, &c).await })
        };
        c.cancel();
        assert!(!waiting.await.unwrap(), "a closed connection sends nothing");
    }
}
