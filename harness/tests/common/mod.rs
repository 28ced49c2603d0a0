//! What the end-to-end tests share: the broker binary they start, and run options for it.
//!
//! The binary is `$BROKER_UNDER_TEST_BIN` if set, else the tests run
//! `cargo build -p broker-under-test` once into their own target dir (a no-op when it is
//! fresh), so `cargo test -p harness` alone works and never picks up a stale binary.

#![allow(dead_code)] // each test binary uses its own part of this module

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use harness::kind::in_tree::process::BrokerProcess;
use harness::kind::write_conf;
use harness::runner::RunOptions;

/// The debug broker of this target dir, built by cargo first (a no-op when fresh).
pub fn broker_bin() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        if let Some(p) = std::env::var_os("BROKER_UNDER_TEST_BIN") {
            // Said once per test binary: a stale binary here is tested instead of the tree's.
            eprintln!(
                "tests: BROKER_UNDER_TEST_BIN={} replaces this tree's broker-under-test",
                Path::new(&p).display()
            );
            return PathBuf::from(p);
        }
        let exe = std::env::current_exe().expect("test executable path");
        // <target>/<profile>/deps/<test> → <target>
        let target = exe.ancestors().nth(3).expect("target dir").to_owned();
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = std::process::Command::new(cargo)
            .args(["build", "-p", "broker-under-test"])
            .env("CARGO_TARGET_DIR", &target)
            .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
            .status()
            .expect("running cargo build -p broker-under-test");
        assert!(status.success(), "cargo build -p broker-under-test failed");
        target.join("debug/broker-under-test")
    })
    .clone()
}

/// A quiet run into `out` on fresh brokers of [`broker_bin`].
pub fn options(out: &Path) -> RunOptions {
    RunOptions {
        out: Some(out.to_owned()),
        broker_bin: Some(broker_bin()),
        command_line: "harness integration test".into(),
        quiet: true,
        ..Default::default()
    }
}

/// A broker of [`broker_bin`] of the test's own on 127.0.0.1:0, its store under `dir`, with
/// `keys` added to broker.conf: its store outlives the runs against it, so it can be read back.
pub fn own_broker(dir: &Path, keys: &[(&str, &str)]) -> BrokerProcess {
    let mut conf: BTreeMap<String, String> = [
        ("listenPort", "0".to_owned()),
        ("storePathRootDir", dir.join("store").display().to_string()),
        ("mappedFileSizeCommitLog", "16777216".to_owned()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    conf.extend(keys.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let path = dir.join("broker.conf");
    write_conf(&path, &conf).unwrap();
    BrokerProcess::start(
        &broker_bin(),
        &path,
        &dir.join("broker.log"),
        None,
        Duration::from_secs(20),
    )
    .expect("broker starts")
}

/// No process whose command line names `dir` (a JVM's -Duser.home and -c name its folder).
pub fn assert_no_jvm_under(dir: &Path) {
    let ps = std::process::Command::new("pgrep")
        .args(["-f", &dir.display().to_string()])
        .output()
        .unwrap();
    assert!(
        ps.stdout.is_empty(),
        "a JVM was left running: {}",
        String::from_utf8_lossy(&ps.stdout)
    );
}
