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
    // The second and last stdout line is the HA port (docs/src/replication.md).
    let ha: std::net::SocketAddr = rest
        .strip_prefix("ha listening on ")
        .and_then(|r| r.strip_suffix('\n'))
        .unwrap_or_else(|| panic!("stdout after the listening line: {rest:?}"))
        .parse()
        .unwrap();
    assert_eq!(ha.ip(), addr.ip());
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

#[test]
fn list_keys_prints_every_key_as_json_with_this_machines_defaults() {
    let out = Command::new(BIN).arg("--list-keys").output().unwrap();
    assert!(out.status.success());
    let keys: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let keys = keys.as_array().unwrap();
    let p = Command::new(BIN)
        .args(["--set", "brokerVersionProfile=4.3", "-p"])
        .output()
        .unwrap();
    let printed = String::from_utf8(p.stdout).unwrap();
    assert_eq!(keys.len(), printed.lines().count());
    for k in keys {
        let name = k["name"].as_str().unwrap();
        let default = k["default"]["4.3"].as_str().unwrap();
        assert!(
            printed.contains(&format!("{name}={default}\n")),
            "{name}={default} not in -p"
        );
        assert!(
            ["bool", "int", "enum", "ip", "path", "string"].contains(&k["type"].as_str().unwrap())
        );
    }
    let wait = keys
        .iter()
        .find(|k| k["name"] == "waitTimeMillsInSendQueue")
        .unwrap();
    assert_eq!(wait["unit"], "ms");
    assert_eq!(wait["default"]["5.3"], "200");
    assert_eq!(wait["ours"], false);
}

#[test]
fn the_books_key_table_is_the_generated_one() {
    let out = Command::new(BIN)
        .arg("--list-keys=markdown")
        .output()
        .unwrap();
    assert!(out.status.success());
    let generated = String::from_utf8(out.stdout).unwrap();
    let also = Command::new(BIN)
        .args(["--list-keys", "--markdown"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8(also.stdout).unwrap(), generated);
    let book_path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/src/broker.md");
    let readme = std::fs::read_to_string(book_path).unwrap();
    let begin = "<!-- broker-keys:begin -->\n";
    let end = "<!-- broker-keys:end -->";
    let start = readme
        .find(begin)
        .expect("docs/src/broker.md lacks the broker-keys:begin marker")
        + begin.len();
    let stop = readme[start..]
        .find(end)
        .expect("docs/src/broker.md lacks the broker-keys:end marker")
        + start;
    assert!(
        readme[start..stop] == generated,
        "docs/src/broker.md's broker key table differs from the key table in \
         broker-under-test/src/keys/table.rs: run \
         `cargo run -p broker-under-test -- --list-keys=markdown` and paste its output between \
         the broker-keys markers in docs/src/broker.md"
    );
}

#[test]
fn misspelled_keys_warn_with_a_suggestion_and_strict_makes_them_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let path = conf(dir.path(), "waitTimeMillsInSendQueu=100\n");
    let out = Command::new(BIN)
        .arg("-c")
        .arg(&path)
        .arg("--check")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "ok\n");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("unknown configuration key waitTimeMillsInSendQueu")
            && err.contains("did you mean waitTimeMillsInSendQueue?"),
        "{err}"
    );
    let out = Command::new(BIN)
        .arg("-c")
        .arg(&path)
        .args(["--strict", "--check"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("{}:7", path.display()))
            && err.contains("waitTimeMillsInSendQueu")
            && err.contains("did you mean waitTimeMillsInSendQueue?"),
        "{err}"
    );
    let out = Command::new(BIN)
        .args(["--strict", "-p", "--set", "sendMessageThreadPoolNum=2"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--set") && err.contains("did you mean sendMessageThreadPoolNums?"),
        "{err}"
    );
}

#[test]
fn check_validates_ranges_without_serving() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .arg("-c")
        .arg(conf(dir.path(), ""))
        .args(["--check", "--set", "sendMessageThreadPoolNums=0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("sendMessageThreadPoolNums")
            && err.contains("\"0\"")
            && err.contains("1..=1024"),
        "{err}"
    );
    // A valid configuration: `ok`, and the store directory was never created.
    let out = Command::new(BIN)
        .arg("-c")
        .arg(conf(dir.path(), ""))
        .args(["--strict", "--check", "--set", "listenPort=1"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "ok\n");
    assert!(!dir.path().join("store").exists());
}

/// A broker on an explicit listenPort whose listenPort + 1 is held by another socket (on a
/// machine with brokers on ephemeral ports, the harness's own reconnecting clients) starts all
/// the same, on an ephemeral HA port it reports on stdout, and says why on stderr.
#[test]
fn a_held_listen_port_plus_one_moves_the_ha_port() {
    let dir = tempfile::tempdir().unwrap();
    // Hold H, and find a free H - 1 (and H - 3, the fast port) to listen on.
    let (held, port) = (0..20)
        .find_map(|_| {
            let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let port = held.local_addr().unwrap().port().checked_sub(1)?;
            let free = |p: u16| std::net::TcpListener::bind(("127.0.0.1", p)).is_ok();
            (port > 2 && free(port) && free(port - 2)).then_some((held, port))
        })
        .expect("no free port below a held one in 20 tries");
    let path = conf(dir.path(), "brokerVersionProfile=4.9\n");
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("listenPort=0", &format!("listenPort={port}"));
    std::fs::write(&path, text).unwrap();
    let mut child = Command::new(BIN)
        .arg("-c")
        .arg(&path)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let (mut first, mut second) = (String::new(), String::new());
    stdout.read_line(&mut first).unwrap();
    stdout.read_line(&mut second).unwrap();
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let _ = child.wait();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert_eq!(
        first.trim(),
        format!("listening on 127.0.0.1:{port}"),
        "{err}"
    );
    let ha: std::net::SocketAddr = second
        .trim()
        .strip_prefix("ha listening on ")
        .unwrap_or_else(|| panic!("second stdout line {second:?}; stderr {err}"))
        .parse()
        .unwrap();
    assert_ne!(ha.port(), held.local_addr().unwrap().port());
    assert!(err.contains("RocketMQ would not start"), "{err}");
}
