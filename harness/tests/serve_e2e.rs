//! `harness serve` as other tools use it: the binary prints where its name server and broker
//! listen, then `ready`; the broker answers with the keys it was given (GET_BROKER_CONFIG, 26)
//! and is in the name server's route; the end of a piped stdin, or SIGTERM, stops both and
//! leaves no process behind.

mod common;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::Duration;

use rmq_client::admin::AdminConn;

const TIMEOUT: Duration = Duration::from_secs(30);

struct Served {
    child: Child,
    namesrv: SocketAddr,
    broker: SocketAddr,
    pid: u32,
}

fn value<'a>(line: &'a str, prefix: &str) -> Option<&'a str> {
    line.strip_prefix(prefix).map(str::trim)
}

/// Starts `harness serve ARGS` and reads its lines up to `ready`.
fn serve(args: &[&str]) -> Served {
    let mut child = Command::new(env!("CARGO_BIN_EXE_harness"))
        .arg("serve")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("harness serve starts");
    let out: ChildStdout = child.stdout.take().unwrap();
    let (mut namesrv, mut broker, mut pid) = (None, None, None);
    // Lines until `ready` (or the end: then it failed and says why on stderr).
    for line in BufReader::new(out).lines() {
        let line = line.unwrap();
        if let Some(a) = value(&line, "namesrv listening on ") {
            namesrv = Some(a.parse().unwrap());
        } else if let Some(a) = value(&line, "broker listening on ") {
            broker = Some(a.parse().unwrap());
        } else if let Some(p) = value(&line, "broker pid ") {
            pid = Some(p.parse().unwrap());
        } else if line == "ready" {
            break;
        }
    }
    Served {
        child,
        namesrv: namesrv.expect("a namesrv line"),
        broker: broker.expect("a broker line before ready"),
        pid: pid.expect("a pid line"),
    }
}

fn check_running(s: &Served, key: &str, want: &str) {
    let mut admin = AdminConn::connect(s.broker, TIMEOUT).unwrap();
    let conf = admin.broker_config(TIMEOUT).unwrap();
    assert_eq!(conf[key], want);
    assert_eq!(conf["namesrvAddr"], s.namesrv.to_string());
    let cluster = rmq_client::name_server::cluster_info(s.namesrv).unwrap();
    let listed = cluster
        .broker_addr_table
        .values()
        .flat_map(|b| b.broker_addrs.values())
        .any(|a| a.ends_with(&format!(":{}", s.broker.port())));
    assert!(listed, "{cluster:?}");
}

fn gone(pid: u32) -> bool {
    // A zombie still has /proc/<pid>; its state letter is Z.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| s.split_whitespace().nth(2) == Some("Z"))
        .unwrap_or(true)
}

#[test]
fn in_tree_broker_serves_until_stdin_ends() {
    let bin = common::broker_bin();
    let dir = tempfile::tempdir().unwrap();
    let mut s = serve(&[
        "--broker-bin",
        bin.to_str().unwrap(),
        "--dir",
        dir.path().to_str().unwrap(),
        "--set",
        "waitTimeMillsInSendQueue=321",
    ]);
    check_running(&s, "waitTimeMillsInSendQueue", "321");
    drop(s.child.stdin.take());
    let status = s.child.wait().unwrap();
    assert!(status.success(), "{status}");
    assert!(gone(s.pid), "broker pid {} left running", s.pid);
    assert!(Path::new(&dir.path().join("broker.log")).exists());
}

#[test]
fn a_set_without_a_value_is_refused_as_invalid_input() {
    let out = Command::new(env!("CARGO_BIN_EXE_harness"))
        .args(["serve", "--broker-bin"])
        .arg(common::broker_bin())
        .args(["--set", "listenPort"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("KEY=VALUE"));
}

#[test]
#[cfg_attr(
    no_jdk,
    ignore = "no JDK: install openjdk-17-jdk-headless (apt-get) to start Apache RocketMQ"
)]
fn apache_broker_serves_until_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = serve(&[
        "--broker",
        "apache-5.3.3",
        "--dir",
        dir.path().to_str().unwrap(),
        "--set",
        "waitTimeMillsInSendQueue=321",
    ]);
    check_running(&s, "waitTimeMillsInSendQueue", "321");
    let harness_pid = s.child.id() as i32;
    // SAFETY: signalling our own child.
    assert_eq!(unsafe { libc::kill(harness_pid, libc::SIGTERM) }, 0);
    let status = s.child.wait().unwrap();
    assert!(status.success(), "{status}");
    assert!(gone(s.pid), "JVM pid {} left running", s.pid);
    common::assert_no_jvm_under(dir.path());
}
