//! END_TRANSACTION (37) for transactional producers (audit #12, fidelity-after-wave-3): a half
//! message is invisible until a commit re-puts it to its real topic; a rollback leaves it
//! invisible; a slave answers 11 SLAVE_NOT_AVAILABLE (4.9.8 EndTransactionProcessor
//! .processRequest l.59-62, endMessageTransaction l.194-217).

mod common;

use common::{props, send_v2, Client, TestBroker};
use remoting::{
    headers::{EndTransactionRequestHeader, SendMessageRequestHeaderV2},
    message::decode_properties,
    RemotingCommand, RequestCode,
};

const TOPIC: &str = "TxTopic";
const GROUP: &str = "test-producer";

/// A half message as the Java TransactionMQProducer sends it: sysFlag PREPARED, TRAN_MSG and
/// PGROUP. Returns (queueOffset, commitLogOffset) from the answer, as the client reads them.
async fn send_half(c: &mut Client, body: &[u8]) -> (i64, i64) {
    let o = c.opaque();
    let mut cmd = send_v2(o, TOPIC, 0, body);
    let mut h: SendMessageRequestHeaderV2 = cmd.header().unwrap();
    h.f = 0x4;
    h.i = Some(props(&[
        ("WAIT", "true"),
        ("TRAN_MSG", "true"),
        ("PGROUP", GROUP),
        ("UNIQ_KEY", &format!("UNIQ{o:028}")),
    ]));
    cmd = cmd.with_header(&h);
    let r = c.call(cmd).await;
    assert_eq!(r.code, 0, "{:?}", r.remark);
    let queue_offset = r.ext("queueOffset").unwrap().parse().unwrap();
    // The offset message id ends with the CommitLog offset in 16 hex digits.
    let id = r.ext("msgId").unwrap();
    let offset = i64::from_str_radix(&id[id.len() - 16..], 16).unwrap();
    (queue_offset, offset)
}

fn end(
    opaque: i32,
    (queue_offset, offset): (i64, i64),
    commit_or_rollback: i32,
) -> RemotingCommand {
    RemotingCommand::request(RequestCode::END_TRANSACTION, opaque).with_header(
        &EndTransactionRequestHeader {
            producer_group: GROUP.into(),
            tran_state_table_offset: queue_offset,
            commit_log_offset: offset,
            commit_or_rollback,
            from_transaction_check: Some(false),
            msg_id: "x".into(),
            transaction_id: None,
            topic: Some(TOPIC.into()),
        },
    )
}

#[tokio::test]
async fn a_commit_makes_the_half_message_consumable_and_a_rollback_does_not() {
    let b = TestBroker::start(&[("brokerVersionProfile", "4.9")]).await;
    let mut c = b.client().await;
    let committed = send_half(&mut c, b"committed").await;
    let rolled_back = send_half(&mut c, b"rolled back").await;
    c.dispatched().await;
    assert!(
        c.pull_all(TOPIC, 0).await.is_empty(),
        "half messages are invisible"
    );

    let o = c.opaque();
    assert_eq!(c.call(end(o, committed, 0x8)).await.code, 0);
    let o = c.opaque();
    assert_eq!(c.call(end(o, rolled_back, 0xC)).await.code, 0);
    // A second look at a wrong producer group is refused.
    let o = c.opaque();
    let mut wrong = end(o, committed, 0x8);
    let mut h: EndTransactionRequestHeader = wrong.header().unwrap();
    h.producer_group = "other".into();
    wrong = wrong.with_header(&h);
    let r = c.call(wrong).await;
    assert_eq!(
        (r.code, r.remark.as_deref()),
        (1, Some("The producer group wrong"))
    );

    c.dispatched().await;
    let visible = c.pull_all(TOPIC, 0).await;
    assert_eq!(visible.len(), 1, "only the committed message: {visible:?}");
    let m = &visible[0];
    assert_eq!(m.body, b"committed");
    assert_eq!(m.sys_flag & 0xC, 0x8, "TRANSACTION_COMMIT_TYPE");
    let p = decode_properties(&m.properties);
    assert!(!p.iter().any(|(k, _)| k == "TRAN_MSG"), "{p:?}");
    b.stop().await;
}

#[tokio::test]
async fn a_slave_answers_end_transaction_with_11() {
    let b = TestBroker::start(&[
        ("brokerVersionProfile", "4.9"),
        ("brokerRole", "SLAVE"),
        ("brokerId", "1"),
    ])
    .await;
    let mut c = b.client().await;
    let o = c.opaque();
    let r = c.call(end(o, (0, 0), 0x8)).await;
    assert_eq!(r.code, 11, "SLAVE_NOT_AVAILABLE: {:?}", r.remark);
    b.stop().await;
}
