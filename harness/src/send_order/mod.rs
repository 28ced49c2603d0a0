//! Message order: whether messages are stored, and consumed, in the order they were sent.
//!
//! The send order is the send number every UNIQ_KEY carries (`rmq_client::uniq_key::KeySpace`); the
//! stored order is the queue offset. A *stream* is the set of messages whose relative order is
//! promised or checked: one queue with `ordering = "none"`, one key with `by-key` and
//! `sync-by-key` (a key always goes to one queue).
//!
//! A model, below the runner (which keys its sends), the consumers (whose pulls and consume
//! tasks feed the ledger) and the order job part (`order/`, which owns a job's ledger): it
//! imports none of them, so the consumers need no job part to count order.
//!
//! * key.rs      — the key of a send, its queue (`SelectMessageQueueByHash`), the sync-by-key gate
//! * count.rs    — the counts on plain sequences: `order_inversions` (messages stored after a
//!   later send of their stream) and the orderly consumer's violations and redeliveries
//! * ledger.rs   — one job's counts, fed by the consumers' pulls or the store read-back

pub mod count;
pub mod key;
pub mod ledger;
