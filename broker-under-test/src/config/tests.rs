use super::*;
use crate::{keys::cpus, store::PutLockKind, task::ExecutorKind};

fn load(pairs: &[(&str, &str)]) -> Result<Loaded, ConfigError> {
    let pairs: Vec<(String, String)> = pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    BrokerConfig::from_pairs(&pairs)
}

#[test]
fn properties_format_trims_and_skips_comments() {
    let text = "# comment\n! also\n\n  listenPort = 0  \nbrokerName:b1\nregionId R1\n";
    let pairs = parse_properties(text, "t").unwrap();
    assert_eq!(
        pairs,
        vec![
            ("listenPort".into(), "0".into()),
            ("brokerName".into(), "b1".into()),
            ("regionId".into(), "R1".into()),
        ]
    );
    assert!(matches!(
        parse_properties("=x", "t"),
        Err(ConfigError::Syntax { line: 1, .. })
    ));
}

#[test]
fn profile_defaults_differ_where_rocketmq_does() {
    let old = load(&[("brokerVersionProfile", "4.3")]).unwrap().config;
    assert_eq!(old.executor(ExecutorKind::Send).threads, 1);
    assert_eq!(old.store.put_lock, PutLockKind::Spin);
    assert!(!old.store.flush_commit_log_timed);
    assert!(old.store.encode_inside_lock);
    // The topic-queue lock is 5.x's (MessageStoreConfig.topicQueueLockNum = 32); 4.9 has none.
    assert_eq!(old.store.topic_queue_lock_num, 0);
    let mid = load(&[("brokerVersionProfile", "4.9")]).unwrap().config;
    assert_eq!(mid.store.topic_queue_lock_num, 0);
    let new = load(&[]).unwrap().config;
    assert_eq!(new.profile, VersionProfile::V5_3);
    assert_eq!(new.store.topic_queue_lock_num, 32);
    assert_eq!(new.executor(ExecutorKind::Send).threads, cpus().min(4));
    assert_eq!(new.store.put_lock, PutLockKind::Reentrant);
    assert!(new.store.flush_commit_log_timed);
    assert_eq!(
        new.executor(ExecutorKind::EndTransaction).threads,
        (8 + 2 * cpus()).max(4 * new.executor(ExecutorKind::Send).threads)
    );
}

#[test]
fn explicit_keys_win_over_profile_defaults() {
    let c = load(&[
        ("brokerVersionProfile", "4.3"),
        ("useReentrantLockWhenPutMessage", "true"),
        ("sendMessageThreadPoolNums", "8"),
        ("flushCommitLogTimed", "true"),
    ])
    .unwrap()
    .config;
    assert_eq!(c.store.put_lock, PutLockKind::Reentrant);
    assert_eq!(c.executor(ExecutorKind::Send).threads, 8);
    assert!(c.store.flush_commit_log_timed);
    assert_eq!(c.effective["sendMessageThreadPoolNums"], "8");
}

#[test]
fn unknown_keys_warn_and_bad_values_name_key_and_value() {
    let l = load(&[("noSuchKey", "1")]).unwrap();
    assert!(l.warnings[0].contains("noSuchKey"));
    let err = load(&[("listenPort", "abc")]).unwrap_err().to_string();
    assert!(err.contains("listenPort") && err.contains("abc"), "{err}");
    let err = load(&[("flushDiskType", "SOMETIMES")])
        .unwrap_err()
        .to_string();
    assert!(err.contains("flushDiskType") && err.contains("SOMETIMES"));
    let err = load(&[("brokerVersionProfile", "6.0")])
        .unwrap_err()
        .to_string();
    assert!(err.contains("brokerVersionProfile") && err.contains("6.0"));
}

#[test]
fn contradictions_fail_validation() {
    assert!(matches!(
        load(&[
            ("mappedFileSizeCommitLog", "1048576"),
            ("maxMessageSize", "4194304")
        ]),
        Err(ConfigError::Contradiction(_))
    ));
}

#[test]
fn transient_pool_conditions_follow_the_profile() {
    let on = |profile: &str, flush: &str, role: &str| {
        load(&[
            ("brokerVersionProfile", profile),
            ("transientStorePoolEnable", "true"),
            ("flushDiskType", flush),
            ("brokerRole", role),
            ("brokerId", "1"),
        ])
        .unwrap()
        .config
        .store
        .transient_store_pool_in_effect
    };
    assert!(on("4.9", "ASYNC_FLUSH", "ASYNC_MASTER"));
    assert!(!on("4.9", "SYNC_FLUSH", "ASYNC_MASTER"));
    assert!(on("5.3", "SYNC_FLUSH", "SYNC_MASTER"));
    assert!(!on("5.3", "ASYNC_FLUSH", "SLAVE"));
}

#[test]
fn ineffective_settings_warn() {
    let l = load(&[
        ("brokerVersionProfile", "4.9"),
        ("transientStorePoolEnable", "true"),
        ("flushDiskType", "SYNC_FLUSH"),
    ])
    .unwrap();
    assert!(
        l.warnings.iter().any(|w| w.contains("no effect")),
        "{:?}",
        l.warnings
    );
    assert!(load(&[]).unwrap().warnings.is_empty());
}

#[test]
fn render_lists_every_key_sorted() {
    let c = load(&[("listenPort", "0")]).unwrap().config;
    let text = c.render();
    let keys: Vec<&str> = text.lines().map(|l| l.split('=').next().unwrap()).collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted);
    assert!(text.contains("listenPort=0\n"));
    assert!(text.contains("brokerVersionProfile=5.3\n"));
}
