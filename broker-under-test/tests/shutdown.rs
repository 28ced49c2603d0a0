//! Graceful shutdown: stop accepting, finish queued work, answer it, then close.

mod common;

use std::time::Duration;

use common::*;

#[tokio::test]
async fn queued_sends_are_finished_and_answered_on_shutdown() {
    let b = TestBroker::start(&[
        ("sendMessageThreadPoolNums", "1"),
        ("injectAppendDelayMicros", "200000"),
        ("waitTimeMillsInSendQueue", "60000"),
    ])
    .await;
    let addr = b.addr();
    let mut c = b.client().await;
    for o in 1..=5 {
        c.send(&send_v2(o, "Shutdown", 0, format!("m{o}").as_bytes()))
            .await;
    }
    let first = c.read().await;
    assert_eq!((first.opaque, first.code), (1, 0));
    let stopping = tokio::spawn(b.stop());
    for o in 2..=5 {
        let r = c.read().await;
        assert_eq!((r.opaque, r.code), (o, 0), "{:?}", r.remark);
    }
    assert!(c.is_closed_within(Duration::from_secs(15)).await);
    tokio::time::timeout(Duration::from_secs(15), stopping)
        .await
        .expect("shutdown finishes")
        .expect("shutdown task");
    assert!(
        tokio::net::TcpStream::connect(addr).await.is_err(),
        "still accepting after shutdown"
    );
}
