//! ACL end to end: the harness binary against a broker-under-test with `aclEnable=true` and
//! `brokerVersionProfile = "4.9"`, the one profile with ACL 1.0 (5.3.3 removed it: on the 5.3
//! profile the run is refused before it starts, exit 3, last test here).
//! With `[auth]` every send is signed and stored, and a push consumer (heartbeat, pulls, offset
//! commits, all signed) consumes every one of them; without it the run fails visibly, every send
//! counted as code 1 SYSTEM_ERROR; the result folder never holds the secret. Each run is its
//! own harness process: signing is process-wide.

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;
use common::broker_bin;

const SECRET: &str = "harness-secret-1";

const ACL_FILE: &str = "
accounts:
  - accessKey: harness1
    secretKey: harness-secret-1
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - AclTopic=PUB|SUB
";

fn profile(dir: &Path, home: &Path, auth: &str) -> PathBuf {
    let text = format!(
        r#"name = "acl-e2e"
[workload]
topic = "AclTopic"
create_topic = false
rate = 200
warmup = "0.2s"
duration = "1s"
connections = 1
[broker]
mappedFileSizeCommitLog = 16777216
brokerVersionProfile = "4.9"
aclEnable = true
rocketmqHome = "{}"
{auth}"#,
        home.display()
    );
    let path = dir.join("acl.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// Runs the harness on `profile` into `out`, with the ACL environment variables cleared and
/// then `env` set. Returns the exit code and stderr.
fn run(profile: &Path, out: &Path, env: &[(&str, &str)]) -> (i32, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_harness"));
    cmd.arg("run")
        .arg(profile)
        .arg("--out")
        .arg(out)
        .arg("--broker-bin")
        .arg(broker_bin());
    for k in [
        harness::auth::ENV_ACCESS_KEY,
        harness::auth::ENV_SECRET_KEY,
        harness::auth::ENV_SECURITY_TOKEN,
    ] {
        cmd.env_remove(k);
    }
    cmd.envs(env.iter().copied());
    let o = cmd.output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// The one summary row's value in column `name`.
fn column(out: &Path, name: &str) -> String {
    let mut r = csv::Reader::from_path(out.join("summary.csv")).unwrap();
    let h = r.headers().unwrap().clone();
    let row = r.records().next().unwrap().unwrap();
    let i = h.iter().position(|c| c == name).unwrap();
    row[i].to_owned()
}

/// What a run's sends came to: sent, ok, refused (code 1, the ACL's answer), and the rest.
struct Counts {
    sent: u64,
    ok: u64,
    refused: u64,
    /// Flow control (code 2 and its kin) and timeouts: a broker's answers on a loaded machine
    /// (two test binaries run side by side, a debug broker), not the ACL's.
    load: u64,
    /// The summary row's non-zero columns, for the failure message.
    text: String,
}

fn counts(out: &Path) -> Counts {
    let mut r = csv::Reader::from_path(out.join("summary.csv")).unwrap();
    let h = r.headers().unwrap().clone();
    let rows: Vec<csv::StringRecord> = r.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 1);
    let col = |name: &str| -> u64 {
        let i = h.iter().position(|c| c == name).unwrap();
        rows[0][i].parse().unwrap()
    };
    // Every column that is not empty or zero: each outcome the run had, for the message.
    let text = h
        .iter()
        .zip(rows[0].iter())
        .filter(|(_, v)| !v.is_empty() && *v != "0")
        .map(|(n, v)| format!("{n}={v}"))
        .collect::<Vec<_>>()
        .join(" ");
    Counts {
        sent: col("sent"),
        ok: col("ok"),
        refused: col("system_error"),
        load: col("busy") + col("timeouts"),
        text,
    }
}

/// Every send signed and accepted: none refused, and none but the load's answers short of ok
/// (most of them ok).
fn assert_all_accepted(c: &Counts) {
    assert!(
        c.sent > 0 && c.refused == 0 && c.ok + c.load == c.sent && c.ok * 2 > c.sent,
        "{}",
        c.text
    );
}

/// Every file under `dir`, recursively.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(files(&p));
        } else {
            out.push(p);
        }
    }
    out
}

fn assert_no_secret(out: &Path) {
    let all = files(out);
    assert!(all.iter().any(|p| p.ends_with("run.json")), "{all:?}");
    for p in all {
        let bytes = std::fs::read(&p).unwrap();
        let hit = bytes.windows(SECRET.len()).any(|w| w == SECRET.as_bytes());
        assert!(!hit, "{} holds the secret key", p.display());
    }
}

fn acl_home(dir: &Path) -> PathBuf {
    let home = dir.join("rocketmq-home");
    std::fs::create_dir_all(home.join("conf")).unwrap();
    std::fs::write(home.join("conf/plain_acl.yml"), ACL_FILE).unwrap();
    home
}

#[test]
fn signed_run_stores_and_unsigned_run_fails_visibly() {
    let dir = tempfile::tempdir().unwrap();
    let home = acl_home(dir.path());

    let with_auth = profile(
        dir.path(),
        &home,
        &format!(
            "[consumer]\nconsume_threads = 2\nprocessing_time = \"1ms\"\ndrain_timeout = \"30s\"\n\
             [auth]\naccess_key = \"harness1\"\nsecret_key = \"{SECRET}\"\n"
        ),
    );
    let out = dir.path().join("signed");
    let (code, err) = run(&with_auth, &out, &[]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("signed with access key harness1"), "{err}");
    let c = counts(&out);
    assert_all_accepted(&c);
    let consumed: u64 = column(&out, "consumed").parse().unwrap();
    assert!(consumed >= c.ok, "consumed {consumed} of {}", c.ok);
    assert_eq!(column(&out, "consumer_lost"), "0");
    assert_no_secret(&out);
    let run_json = std::fs::read_to_string(out.join("run.json")).unwrap();
    assert!(run_json.contains(harness::auth::REDACTED), "{run_json}");

    let without = profile(dir.path(), &home, "");
    let out = dir.path().join("unsigned");
    let (code, err) = run(&without, &out, &[]);
    assert_eq!(code, i32::from(harness::exit::RUN_FAILED), "{err}");
    assert!(err.contains("code 1 SYSTEM_ERROR"), "{err}");
    assert!(err.contains(harness::auth::ENV_ACCESS_KEY), "{err}");
    let c = counts(&out);
    // None accepted; refused unless the load's answers came first (a request cleaned from the
    // send queue is answered code 2 before its signature is checked, in Java as here).
    assert!(
        c.sent > 0 && c.ok == 0 && c.refused + c.load == c.sent && c.refused * 2 > c.sent,
        "{}",
        c.text
    );

    // The same credentials from the environment: nothing secret in the profile at all.
    let out = dir.path().join("env");
    let (code, err) = run(
        &without,
        &out,
        &[
            (harness::auth::ENV_ACCESS_KEY, "harness1"),
            (harness::auth::ENV_SECRET_KEY, SECRET),
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert_all_accepted(&counts(&out));
    assert_no_secret(&out);
}

/// A harness-started cluster of two ACL brokers behind our name server: the route queries,
/// the topic creation on each master (an admin account) and the sends are all signed; sends
/// land on both brokers. Without credentials the run stops at the topic creation and says why.
#[test]
fn a_cluster_of_acl_brokers_is_driven_signed() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("rocketmq-home");
    std::fs::create_dir_all(home.join("conf")).unwrap();
    std::fs::write(
        home.join("conf/plain_acl.yml"),
        format!("accounts:\n  - accessKey: harness1\n    secretKey: {SECRET}\n    admin: true\n"),
    )
    .unwrap();
    let text = |auth: &str| {
        format!(
            "name = \"acl-cluster\"\n[cluster]\nbrokers = 2\n[workload]\ntopic = \"AclTopic\"\n\
             rate = 200\nwarmup = \"0.2s\"\nduration = \"1s\"\nconnections = 1\n[broker]\n\
             mappedFileSizeCommitLog = 16777216\nbrokerVersionProfile = \"4.9\"\naclEnable = true\n\
             rocketmqHome = \"{}\"\n{auth}",
            home.display()
        )
    };
    let signed = dir.path().join("signed.toml");
    std::fs::write(
        &signed,
        text(&format!(
            "[auth]\naccess_key = \"harness1\"\nsecret_key = \"{SECRET}\"\n"
        )),
    )
    .unwrap();
    let out = dir.path().join("signed");
    let (code, err) = run(&signed, &out, &[]);
    assert_eq!(code, 0, "{err}");
    assert_all_accepted(&counts(&out));
    let per_broker = column(&out, "broker_ok");
    for part in per_broker.split(';') {
        let n: u64 = part.split_once('=').unwrap().1.parse().unwrap();
        assert!(n > 0, "{per_broker}");
    }
    assert_eq!(per_broker.split(';').count(), 2, "{per_broker}");
    assert_no_secret(&out);

    let unsigned = dir.path().join("unsigned.toml");
    std::fs::write(&unsigned, text("")).unwrap();
    let (code, err) = run(&unsigned, &dir.path().join("unsigned"), &[]);
    assert_eq!(code, i32::from(harness::exit::RUN_FAILED), "{err}");
    assert!(err.contains("No accessKey is configured"), "{err}");
}

/// Audit #8: on the 5.3 profile (the default, and `version = "5.3.3"` in-tree) `aclEnable = true`
/// is refused while the cells are checked, before any broker starts: a real 5.3.3 broker
/// ignores the key (ACL 1.0 is gone), so a signed run here would report ACL 1.0's costs and
/// refusals under a release that has neither. The message names the key, the release and the
/// fix; the run folder holds no row.
#[test]
fn acl_1_0_on_the_5_3_profile_is_refused_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let home = acl_home(dir.path());
    for (name, choice) in [("default", ""), ("version", "version = \"5.3.3\"\n")] {
        let text = format!(
            "name = \"acl-5-3\"\n[workload]\ntopic = \"AclTopic\"\nrate = 200\nwarmup = \"0.2s\"\n\
             duration = \"1s\"\nconnections = 1\n[broker]\n{choice}aclEnable = true\n\
             rocketmqHome = \"{}\"\n[auth]\naccess_key = \"harness1\"\nsecret_key = \"{SECRET}\"\n",
            home.display()
        );
        let path = dir.path().join(format!("{name}.toml"));
        std::fs::write(&path, text).unwrap();
        let out = dir.path().join(name);
        let (code, err) = run(&path, &out, &[]);
        assert_eq!(
            code,
            i32::from(harness::exit::INVALID_INPUT),
            "{name}: {err}"
        );
        for part in ["aclEnable=true", "5.3.3", "brokerVersionProfile=4.9"] {
            assert!(err.contains(part), "{name}: {part:?} missing from: {err}");
        }
        assert!(
            !out.join("summary.csv").exists(),
            "{name}: a row was written"
        );
    }
}
