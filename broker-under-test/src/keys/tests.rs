use std::collections::HashSet;

use super::*;
use crate::task::ExecutorKind;

#[test]
fn names_are_unique_and_every_default_passes_its_own_check() {
    let mut seen = HashSet::new();
    for k in KEYS {
        assert!(seen.insert(k.name), "{} twice", k.name);
        for profile in VersionProfile::ALL {
            for send_threads in [None, Some(1), Some(1024)] {
                let env = DefaultEnv {
                    profile,
                    cpus: cpus(),
                    send_threads,
                };
                let v = k.default.value(&env);
                assert_eq!(k.check(&v), Ok(()), "{}={v} ({profile})", k.name);
            }
        }
    }
}

#[test]
fn every_executor_key_is_in_the_table() {
    for kind in ExecutorKind::ALL {
        let n = kind.names();
        assert!(find(n.threads_key).is_some(), "{}", n.threads_key);
        assert!(find(n.queue_key).is_some(), "{}", n.queue_key);
        if let Some(w) = n.wait_key {
            assert!(find(w).is_some(), "{w}");
        }
    }
}

#[test]
fn ranges_name_the_allowed_values() {
    let send = find("sendMessageThreadPoolNums").unwrap();
    assert_eq!(
        send.check("0"),
        Err("out of range, allowed 1..=1024 threads".into())
    );
    assert!(send.check("abc").unwrap_err().contains("1..=1024"));
    assert_eq!(
        find("flushDiskType").unwrap().check("x"),
        Err("expected ASYNC_FLUSH or SYNC_FLUSH".into())
    );
    assert!(find("traceOn").unwrap().check("TRUE").is_ok());
    assert!(find("brokerIP1").unwrap().check("1.2.3").is_err());
}

#[test]
fn misspelled_keys_get_the_nearest_name() {
    assert_eq!(
        suggest("waitTimeMillsInSendQueu"),
        Some("waitTimeMillsInSendQueue")
    );
    assert_eq!(
        suggest("sendmessagethreadpoolnums"),
        Some("sendMessageThreadPoolNums")
    );
    assert_eq!(suggest("completelyDifferent"), None);
}

#[test]
fn list_json_has_one_object_per_key_with_every_field() {
    let v: serde_json::Value = serde_json::from_str(&list_json()).unwrap();
    let arr = v.as_array().unwrap();
    assert_eq!(arr.len(), KEYS.len());
    for (o, k) in arr.iter().zip(KEYS) {
        assert_eq!(o["name"], k.name);
        for field in [
            "type", "min", "max", "values", "unit", "default", "ours", "doc",
        ] {
            assert!(o.get(field).is_some(), "{} lacks {field}", k.name);
        }
        for p in ["4.3", "4.9", "5.3"] {
            assert!(o["default"][p].is_string(), "{} default {p}", k.name);
        }
    }
    let send = &arr[1];
    assert_eq!(send["name"], "sendMessageThreadPoolNums");
    assert_eq!(send["type"], "int");
    assert_eq!(send["unit"], "threads");
    assert_eq!(send["min"], 1);
    assert_eq!(send["default"]["4.3"], "1");
}

#[test]
fn markdown_bolds_changed_defaults_and_shows_formulas() {
    let md = markdown();
    assert!(md.starts_with("| key | 4.3 | 4.9 | 5.3 | notes |\n|---|---|---|---|---|\n"));
    assert!(md.contains("| `sendMessageThreadPoolNums` | **1** | min(cpus, 4) | same |"));
    assert!(md.contains("| `listenPort` | 10911 |  |  | 0 = ephemeral |"));
    assert_eq!(md.lines().count(), KEYS.len() + 2);
}

#[test]
fn defaults_follow_the_effective_send_thread_count() {
    let d = defaults(VersionProfile::V5_3, Some(100));
    assert_eq!(d["endTransactionThreadPoolNums"], "400");
    assert_eq!(d.len(), KEYS.len());
}
