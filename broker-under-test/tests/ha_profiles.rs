//! Where a SYNC_MASTER's wait for the slave happens, per profile (issue 26; HA reference §3.2,
//! §3.4, §7.3). A raw client plays a slave that reported once and then went silent (connected,
//! never acknowledging), so every put waits the full timeout:
//!
//! - 4.3 waits on its one send thread: requests behind it queue, and once they are older than
//!   `waitTimeMillsInSendQueue` BrokerFastFailure answers them code 2 `[TIMEOUT_CLEAN_QUEUE]`;
//!   the slave wait turns into SYSTEM_BUSY;
//! - 4.9 hands the wait to GroupTransferService: every request answers 12 after one timeout;
//! - with SYNC_FLUSH as well, the replica status wins (12, not 0).

mod common;

use std::time::{Duration, Instant};

use broker_under_test::{config::BrokerConfig, RunningBroker};
use common::{remark, send_v2, Client};
use tokio::{io::AsyncWriteExt, net::TcpStream};

const DEADLINE: Duration = Duration::from_secs(60);

/// Starts a SYNC_MASTER and attaches a slave that reports offset 0 once, then stays silent.
async fn master_with_a_silent_slave(
    set: &[(&str, &str)],
) -> (RunningBroker, TcpStream, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let mut keys = vec![("brokerRole", "SYNC_MASTER")];
    keys.extend_from_slice(set);
    let b = RunningBroker::start(BrokerConfig::for_test(dir.path(), &keys).unwrap())
        .await
        .unwrap();
    let mut silent = TcpStream::connect(b.ha_addr).await.unwrap();
    silent.write_all(&0i64.to_be_bytes()).await.unwrap();
    let mut c = Client::connect(b.addr).await;
    let end = Instant::now() + DEADLINE;
    while c.runtime_info().await["haSlaveRequestOffset"] != "0" {
        assert!(Instant::now() < end, "the master never saw the report");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    (b, silent, dir)
}

/// Three pipelined sends; returns (code, remark, seconds since the first was written) by opaque.
async fn three_sends(addr: std::net::SocketAddr) -> Vec<(i32, String, f64)> {
    let mut c = Client::connect(addr).await;
    let begin = Instant::now();
    for o in 1..=3 {
        c.send(&send_v2(o, "Waits", 0, format!("m{o}").as_bytes()))
            .await;
    }
    let mut out = vec![(0, String::new(), 0.0); 3];
    for _ in 0..3 {
        let r = c.read().await;
        out[r.opaque as usize - 1] = (r.code, remark(&r).to_owned(), begin.elapsed().as_secs_f64());
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_4_3_the_slave_wait_holds_the_send_thread_and_queued_sends_turn_busy() {
    let (b, silent, _dir) = master_with_a_silent_slave(&[
        ("brokerVersionProfile", "4.3"),
        ("syncFlushTimeout", "1000"),
        ("waitTimeMillsInSendQueue", "200"),
    ])
    .await;
    let answers = three_sends(b.addr).await;
    assert_eq!(
        answers[0].0, 12,
        "the first waited on the send thread: {answers:?}"
    );
    assert!(answers[0].2 >= 1.0);
    for a in &answers[1..] {
        assert_eq!(a.0, 2, "queued behind the wait: {answers:?}");
        assert!(
            a.1.starts_with("[TIMEOUT_CLEAN_QUEUE]broker busy"),
            "{}",
            a.1
        );
    }
    drop(silent);
    b.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_4_9_the_wait_holds_no_send_thread_and_every_send_answers_12() {
    for flush in ["ASYNC_FLUSH", "SYNC_FLUSH"] {
        let (b, silent, _dir) = master_with_a_silent_slave(&[
            ("brokerVersionProfile", "4.9"),
            ("slaveTimeout", "1000"),
            ("waitTimeMillsInSendQueue", "200"),
            ("sendMessageThreadPoolNums", "1"),
            ("flushDiskType", flush),
        ])
        .await;
        let answers = three_sends(b.addr).await;
        for a in &answers {
            assert_eq!(a.0, 12, "{flush}: {answers:?}");
            assert!(a.2 >= 1.0, "{flush}: answered after the wait");
        }
        // Concurrent waits: the last answer is not three timeouts after the first send.
        assert!(answers.iter().all(|a| a.2 < 2.9), "{flush}: {answers:?}");
        drop(silent);
        b.stop().await.unwrap();
    }
}

/// suggestWhichBrokerId (HA reference §4.1, §4.2): 1 only with `slaveReadEnable` and a consumer
/// reading more than `accessMessageInMemoryMaxRatio` % of the memory behind the CommitLog's end
/// (ratio 0 makes any unread byte count), else 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_master_suggests_the_slave_only_with_slave_read_and_a_slow_consumer() {
    use remoting::{headers::PullMessageRequestHeader, RemotingCommand, RequestCode};
    for (slave_read, ratio, want) in [("true", "0", "1"), ("false", "0", "0"), ("true", "40", "0")]
    {
        let dir = tempfile::tempdir().unwrap();
        let b = RunningBroker::start(
            BrokerConfig::for_test(
                dir.path(),
                &[
                    ("slaveReadEnable", slave_read),
                    ("accessMessageInMemoryMaxRatio", ratio),
                ],
            )
            .unwrap(),
        )
        .await
        .unwrap();
        let mut c = Client::connect(b.addr).await;
        for o in 1..=3 {
            assert_eq!(c.call(send_v2(o, "Suggest", 0, b"m")).await.code, 0);
        }
        c.dispatched().await;
        let r = c
            .call(
                RemotingCommand::request(RequestCode::PULL_MESSAGE, 10).with_header(
                    &PullMessageRequestHeader {
                        consumer_group: "suggest-group".into(),
                        topic: "Suggest".into(),
                        queue_id: 0,
                        queue_offset: 0,
                        max_msg_nums: 1,
                        sys_flag: 4,
                        commit_offset: 0,
                        suspend_timeout_millis: 0,
                        subscription: Some("*".into()),
                        sub_version: 0,
                        expression_type: Some("TAG".into()),
                        max_msg_bytes: None,
                    },
                ),
            )
            .await;
        assert_eq!(r.code, 0, "{slave_read} {ratio}: {:?}", r.remark);
        assert_eq!(
            r.ext("suggestWhichBrokerId"),
            Some(want),
            "slaveReadEnable={slave_read} ratio={ratio}"
        );
        b.stop().await.unwrap();
    }
}
