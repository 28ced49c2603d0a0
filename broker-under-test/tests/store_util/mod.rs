//! Helpers shared by the `store_*` test files: a plain message and blocking puts.
// Each test file uses its own subset.
#![allow(dead_code)]

use std::sync::mpsc;
use std::time::Duration;

use broker_under_test::store::{MessageStore, PutMessage, PutResult};
use bytes::Bytes;

/// A message with no properties from a fixed born host.
pub fn plain_message(topic: &str, queue_id: i32, body: Vec<u8>, wait_store_ok: bool) -> PutMessage {
    PutMessage {
        topic: topic.into(),
        queue_id,
        flag: 0,
        body: Bytes::from(body),
        properties: String::new(),
        sys_flag: 0,
        born_timestamp: 0,
        born_host: "127.0.0.1:1".parse().unwrap(),
        reconsume_times: 0,
        wait_store_ok,
    }
}

/// Puts one message and waits for its callback (which may run on the group-commit thread).
pub fn put(store: &MessageStore, msg: PutMessage) -> PutResult {
    let (tx, rx) = mpsc::channel();
    store.put_message(
        msg,
        Box::new(move |r| {
            let _ = tx.send(r);
        }),
    );
    rx.recv_timeout(Duration::from_secs(30))
        .expect("callback ran")
}

/// Puts a batch and waits for its callback.
pub fn put_batch(store: &MessageStore, msgs: Vec<PutMessage>) -> PutResult {
    let (tx, rx) = mpsc::channel();
    store.put_messages(
        msgs,
        Box::new(move |r| {
            let _ = tx.send(r);
        }),
    );
    rx.recv_timeout(Duration::from_secs(30))
        .expect("callback ran")
}

/// Waits (up to 10 s) until ReputMessageService has dispatched everything readable: a put is
/// answered before its consume-queue entry exists, so reads right after a put wait for this.
pub fn dispatched(store: &MessageStore) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while store.dispatch_behind_bytes() != 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "ReputMessageService still {} bytes behind after 10 s",
            store.dispatch_behind_bytes()
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}
