//! Long polling (consumer §3): a pull with the SUSPEND flag that finds nothing is held without a
//! thread, answered when a message for its queue is dispatched, or 19 after its hold time.

mod common;

use std::time::{Duration, Instant};

use common::{counter, fast_failure_running, send_v2, Client, TestBroker};
use remoting::{
    headers::PullMessageRequestHeader, message::decode_records, RemotingCommand, RequestCode,
};

const SUSPEND_AND_SUBSCRIPTION: i32 = 0x2 | 0x4;

fn pull(opaque: i32, topic: &str, queue_id: i32, offset: i64, suspend_ms: i64) -> RemotingCommand {
    RemotingCommand::request(RequestCode::PULL_MESSAGE, opaque).with_header(
        &PullMessageRequestHeader {
            consumer_group: "lp-group".into(),
            topic: topic.into(),
            queue_id,
            queue_offset: offset,
            max_msg_nums: 32,
            sys_flag: SUSPEND_AND_SUBSCRIPTION,
            commit_offset: 0,
            suspend_timeout_millis: suspend_ms,
            subscription: Some("*".into()),
            sub_version: 0,
            expression_type: Some("TAG".into()),
            max_msg_bytes: None,
        },
    )
}

async fn held(c: &mut Client) -> u64 {
    counter(&c.runtime_info().await, "pullRequestHoldCount")
}

async fn wait_held(c: &mut Client, n: u64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while held(c).await != n {
        assert!(Instant::now() < deadline, "never {n} held pulls");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn released_by_message(c: &mut Client) -> u64 {
    counter(&c.runtime_info().await, "pullRequestHoldReleasedByMessage")
}

/// The send wakes the held pull: the broker counts it as released by a dispatched message, not
/// found by the periodic check (which would also find the message, 5 s later). How soon after
/// the send it is answered is printed (`-- --nocapture`), not asserted: a busy machine decides it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_pull_is_released_by_the_send_not_by_the_check() {
    let b = TestBroker::start(&[]).await;
    let mut producer = b.client().await;
    assert_eq!(
        producer
            .call(send_v2(1, "LongPoll", 0, b"first"))
            .await
            .code,
        0
    );
    producer.dispatched().await;
    let mut consumer = b.client().await;
    consumer.send(&pull(100, "LongPoll", 0, 1, 15_000)).await;
    wait_held(&mut producer, 1).await;
    assert_eq!(released_by_message(&mut producer).await, 0);

    let sent = Instant::now();
    let o = producer.opaque();
    let answer = producer
        .call(send_v2(o + 10, "LongPoll", 0, b"second"))
        .await;
    assert_eq!(answer.code, 0);
    let send_answered = sent.elapsed();
    let r = consumer.read().await;
    let pull_answered = sent.elapsed();
    assert_eq!((r.opaque, r.code), (100, 0), "{:?}", r.remark);
    assert_eq!(r.ext("nextBeginOffset"), Some("2"));
    let records = decode_records(&r.body).unwrap();
    assert_eq!(records[0].body, b"second");
    eprintln!("send answered after {send_answered:?}, held pull after {pull_answered:?}");
    assert_eq!(released_by_message(&mut producer).await, 1);
    assert_eq!(held(&mut producer).await, 0);
    b.stop().await;
}

/// A pull that nothing releases is answered 19 once its hold time is over, by the check. The
/// lower bounds are the claim (never before the hold time); an upper bound would only measure
/// the machine. The suspend times are 60 s, so a broker that held a pull for its suspend time
/// instead of `shortPollingTimeMills`, or held a pull without the SUSPEND flag, would leave the
/// client's read (`common::READ_TIMEOUT`, 20 s) without an answer and fail it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_held_pull_answers_19_after_its_hold_at_the_next_check() {
    // Long polling on: found at the first 5 s check after its 1 s hold.
    let b = TestBroker::start(&[]).await;
    let mut c = b.client().await;
    assert_eq!(c.call(send_v2(1, "Idle", 0, b"x")).await.code, 0);
    c.dispatched().await;
    let start = Instant::now();
    let r = c.call(pull(2, "Idle", 0, 1, 1_000)).await;
    let waited = start.elapsed();
    assert_eq!(
        (r.code, r.remark.as_deref()),
        (19, Some("OFFSET_OVERFLOW_ONE"))
    );
    assert_eq!(r.ext("nextBeginOffset"), Some("1"));
    assert!(waited >= Duration::from_millis(1_000), "{waited:?}");
    assert_eq!(released_by_message(&mut c).await, 0);
    b.stop().await;

    // Long polling off: held shortPollingTimeMills, checked as often.
    let b = TestBroker::start(&[
        ("longPollingEnable", "false"),
        ("shortPollingTimeMills", "300"),
    ])
    .await;
    let mut c = b.client().await;
    assert_eq!(c.call(send_v2(1, "Idle", 0, b"x")).await.code, 0);
    c.dispatched().await;
    let start = Instant::now();
    let r = c.call(pull(2, "Idle", 0, 1, 60_000)).await;
    let waited = start.elapsed();
    assert_eq!(r.code, 19);
    assert!(waited >= Duration::from_millis(300), "{waited:?}");
    // Without the SUSPEND flag a pull is answered at once: it is never held.
    let mut h = pull(3, "Idle", 0, 1, 60_000);
    h.ext_fields.insert("sysFlag".into(), "4".into());
    assert_eq!(c.call(h).await.code, 19);
    assert_eq!(held(&mut c).await, 0);
    b.stop().await;
}

/// The broker as its own process, so that its thread count is its own: an in-process broker
/// shares /proc/self with every other test of this binary, which start and stop brokers.
struct ChildBroker {
    child: std::process::Child,
    addr: std::net::SocketAddr,
    _dir: tempfile::TempDir,
}

impl ChildBroker {
    fn start(sets: &[&str]) -> ChildBroker {
        use std::io::BufRead;
        let dir = tempfile::tempdir().unwrap();
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_broker-under-test"));
        cmd.args(["--strict", "--set", "listenPort=0", "--set"])
            .arg(format!("storePathRootDir={}", dir.path().display()));
        for s in sets {
            cmd.args(["--set", s]);
        }
        let mut child = cmd
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let addr = line
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("first stdout line {line:?}"))
            .trim()
            .parse()
            .unwrap();
        ChildBroker {
            child,
            addr,
            _dir: dir,
        }
    }

    fn threads(&self) -> usize {
        std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap()
            .lines()
            .find_map(|l| l.strip_prefix("Threads:"))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }
}

impl Drop for ChildBroker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_thousand_held_pulls_leave_the_thread_count_unchanged() {
    const CONNECTIONS: usize = 10;
    const PER_CONNECTION: usize = 500;
    let b = ChildBroker::start(&["pullMessageThreadPoolNums=4"]);
    let mut admin = Client::connect(b.addr).await;
    for q in 0..4 {
        assert_eq!(admin.call(send_v2(q + 1, "Many", q, b"x")).await.code, 0);
    }
    admin.dispatched().await;
    let mut clients = Vec::new();
    for _ in 0..CONNECTIONS {
        clients.push(Client::connect(b.addr).await);
    }
    // One held pull first: every thread that will ever run exists by now.
    clients[0].send(&pull(1, "Many", 0, 1, 60_000)).await;
    wait_held(&mut admin, 1).await;
    let before = b.threads();
    for (i, c) in clients.iter_mut().enumerate() {
        for k in 0..PER_CONNECTION {
            if i == 0 && k == 0 {
                continue;
            }
            let q = (k % 4) as i32;
            c.send(&pull((k + 1) as i32, "Many", q, 1, 60_000)).await;
        }
    }
    wait_held(&mut admin, (CONNECTIONS * PER_CONNECTION) as u64).await;
    let after = b.threads();
    eprintln!("broker threads: {before} before, {after} with 5000 held pulls");
    // No thread per held pull. The count may fall: a one-shot thread of the broker's start can
    // end in between on a slow machine (50 -> 49 seen under load).
    assert!(after <= before, "{before} threads before, {after} after");
    // A message per queue releases them all.
    for q in 0..4 {
        assert_eq!(admin.call(send_v2(100 + q, "Many", q, b"y")).await.code, 0);
    }
    for c in &mut clients {
        for _ in 0..PER_CONNECTION {
            let r = c.read().await;
            assert_eq!(r.code, 0, "{:?}", r.remark);
        }
    }
    wait_held(&mut admin, 0).await;
    assert_eq!(
        released_by_message(&mut admin).await,
        (CONNECTIONS * PER_CONNECTION) as u64
    );
}

/// Consumer load, not the recipe: 2,000 long polls released by one burst of messages all re-run
/// on a single pull thread; the ones that wait in the pull queue longer than
/// `waitTimeMillsInPullQueue` are answered `[TIMEOUT_CLEAN_QUEUE]` (consumer §3 "re-run").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn released_long_polls_meet_timeout_clean_queue() {
    const PULLS: usize = 2_000;
    let b = TestBroker::start(&[
        ("pullMessageThreadPoolNums", "1"),
        ("waitTimeMillsInPullQueue", "2"),
    ])
    .await;
    let mut admin = b.client().await;
    for q in 0..4 {
        assert_eq!(admin.call(send_v2(q + 1, "Burst", q, b"x")).await.code, 0);
    }
    // Released pulls must meet a running cleaner: BrokerFastFailure's first round comes 1 s
    // after the broker starts.
    fast_failure_running(b.addr()).await;
    let mut consumers = Vec::new();
    for _ in 0..4 {
        consumers.push(b.client().await);
    }
    for (i, c) in consumers.iter_mut().enumerate() {
        for k in 0..PULLS / 4 {
            c.send(&pull((k + 1) as i32, "Burst", i as i32, 1, 60_000))
                .await;
        }
    }
    // With a 2 ms limit some first runs expire in the queue too: wait until every pull is
    // either held or answered, and count only what expires after the release.
    let deadline = Instant::now() + Duration::from_secs(60);
    let before = loop {
        let info = admin.runtime_info().await;
        let expired = counter(&info, "flowControlTimeoutCleanQueuePull");
        if counter(&info, "pullRequestHoldCount") + expired == PULLS as u64 {
            break expired;
        }
        assert!(Instant::now() < deadline, "pulls neither held nor answered");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    for q in 0..4 {
        assert_eq!(
            admin
                .call(send_v2(10 + q, "Burst", q, &[b'y'; 4096]))
                .await
                .code,
            0
        );
    }
    let (mut found, mut expired) = (0u64, 0u64);
    for c in &mut consumers {
        for _ in 0..PULLS / 4 {
            let r = c.read().await;
            match r.code {
                0 => found += 1,
                2 => {
                    assert!(common::remark(&r).starts_with("[TIMEOUT_CLEAN_QUEUE]"));
                    expired += 1;
                }
                other => panic!("code {other}: {:?}", r.remark),
            }
        }
    }
    eprintln!(
        "{found} found, {expired} [TIMEOUT_CLEAN_QUEUE] ({before} of them before the release)"
    );
    assert!(expired > before, "no released pull waited long enough");
    assert_eq!(found + expired, PULLS as u64);
    let info = admin.runtime_info().await;
    assert_eq!(counter(&info, "flowControlTimeoutCleanQueuePull"), expired);
    b.stop().await;
}
