//! What a SLAVE's store refuses and how its pulls answer (fidelity audit after wave 3, rows
//! #1–#3): a master and a slave on 127.0.0.1:0 with ephemeral HA ports, raw remoting frames,
//! every wait on observable state with a deadline.
//!
//! - #1: ScheduleMessageService does not run on a SLAVE (4.9.8
//!   `DefaultMessageStore.handleScheduleMessageService`, 5.3.3 `changeScheduleServiceStatus`),
//!   so a replicated SCHEDULE_TOPIC_XXXX record falling due is re-put by the master only and the
//!   two CommitLogs stay byte for byte equal.
//! - #2: with `offsetCheckInSlave=false` a SLAVE keeps the requested offset and answers 20
//!   where a master answers 21 (4.9.8 `nextOffsetCorrection`, PullMessageProcessor l.428-452).
//! - #3: a 4.x SLAVE's store refuses a send-back: code 1, remark `SERVICE_NOT_AVAILABLE`
//!   (4.9.8 `asyncConsumerSendMsgBack` l.232-261 over `checkStoreStatus` l.405-411).

mod common;

use std::{net::SocketAddr, path::Path};

use broker_under_test::{config::BrokerConfig, RunningBroker};
use common::{info, num, pull_header, remark, send_v2, wait_for, Client};
use remoting::{
    headers::CreateTopicRequestHeader, message::MessageRecord, RemotingCommand, RequestCode,
};

const TOPIC: &str = "SlaveTopic";
/// Level 1 is 1 s: a sent-back message falls due 1 s after it was stored.
const LEVELS: &str = "1s 1s 1s";

async fn start(dir: &Path, set: &[(&str, &str)]) -> RunningBroker {
    let config = BrokerConfig::for_test(dir, set).expect("config");
    RunningBroker::start(config).await.expect("broker start")
}

/// A master and its slave (same profile), the topic created on both (SlaveSynchronize is not
/// modelled). The slave reports every 500 ms, so a 4.x slave's first report comes soon.
struct Pair {
    master: RunningBroker,
    slave: RunningBroker,
    mdir: tempfile::TempDir,
    sdir: tempfile::TempDir,
}

impl Pair {
    async fn start(profile: &str, slave_extra: &[(&str, &str)]) -> Pair {
        let (mdir, sdir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let common = [
            ("brokerVersionProfile", profile),
            ("messageDelayLevel", LEVELS),
        ];
        let master = start(mdir.path(), &common).await;
        let ha = master.ha_addr.to_string();
        let mut set = vec![
            ("brokerRole", "SLAVE"),
            ("brokerId", "1"),
            ("haMasterAddress", ha.as_str()),
            ("haSendHeartbeatInterval", "500"),
            // A 5.3 slave serves pulls only with slave reads on.
            ("slaveReadEnable", "true"),
        ];
        set.extend_from_slice(&common);
        set.extend_from_slice(slave_extra);
        let slave = start(sdir.path(), &set).await;
        // The slave reads %RETRY%G too (the master creates it at the first send-back).
        for (addr, topic, queues) in [
            (master.addr, TOPIC, 4),
            (slave.addr, TOPIC, 4),
            (slave.addr, "%RETRY%G", 1),
        ] {
            let r = Client::connect(addr)
                .await
                .call(create_topic(topic, queues))
                .await;
            assert_eq!(r.code, 0, "create {topic}: {:?}", r.remark);
        }
        Pair {
            master,
            slave,
            mdir,
            sdir,
        }
    }

    /// Waits until the slave's CommitLog ends where the master's does and is dispatched.
    async fn caught_up(&self) -> i64 {
        wait_for("the slave to catch up", || async {
            let m = num(&info(self.master.addr).await, "commitLogMaxOffset");
            let s = info(self.slave.addr).await;
            (m > 0 && num(&s, "commitLogMaxOffset") == m && num(&s, "dispatchBehindBytes") == 0)
                .then_some(m)
        })
        .await
    }

    async fn stop(self) {
        self.slave.stop().await.expect("slave stops cleanly");
        self.master.stop().await.expect("master stops cleanly");
    }
}

fn create_topic(topic: &str, queues: i32) -> RemotingCommand {
    RemotingCommand::request(RequestCode::UPDATE_AND_CREATE_TOPIC, 1).with_header(
        &CreateTopicRequestHeader {
            topic: topic.into(),
            default_topic: "TBW102".into(),
            read_queue_nums: queues,
            write_queue_nums: queues,
            perm: 6,
            topic_filter_type: "SINGLE_TAG".into(),
            topic_sys_flag: Some(0),
            order: Some(false),
        },
    )
}

/// Sends one message to the master's queue 0 and returns it as stored.
async fn send_to_master(pair: &Pair, body: &[u8]) -> MessageRecord {
    let mut c = Client::connect(pair.master.addr).await;
    let o = c.opaque();
    let r = c.call(send_v2(o, TOPIC, 0, body)).await;
    assert_eq!(r.code, 0, "send: {:?}", r.remark);
    c.dispatched().await;
    c.pull_all(TOPIC, 0)
        .await
        .into_iter()
        .find(|m| m.body == body)
        .expect("the message just sent")
}

/// CONSUMER_SEND_MSG_BACK as the Java client writes it, the JSON header by hand.
async fn send_back(addr: SocketAddr, offset: i64, level: i32) -> RemotingCommand {
    let mut c = Client::connect(addr).await;
    let o = c.opaque();
    let header = format!(
        r#"{{"code":36,"extFields":{{"bname":"broker-a","delayLevel":"{level}","group":"G","offset":"{offset}","originTopic":"{TOPIC}","maxReconsumeTimes":"16","unitMode":"false"}},"flag":0,"language":"JAVA","opaque":{o},"serializeTypeCurrentRPC":"JSON","version":401}}"#
    );
    let mut frame = Vec::new();
    frame.extend_from_slice(&((4 + header.len()) as u32).to_be_bytes());
    frame.extend_from_slice(&(header.len() as u32).to_be_bytes());
    frame.extend_from_slice(header.as_bytes());
    c.write_raw(&frame).await;
    loop {
        let r = c.read().await;
        if r.opaque == o {
            return r;
        }
    }
}

/// How many messages `%RETRY%G` queue 0 holds at `addr`.
async fn retried(addr: SocketAddr) -> usize {
    Client::connect(addr)
        .await
        .pull_all("%RETRY%G", 0)
        .await
        .len()
}

fn commit_log_bytes(store: &Path, len: i64) -> Vec<u8> {
    let mut bytes = std::fs::read(store.join("commitlog").join(format!("{:020}", 0)))
        .expect("first CommitLog file");
    bytes.truncate(len as usize);
    bytes
}

/// #1: a sent-back message parked in SCHEDULE_TOPIC_XXXX is replicated; when it falls due only
/// the master re-puts it, and the slave's CommitLog stays the master's, byte for byte.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slave_never_re_puts_due_delayed_messages_of_its_own() {
    for profile in ["4.9", "5.3"] {
        let pair = Pair::start(profile, &[]).await;
        let first = send_to_master(&pair, b"retry-me").await;
        let r = send_back(pair.master.addr, first.physical_offset, 1).await;
        assert_eq!(r.code, 0, "{profile}: send-back: {:?}", r.remark);
        // Due 1 s after the store: the master's re-put lands in %RETRY%G …
        wait_for("the master's re-put", || async {
            (retried(pair.master.addr).await > 0).then_some(())
        })
        .await;
        // … and reaches the slave by replication; a slave running its own schedule would have
        // appended its own copy by now (same due time, 100 ms rounds).
        wait_for("the re-put on the slave", || async {
            (retried(pair.slave.addr).await > 0).then_some(())
        })
        .await;
        // One more message through the pair: the link still carries data after the due time.
        send_to_master(&pair, b"after").await;
        let end = pair.caught_up().await;
        let (m, s) = (
            commit_log_bytes(pair.mdir.path(), end),
            commit_log_bytes(pair.sdir.path(), end),
        );
        assert!(
            m == s,
            "{profile}: the slave's CommitLog differs from the master's at byte {:?}",
            m.iter().zip(&s).position(|(a, b)| a != b)
        );
        let s = info(pair.slave.addr).await;
        // Not even tried: the service is not running (a refused re-put would count here).
        assert_eq!(num(&s, "scheduleMessageDeliverNums"), 0, "{profile}");
        assert_eq!(num(&s, "scheduleMessageDeliverFailedNums"), 0, "{profile}");
        assert_eq!(retried(pair.slave.addr).await, 1, "{profile}");
        let m = info(pair.master.addr).await;
        assert_eq!(num(&m, "scheduleMessageDeliverNums"), 1, "{profile}");
        pair.stop().await;
    }
}

/// One PULL_MESSAGE with its own subscription (no heartbeat needed).
async fn pull(addr: SocketAddr, queue_id: i32, offset: i64) -> RemotingCommand {
    let mut c = Client::connect(addr).await;
    let h = pull_header("G", TOPIC, queue_id, offset, 32);
    let o = c.opaque();
    c.call(RemotingCommand::request(RequestCode::PULL_MESSAGE, o).with_header(&h))
        .await
}

fn ext(r: &RemotingCommand, key: &str) -> i64 {
    r.ext(key)
        .unwrap_or_else(|| panic!("answer lacks {key}"))
        .parse()
        .unwrap()
}

/// #2: out-of-range pulls on a slave keep the requested offset and answer 20, suggesting the
/// group's brokerId; `offsetCheckInSlave=true` restores the master's 21 and correction.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slave_keeps_out_of_range_pull_offsets_unless_offset_check_in_slave() {
    for (profile, check) in [("4.9", "false"), ("5.3", "false"), ("4.9", "true")] {
        let pair = Pair::start(profile, &[("offsetCheckInSlave", check)]).await;
        for i in 0..3 {
            send_to_master(&pair, format!("m{i}").as_bytes()).await;
        }
        pair.caught_up().await;
        let what = format!("{profile} offsetCheckInSlave={check}");
        // The master corrects: queue 0 holds 3 (overflow → max from 4.9.4), queue 1 none (→ 0).
        let r = pull(pair.master.addr, 0, 10).await;
        assert_eq!(
            (r.code, remark(&r)),
            (21, "OFFSET_OVERFLOW_BADLY"),
            "{what}"
        );
        assert_eq!(ext(&r, "nextBeginOffset"), 3, "{what}");
        let r = pull(pair.master.addr, 1, 5).await;
        assert_eq!((r.code, remark(&r)), (21, "NO_MESSAGE_IN_QUEUE"), "{what}");
        assert_eq!(ext(&r, "nextBeginOffset"), 0, "{what}");
        for (queue, offset, status, corrected) in [
            (0, 10, "OFFSET_OVERFLOW_BADLY", 3),
            (1, 5, "NO_MESSAGE_IN_QUEUE", 0),
        ] {
            let r = pull(pair.slave.addr, queue, offset).await;
            let (code, next) = if check == "true" {
                (21, corrected)
            } else {
                (20, offset)
            };
            assert_eq!((r.code, remark(&r)), (code, status), "{what} q{queue}");
            assert_eq!(ext(&r, "nextBeginOffset"), next, "{what} q{queue}");
            assert_eq!(ext(&r, "suggestWhichBrokerId"), 0, "{what} q{queue}");
        }
        // In range the slave serves as before.
        let r = pull(pair.slave.addr, 0, 0).await;
        assert_eq!(r.code, 0, "{what}: {:?}", r.remark);
        assert_eq!(ext(&r, "nextBeginOffset"), 3, "{what}");
        pair.stop().await;
    }
}

/// #3: a 4.x slave looks the message up, then its store refuses the put: code 1 with the put
/// status name, nothing appended, the failure counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_4x_slave_refuses_a_send_back_with_service_not_available() {
    for profile in ["4.3", "4.9"] {
        let pair = Pair::start(profile, &[]).await;
        let m = send_to_master(&pair, b"consumed-on-the-slave").await;
        let end = pair.caught_up().await;
        let r = send_back(pair.slave.addr, m.physical_offset, 0).await;
        assert_eq!(
            (r.code, remark(&r)),
            (1, "SERVICE_NOT_AVAILABLE"),
            "{profile}"
        );
        let s = info(pair.slave.addr).await;
        assert_eq!(
            num(&s, "commitLogMaxOffset"),
            end,
            "{profile}: nothing appended"
        );
        assert_eq!(num(&s, "sndbckFailedNums"), 1, "{profile}");
        assert_eq!(num(&s, "SNDBCK_PUT_NUMS"), 0, "{profile}");
        pair.stop().await;
    }
}
