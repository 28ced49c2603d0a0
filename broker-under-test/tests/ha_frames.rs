//! The HA wire format pinned on captured bytes, from both ends of our implementation: a raw
//! client plays the slave against a real master, a raw listener plays the master against a
//! real slave. The layouts asserted here were checked by hand against the Java source:
//!
//! Master → slave (4.x `HAConnection.WriteSocketService.run`, 5.3
//! `DefaultHAConnection.WriteSocketService`), header size `8 + 4`:
//! ```text
//! this.byteBufferHeader.position(0);
//! this.byteBufferHeader.limit(headerSize);      // 12
//! this.byteBufferHeader.putLong(thisOffset);    // bytes 0..8, big-endian (ByteBuffer default)
//! this.byteBufferHeader.putInt(size);           // bytes 8..12
//! ```
//! followed by `size` bytes of the mapped file from `thisOffset`; the heartbeat is the same
//! header with `putLong(nextTransferFromWhere)` and `putInt(0)` and no body.
//!
//! Slave → master (`HAClient.reportSlaveMaxOffset`, 5.3 `DefaultHAClient`):
//! ```text
//! this.reportOffset.position(0);
//! this.reportOffset.limit(8);
//! this.reportOffset.putLong(maxOffset);         // 8 bytes, big-endian
//! ```
//! No handshake, no magic, nothing else on either direction.

mod common;

use std::time::{Duration, Instant};

use broker_under_test::{config::BrokerConfig, RunningBroker};
use common::{send_v2, Client};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpListener, TcpStream},
};

const DEADLINE: Duration = Duration::from_secs(30);

async fn read_exactly(s: &mut TcpStream, n: usize) -> Vec<u8> {
    let mut buf = vec![0u8; n];
    tokio::time::timeout(DEADLINE, s.read_exact(&mut buf))
        .await
        .expect("bytes before the deadline")
        .expect("read");
    buf
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_master_sends_rocketmqs_frames() {
    let dir = tempfile::tempdir().unwrap();
    let config = BrokerConfig::for_test(
        dir.path(),
        &[
            ("haTransferBatchSize", "100"),
            ("haSendHeartbeatInterval", "300"),
        ],
    )
    .unwrap();
    let master = RunningBroker::start(config).await.unwrap();
    let mut c = Client::connect(master.addr).await;
    let r = c.call(send_v2(1, "FrameTopic", 0, &[b'a'; 150])).await;
    assert_eq!(r.code, 0);
    let end: i64 = c.runtime_info().await["commitLogMaxOffset"]
        .parse()
        .unwrap();
    assert!(end > 150, "one record of {end} bytes");

    let mut slave = TcpStream::connect(master.ha_addr).await.unwrap();
    // Nothing is sent before the first report.
    let mut probe = [0u8; 1];
    let early = tokio::time::timeout(Duration::from_millis(200), slave.read(&mut probe)).await;
    assert!(early.is_err(), "the master spoke first");
    slave.write_all(&[0u8; 8]).await.unwrap(); // report: offset 0 (an empty slave)
                                               // The master writes its last data frame after this report, and the heartbeat no sooner than
                                               // haSendHeartbeatInterval after that write; the test's own reads may lag the writes by any
                                               // amount on a busy machine, so the interval is measured from here.
    let reported = Instant::now();

    let file = std::fs::read(dir.path().join("commitlog").join(format!("{:020}", 0))).unwrap();
    let mut offset = 0i64;
    while offset < end {
        let header = read_exactly(&mut slave, 12).await;
        let want = (end - offset).min(100);
        let mut expected = offset.to_be_bytes().to_vec();
        expected.extend_from_slice(&(want as i32).to_be_bytes());
        assert_eq!(header, expected, "header at {offset}");
        let body = read_exactly(&mut slave, want as usize).await;
        assert_eq!(
            body,
            &file[offset as usize..(offset + want) as usize],
            "the body is the CommitLog's bytes"
        );
        offset += want;
    }
    // Caught up and idle: after haSendHeartbeatInterval, an empty frame at the next offset.
    slave.write_all(&end.to_be_bytes()).await.unwrap();
    let heartbeat = read_exactly(&mut slave, 12).await;
    let mut expected = end.to_be_bytes().to_vec();
    expected.extend_from_slice(&[0, 0, 0, 0]);
    assert_eq!(heartbeat, expected);
    assert!(
        reported.elapsed() >= Duration::from_millis(300),
        "a heartbeat {:?} after the transfer began: not before the interval",
        reported.elapsed()
    );
    let info = c.runtime_info().await;
    assert_eq!(info["haSlaveAckOffset"], end.to_string());
    assert_eq!(info["haSlaveRequestOffset"], "0");
    drop(slave);
    master.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_slave_reports_rocketmqs_offsets_and_appends_at_the_given_offset() {
    let fake_master = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let ha = fake_master.local_addr().unwrap().to_string();
    let dir = tempfile::tempdir().unwrap();
    let config = BrokerConfig::for_test(
        dir.path(),
        &[
            ("brokerVersionProfile", "5.3"),
            ("brokerRole", "SLAVE"),
            ("brokerId", "1"),
            ("haMasterAddress", ha.as_str()),
            ("haSendHeartbeatInterval", "1500"),
        ],
    )
    .unwrap();
    let started = Instant::now();
    let slave = RunningBroker::start(config).await.unwrap();
    let (mut conn, _) = tokio::time::timeout(DEADLINE, fake_master.accept())
        .await
        .expect("the slave connects")
        .unwrap();
    // 5.3's first report: its CommitLog end, 0, a heartbeat interval after the client was
    // built, not at connect (5.3.3 DefaultHAClient lastWriteTimestamp l.67; audit #10).
    assert_eq!(read_exactly(&mut conn, 8).await, [0u8; 8]);
    let first = started.elapsed();
    assert!(
        first >= Duration::from_millis(1400),
        "a 5.3 slave's first report came {first:?} after its start"
    );

    // 64 bytes of a blank file at offset 0: the slave appends them and reports 64.
    let mut frame = 0i64.to_be_bytes().to_vec();
    frame.extend_from_slice(&64i32.to_be_bytes());
    frame.extend_from_slice(&[0u8; 64]);
    conn.write_all(&frame).await.unwrap();
    assert_eq!(read_exactly(&mut conn, 8).await, 64i64.to_be_bytes());
    let mut c = Client::connect(slave.addr).await;
    let info = c.runtime_info().await;
    assert_eq!(info["haClientReportedOffset"], "64");
    assert_eq!(info["haClientConnected"], "true");

    // A frame at the wrong offset closes the connection (the slave then reconnects and
    // reports its true end).
    let mut wrong = 1000i64.to_be_bytes().to_vec();
    wrong.extend_from_slice(&0i32.to_be_bytes());
    conn.write_all(&wrong).await.unwrap();
    let mut rest = Vec::new();
    let closed = tokio::time::timeout(DEADLINE, conn.read_to_end(&mut rest)).await;
    assert!(matches!(closed, Ok(Ok(_))), "closed after a mismatch");
    slave.stop().await.unwrap();
}

/// The master closes a connection it has read nothing from for `haHousekeepingInterval`, and
/// the connection leaves the count.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_master_drops_a_silent_slave_after_the_housekeeping_interval() {
    let dir = tempfile::tempdir().unwrap();
    let config = BrokerConfig::for_test(dir.path(), &[("haHousekeepingInterval", "400")]).unwrap();
    let master = RunningBroker::start(config).await.unwrap();
    let mut slave = TcpStream::connect(master.ha_addr).await.unwrap();
    let begin = Instant::now();
    slave.write_all(&[0u8; 8]).await.unwrap();
    let mut rest = Vec::new();
    // The master streams nothing (an empty log) and closes after 400 ms of silence.
    let closed = tokio::time::timeout(DEADLINE, slave.read_to_end(&mut rest)).await;
    assert!(matches!(closed, Ok(Ok(_))), "closed by the master");
    assert!(
        begin.elapsed() >= Duration::from_millis(400),
        "not before the interval"
    );
    let mut c = Client::connect(master.addr).await;
    let end = Instant::now() + DEADLINE;
    while c.runtime_info().await["haSlaveConnections"] != "0" {
        assert!(Instant::now() < end, "the connection is still counted");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    master.stop().await.unwrap();
}

/// A 4.x slave reports one heartbeat interval after connecting (its report clock starts at the
/// connect), and after a broken connection reconnects at once and reports its true end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_4x_slave_reports_a_heartbeat_after_connecting_and_reconnects_at_once() {
    let fake_master = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let ha = fake_master.local_addr().unwrap().to_string();
    let dir = tempfile::tempdir().unwrap();
    let config = BrokerConfig::for_test(
        dir.path(),
        &[
            ("brokerVersionProfile", "4.9"),
            ("brokerRole", "SLAVE"),
            ("brokerId", "1"),
            ("haMasterAddress", ha.as_str()),
            ("haSendHeartbeatInterval", "300"),
        ],
    )
    .unwrap();
    let slave = RunningBroker::start(config).await.unwrap();
    let (mut conn, _) = tokio::time::timeout(DEADLINE, fake_master.accept())
        .await
        .unwrap()
        .unwrap();
    let connected = Instant::now();
    assert_eq!(read_exactly(&mut conn, 8).await, [0u8; 8]);
    assert!(
        connected.elapsed() >= Duration::from_millis(250),
        "a 4.x slave waits a heartbeat interval before its first report"
    );
    let mut frame = 0i64.to_be_bytes().to_vec();
    frame.extend_from_slice(&32i32.to_be_bytes());
    frame.extend_from_slice(&[0u8; 32]);
    conn.write_all(&frame).await.unwrap();
    assert_eq!(read_exactly(&mut conn, 8).await, 32i64.to_be_bytes());
    drop(conn); // the master goes away
    let (mut again, _) = tokio::time::timeout(DEADLINE, fake_master.accept())
        .await
        .expect("the slave reconnects")
        .unwrap();
    assert_eq!(
        read_exactly(&mut again, 8).await,
        32i64.to_be_bytes(),
        "resumes from its own end"
    );
    slave.stop().await.unwrap();
}

/// A later report beyond the master's end: 4.9 (4.9.3+) closes the connection; 5.3 takes it as
/// acknowledged (HA reference §2.2, §2.7).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_report_beyond_the_masters_end_closes_in_4_9_and_counts_in_5_3() {
    for profile in ["4.9", "5.3"] {
        let dir = tempfile::tempdir().unwrap();
        let config =
            BrokerConfig::for_test(dir.path(), &[("brokerVersionProfile", profile)]).unwrap();
        let master = RunningBroker::start(config).await.unwrap();
        let mut c = Client::connect(master.addr).await;
        let mut slave = TcpStream::connect(master.ha_addr).await.unwrap();
        slave.write_all(&[0u8; 8]).await.unwrap();
        let end = Instant::now() + DEADLINE;
        while c.runtime_info().await["haSlaveRequestOffset"] != "0" {
            assert!(Instant::now() < end, "{profile}: first report unseen");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        slave.write_all(&1_000_000i64.to_be_bytes()).await.unwrap();
        if profile == "4.9" {
            let mut rest = Vec::new();
            let closed = tokio::time::timeout(DEADLINE, slave.read_to_end(&mut rest)).await;
            assert!(matches!(closed, Ok(Ok(_))), "4.9 closes");
            assert_eq!(c.runtime_info().await["haSlaveAckOffset"], "0");
        } else {
            while c.runtime_info().await["haSlaveAckOffset"] != "1000000" {
                assert!(Instant::now() < end, "5.3 takes the report");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            assert_eq!(c.runtime_info().await["haSlaveConnections"], "1");
        }
        drop(slave);
        master.stop().await.unwrap();
    }
}
