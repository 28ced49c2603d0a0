//! Every flow-control answer, produced on demand with the injection keys, with RocketMQ's exact
//! code and remark per version profile; answered-busy messages never reach the CommitLog; the
//! broker's counters equal the busy answers received.

mod common;

use std::{
    collections::{BTreeMap, BTreeSet},
    time::{Duration, Instant},
};

use common::*;
use remoting::RemotingCommand;

const PROFILES: [&str; 3] = ["4.3", "4.9", "5.3"];

/// The tests of this file run one at a time: several of them hold the put lock for seconds with
/// the 4.3 profile's spin lock, whose waiters keep a core busy, and the timeout test asserts a
/// `period in queue` within 50 ms of its limit. On a 2-core CI machine a spinning neighbour could
/// delay the BrokerFastFailure thread past that bound.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
const OVERLOAD: &str = "[OVERLOAD]system busy, start flow control for a while";
const REJECT: &str = "[REJECTREQUEST]system busy, start flow control for a while";
const PCBUSY: &str =
    "[PCBUSY_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: ";
const TIMEOUT: &str =
    "[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: ";

/// `(period ms, size of queue)` from a fast-failure remark.
fn period_and_size(remark: &str, prefix: &str) -> (u64, u64) {
    let rest = remark
        .strip_prefix(prefix)
        .unwrap_or_else(|| panic!("remark {remark:?} lacks {prefix:?}"));
    let (period, size) = rest
        .split_once("ms, size of queue: ")
        .unwrap_or_else(|| panic!("bad remark {remark:?}"));
    (period.parse().unwrap(), size.parse().unwrap())
}

fn body(tag: &str, i: usize) -> Vec<u8> {
    format!("{tag}-{i}").into_bytes()
}

/// Sends `n` pipelined messages and collects the answers by opaque.
async fn burst(c: &mut Client, topic: &str, tag: &str, n: usize) -> BTreeMap<i32, RemotingCommand> {
    timed_burst(c, topic, tag, n)
        .await
        .into_iter()
        .map(|(o, (r, _))| (o, r))
        .collect()
}

/// `burst`, with each answer's time since the first send.
async fn timed_burst(
    c: &mut Client,
    topic: &str,
    tag: &str,
    n: usize,
) -> BTreeMap<i32, (RemotingCommand, Duration)> {
    let begin = std::time::Instant::now();
    for i in 0..n {
        let o = c.opaque();
        c.send(&send_v2(o, topic, 0, &body(tag, i))).await;
    }
    let mut answers = BTreeMap::new();
    while answers.len() < n {
        let r = c.read().await;
        answers.insert(r.opaque, (r, begin.elapsed()));
    }
    answers
}

/// Waits (on its own connection) until the current put-lock holder has held it longer than
/// `held_ms` (`pageCacheLockTimeMills`; 0 while the lock is free).
async fn wait_lock_held_longer_than(b: &TestBroker, held_ms: u64) {
    let mut probe = b.client().await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while counter(&probe.runtime_info().await, "pageCacheLockTimeMills") <= held_ms {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the put lock was never held for more than {held_ms} ms"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Waits until the page cache is busy: the lock held for more than
/// `osPageCacheBusyTimeOutMills` = 1000 ms, with a 50 ms margin so the broker still finds it
/// busy when the next request arrives.
async fn wait_page_cache_busy(b: &TestBroker) {
    wait_lock_held_longer_than(b, 1050).await;
}

/// The stored bodies of a queue. With the transient pool on only committed data is visible,
/// and the commit thread dispatches it: wait (10 s deadline) until nothing is uncommitted or
/// undispatched, rather than for a fixed time.
async fn stored(c: &mut Client, topic: &str) -> BTreeSet<Vec<u8>> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let info = c.runtime_info().await;
        if counter(&info, "commitLogUncommittedBytes") == 0
            && counter(&info, "dispatchBehindBytes") == 0
        {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "stored data never became readable: {info:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    c.pull_all(topic, 0)
        .await
        .into_iter()
        .map(|r| r.body)
        .collect()
}

#[tokio::test]
async fn overload_when_the_send_queue_is_full() {
    let _serial = SERIAL.lock().await;
    for profile in ["4.3", "5.3"] {
        let b = TestBroker::start(&[
            ("brokerVersionProfile", profile),
            ("sendMessageThreadPoolNums", "1"),
            ("sendThreadPoolQueueCapacity", "2"),
            ("injectAppendDelayMicros", "100000"),
            ("waitTimeMillsInSendQueue", "60000"),
        ])
        .await;
        let mut c = b.client().await;
        let answers = burst(&mut c, "Overload", profile, 12).await;
        let mut ok = BTreeSet::new();
        let mut busy = 0;
        for (o, r) in &answers {
            match r.code {
                0 => {
                    ok.insert(body(profile, (*o - 1) as usize));
                }
                2 => {
                    assert_eq!(remark(r), OVERLOAD);
                    busy += 1;
                }
                other => panic!("{profile}: unexpected code {other}: {:?}", r.remark),
            }
        }
        // One running and two queued at a time: twelve sends pipelined within a few ms of each
        // other overflow; how many depends on scheduling, so only "some" is asserted.
        assert!(busy > 0, "{profile}: no OVERLOAD answer");
        assert_eq!(stored(&mut c, "Overload").await, ok, "{profile}");
        let info = c.runtime_info().await;
        assert_eq!(counter(&info, "flowControlOverloadSend"), busy, "{profile}");
        assert_eq!(counter(&info, "flowControlTotal"), busy, "{profile}");
        b.stop().await;
    }
}

#[tokio::test]
async fn reject_request_while_the_page_cache_is_busy() {
    let _serial = SERIAL.lock().await;
    for profile in PROFILES {
        let b = TestBroker::start(&[
            ("brokerVersionProfile", profile),
            ("sendMessageThreadPoolNums", "2"),
            ("osPageCacheBusyTimeOutMills", "1000"),
            ("injectPutStallMillis", "1800"),
            ("injectPutStallIntervalMillis", "600000"),
        ])
        .await;
        let mut c = b.client().await;
        c.send(&send_v2(1, "Reject", 0, b"stalled")).await;
        wait_page_cache_busy(&b).await;
        c.send(&send_v2(2, "Reject", 0, b"rejected")).await;
        let first = c.read().await;
        assert_eq!(
            first.opaque, 2,
            "{profile}: the reject must not wait for the stall"
        );
        assert_eq!((first.code, remark(&first)), (2, REJECT), "{profile}");
        let stalled = c.read().await;
        assert_eq!((stalled.opaque, stalled.code), (1, 0), "{profile}");
        let expected: BTreeSet<Vec<u8>> = [b"stalled".to_vec()].into();
        assert_eq!(stored(&mut c, "Reject").await, expected);
        let info = c.runtime_info().await;
        assert_eq!(counter(&info, "flowControlRejectRequestPageCache"), 1);
        assert_eq!(counter(&info, "flowControlTotal"), 1);
        b.stop().await;
    }
}

#[tokio::test]
async fn reject_request_when_the_transient_store_pool_is_exhausted() {
    let _serial = SERIAL.lock().await;
    let b = TestBroker::start(&[
        ("transientStorePoolEnable", "true"),
        ("transientStorePoolSize", "1"),
        ("mappedFileSizeCommitLog", "1048576"),
        ("maxMessageSize", "65536"),
    ])
    .await;
    let mut c = b.client().await;
    let mut ok = BTreeSet::new();
    let mut rejected = 0;
    for i in 0..20 {
        let o = c.opaque();
        let r = c.call(send_v2(o, "Pool", 0, &body("pool", i))).await;
        match r.code {
            0 => {
                ok.insert(body("pool", i));
            }
            2 => {
                assert_eq!(remark(&r), REJECT);
                rejected += 1;
            }
            other => panic!("unexpected code {other}: {:?}", r.remark),
        }
    }
    assert!(rejected > 0, "the only buffer is lent to the first file");
    let info = c.runtime_info().await;
    assert_eq!(info["remainTransientStoreBufferNumbs"], "0");
    assert_eq!(counter(&info, "flowControlRejectRequestPool"), rejected);
    assert_eq!(counter(&info, "flowControlTotal"), rejected);
    assert_eq!(stored(&mut c, "Pool").await, ok);
    b.stop().await;
}

#[tokio::test]
async fn pcbusy_clean_queue_drains_the_send_queue() {
    let _serial = SERIAL.lock().await;
    for profile in PROFILES {
        let b = TestBroker::start(&[
            ("brokerVersionProfile", profile),
            ("sendMessageThreadPoolNums", "1"),
            ("osPageCacheBusyTimeOutMills", "1000"),
            ("injectPutStallMillis", "1800"),
            ("injectPutStallIntervalMillis", "600000"),
            ("waitTimeMillsInSendQueue", "60000"),
        ])
        .await;
        let mut c = b.client().await;
        let answers = timed_burst(&mut c, "PcBusy", profile, 4).await;
        assert_eq!(
            answers[&1].0.code, 0,
            "{profile}: {:?}",
            answers[&1].0.remark
        );
        let mut sizes = Vec::new();
        for o in 2..=4 {
            let (r, after) = &answers[&o];
            assert_eq!(r.code, 2, "{profile}");
            // The cleaner drains only once the lock has been held past the 1000 ms limit, and
            // the lock was taken after the burst went out. The remark's period is the request's
            // own wait, from its arrival: it may fall short of 1000 ms when the broker read it
            // after the lock was taken (993 seen at load 18), but never exceeds the client's wait.
            assert!(
                *after >= Duration::from_millis(1000),
                "{profile}: answered after {after:?}"
            );
            let (period, size) = period_and_size(remark(r), PCBUSY);
            // (+1: both ends of the period are whole milliseconds)
            assert!(
                period as u128 <= after.as_millis() + 1,
                "{profile}: period {period}, {after:?}"
            );
            sizes.push(size);
        }
        sizes.sort();
        assert_eq!(
            sizes,
            vec![0, 1, 2],
            "{profile}: queue sizes after each poll"
        );
        let expected: BTreeSet<Vec<u8>> = [body(profile, 0)].into();
        assert_eq!(stored(&mut c, "PcBusy").await, expected);
        let info = c.runtime_info().await;
        assert_eq!(counter(&info, "flowControlPcBusyCleanQueue"), 3);
        assert_eq!(counter(&info, "flowControlTotal"), 3);
        b.stop().await;
    }
}

#[tokio::test]
async fn timeout_clean_queue_expires_waiting_sends() {
    let _serial = SERIAL.lock().await;
    for profile in PROFILES {
        let b = TestBroker::start(&[
            ("brokerVersionProfile", profile),
            ("sendMessageThreadPoolNums", "1"),
            ("injectAppendDelayMicros", "600000"),
            ("waitTimeMillsInSendQueue", "100"),
        ])
        .await;
        fast_failure_running(b.addr()).await;
        let mut c = b.client().await;
        let answers = burst(&mut c, "Timeout", profile, 4).await;
        let mut ok = BTreeSet::new();
        let mut timed_out = 0;
        for (o, r) in &answers {
            match r.code {
                0 => {
                    ok.insert(body(profile, (*o - 1) as usize));
                }
                2 => {
                    let (period, _) = period_and_size(remark(r), TIMEOUT);
                    // Never before the limit; and cleaned by the 10-ms fast-failure scan, not
                    // left until the 600-ms append ahead of it ended. (An upper bound of 150 ms
                    // failed once on a machine loaded by a parallel CI run: the scan thread was
                    // late, which says nothing about the rule.)
                    assert!(
                        (100..600).contains(&period),
                        "{profile}: period in queue {period} ms for a 100 ms limit"
                    );
                    timed_out += 1;
                }
                other => panic!("{profile}: unexpected code {other}: {:?}", r.remark),
            }
        }
        assert_eq!(timed_out, 3, "{profile}: the three queued sends expire");
        assert_eq!(stored(&mut c, "Timeout").await, ok);
        let info = c.runtime_info().await;
        assert_eq!(counter(&info, "flowControlTimeoutCleanQueueSend"), 3);
        assert_eq!(counter(&info, "flowControlTotal"), 3);
        b.stop().await;
    }
}

#[tokio::test]
async fn timeout_clean_queue_expires_waiting_pulls() {
    let _serial = SERIAL.lock().await;
    let b = TestBroker::start(&[
        ("pullMessageThreadPoolNums", "1"),
        ("waitTimeMillsInPullQueue", "1"),
    ])
    .await;
    fast_failure_running(b.addr()).await;
    let mut c = b.client().await;
    // Enough data that each pull copies ~256 KiB: the single pull thread falls behind.
    let big = vec![b'p'; 60_000];
    for i in 0..40 {
        let o = c.opaque();
        let mut msg = send_v2(o, "PullTimeout", 0, &big);
        msg.body = format!("{i:05}")
            .into_bytes()
            .into_iter()
            .chain(big.iter().copied())
            .collect::<Vec<u8>>()
            .into();
        assert_eq!(c.call(msg).await.code, 0);
    }
    let mut timed_out = 0u64;
    for _round in 0..20 {
        // Every pull of the round arrives after this instant, so its period in queue (from its
        // arrival to its cleaning) is at most the time from here to its answer.
        let round_start = Instant::now();
        let mut opaques = BTreeSet::new();
        for _ in 0..400 {
            let o = c.opaque();
            opaques.insert(o);
            let h = remoting::headers::PullMessageRequestHeader {
                consumer_group: "g".into(),
                topic: "PullTimeout".into(),
                queue_id: 0,
                queue_offset: 0,
                max_msg_nums: 32,
                // SUBSCRIPTION: the expression travels in the pull (no heartbeat needed).
                sys_flag: 4,
                commit_offset: 0,
                suspend_timeout_millis: 0,
                subscription: Some("*".into()),
                sub_version: 0,
                expression_type: Some("TAG".into()),
                max_msg_bytes: None,
            };
            c.send(
                &RemotingCommand::request(remoting::RequestCode::PULL_MESSAGE, o).with_header(&h),
            )
            .await;
        }
        while !opaques.is_empty() {
            let r = c.read().await;
            assert!(opaques.remove(&r.opaque));
            if r.code == 2 {
                let (period, _) = period_and_size(remark(&r), TIMEOUT);
                // At least the 1 ms limit (the cleaner expires a request whose wait reached it).
                // How far past depends on when the 10 ms cleaner gets a core (59 ms seen at load
                // 18), so no fixed upper bound: the period cannot exceed what this client waited
                // for the answer since the round began (+1: both ends are whole milliseconds).
                let waited = round_start.elapsed().as_millis() as u64;
                assert!(
                    (1..=waited + 1).contains(&period),
                    "period {period} ms for a 1 ms limit, answered {waited} ms into the round"
                );
                timed_out += 1;
            } else {
                assert_eq!(r.code, 0, "{:?}", r.remark);
            }
        }
        if timed_out > 0 {
            break;
        }
    }
    assert!(timed_out > 0, "no pull waited long enough to expire");
    let info = c.runtime_info().await;
    assert_eq!(
        counter(&info, "flowControlTimeoutCleanQueuePull"),
        timed_out
    );
    assert_eq!(counter(&info, "flowControlTotal"), timed_out);
    b.stop().await;
}

/// §4.2: fast-failure answers are written even for oneway requests in every version;
/// `[REJECTREQUEST]` is written for oneway requests in 4.x only. Both are counted either way.
#[tokio::test]
async fn oneway_busy_answers_follow_the_version() {
    let _serial = SERIAL.lock().await;
    for (profile, reject_written) in [("4.9", true), ("5.3", false)] {
        let b = TestBroker::start(&[
            ("brokerVersionProfile", profile),
            ("sendMessageThreadPoolNums", "1"),
            ("osPageCacheBusyTimeOutMills", "1000"),
            ("injectPutStallMillis", "1800"),
            ("injectPutStallIntervalMillis", "600000"),
            ("waitTimeMillsInSendQueue", "60000"),
        ])
        .await;
        let mut c = b.client().await;
        c.send(&send_v2(1, "Oneway", 0, b"stalled")).await;
        c.send(&send_v2(2, "Oneway", 0, b"queued").with_oneway())
            .await;
        wait_page_cache_busy(&b).await;
        c.send(&send_v2(3, "Oneway", 0, b"rejected oneway").with_oneway())
            .await;
        c.send(&send_v2(4, "Oneway", 0, b"rejected")).await;
        let mut seen = BTreeMap::new();
        while !seen.contains_key(&1) {
            let r = c.read().await;
            seen.insert(r.opaque, r);
        }
        let pcbusy = seen.get(&2).expect("PCBUSY answer to a oneway request");
        assert_eq!(pcbusy.code, 2);
        period_and_size(remark(pcbusy), PCBUSY);
        assert_eq!(seen.contains_key(&3), reject_written, "{profile}");
        assert_eq!(remark(&seen[&4]), REJECT);
        assert_eq!(seen[&1].code, 0);
        let info = c.runtime_info().await;
        assert_eq!(counter(&info, "flowControlPcBusyCleanQueue"), 1);
        assert_eq!(counter(&info, "flowControlRejectRequestPageCache"), 2);
        let expected: BTreeSet<Vec<u8>> = [b"stalled".to_vec()].into();
        assert_eq!(stored(&mut c, "Oneway").await, expected);
        b.stop().await;
    }
}

fn without_wait(cmd: RemotingCommand) -> RemotingCommand {
    let mut h = cmd
        .header::<remoting::headers::SendMessageRequestHeaderV2>()
        .unwrap();
    h.i = Some(props(&[("WAIT", "false")]));
    cmd.with_header(&h)
}

/// `[PC_SYNCHRONIZED]` on the wire needs a send thread that becomes free during a long put-lock
/// hold without having waited for the lock itself. 4.3's synchronous send path provides one: a
/// thread blocked on a sync flush (§4.3). Timeline (ms): X takes the lock and stalls 0–2000, then
/// waits ~1250 for its flush; A waits for the lock and stalls 2000–4000 (its stall interval has
/// passed); C, admitted at 0 while nothing was busy, waits in the queue (fast failure off) until
/// X's thread is free at ~3250, when A has held the lock ~1250 ms > 1000 ms. The flush's real
/// fsync adds to X's 1250: up to 750 ms of it keeps the order (with a 1500 ms stall, a 306 ms
/// fsync on a disk busy with a build let X's thread free only after A released the lock).
#[tokio::test]
async fn pc_synchronized_on_the_wire_with_the_synchronous_4_3_send_path() {
    let _serial = SERIAL.lock().await;
    let b = TestBroker::start(&[
        ("brokerVersionProfile", "4.3"),
        ("sendMessageThreadPoolNums", "2"),
        ("brokerFastFailureEnable", "false"),
        ("flushDiskType", "SYNC_FLUSH"),
        ("injectFlushStallMillis", "1250"),
        ("injectPutStallMillis", "2000"),
        ("injectPutStallIntervalMillis", "1400"),
        ("osPageCacheBusyTimeOutMills", "1000"),
    ])
    .await;
    let mut c = b.client().await;
    c.send(&send_v2(1, "PcSync", 0, b"X")).await;
    // X must be the first to take the put lock: sent together, A's thread can win the race for
    // it, and then no thread is ever blocked on a flush while another put stalls.
    wait_lock_held_longer_than(&b, 0).await;
    c.send(&without_wait(send_v2(2, "PcSync", 0, b"A"))).await;
    c.send(&without_wait(send_v2(3, "PcSync", 0, b"C"))).await;
    let mut seen = BTreeMap::new();
    while seen.len() < 3 {
        let r = c.read().await;
        seen.insert(r.opaque, r);
    }
    assert_eq!(seen[&1].code, 0, "{:?}", seen[&1].remark);
    assert_eq!(seen[&2].code, 0, "{:?}", seen[&2].remark);
    assert_eq!(
        (seen[&3].code, remark(&seen[&3])),
        (
            1,
            "[PC_SYNCHRONIZED]broker busy, start flow control for a while"
        )
    );
    let expected: BTreeSet<Vec<u8>> = [b"X".to_vec(), b"A".to_vec()].into();
    assert_eq!(stored(&mut c, "PcSync").await, expected);
    let info = c.runtime_info().await;
    assert_eq!(counter(&info, "flowControlPcSynchronized"), 1);
    assert_eq!(counter(&info, "flowControlTotal"), 1);
    b.stop().await;
}
