//! The restart's own thread: a tick never waits for a broker to boot, the first tick after it
//! is up puts it in place, `finish_restart` waits for it, and a restart nobody took is joined
//! and its broker discarded. Against a fake kind whose start waits until the test releases it,
//! so nothing here depends on how fast the machine is.

use std::net::SocketAddr;
use std::path::Path;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{Injector, Restarter};
use crate::kind::{BrokerKind, KindRecord, Lifecycle, Member, MemberSpec, NameServer, StartError};
use harness_model::matrix::Cell;
use harness_model::profile::{FaultPlan, Profile};

/// How long a start waits for its release, and a test for observable state, at most.
const DEADLINE: Duration = Duration::from_secs(10);

/// A broker that is only a number: which start made it (told as its pid), and whether it was
/// discarded.
struct Fake {
    start: u32,
    discarded: Arc<AtomicBool>,
}

impl Member for Fake {
    fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], 9))
    }
    fn ha_addr(&self, _wait: Duration) -> Option<SocketAddr> {
        None
    }
    fn pid(&self) -> Option<u32> {
        Some(self.start)
    }
    fn exited(&mut self) -> Option<ExitStatus> {
        None
    }
    fn kill9(&mut self) -> std::io::Result<()> {
        Ok(())
    }
    fn signal(&self, _signal: i32) -> std::io::Result<()> {
        Ok(())
    }
    fn stop(self: Box<Self>, _grace: Duration) -> Option<ExitStatus> {
        None
    }
    fn discard(self: Box<Self>, _grace: Duration) -> Option<ExitStatus> {
        self.discarded.store(true, Ordering::SeqCst);
        None
    }
}

/// Each start waits for a release from the test (at most [`DEADLINE`], then fails) and hands
/// out the next start number.
struct GatedKind {
    starts: AtomicU32,
    discarded: Arc<AtomicBool>,
    gate: Mutex<Receiver<()>>,
}

impl BrokerKind for GatedKind {
    fn record(&self) -> KindRecord {
        KindRecord {
            kind: "gated",
            version: None,
            binary: None,
            checksum: None,
            runtime: None,
        }
    }
    fn lifecycle(&self) -> Lifecycle {
        Lifecycle::Owned
    }
    fn check_cells(&self, _profile: &Profile, _cells: &[Cell]) -> anyhow::Result<()> {
        Ok(())
    }
    fn start_broker(&self, _spec: &MemberSpec<'_>) -> Result<Box<dyn Member>, StartError> {
        let gate = self.gate.lock().unwrap();
        gate.recv_timeout(DEADLINE)
            .map_err(|_| StartError::Unsupported("the test never released the start".into()))?;
        Ok(Box::new(Fake {
            start: self.starts.fetch_add(1, Ordering::SeqCst) + 1,
            discarded: Arc::clone(&self.discarded),
        }))
    }
    fn start_namesrv(&self, _dir: &Path) -> Result<Box<dyn NameServer>, StartError> {
        Err(StartError::Unsupported("no name server".into()))
    }
}

/// An injector that kills at once and restarts; its broker (start 0); the discard flag of the
/// brokers its restarts make; the sender that lets one start finish.
struct Setup {
    inj: Injector,
    broker: Box<dyn Member>,
    discarded: Arc<AtomicBool>,
    release: Sender<()>,
    _dir: tempfile::TempDir,
}

fn killed_at_once() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let discarded = Arc::new(AtomicBool::new(false));
    let (release, gate) = channel();
    let plan = FaultPlan {
        kill: Some(Duration::ZERO),
        restart: true,
        ..FaultPlan::default()
    };
    let restarter = Restarter {
        name: "broker".into(),
        kind: Arc::new(GatedKind {
            starts: AtomicU32::new(0),
            discarded: Arc::clone(&discarded),
            gate: Mutex::new(gate),
        }),
        conf: Default::default(),
        dir: dir.path().to_owned(),
        cpus: None,
    };
    let mut inj = Injector::new(&plan, 100, Some(restarter), None, false);
    let now = Instant::now();
    inj.arm(now, now + Duration::from_secs(10));
    let broker: Box<dyn Member> = Box::new(Fake {
        start: 0,
        discarded: Arc::new(AtomicBool::new(false)),
    });
    Setup {
        inj,
        broker,
        discarded,
        release,
        _dir: dir,
    }
}

fn start_of(m: &dyn Member) -> u32 {
    m.pid().expect("a fake's pid is its start number")
}

#[test]
fn a_tick_does_not_wait_for_the_restart_and_a_later_one_puts_the_broker_in_place() {
    let Setup {
        mut inj,
        mut broker,
        release,
        ..
    } = killed_at_once();
    // The start cannot finish before the release below: a tick that waited for it would end
    // with the restart failed (after DEADLINE), not with it under way.
    inj.tick(Instant::now(), Some(&mut broker)).unwrap();
    assert!(inj.restarting() && inj.broker_dead());
    assert_eq!(inj.take_events(), "kill");
    assert_eq!(start_of(broker.as_ref()), 0, "replaced before it was up");
    inj.tick(Instant::now(), Some(&mut broker)).unwrap();
    assert_eq!(start_of(broker.as_ref()), 0, "replaced before it was up");
    release.send(()).unwrap();
    let until = Instant::now() + DEADLINE;
    while inj.broker_dead() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(5));
        inj.tick(Instant::now(), Some(&mut broker)).unwrap();
    }
    assert!(!inj.restarting() && !inj.broker_dead());
    assert_eq!(start_of(broker.as_ref()), 1);
    assert_eq!(inj.take_events(), "restart");
    let (kill, ready) = inj.restarts()[0];
    assert!(ready > kill);
}

#[test]
fn finish_restart_waits_for_the_broker_that_is_booting() {
    let Setup {
        mut inj,
        mut broker,
        release,
        ..
    } = killed_at_once();
    inj.tick(Instant::now(), Some(&mut broker)).unwrap();
    assert!(inj.restarting());
    release.send(()).unwrap();
    inj.finish_restart(Some(&mut broker)).unwrap();
    assert!(!inj.restarting() && !inj.broker_dead());
    assert_eq!(start_of(broker.as_ref()), 1);
    assert_eq!(inj.restarts().len(), 1);
}

#[test]
fn a_restart_nobody_took_is_joined_and_its_broker_discarded() {
    let Setup {
        mut inj,
        mut broker,
        discarded,
        release,
        ..
    } = killed_at_once();
    inj.tick(Instant::now(), Some(&mut broker)).unwrap();
    assert!(inj.restarting());
    release.send(()).unwrap();
    drop(inj);
    assert!(
        discarded.load(Ordering::SeqCst),
        "the restarted broker was left running"
    );
}
