//! The built binary as a user runs it: `-p`, configuration errors, `listening on`, SIGTERM.

mod common;

use std::{
    io::{BufRead, BufReader, Read},
    process::{Command, Stdio},
    time::{Duration, Instant},
};

const BIN: &str = env!("CARGO_BIN_EXE_broker-under-test");

fn conf(dir: &std::path::Path, extra: &str) -> std::path::PathBuf {
    let path = dir.join("broker.conf");
    std::fs::write(
        &path,
        format!(
            "# test broker\nlistenPort=0\nbrokerIP1 = 127.0.0.1\nstorePathRootDir={}\n\
             mappedFileSizeCommitLog=4194304\nmaxMessageSize=65536\n{extra}",
            dir.join("store").display()
        ),
    )
    .unwrap();
    path
}

#[test]
fn print_config_lists_every_key_and_exits_zero() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args(["-c"])
        .arg(conf(dir.path(), "brokerVersionProfile=4.3\nnoSuchKey=1\n"))
        .args(["--set", "sendMessageThreadPoolNums=3", "-p"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains("brokerVersionProfile=4.3\n"));
    assert!(stdout.contains("sendMessageThreadPoolNums=3\n"));
    assert!(stdout.contains("useReentrantLockWhenPutMessage=false\n"));
    assert!(String::from_utf8_lossy(&out.stderr).contains("noSuchKey"));
}

#[test]
fn bad_values_name_key_and_value_and_exit_one() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .arg("-c")
        .arg(conf(dir.path(), "flushDiskType=SOMETIMES\n"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("flushDiskType") && err.contains("SOMETIMES"),
        "{err}"
    );
}

#[test]
fn serves_then_exits_zero_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(BIN)
        .arg("-c")
        .arg(conf(dir.path(), ""))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    let addr: std::net::SocketAddr = line
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("first stdout line {line:?}"))
        .trim()
        .parse()
        .unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let mut c = common::Client::connect(addr).await;
        let r = c.call(common::send_v2(1, "BinTopic", 0, b"hello")).await;
        assert_eq!(r.code, 0, "{:?}", r.remark);
    });
    // SAFETY: kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(15),
            "no exit after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "exit status {status:?}");
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    assert!(
        rest.is_empty(),
        "stdout must hold only the listening line, got {rest:?}"
    );
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(
        err.contains("flow-control: "),
        "no summary at shutdown: {err}"
    );
}
