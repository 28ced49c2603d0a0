//! END_TRANSACTION (37) (audit #12, fidelity-after-wave-3): a slave refuses it with 11
//! SLAVE_NOT_AVAILABLE; a commit re-puts the half message to its real topic, where it becomes
//! consumable; a rollback leaves it invisible. 4.9.8 EndTransactionProcessor.processRequest
//! l.53-162 (4.3.2 and 5.3.3 the same steps).
//!
//! What differs: the half message is not moved to `RMQ_SYS_TRANS_HALF_TOPIC` at send time; it
//! stays in the CommitLog under its own topic with the PREPARED sys flag, which keeps it out of
//! the consume queue (`store/reput.rs`), so a rollback has nothing to delete (RocketMQ writes an
//! op record to `RMQ_SYS_TRANS_OP_HALF_TOPIC`) and nothing ever checks a transaction back
//! (CHECK_TRANSACTION_STATE). The committed record does not carry `preparedTransactionOffset`.
//! A request with neither commit nor rollback (TRANSACTION_NOT_TYPE) is answered 0 where
//! RocketMQ answers nothing (the Java client sends END_TRANSACTION oneway anyway).

use remoting::{
    headers::EndTransactionRequestHeader,
    message::{
        decode_properties, encode_properties, PROPERTY_REAL_QUEUE_ID, PROPERTY_REAL_TOPIC,
        PROPERTY_WAIT_STORE_MSG_OK, SYSFLAG_TRANSACTION_MASK, SYSFLAG_TRANSACTION_PREPARED,
    },
    record::MessageRecord,
    RemotingCommand, ResponseCode,
};

use crate::{
    broker::Broker,
    config::BrokerRole,
    dispatch::response,
    processor::header::header_error,
    store::{PutMessage, PutMessageStatus},
};

/// `MessageSysFlag.TRANSACTION_COMMIT_TYPE` / `TRANSACTION_ROLLBACK_TYPE`.
const COMMIT: i32 = 0x8;
const ROLLBACK: i32 = 0xC;
/// `MessageConst.PROPERTY_TRANSACTION_PREPARED`, `PROPERTY_PRODUCER_GROUP`.
const PROPERTY_TRANSACTION_PREPARED: &str = "TRAN_MSG";
const PROPERTY_PRODUCER_GROUP: &str = "PGROUP";

pub fn process(broker: &Broker, request: &RemotingCommand) -> RemotingCommand {
    let profile = broker.config.profile;
    let h = match request.header::<EndTransactionRequestHeader>() {
        Ok(h) => h,
        Err(e) => return header_error(broker, request, &e),
    };
    let answer =
        |code: ResponseCode, remark: Option<String>| response(profile, request, code, remark);
    if broker.config.broker_role == BrokerRole::Slave {
        eprintln!("Message store is slave mode, so end transaction is forbidden. ");
        return answer(ResponseCode::SLAVE_NOT_AVAILABLE, None);
    }
    if h.commit_or_rollback != COMMIT && h.commit_or_rollback != ROLLBACK {
        return answer(ResponseCode::SUCCESS, None);
    }
    // commitMessage / rollbackMessage: the half message at the CommitLog offset.
    let half = broker
        .store
        .look_message_by_offset(h.commit_log_offset)
        .filter(|r| r.sys_flag & SYSFLAG_TRANSACTION_MASK == SYSFLAG_TRANSACTION_PREPARED);
    let Some(half) = half else {
        return answer(
            ResponseCode::SYSTEM_ERROR,
            Some("Find prepared transaction message failed".into()),
        );
    };
    if let Err(remark) = check_prepare_message(&half, &h) {
        return answer(ResponseCode::SYSTEM_ERROR, Some(remark.into()));
    }
    if h.commit_or_rollback == ROLLBACK {
        // The half message stays PREPARED: never dispatched, never consumable.
        return answer(ResponseCode::SUCCESS, None);
    }
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    broker.store.put_message(
        end_message_transaction(&half),
        Box::new(move |r| {
            let _ = tx.send(r.status);
        }),
    );
    let status = rx.recv().unwrap_or(PutMessageStatus::UnknownError);
    // sendFinalMessage l.219-265.
    let (code, remark) = match status {
        PutMessageStatus::PutOk
        | PutMessageStatus::FlushDiskTimeout
        | PutMessageStatus::FlushSlaveTimeout
        | PutMessageStatus::SlaveNotAvailable => (ResponseCode::SUCCESS, None),
        PutMessageStatus::CreateMappedFileFailed => (
            ResponseCode::SYSTEM_ERROR,
            Some("Create mapped file failed.".to_owned()),
        ),
        PutMessageStatus::MessageIllegal | PutMessageStatus::PropertiesSizeExceeded => (
            ResponseCode::MESSAGE_ILLEGAL,
            Some(format!(
                "The message is illegal, maybe msg body or properties length not matched. msg body length limit {}B, msg properties length limit 32KB.",
                broker.config.store.max_message_size
            )),
        ),
        PutMessageStatus::ServiceNotAvailable => (
            ResponseCode::SERVICE_NOT_AVAILABLE,
            Some("Service not available now.".to_owned()),
        ),
        PutMessageStatus::OsPageCacheBusy => (
            ResponseCode::SYSTEM_ERROR,
            Some("OS page cache busy, please try another machine".to_owned()),
        ),
        PutMessageStatus::UnknownError => {
            (ResponseCode::SYSTEM_ERROR, Some("UNKNOWN_ERROR".to_owned()))
        }
    };
    answer(code, remark)
}

/// checkPrepareMessage l.164-192: the producer group, the half message's queue offset and its
/// CommitLog offset must be the request's.
fn check_prepare_message(
    half: &MessageRecord,
    h: &EndTransactionRequestHeader,
) -> Result<(), &'static str> {
    let props = decode_properties(&half.properties);
    let group = props
        .iter()
        .find(|(k, _)| k == PROPERTY_PRODUCER_GROUP)
        .map(|(_, v)| v.as_str());
    if group != Some(h.producer_group.as_str()) {
        return Err("The producer group wrong");
    }
    if half.queue_offset != h.tran_state_table_offset {
        return Err("The transaction state table offset wrong");
    }
    if half.physical_offset != h.commit_log_offset {
        return Err("The commit log offset wrong");
    }
    Ok(())
}

/// endMessageTransaction l.194-217: the half message to its real topic and queue, the
/// transaction type set to COMMIT, TRAN_MSG / REAL_TOPIC / REAL_QID dropped. Its
/// `setWaitStoreMsgOK(false)` is undone by the `setProperties` that follows, so the put waits
/// as the half message's WAIT says.
fn end_message_transaction(half: &MessageRecord) -> PutMessage {
    let props = decode_properties(&half.properties);
    let get = |k: &str| props.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    let topic = get(PROPERTY_REAL_TOPIC).unwrap_or_else(|| half.topic.clone());
    let queue_id = get(PROPERTY_REAL_QUEUE_ID)
        .and_then(|q| q.parse().ok())
        .unwrap_or(half.queue_id);
    let kept = props.iter().filter(|(k, _)| {
        ![
            PROPERTY_TRANSACTION_PREPARED,
            PROPERTY_REAL_TOPIC,
            PROPERTY_REAL_QUEUE_ID,
        ]
        .contains(&k.as_str())
    });
    PutMessage {
        topic,
        queue_id,
        flag: half.flag,
        body: half.body.clone().into(),
        properties: encode_properties(kept.map(|(k, v)| (k.as_str(), v.as_str()))),
        sys_flag: (half.sys_flag & !SYSFLAG_TRANSACTION_MASK) | COMMIT,
        born_timestamp: half.born_timestamp,
        born_host: half.born_host,
        reconsume_times: half.reconsume_times,
        wait_store_ok: get(PROPERTY_WAIT_STORE_MSG_OK).as_deref() != Some("false"),
    }
}
