//! Topics and consumer offsets over a restart (issue 11): `config/topics.json` and
//! `config/consumerOffset.json` under storePathRootDir, after SIGINT, after kill -9, and with a
//! torn file at start.

mod common;

use std::{
    io::{BufRead, BufReader, Read},
    path::Path,
    process::{Child, Command, Stdio},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use common::{send_v2, Client};
use remoting::{
    headers::{QueryConsumerOffsetRequestHeader, UpdateConsumerOffsetRequestHeader},
    RemotingCommand, RequestCode,
};

const BIN: &str = env!("CARGO_BIN_EXE_broker-under-test");
const TOPIC: &str = "PersistedTopic";
const MESSAGES: usize = 40;

struct Proc {
    child: Child,
    addr: std::net::SocketAddr,
    stderr: Arc<Mutex<String>>,
}

fn start(store: &Path, extra: &[&str]) -> Result<Proc, String> {
    let mut cmd = Command::new(BIN);
    cmd.args(["--set", "listenPort=0", "--set", "brokerIP1=127.0.0.1"])
        .arg("--set")
        .arg(format!("storePathRootDir={}", store.display()))
        .args(["--set", "mappedFileSizeCommitLog=4194304"])
        .args(["--set", "maxMessageSize=65536"])
        .args(["--set", "flushConsumerOffsetInterval=200"]);
    for e in extra {
        cmd.args(["--set", e]);
    }
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = Arc::new(Mutex::new(String::new()));
    {
        let mut pipe = child.stderr.take().unwrap();
        let sink = stderr.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
    }
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    let Some(addr) = line.strip_prefix("listening on ") else {
        let status = child.wait().unwrap();
        std::thread::sleep(Duration::from_millis(100));
        return Err(format!("{status}: {}", stderr.lock().unwrap()));
    };
    let addr = addr.trim().parse().unwrap();
    Ok(Proc {
        child,
        addr,
        stderr,
    })
}

impl Proc {
    fn signal(&mut self, sig: libc::c_int) -> std::process::ExitStatus {
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(self.child.id() as libc::pid_t, sig) };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s;
            }
            assert!(Instant::now() < deadline, "broker did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn update_offset(group: &str, queue_id: i32, offset: i64, opaque: i32) -> RemotingCommand {
    RemotingCommand::request(RequestCode::UPDATE_CONSUMER_OFFSET, opaque).with_header(
        &UpdateConsumerOffsetRequestHeader {
            consumer_group: group.into(),
            topic: TOPIC.into(),
            queue_id,
            commit_offset: offset,
        },
    )
}

async fn query_offset(c: &mut Client, group: &str, queue_id: i32) -> (i32, Option<i64>) {
    let o = c.opaque();
    let r = c
        .call(
            RemotingCommand::request(RequestCode::QUERY_CONSUMER_OFFSET, o).with_header(
                &QueryConsumerOffsetRequestHeader {
                    consumer_group: group.into(),
                    topic: TOPIC.into(),
                    queue_id,
                    set_zero_if_not_found: None,
                },
            ),
        )
        .await;
    (r.code, r.ext("offset").map(|v| v.parse().unwrap()))
}

/// Sends MESSAGES to the auto-created topic and commits offsets 1..=4 for group G.
async fn fill(addr: std::net::SocketAddr) {
    let mut c = Client::connect(addr).await;
    // 5.3 commits offsets only for a known group: the heartbeat creates it.
    c.heartbeat("10.0.0.5@1", "G", &[TOPIC], "*").await;
    for i in 0..MESSAGES {
        let o = c.opaque();
        let body = format!("message {i}");
        let r = c
            .call(send_v2(o, TOPIC, (i % 4) as i32, body.as_bytes()))
            .await;
        assert_eq!(r.code, 0, "{:?}", r.remark);
    }
    for q in 0..4 {
        let o = c.opaque();
        let r = c.call(update_offset("G", q, (q + 1) as i64, o)).await;
        assert_eq!(r.code, 0);
    }
}

/// Every stored message comes back from offset 0, and the offsets are there.
async fn check(addr: std::net::SocketAddr) {
    let mut c = Client::connect(addr).await;
    let mut total = 0;
    for q in 0..4 {
        let got = c.pull_all(TOPIC, q).await;
        assert_eq!(got.len(), MESSAGES / 4, "queue {q}");
        total += got.len();
        assert_eq!(
            query_offset(&mut c, "G", q).await,
            (0, Some((q + 1) as i64))
        );
    }
    assert_eq!(total, MESSAGES);
}

fn offsets_written(store: &Path) -> bool {
    std::fs::read_to_string(store.join("config/consumerOffset.json"))
        .map(|t| t.contains("\t\t\t3:4"))
        .unwrap_or(false)
}

fn wait_for_offsets(store: &Path) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !offsets_written(store) {
        assert!(Instant::now() < deadline, "offsets never written");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn topics_and_offsets_survive_sigint() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut b = start(&store, &[]).unwrap();
    rt.block_on(fill(b.addr));
    assert!(b.signal(libc::SIGINT).success());
    let topics = std::fs::read_to_string(store.join("config/topics.json")).unwrap();
    assert!(topics.contains(&format!("\"{TOPIC}\"")), "{topics}");
    assert!(offsets_written(&store));

    let mut b = start(&store, &[]).unwrap();
    rt.block_on(check(b.addr));
    assert!(b.signal(libc::SIGTERM).success());
    let log = b.stderr.lock().unwrap().clone();
    assert!(log.contains("loaded 4 consumer offsets"), "{log}");
    assert!(log.contains("loaded 1 subscription groups"), "{log}");
}

#[test]
fn topics_and_offsets_survive_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut b = start(&store, &[]).unwrap();
    rt.block_on(fill(b.addr));
    // The periodic flush (200 ms here) writes the offsets; topics were written at creation.
    wait_for_offsets(&store);
    let status = b.signal(libc::SIGKILL);
    assert!(!status.success());

    let mut b = start(&store, &[]).unwrap();
    rt.block_on(check(b.addr));
    assert!(b.signal(libc::SIGINT).success());
}

#[test]
fn a_torn_topics_file_falls_back_to_bak_or_fails_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut b = start(&store, &[]).unwrap();
    rt.block_on(fill(b.addr));
    wait_for_offsets(&store);
    assert!(b.signal(libc::SIGINT).success());
    // The clean stop rewrote both files, so each .bak holds the previous complete content.
    let topics = store.join("config/topics.json");
    let full = std::fs::read_to_string(&topics).unwrap();
    std::fs::write(&topics, &full[..full.len() / 2]).unwrap();
    let offsets = store.join("config/consumerOffset.json");
    std::fs::write(&offsets, "").unwrap();

    let mut b = start(&store, &[]).unwrap();
    rt.block_on(check(b.addr));
    assert!(b.signal(libc::SIGINT).success());
    let log = b.stderr.lock().unwrap().clone();
    assert!(log.contains("topics from the backup"), "{log}");
    assert!(log.contains("offsets from the backup"), "{log}");

    // Both copies torn: no silent empty table, a clear error and exit 1.
    std::fs::write(&topics, "{\"topicConfigTable\":{").unwrap();
    std::fs::write(store.join("config/topics.json.bak"), "{").unwrap();
    let err = start(&store, &[]).err().expect("start must fail");
    assert!(err.contains("exit status: 1"), "{err}");
    assert!(err.contains("topics.json is unreadable"), "{err}");
    assert!(
        err.contains("refusing to start with an empty table"),
        "{err}"
    );
}
